"""backend_probe.py: runs tests/tools/vt_backend_probe, the one driver of every backend's
vt_backend table (s3, gs, az, curl) against the lab without GDAL's VSI layer, and reads its
answer: one JSON object per operation, in the order asked.

`lines` words those objects as the lines test_backend_gs.py and test_backend_az.py check
("get status=N bytes=N sha256=HEX http=V", "error err=E: why", ...), a service's dialect
being the only difference (az: list markers, entry ETags and times, the report's class)."""
import json
import subprocess

import lab_client


def path():
    """The probe in the build tree (tests/tools)."""
    return lab_client.build_dir() / "tests" / "tools" / "vt_backend_probe"


def run(backend, args, env, timeout):
    """(exit status, the JSON objects, stderr) of one run."""
    cp = subprocess.run([str(path()), "--backend", backend, *map(str, args)], env=env,
                        capture_output=True, text=True, timeout=timeout)
    objs = [json.loads(line) for line in cp.stdout.splitlines() if line.startswith("{")]
    return cp.returncode, objs, cp.stderr


def _error(o):
    return [f"error err={o['strerror']}: {o['errbuf']}"]


def _fail(o, az):
    f = o["fail"]
    if f is None:
        return [f"{o['op']} none"]
    if o["op"] == "report":
        return [f"report vsie={f['vsie']} cple={f['cple']} message={f['message']}"]
    line = (f"fail err={f['strerror']} status={f['status']} where={f['where']} "
            f"message={f['fail_message'] or '-'}")
    return [line] if az else [line, f"report vsie={f['vsie']} {f['message']}"]


def _list(o, az):
    out = [f"list n={o['n']} truncated={o['truncated']}" +
           (f" marker={o['marker']}" if az else "")]
    for e in o["entries"]:
        tail = f" {e['etag'] or '-'} {e['mtime']}" if az else ""
        out.append(f"entry {e['name']} {e['size']} {e['is_dir']}{tail}")
    return out


def _line(o, az):
    op = o["op"]
    if op in ("fail", "report") and "fail" in o:
        return _fail(o, az)
    if op in ("forget", "sleep"):
        return [op]
    if op == "ident":
        if o["rc"]:
            return ["ident -"]
        return ["ident " + (o["ident"] if az else o["ident"].replace("\n", "|"))]
    if op == "endpoint":
        return [f"endpoint {o['endpoint'] or '-'}"]
    out = []
    if op == "batch" and "ok" in o:
        out.append(f"batch ok={o['ok']} bytes={o['bytes']} sha256={o['sha256']}")
    if o["err"]:
        return out + _error(o)
    if op in ("get", "pin"):
        return [f"get status={o['status']} bytes={o['body_len']} sha256={o['sha256']} "
                f"http={o['http_version']}"]
    if op == "head":
        return [f"head status={o['status']} size={o['size']} etag={o['etag'] or '-'}"]
    if op == "build":
        return ["build " + o["url"]] + ["header " + h for h in o["headers"]]
    if op == "list":
        return _list(o, az)
    return out


def lines(objs, az=False):
    """The objects as text lines, one operation's words after another's."""
    return "\n".join(line for o in objs for line in _line(o, az)).splitlines()
