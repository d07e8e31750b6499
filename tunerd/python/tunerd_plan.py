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

Without a plan (no TUNERD_* variables: not started through tunerd) nothing is
changed. Installed at <prefix>/share/vsitune/python/tunerd_plan.py; copy it
next to your app or add that directory to PYTHONPATH. Standard library only
(anyio is imported when the limit is applied, inside the server).
Tested with Debian 12's FastAPI 0.92, Starlette 0.26, anyio 3.6 and uvicorn
0.17 (tests/integration/test_tunerd_asgi.py).
"""
import os

__all__ = ["workers", "threads", "apply_thread_limit", "install"]


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
