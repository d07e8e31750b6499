#!/usr/bin/python3
"""policy_sim.py: choose the shared cache's eviction policy by measurement.

Replays block-access traces of the three workloads of issue 11 through several
eviction policies and prints the hit ratios, so the choice in docs/architecture.md
("Eviction: why LIRS") rests on numbers, not on taste. The traces are built from
the real layout of the lab's s2 fixture (each tile's byte range, from GDAL's
BLOCK_OFFSET/BLOCK_SIZE metadata), cut into cache blocks of --block bytes (16 KiB,
the plugin's default since issue 22, unless told; the policy was chosen at 64 KiB):

  dask      an 8192x8192 region in 1024x1024 chunks, 4 workers taking chunks in
            turn (their reads interleaved), the whole region twice; measured on the
            second pass (what issue 11's acceptance counts)
  tiles     2,000 web-map tiles of 4 scenes at random zooms (each tile reads the
            overview level that matches its zoom, as TiTiler does), 16 at a time
  pool      seed 000's handler: 512x512 windows over the whole scene, 5 workers,
            each task opening the file (header blocks read again every time)

Budgets are given as a fraction of each trace's distinct blocks. Policies: LRU,
CLOCK, S3-FIFO (Yang et al., SOSP'23), SLRU (20% probation), ARC, and LIRS (Jiang
and Zhang, SIGMETRICS'02) with 1%, 5% and 10% of the cache for resident HIR
blocks. With --c-replay, the plugin's own implementation (vsiplugin/cache/lirs.c, through
tests/tools/vt_lirs_replay) replays the same traces, so the numbers shown for
"lirs (plugin)" are the code that ships.

usage: policy_sim.py [--fixture PATH] [--block BYTES] [--c-replay BUILD_DIR] [--json OUT]
"""

import argparse
import collections
import json
import random
import subprocess
import sys
from pathlib import Path

BLOCK = 16384   # the cache block (--block)
HEADER = 65536  # the first GET: the header blocks every open reads


# ---- the layout -----------------------------------------------------------------------------

def layout(path):
    """[(width, height, tiles_x, tiles_y, {(tx, ty): (offset, size)})] per level, full first."""
    from osgeo import gdal
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    levels = [band] + [band.GetOverview(i) for i in range(band.GetOverviewCount())]
    out = []
    for b in levels:
        bw, bh = b.GetBlockSize()
        tx, ty = (b.XSize + bw - 1) // bw, (b.YSize + bh - 1) // bh
        tiles = {}
        for y in range(ty):
            for x in range(tx):
                off = int(b.GetMetadataItem(f"BLOCK_OFFSET_{x}_{y}", "TIFF") or 0)
                size = int(b.GetMetadataItem(f"BLOCK_SIZE_{x}_{y}", "TIFF") or 0)
                tiles[(x, y)] = (off, size)
        out.append((b.XSize, b.YSize, tx, ty, tiles, bw))
    return out


def blocks_of(off, size):
    return list(range(off // BLOCK, (off + size - 1) // BLOCK + 1)) if size else []


def header_blocks(obj):
    return [(obj, i) for i in range(HEADER // BLOCK)]


def window_blocks(lay, obj, level, x0, y0, w, h):
    W, H, tx, ty, tiles, bs = lay[level]
    out = []
    for y in range(max(0, y0 // bs), min(ty, (y0 + h - 1) // bs + 1)):
        for x in range(max(0, x0 // bs), min(tx, (x0 + w - 1) // bs + 1)):
            off, size = tiles[(x, y)]
            out += [(obj, b) for b in blocks_of(off, size)]
    return out


def interleave(streams, rnd):
    """Merge per-worker streams of tasks (lists of blocks) as concurrent workers do:
    each step one worker (at random) issues its next task."""
    pos = [0] * len(streams)
    out = []
    live = [i for i, s in enumerate(streams) if s]
    while live:
        i = rnd.choice(live)
        out += streams[i][pos[i]]
        pos[i] += 1
        if pos[i] == len(streams[i]):
            live.remove(i)
    return out


def trace_dask(lay, rnd):
    chunks = []
    for cy in range(8):
        for cx in range(8):
            chunks.append(window_blocks(lay, 0, 0, 1024 + cx * 1024, 1024 + cy * 1024, 1024, 1024))
    passes = []
    for _ in range(2):
        streams = [[header_blocks(0)] for _ in range(4)]
        for i, c in enumerate(chunks):
            streams[i % 4].append(c)
        passes.append(interleave(streams, rnd))
    return passes[0], passes[1]


def trace_tiles(lay, rnd, n=2000, scenes=4):
    tasks = []
    W = lay[0][0]
    for _ in range(n):
        s = rnd.randrange(scenes)
        z = rnd.choices([0, 1, 2, 3, 4, 5], weights=[1, 2, 4, 8, 16, 32])[0]
        span = W / (2 ** z)           # full-resolution pixels a 256x256 tile covers
        level = 0
        while level + 1 < len(lay) and span / 256 >= 2 ** (level + 1):
            level += 1
        scale = W / lay[level][0]
        x = rnd.randrange(2 ** z) * span / scale
        y = rnd.randrange(2 ** z) * span / scale
        w = max(1, int(span / scale))
        tasks.append(header_blocks(s) + window_blocks(lay, s, level, int(x), int(y), w, w))
    streams = [tasks[i::16] for i in range(16)]
    return [], interleave(streams, rnd)


def trace_pool(lay, rnd):
    W, H, tx, ty, tiles, bs = lay[0]
    tasks = [header_blocks(0) + window_blocks(lay, 0, 0, c * 512, r * 512, 512, 512)
             for r in range(H // 512) for c in range(W // 512)]
    chunk = max(1, len(tasks) // 20)
    streams = [[] for _ in range(5)]
    for i in range(0, len(tasks), chunk):
        streams[(i // chunk) % 5] += tasks[i:i + chunk]
    return [], interleave(streams, rnd)


# ---- the policies (reference implementations; capacity in blocks) ---------------------------

class LRU:
    def __init__(self, cap):
        self.cap, self.d = cap, collections.OrderedDict()

    def access(self, k):
        if k in self.d:
            self.d.move_to_end(k)
            return True
        self.d[k] = 1
        if len(self.d) > self.cap:
            self.d.popitem(last=False)
        return False


class Clock:
    def __init__(self, cap):
        self.cap, self.slots, self.ref, self.where, self.hand = cap, [], [], {}, 0

    def access(self, k):
        if k in self.where:
            self.ref[self.where[k]] = 1
            return True
        if len(self.slots) < self.cap:
            self.where[k] = len(self.slots)
            self.slots.append(k)
            self.ref.append(0)
            return False
        while self.ref[self.hand]:
            self.ref[self.hand] = 0
            self.hand = (self.hand + 1) % self.cap
        del self.where[self.slots[self.hand]]
        self.slots[self.hand], self.ref[self.hand] = k, 0
        self.where[k] = self.hand
        self.hand = (self.hand + 1) % self.cap
        return False


class S3FIFO:
    """Small FIFO (10%), main FIFO with a 2-bit frequency, ghost FIFO of main's size."""

    def __init__(self, cap):
        self.cap = cap
        self.scap = max(1, cap // 10)
        self.s, self.m = collections.deque(), collections.deque()
        self.freq, self.where = {}, {}
        self.g, self.gset = collections.deque(), set()

    def _evict_m(self):
        while True:
            k = self.m.popleft()
            if self.freq[k] > 0:
                self.freq[k] -= 1
                self.m.append(k)
            else:
                del self.where[k], self.freq[k]
                return

    def _evict(self):
        if len(self.s) >= self.scap:
            k = self.s.popleft()
            if self.freq[k] > 1:
                self.m.append(k)
                self.where[k] = "m"
                if len(self.m) > self.cap - self.scap:
                    self._evict_m()
            else:
                del self.where[k], self.freq[k]
                self.g.append(k)
                self.gset.add(k)
                if len(self.g) > self.cap - self.scap:
                    self.gset.discard(self.g.popleft())
        else:
            self._evict_m()

    def access(self, k):
        if k in self.where:
            self.freq[k] = min(3, self.freq[k] + 1)
            return True
        while len(self.where) >= self.cap:
            self._evict()
        self.freq[k] = 0
        if k in self.gset:
            self.gset.discard(k)
            self.m.append(k)
            self.where[k] = "m"
        else:
            self.s.append(k)
            self.where[k] = "s"
        return False


class SLRU:
    def __init__(self, cap):
        self.pcap = max(1, cap // 5)
        self.qcap = cap - self.pcap
        self.prob, self.prot = collections.OrderedDict(), collections.OrderedDict()

    def access(self, k):
        if k in self.prot:
            self.prot.move_to_end(k)
            return True
        if k in self.prob:
            del self.prob[k]
            self.prot[k] = 1
            if len(self.prot) > self.qcap:
                old, _ = self.prot.popitem(last=False)
                self.prob[old] = 1
                if len(self.prob) > self.pcap:
                    self.prob.popitem(last=False)
            return True
        self.prob[k] = 1
        if len(self.prob) + len(self.prot) > self.pcap + self.qcap:
            self.prob.popitem(last=False)
        return False


class ARC:
    def __init__(self, c):
        self.c, self.p = c, 0
        self.t1, self.t2 = collections.OrderedDict(), collections.OrderedDict()
        self.b1, self.b2 = collections.OrderedDict(), collections.OrderedDict()

    def _replace(self, k):
        if self.t1 and (len(self.t1) > self.p or (k in self.b2 and len(self.t1) == self.p)):
            old, _ = self.t1.popitem(last=False)
            self.b1[old] = 1
        else:
            old, _ = self.t2.popitem(last=False)
            self.b2[old] = 1

    def access(self, k):
        if k in self.t1:
            del self.t1[k]
            self.t2[k] = 1
            return True
        if k in self.t2:
            self.t2.move_to_end(k)
            return True
        if k in self.b1:
            self.p = min(self.c, self.p + max(len(self.b2) // max(1, len(self.b1)), 1))
            self._replace(k)
            del self.b1[k]
            self.t2[k] = 1
            return False
        if k in self.b2:
            self.p = max(0, self.p - max(len(self.b1) // max(1, len(self.b2)), 1))
            self._replace(k)
            del self.b2[k]
            self.t2[k] = 1
            return False
        if len(self.t1) + len(self.b1) == self.c:
            if len(self.t1) < self.c:
                self.b1.popitem(last=False)
                self._replace(k)
            else:
                self.t1.popitem(last=False)
        elif len(self.t1) + len(self.b1) < self.c:
            total = len(self.t1) + len(self.t2) + len(self.b1) + len(self.b2)
            if total >= self.c:
                if total == 2 * self.c:
                    self.b2.popitem(last=False)
                self._replace(k)
        self.t1[k] = 1
        return False


class LIRS:
    """LIRS with a bounded number of non-resident entries (2x the capacity)."""

    def __init__(self, cap, hir_frac=0.01):
        self.hcap = max(1, int(cap * hir_frac))
        self.lcap = cap - self.hcap
        self.s = collections.OrderedDict()   # recency stack, oldest first: k -> status
        self.q = collections.OrderedDict()   # resident HIR, oldest first
        self.lir, self.res = set(), set()
        self.ghosts = collections.OrderedDict()
        self.cap = cap

    def _prune(self):
        while self.s:
            k = next(iter(self.s))
            if k in self.lir:
                return
            del self.s[k]
            if k not in self.res:
                self.ghosts.pop(k, None)

    def _demote_bottom(self):
        k = next(iter(self.s))
        self.lir.discard(k)
        del self.s[k]
        self.q[k] = 1
        self._prune()

    def _push(self, k):
        self.s.pop(k, None)
        self.s[k] = 1

    def access(self, k):
        if k in self.lir:
            bottom = next(iter(self.s)) == k
            self._push(k)
            if bottom:
                self._prune()
            return True
        if k in self.res:                      # resident HIR
            if k in self.s:
                self.lir.add(k)
                del self.q[k]
                self._push(k)
                self._demote_bottom()
            else:
                self._push(k)
                self.q.move_to_end(k)
            return True
        # miss
        if len(self.lir) < self.lcap and not self.q:
            self.lir.add(k)
            self.res.add(k)
            self._push(k)
            return False
        if len(self.res) >= self.cap:
            v, _ = self.q.popitem(last=False)
            self.res.discard(v)
            if v in self.s:
                self.ghosts[v] = 1
                if len(self.ghosts) > 2 * self.cap:
                    g, _ = self.ghosts.popitem(last=False)
                    self.s.pop(g, None)
        self.res.add(k)
        if k in self.s:                        # a ghost: short reuse distance
            self.ghosts.pop(k, None)
            self.lir.add(k)
            self._push(k)
            self._demote_bottom()
        else:
            self._push(k)
            self.q[k] = 1
        return False


POLICIES = {
    "lru": LRU, "clock": Clock, "s3fifo": S3FIFO, "slru": SLRU, "arc": ARC,
    "lirs-1%": lambda c: LIRS(c, 0.01), "lirs-5%": lambda c: LIRS(c, 0.05),
    "lirs-10%": lambda c: LIRS(c, 0.10), "lirs-20%": lambda c: LIRS(c, 0.20),
}


def run(policy, cap, warm, measured):
    """(hit ratio of the measured accesses, misses of the measured part / misses of the
    warm part): the second is the dask acceptance's "second pass costs x% of the first"."""
    p = policy(cap)
    warm_miss = sum(1 for k in warm if not p.access(k))
    hits = sum(1 for k in measured if p.access(k))
    miss = len(measured) - hits
    return hits / max(1, len(measured)), (miss / warm_miss if warm_miss else None)


def c_replay(build_dir, cap, hir_pct, warm, measured):
    """Hit ratio of vsiplugin/cache/lirs.c on the measured part, through vt_lirs_replay."""
    ids = {}
    lines = [f"{cap} {hir_pct} {len(warm)}"]
    for k in warm + measured:
        lines.append(str(ids.setdefault(k, len(ids))))
    cp = subprocess.run([str(Path(build_dir) / "tests" / "tools" / "vt_lirs_replay")],
                        input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return float(cp.stdout.split()[0])


def main():
    global BLOCK
    ap = argparse.ArgumentParser(description="eviction policy simulator (issue 11)")
    ap.add_argument("--fixture", default=str(Path(__file__).resolve().parents[1] / "build" /
                    "fixtures" / "s2-10980px-b512-seed20230615-deflate-pred2-v2.tif"))
    ap.add_argument("--block", type=int, default=BLOCK,
                    help="cache block size in bytes (a power of two, at most 64 KiB)")
    ap.add_argument("--c-replay", metavar="BUILD_DIR")
    ap.add_argument("--json")
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    if a.block <= 0 or a.block & (a.block - 1) or a.block > HEADER:
        ap.error(f"--block {a.block}: a power of two up to {HEADER}")
    BLOCK = a.block
    lay = layout(a.fixture)
    rnd = random.Random(a.seed)
    workloads = {"dask": trace_dask(lay, rnd), "tiles": trace_tiles(lay, rnd),
                 "pool": trace_pool(lay, rnd)}
    fractions = {"dask": [1.0, 0.5, 0.25], "tiles": [0.5, 0.25, 0.1], "pool": [0.25, 0.1]}
    results = []
    for name, (warm, measured) in workloads.items():
        distinct = len(set(warm) | set(measured))
        for f in fractions[name]:
            cap = max(16, int(distinct * f))
            row = {"workload": name, "block": BLOCK, "fraction": f, "capacity_blocks": cap,
                   "distinct_blocks": distinct, "accesses": len(measured)}
            for pname, pol in POLICIES.items():
                hit, rel = run(pol, cap, warm, measured)
                row[pname] = round(hit, 4)
                if rel is not None:
                    row[pname + " misses/pass1"] = round(rel, 4)
            if a.c_replay:
                row["lirs-10% (plugin)"] = round(c_replay(a.c_replay, cap, 10, warm, measured), 4)
            results.append(row)
            print(json.dumps(row), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
