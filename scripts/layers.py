#!/usr/bin/python3
"""layers.py: the layer order of vsiplugin/ and tunerd/, and its check.

Why: a lower file that includes a higher header, or calls a higher file, is a
design bug (docs/architecture.md, "Layers"; STYLE.md 12). This script holds
the one table of which layer each source file is in (LAYERS below; the doc
states the order in words and points here) and fails when

  - a source file of vsiplugin/ or tunerd/ is not in the table;
  - a file includes ("x.h") a header of a higher layer, or the plugin a
    tunerd header (tunerd may include only SHARED_WITH_TUNERD of the plugin);
  - a file of BACKEND_BLIND (the read path, GDAL's read handler) includes
    or calls a file of one service (vsiplugin/backends/<service>/): they
    reach services only through backends/backend.h's table;
  - a file of one service (vsiplugin/backends/<service>/) includes or calls
    a file of another: services share through vsiplugin/backends/*.c|h
    (breq, userhdr, listxml) and lower layers, never through each other;
  - with --build: a file calls (an undefined symbol of its object, as `nm`
    lists it, so a locally declared prototype counts too) a function defined
    by a file of a higher layer, or the calls between files form a circle;
  - an entry of KNOWN (a circle not broken yet, each with its reason) is no
    longer seen: the list only shrinks;
  - the Python modules of bench/ import each other in a circle.

    /usr/bin/python3 scripts/layers.py [--build BUILD_DIR]

Prints one line per violation and exits 1, else exits 0.
tests/integration/test_layers.py runs it.
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Layer of every source file, lowest first. A file may include and call files
# of its own layer or below, never above; within a layer, no circle.
# The plugin (vsiplugin/), lowest first:
PLUGIN = {
    0: "base (pure or leaf: no vsitune module but these)",
    1: "options and parsers",
    2: "HTTP engine",
    3: "shared segment",
    4: "block cache",
    5: "credentials",
    6: "backends (every service's requests)",
    7: "counters",
    8: "read path",
    9: "GDAL face",
}
LAYERS = {
    # 0 base
    "vsiplugin/base/error.c": 0, "vsiplugin/base/error.h": 0,
    "vsiplugin/base/xmlscan.c": 0, "vsiplugin/base/xmlscan.h": 0,
    "vsiplugin/base/sha256.c": 0, "vsiplugin/base/sha256.h": 0,
    "common/sizeparse.c": 0, "common/sizeparse.h": 0,
    "common/defaults.h": 0, "common/statsnames.h": 0,
    "common/smallfile.c": 0, "common/smallfile.h": 0,
    "vsiplugin/base/forksafe.c": 0, "vsiplugin/base/forksafe.h": 0,
    "vsiplugin/base/slots.c": 0, "vsiplugin/base/slots.h": 0,
    "vsiplugin/base/hash.c": 0, "vsiplugin/base/hash.h": 0,
    "vsiplugin/read/policy.c": 0, "vsiplugin/read/policy.h": 0,
    "vsiplugin/read/planner.c": 0, "vsiplugin/read/planner.h": 0,
    "vsiplugin/read/tiffmap.c": 0, "vsiplugin/read/tiffmap.h": 0,
    "vsiplugin/cache/lirs.c": 0, "vsiplugin/cache/lirs.h": 0,
    "common/shmfit.c": 0, "common/shmfit.h": 0,
    "vsiplugin/auth/sigv4.c": 0, "vsiplugin/auth/sigv4.h": 0,
    "vsiplugin/http/engine_retry.c": 0, "vsiplugin/http/engine_retry.h": 0,
    "vsiplugin/stats/stats_fork.c": 0, "vsiplugin/stats/stats_fork.h": 0,
    "vsiplugin/stats/stats_oom.c": 0, "vsiplugin/stats/stats_oom.h": 0,
    "vsiplugin/compat/gdal_error.c": 0, "vsiplugin/compat/gdal_error.h": 0,
    "vsiplugin/compat/gdal_release.c": 0, "vsiplugin/compat/gdal_release.h": 0,
    "vsiplugin/base/notice.c": 0, "vsiplugin/base/notice.h": 0,
    "vsiplugin/gdal/streaming.c": 0, "vsiplugin/gdal/streaming.h": 0,
    "vsiplugin/gdal/stock.c": 0, "vsiplugin/gdal/stock.h": 0,
    # 1 options and parsers
    "vsiplugin/base/config.c": 1, "vsiplugin/base/config.h": 1,
    "vsiplugin/base/options.c": 1,  # the table config.h declares
    "vsiplugin/auth/creds_parse.c": 1, "vsiplugin/auth/creds_parse.h": 1,
    "vsiplugin/auth/creds.h": 1,  # the credential type the parsers fill
    # 2 HTTP engine
    "vsiplugin/http/engine.c": 2, "vsiplugin/http/engine.h": 2, "vsiplugin/http/engine_int.h": 2,
    "vsiplugin/http/engine_io.c": 2, "vsiplugin/http/engine_xfer.c": 2,
    "vsiplugin/http/engine_easy.c": 2,
    "vsiplugin/http/engine_state.c": 2, "vsiplugin/http/engine_sock.c": 2,
    "vsiplugin/http/engine_origin.c": 2,
    # 3 shared segment
    "vsiplugin/shm/shm_int.h": 3, "vsiplugin/shm/shmseg.c": 3, "vsiplugin/shm/shmseg.h": 3,
    "vsiplugin/shm/shmcache.c": 3, "vsiplugin/shm/shmcache.h": 3,
    "vsiplugin/shm/shmmeta.c": 3, "vsiplugin/shm/shmmeta.h": 3,
    "vsiplugin/shm/shmopts.c": 3, "vsiplugin/shm/shmopts.h": 3,
    "vsiplugin/shm/shmofd.c": 3, "vsiplugin/shm/shmofd.h": 3,
    "vsiplugin/shm/shmlayout.c": 3, "vsiplugin/shm/shmlock.c": 3,
    "vsiplugin/shm/shmproc.c": 3,
    "vsiplugin/shm/shmblocks.c": 3, "vsiplugin/shm/shmblocks.h": 3,
    "vsiplugin/shm/shmwatch/vsitune-shmwatch.c": 3,
    # 4 block cache
    "vsiplugin/cache/cache.c": 4, "vsiplugin/cache/cache.h": 4, "vsiplugin/cache/cache_int.h": 4,
    "vsiplugin/cache/cacheshm.c": 4,
    # 5 credentials
    "vsiplugin/auth/credkey.c": 5, "vsiplugin/auth/credkey.h": 5,
    "vsiplugin/auth/creds_int.h": 5, "vsiplugin/auth/creds_util.c": 5,
    "vsiplugin/auth/creds_opts.c": 5, "vsiplugin/auth/creds_profile.c": 5,
    "vsiplugin/auth/creds_meta.c": 5, "vsiplugin/auth/creds_sts.c": 5, "vsiplugin/auth/creds.c": 5,
    "vsiplugin/auth/gs_auth.h": 5, "vsiplugin/auth/gs_sign.c": 5, "vsiplugin/auth/gs_creds.c": 5,
    "vsiplugin/auth/gs_token.c": 5,
    "vsiplugin/auth/az_auth.h": 5, "vsiplugin/auth/az_sign.c": 5, "vsiplugin/auth/az_creds.c": 5,
    # 6 S3 requests
    "vsiplugin/backends/backend.h": 6, "vsiplugin/backends/backend.c": 6,
    "vsiplugin/backends/failmem.h": 6, "vsiplugin/backends/failmem.c": 6,
    "vsiplugin/backends/s3/s3_backend.c": 6, "vsiplugin/backends/s3/s3_ident.c": 6,
    "vsiplugin/backends/s3/s3.h": 6, "vsiplugin/backends/s3/s3_int.h": 6, "vsiplugin/backends/s3/s3_route.c": 6,
    "vsiplugin/backends/s3/s3_fail.c": 6, "vsiplugin/backends/s3/s3.c": 6,
    "vsiplugin/backends/s3/s3_transient.c": 6,
    "vsiplugin/backends/breq.c": 6, "vsiplugin/backends/breq.h": 6,
    "vsiplugin/backends/bfail.c": 6, "vsiplugin/backends/bfail.h": 6,
    "vsiplugin/backends/userhdr.c": 6, "vsiplugin/backends/userhdr.h": 6,
    "vsiplugin/backends/listxml.c": 6, "vsiplugin/backends/listxml.h": 6,
    "vsiplugin/backends/gs/gs_backend.c": 6, "vsiplugin/backends/gs/gs.c": 6,
    "vsiplugin/backends/gs/gs_int.h": 6,
    "vsiplugin/backends/curl/curl_int.h": 6, "vsiplugin/backends/curl/curl_url.c": 6,
    "vsiplugin/backends/curl/curl_opts.c": 6,
    "vsiplugin/backends/curl/curl_redirect.c": 6, "vsiplugin/backends/curl/curl_backend.c": 6,
    "vsiplugin/backends/az/az.c": 6, "vsiplugin/backends/az/az_int.h": 6,
    "vsiplugin/backends/az/az_list.c": 6,
    # 7 counters
    "vsiplugin/stats/stats.c": 7, "vsiplugin/stats/stats.h": 7,
    # 8 read path
    "vsiplugin/read/ident.c": 8, "vsiplugin/read/ident.h": 8,
    "vsiplugin/read/listing.c": 8, "vsiplugin/read/listing.h": 8,
    "vsiplugin/read/listing_table.c": 0, "vsiplugin/read/listing_table.h": 0,
    "vsiplugin/read/object.c": 8, "vsiplugin/read/object.h": 8,
    "vsiplugin/read/object_int.h": 8, "vsiplugin/read/object_table.c": 8,
    "vsiplugin/read/object_header.c": 8,
    "vsiplugin/read/hdrsize.c": 8, "vsiplugin/read/hdrsize.h": 8,
    "vsiplugin/read/object_shared.c": 8, "vsiplugin/read/object_missing.c": 8,
    "vsiplugin/read/object_read.c": 8, "vsiplugin/read/object_forget.c": 8,
    "vsiplugin/read/forget.c": 8, "vsiplugin/read/forget.h": 8,
    "vsiplugin/read/suspect.c": 8, "vsiplugin/read/suspect.h": 8,
    "vsiplugin/read/near.c": 8, "vsiplugin/read/near.h": 8,
    # 9 GDAL face
    "vsiplugin/gdal/handler.c": 9, "vsiplugin/gdal/handler.h": 9,
    "vsiplugin/gdal/handler_int.h": 9, "vsiplugin/gdal/handler_io.c": 9,
    "vsiplugin/gdal/handler_sib.c": 9,
    "vsiplugin/gdal/takeover.cpp": 9, "vsiplugin/gdal/takeover.h": 9,
    "vsiplugin/gdal/takeover_int.h": 9, "vsiplugin/gdal/takeover_stream.cpp": 9,
    "vsiplugin/gdal/takeover_install.cpp": 9,
    "vsiplugin/gdal/vtable.cpp": 9, "vsiplugin/gdal/vtable.h": 9,
    "vsiplugin/gdal/driver.cpp": 9, "vsiplugin/gdal/driver.h": 9,
    "vsiplugin/gdal/plugin.c": 9,
    # tunerd/, lowest first: 0 leaves, 1 readers and the ledger, 2 what they
    # make, 3 the counters directory, 4 its Prometheus text, 5 the command
    # line and its commands (commands.c runs a parsed vt_cli_opts), 6 main
    "tunerd/errbuf.c": 0, "tunerd/errbuf.h": 0,
    "tunerd/textfile.c": 0, "tunerd/textfile.h": 0,
    "tunerd/usage.c": 0, "tunerd/usage.h": 0,
    "tunerd/exitcode.h": 0,
    "tunerd/wholenum.c": 0, "tunerd/wholenum.h": 0,
    "tunerd/platform.c": 1, "tunerd/platform.h": 1,
    "tunerd/sizing.c": 1, "tunerd/sizing.h": 1,
    "tunerd/statsfile.c": 1, "tunerd/statsfile.h": 1,
    "tunerd/metricsd.c": 1, "tunerd/metricsd.h": 1,
    "tunerd/detect.c": 2, "tunerd/detect.h": 2,
    "tunerd/cgroup.c": 2, "tunerd/cgroup.h": 2,  # detect.c's cgroup reader
    "tunerd/envblock.c": 2, "tunerd/envblock.h": 2,
    "tunerd/emit.c": 2, "tunerd/emit.h": 2,
    "tunerd/kept.c": 2, "tunerd/kept.h": 2,
    "tunerd/watch.c": 2, "tunerd/watch.h": 2,
    "tunerd/statsdir.c": 3, "tunerd/statsdir.h": 3,
    "tunerd/prom.c": 4, "tunerd/prom.h": 4,
    "tunerd/commands.c": 5, "tunerd/commands.h": 5,
    "tunerd/cli.c": 5, "tunerd/cli.h": 5,
    "tunerd/main.c": 6,
}

# The plugin's files tunerd compiles or includes: none (the facts both share,
# the options' defaults included, are in common/).
SHARED_WITH_TUNERD = set()
# common/ is the code both programs compile (layer 0 of each); it includes
# only common/.

# Files that reach storage services only through backends/backend.h (one
# vt_backend table per service, STYLE.md 11: "the core never names one"):
# they include and call nothing under vsiplugin/backends/<service>/.
BACKEND_BLIND = ("vsiplugin/read/", "vsiplugin/gdal/handler")
SERVICE_RE = re.compile(r"^vsiplugin/backends/([^/]+)/")

# Circles not broken yet: (from, to) call edges allowed for now, each with its
# reason. Remove an entry when its circle is gone (the check then insists).
KNOWN = {
}

SOURCE_RE = re.compile(r"\.(c|cpp|h)$")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_files(root):
    out = []
    for top in ("vsiplugin", "tunerd", "common"):
        out += [p.relative_to(root).as_posix() for p in (root / top).rglob("*")
                if p.is_file() and SOURCE_RE.search(p.name)]
    return sorted(out)


def includes(root, files):
    """{file: [included file, as a path from root]} for local includes found."""
    out = {}
    for f in files:
        text = (root / f).read_text(errors="replace")
        got = []
        for name in INCLUDE_RE.findall(text):
            p = ((root / f).parent / name).resolve()
            try:
                rel = p.relative_to(root).as_posix()
            except ValueError:
                continue
            if p.is_file():
                got.append(rel)
                continue
            # the include path: vsiplugin/ (folder paths, "read/object.h")
            # and common/ (bare names)
            for top in ("vsiplugin", "common"):
                alt = root / top / name
                if alt.is_file():
                    got.append(alt.relative_to(root).as_posix())
                    break
        out[f] = got
    return out


def object_source(build, obj):
    """build/<dir>/CMakeFiles/<target>.dir/<path>.o -> <dir>/<path> (the source)."""
    rel = obj.relative_to(build).parts
    i = rel.index("CMakeFiles")
    src = Path(*rel[:i]) / Path(*rel[i + 2:])
    parts = []
    for part in src.parts:  # CMake writes ".." as "__"
        if part == "__" and parts:
            parts.pop()
        else:
            parts.append(part)
    return Path(*parts).as_posix()[:-2]


def calls(build):
    """{file: {called file}} from the objects' symbols (nm)."""
    defs, undef = {}, {}
    for obj in sorted(build.glob("*/CMakeFiles/*.dir/**/*.o")):
        top = obj.relative_to(build).parts[0]
        if top not in ("vsiplugin", "tunerd", "common"):
            continue
        src = object_source(build, obj)
        nm = subprocess.run(["nm", str(obj)], capture_output=True, text=True,
                            check=True).stdout
        for line in nm.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRV":
                defs.setdefault(f[2], src)
            elif len(f) == 2 and f[0] == "U":
                undef.setdefault(src, set()).add(f[1])
    out = {}
    for src, syms in undef.items():
        out[src] = {defs[s] for s in syms if s in defs and defs[s] != src}
    return out


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


PY_IMPORT_RE = re.compile(r"^\s*(?:from\s+(\w+)\s+import|import\s+(\w+))", re.M)


def python_imports(folder):
    """{module: {module of the same folder it imports}}, imports inside
    functions included."""
    mods = {p.stem: p for p in folder.glob("*.py")}
    out = {}
    for name, path in mods.items():
        found = {a or b for a, b in PY_IMPORT_RE.findall(path.read_text())}
        out[name] = {m for m in found if m in mods and m != name}
    return out


def program(f):
    return f.split("/", 1)[0]


def edge_problem(a, b, layers, what):
    """Why the edge a -> b (an include or a call) breaks the order, or None."""
    if b in SHARED_WITH_TUNERD and program(a) == "tunerd":
        return None
    if program(b) == "common" and program(a) != "common":
        return None
    if program(a) != program(b):
        return f"{a} {what} {b}: another program's file"
    if layers[b] > layers[a]:
        return f"{a} (layer {layers[a]}) {what} {b} (layer {layers[b]}): upward"
    return None


def backend_problem(a, b, what):
    """Why the edge a -> b names a service past backend.h, or one service's
    file names another's, or None."""
    if a.startswith(BACKEND_BLIND) and SERVICE_RE.match(b):
        return (f"{a} {what} {b}: a service's own file "
                "(the read path reaches services through backends/backend.h)")
    sa, sb = SERVICE_RE.match(a), SERVICE_RE.match(b)
    if sa and sb and sa.group(1) != sb.group(1):
        return (f"{a} {what} {b}: another service's file "
                "(services share through vsiplugin/backends/*.c|h)")
    return None


def check(files, incl, called, layers=None, known=None):
    """Every violation, as text; [] when the tree keeps the order."""
    layers = LAYERS if layers is None else layers
    known = KNOWN if known is None else known
    bad = [f"{f}: not in scripts/layers.py's LAYERS" for f in files if f not in layers]
    bad += [f"{f}: in LAYERS but not a source file" for f in layers if f not in files]
    for a, bs in sorted(incl.items()):
        for b in bs:
            if a in layers and b in layers:
                why = edge_problem(a, b, layers, "includes")
                if why:
                    bad.append(why)
            why = backend_problem(a, b, "includes")
            if why:
                bad.append(why)
    if called is not None:
        used = set()
        graph = {}
        for a, bs in sorted(called.items()):
            for b in sorted(bs):
                why = backend_problem(a, b, "calls")
                if why:
                    bad.append(why)
                if (a, b) in known:
                    used.add((a, b))
                    continue
                graph.setdefault(a, set()).add(b)
                if a in layers and b in layers:
                    why = edge_problem(a, b, layers, "calls")
                    if why:
                        bad.append(why)
        bad += ["call circle: " + " <-> ".join(c) for c in circles(graph)]
        bad += [f"KNOWN {a} -> {b} is no longer called: remove it"
                for a, b in sorted(set(known) - used)]
    return bad


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a build directory: check the calls too (nm)")
    ap.add_argument("--root", default=str(ROOT))
    a = ap.parse_args(argv)
    root = Path(a.root).resolve()
    files = source_files(root)
    called = calls(Path(a.build).resolve()) if a.build else None
    bad = check(files, includes(root, files), called)
    bad += ["bench/ import circle: " + " <-> ".join(c)
            for c in circles(python_imports(root / "bench"))]
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
