#!/usr/bin/python3
"""bootstrap.py: a Lambda custom runtime for Python handlers (the Runtime API loop).

Lambda runs a container image's ENTRYPOINT; this image's is
    /usr/local/bin/lambda-exec-wrapper /usr/bin/python3 /var/runtime/bootstrap.py
so tunerd sizes GDAL for the function's memory tier before Python starts, then
this loop serves invocations through the Runtime API
(https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html):

  GET  /2018-06-01/runtime/invocation/next          -> the event, and its request id
  POST /2018-06-01/runtime/invocation/<id>/response  <- the handler's result (JSON)
  POST /2018-06-01/runtime/invocation/<id>/error     <- an exception, as JSON
  POST /2018-06-01/runtime/init/error                <- the handler could not be loaded

The handler is "module.function" (the image's CMD, else $_HANDLER), imported
from $LAMBDA_TASK_ROOT (default /var/task). Standard library only. The loop ends
(exit 1, one line on stderr) when the Runtime API stops answering /next.
"""
import http.client
import importlib
import json
import os
import sys
import time
import traceback

API = "/2018-06-01/runtime"


class Context:
    """The fields of Lambda's Python context object a handler commonly uses."""

    def __init__(self, headers):
        self.aws_request_id = headers.get("Lambda-Runtime-Aws-Request-Id", "")
        self.invoked_function_arn = headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
        self._deadline_ms = int(headers.get("Lambda-Runtime-Deadline-Ms", "0") or 0)
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")

    def get_remaining_time_in_millis(self):
        return max(0, self._deadline_ms - int(time.time() * 1000))


def error_doc(exc):
    return {"errorMessage": str(exc), "errorType": type(exc).__name__,
            "stackTrace": traceback.format_exception(type(exc), exc, exc.__traceback__)}


class RuntimeApi:
    def __init__(self, address):
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port)

    def call(self, method, path, body=None, headers=None, timeout=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, API + path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def post_json(self, path, doc, headers=None):
        body = json.dumps(doc).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        status, _, text = self.call("POST", path, body, h, timeout=30)
        if status != 202:
            print(f"bootstrap: {path} answered {status}: {text[:200]!r}", file=sys.stderr)


def load_handler(spec):
    root = os.environ.get("LAMBDA_TASK_ROOT", "/var/task")
    sys.path.insert(0, root)
    module, _, func = spec.rpartition(".")
    if not module or not func:
        raise ValueError(f"handler '{spec}' is not module.function")
    return getattr(importlib.import_module(module), func)


def main():
    api = RuntimeApi(os.environ["AWS_LAMBDA_RUNTIME_API"])
    spec = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("_HANDLER", "")
    try:
        handler = load_handler(spec)
    except Exception as exc:  # the function cannot start: Lambda reports it
        api.post_json("/init/error", error_doc(exc),
                      {"Lambda-Runtime-Function-Error-Type": "Runtime.ImportModuleError"})
        print(f"bootstrap: cannot load handler '{spec}': {exc}", file=sys.stderr)
        return 1
    while True:
        try:
            status, headers, body = api.call("GET", "/invocation/next")
        except OSError as exc:
            print(f"bootstrap: the Runtime API is gone ({exc})", file=sys.stderr)
            return 1
        if status != 200:
            print(f"bootstrap: /invocation/next answered {status}; exiting", file=sys.stderr)
            return 1
        ctx = Context(headers)
        if "Lambda-Runtime-Trace-Id" in headers:
            os.environ["_X_AMZN_TRACE_ID"] = headers["Lambda-Runtime-Trace-Id"]
        try:
            result = handler(json.loads(body or b"null"), ctx)
        except Exception as exc:
            api.post_json(f"/invocation/{ctx.aws_request_id}/error", error_doc(exc),
                          {"Lambda-Runtime-Function-Error-Type": "Unhandled"})
            continue
        api.post_json(f"/invocation/{ctx.aws_request_id}/response", result)


if __name__ == "__main__":
    sys.exit(main())
