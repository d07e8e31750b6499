"""pss.py: proportional set size of processes, for the shared-cache scenarios.

PSS counts a page shared by N processes as 1/N of it in each, so the sum over a
group of processes counts the shared cache once, where RSS would count it N times.
Read from /proc/PID/smaps_rollup (Linux >= 4.14): Pss, and Pss_Shmem (the shared
segment's part) where the kernel reports it.
"""


def status_kb(field, pid="self"):
    """A /proc/PID/status field in kB (VmRSS, VmHWM, ...), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return None


def pss(pid):
    """{"pss": bytes, "pss_shmem": bytes or None, "rss": bytes} of one process, or None
    when it is gone."""
    out = {"pss": None, "pss_shmem": None, "rss": None}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                key = {"Pss": "pss", "Pss_Shmem": "pss_shmem", "Rss": "rss"}.get(k)
                if key:
                    out[key] = int(v.split()[0]) * 1024
    except OSError:
        return None
    return out


def total(pids):
    """Sums over pids: {"pss", "pss_shmem", "rss", "processes"}, and "each": every
    process's PSS by pid (read once, with the sums)."""
    t = {"pss": 0, "pss_shmem": 0, "rss": 0, "processes": 0, "each": {}}
    for p in pids:
        v = pss(p)
        if not v:
            continue
        t["each"][str(p)] = v["pss"]
        t["processes"] += 1
        for k in ("pss", "pss_shmem", "rss"):
            t[k] += v[k] or 0
    return t


def segment_bytes():
    """Bytes the shared cache's segment holds in /dev/shm right now (allocated
    pages), for this process's pool (VSITUNE_SHARED_CACHE_NAME); None without
    one. This is the cache's real memory, whoever maps it."""
    import glob
    import os
    pool = os.environ.get("VSITUNE_SHARED_CACHE_NAME")
    if os.environ.get("VSITUNE_SHARED_CACHE", "").upper() not in ("YES", "ON", "TRUE", "1") \
            or not pool:
        return None
    total = 0
    for p in glob.glob(f"{os.environ.get('VSITUNE_SHM_DIR', '/dev/shm')}/"
                       f"vsitune-{os.geteuid()}-{pool}"):
        try:
            total += os.stat(p).st_blocks * 512
        except OSError:
            pass
    return total


def children(pid):
    """Direct children of pid (from /proc/PID/task/*/children)."""
    import os
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids
