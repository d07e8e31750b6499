"""tunerd_plan.py: apply tunerd's worker plan to a Python server (FastAPI,
Starlette, TiTiler; uvicorn, gunicorn).

`tunerd exec` (or the Lambda wrapper) puts the plan in the environment:
TUNERD_WORKERS worker processes, TUNERD_THREADS threads in each, and sizes
GDAL_CACHEMAX and the range cache for exactly that many. A server must then
run that many, or the ledger is fiction:

- FastAPI and Starlette run every sync endpoint (`def`, not `async def`: what
  rasterio/TiTiler endpoints are) on anyio's default thread pool, which has 40
  threads whatever the plan says: up to 40 concurrent rasterio reads per
  process, each with its windows, tile buffers and glibc arena (seed 003), where
  the plan budgeted 4. `install(app)` sets that pool's size to TUNERD_THREADS
  when the server starts (in every worker process: each has its own event loop):

      from fastapi import FastAPI
      import tunerd_plan

      app = FastAPI()
      tunerd_plan.install(app)

- uvicorn: one process per TUNERD_WORKERS:
      uvicorn app:app --workers "$TUNERD_WORKERS"
  (or uvicorn.run("app:app", workers=tunerd_plan.workers())).
- gunicorn (gunicorn.conf.py):
      import tunerd_plan
      workers = tunerd_plan.workers()
      threads = tunerd_plan.threads()          # for the gthread worker class
      worker_class = "uvicorn.workers.UvicornWorker"   # ASGI apps; then install(app)

- a batch job (Lambda included): results = tunerd_plan.map(fn, items) runs
  fn over items as the plan says: TUNERD_WORKERS processes, joined by Pipes
  where TUNERD_IPC=pipe (Lambda, or no writable /dev/shm: multiprocessing's
  Pool, Queue and Lock fail there), threads where the plan says threads.

Without a plan (no TUNERD_* variables: not started through tunerd) nothing is
changed (map() runs fn in the caller). Installed at <prefix>/share/vsitune/python/tunerd_plan.py; copy it
next to your app or add that directory to PYTHONPATH. Standard library only
(anyio is imported when the limit is applied, inside the server).
Tested with Debian 12's FastAPI 0.92, Starlette 0.26, anyio 3.6 and uvicorn
0.17 (tests/integration/test_tunerd_asgi.py).
"""
import os

__all__ = ["workers", "threads", "apply_thread_limit", "install", "map", "WorkerError"]


def _positive(name):
    """The whole number in $name, or None when it is unset or not one >= 1."""
    try:
        v = int(os.environ.get(name, ""))
    except ValueError:
        return None
    return v if v >= 1 else None


def workers(default=1):
    """TUNERD_WORKERS: worker processes (for uvicorn --workers, gunicorn workers)."""
    return _positive("TUNERD_WORKERS") or default


def threads(default=None):
    """TUNERD_THREADS: threads per worker process; default when there is no plan."""
    return _positive("TUNERD_THREADS") or default


def apply_thread_limit(n=None):
    """In the running event loop: anyio's default thread pool (Starlette's
    run_in_threadpool, FastAPI's sync endpoints) gets n threads, by default
    TUNERD_THREADS. Returns the limit set, or None when there is no plan."""
    n = n or threads()
    if n is None:
        return None
    import anyio.to_thread
    anyio.to_thread.current_default_thread_limiter().total_tokens = n
    return n


def install(app):
    """FastAPI / Starlette: apply_thread_limit() when the app starts (at the start of its
    lifespan, before the app's own; every Starlette release has router.lifespan_context,
    where add_event_handler is gone from recent ones). Returns app."""
    import contextlib

    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def _tunerd_lifespan(a):
        apply_thread_limit()
        async with inner(a) as state:
            yield state

    app.router.lifespan_context = _tunerd_lifespan
    return app


# --- running the plan: map(fn, items) --------------------------------------
#
# Lambda has no /dev/shm, so everything in multiprocessing that makes a
# semaphore fails there (Pool, Queue, Lock, Manager, ProcessPoolExecutor:
# "OSError: [Errno 38] Function not implemented" or errno 30 from SemLock).
# multiprocessing.Process and Pipe need none: a process is fork() plus a
# pipe for its sentinel, a Pipe is a socketpair. map() uses only those when
# the plan says TUNERD_IPC=pipe (tunerd prints it for Lambda and wherever
# /dev/shm is missing or read-only), and a ProcessPoolExecutor otherwise.

class WorkerError(Exception):
    """fn raised in a worker process and its exception could not be sent back
    as itself (not picklable): the message is the worker's traceback text."""


class _RemoteTraceback(Exception):
    """Carries a worker's traceback text as the __cause__ of the re-raised
    exception, so the caller's traceback shows where it happened."""

    def __init__(self, tb):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return self.tb


def _plan():
    """(kind, processes, threads, ipc, start method) from the environment."""
    kind = os.environ.get("TUNERD_WORKER_KIND", "inline")
    return (kind, workers(), threads(1), os.environ.get("TUNERD_IPC", "pool"),
            os.environ.get("TUNERD_START_METHOD", "fork"))


def _run_one(fn, items, i):
    """(i, ok, value): fn(items[i]), or its exception and traceback text."""
    import traceback
    try:
        return (i, True, fn(items[i]))
    except BaseException as e:  # noqa: B902 - sent to the caller, who re-raises
        return (i, False, (e, traceback.format_exc()))


def _worker(conn, fn, items, nthreads):
    """A worker process's loop: receives indexes into items (inherited by fork),
    sends back (index, ok, value) for each; None ends it. With nthreads > 1 the
    indexes run on that many threads and one lock keeps the answers whole."""
    import pickle
    import threading

    lock = threading.Lock()

    def answer(res):
        i, ok, value = res
        try:
            data = pickle.dumps(res)
        except Exception:  # a value or exception that cannot travel
            import traceback
            text = value[1] if not ok else traceback.format_exc()
            data = pickle.dumps((i, False, (None, text)))
        with lock:
            conn.send_bytes(data)

    pool = None
    if nthreads > 1:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=nthreads)
    try:
        while True:
            i = conn.recv()
            if i is None:
                break
            if pool:
                pool.submit(_run_one, fn, items, i).add_done_callback(
                    lambda f: answer(f.result()))
            else:
                answer(_run_one(fn, items, i))
    finally:
        if pool:
            pool.shutdown(wait=True)
        conn.close()


def _reraise(value, where):
    exc, tb = value
    cause = _RemoteTraceback('\n"""\n%s"""' % tb)
    if exc is None:
        raise WorkerError("%s raised:\n%s" % (where, tb))
    raise exc from cause


def _map_pipes(fn, items, nproc, nthreads, method):
    """fn over items in nproc processes started with `method`, each joined to
    the caller by one Pipe; every worker gets a first index, then a new one
    for each answer; a worker that dies is an error naming its exit code."""
    import multiprocessing as mp
    import pickle
    from multiprocessing.connection import wait

    ctx = mp.get_context(method)
    results = [None] * len(items)
    nproc = max(1, min(nproc, len(items)))
    per = max(1, nthreads)
    procs, conns = [], {}
    nxt = 0
    try:
        for _ in range(nproc):
            mine, theirs = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_worker, args=(theirs, fn, items, nthreads), daemon=True)
            p.start()
            theirs.close()
            procs.append(p)
            conns[mine] = [p, 0]
        for c, st in conns.items():   # a first index for every worker, then on demand
            for _ in range(per):
                if nxt < len(items):
                    c.send(nxt)
                    nxt += 1
                    st[1] += 1
        done = 0
        while done < len(items):
            for c in wait([c for c, st in conns.items() if st[1]]):
                p, _ = conns[c]
                try:
                    i, ok, value = pickle.loads(c.recv_bytes())
                except EOFError:
                    p.join(5)
                    raise WorkerError("worker process %d ended (exit code %s) before it "
                                      "answered" % (p.pid, p.exitcode)) from None
                if not ok:
                    _reraise(value, "worker process %d" % p.pid)
                results[i] = value
                done += 1
                conns[c][1] -= 1
                if nxt < len(items):
                    c.send(nxt)
                    nxt += 1
                    conns[c][1] += 1
        for c in conns:
            c.send(None)
        for p in procs:
            p.join()
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join()
        for c in conns:
            c.close()
    return results


def map(fn, items):  # noqa: A001 - the plan's map, as the builtin's
    """[fn(x) for x in items], run the way the plan (the TUNERD_* variables)
    says, results in the order of items:
    - inline (or no plan): in this process;
    - threads: a ThreadPoolExecutor of TUNERD_THREADS;
    - processes (and processes-of-threads) with TUNERD_IPC=pipe (Lambda, no
      /dev/shm): TUNERD_WORKERS processes started with TUNERD_START_METHOD
      (fork: fn and items are inherited, not pickled), each joined to this
      one by a Pipe; only the results travel (pickled);
    - processes with TUNERD_IPC=pool: a ProcessPoolExecutor.
    An exception in fn is raised here, with the worker's traceback text as its
    __cause__ (WorkerError when the exception cannot be pickled); a worker
    process that dies (an OOM kill) is a WorkerError naming its exit code.
    The other workers are stopped before it is raised."""
    items = list(items)
    kind, nproc, nthreads, ipc, method = _plan()
    if not items:
        return []
    if kind == "threads" or (kind != "inline" and nproc == 1 and nthreads > 1):
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=nthreads) as pool:
            return list(pool.map(fn, items))
    if kind not in ("processes", "processes-of-threads") or nproc == 1:
        return [fn(x) for x in items]
    if ipc == "pipe":
        return _map_pipes(fn, items, nproc, nthreads if kind != "processes" else 1, method)
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=nproc, mp_context=mp.get_context(method)) as pool:
        return list(pool.map(fn, items))
