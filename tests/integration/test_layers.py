"""test_layers.py: vsiplugin/ and tunerd/ keep their layer order (scripts/layers.py),
and no product source file is longer than MAX_LINES.

No lab: the includes are read from the sources and the calls from the built
objects' symbols (nm), so a function called through a prototype declared in
place counts as a call. The checker itself is checked on made-up trees and
objects: each kind of violation it exists to catch makes it fail.

The size rule (docs/architecture.md, "Where things are"): every .c, .cpp and
.h of vsiplugin/, tunerd/ and common/ (layers.py's source files) has at most
MAX_LINES lines; a file past it is named with its length, to be split along
a concept seam (STYLE.md 1), not chopped.
"""

import importlib.util
import subprocess
import textwrap

import lab_client

REPO = lab_client.REPO
spec = importlib.util.spec_from_file_location("layers", REPO / "scripts" / "layers.py")
layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layers)


def test_tree_keeps_the_layer_order():
    """The real tree and its build: every file has a layer, nothing includes or
    calls upward, no call circle beyond the listed (shrinking) KNOWN ones."""
    build = lab_client.build_dir()
    assert list(build.glob("vsiplugin/CMakeFiles/*.dir/**/*.o")), f"no objects in {build}"
    r = subprocess.run(["/usr/bin/python3", str(REPO / "scripts" / "layers.py"),
                        "--build", str(build)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


MAX_LINES = 700


def too_long(root, files, limit=MAX_LINES):
    """'path: N lines (over limit)' for every file of files (paths from root)
    longer than limit, longest first."""
    out = []
    for f in files:
        with open(root / f, "rb") as fh:
            n = sum(1 for _ in fh)
        if n > limit:
            out.append((n, f))
    return [f"{f}: {n} lines (over {limit})" for n, f in sorted(out, key=lambda x: (-x[0], x[1]))]


def test_no_source_file_over_the_size_limit():
    files = layers.source_files(REPO)
    assert len(files) > 100, "too few source files: the walk is broken"
    bad = too_long(REPO, files)
    assert not bad, "\n".join(bad)


def test_size_rule_names_the_long_file_and_its_length(tmp_path):
    files = _tree(tmp_path, {
        "vsiplugin/ok.c": "x\n" * MAX_LINES,
        "vsiplugin/gdal/long.cpp": "x\n" * (MAX_LINES + 1),
        "tunerd/longer.h": "x\n" * (MAX_LINES + 40) + "no newline at the end",
        "common/short.c": "",
    })
    assert too_long(tmp_path, files) == [
        f"tunerd/longer.h: {MAX_LINES + 41} lines (over {MAX_LINES})",
        f"vsiplugin/gdal/long.cpp: {MAX_LINES + 1} lines (over {MAX_LINES})"]
    assert too_long(tmp_path, files, limit=MAX_LINES + 41) == []


def _tree(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return layers.source_files(tmp_path)


def test_upward_include_and_unknown_file_fail(tmp_path):
    table = {"vsiplugin/low.c": 0, "vsiplugin/low.h": 0,
             "vsiplugin/high.c": 1, "vsiplugin/high.h": 1}
    files = _tree(tmp_path, {
        "vsiplugin/low.c": '#include "low.h"\n#include "high.h"\n',
        "vsiplugin/low.h": "", "vsiplugin/high.c": '#include "low.h"\n',
        "vsiplugin/high.h": "", "vsiplugin/stray.c": ""})
    bad = layers.check(files, layers.includes(tmp_path, files), None, table, {})
    assert bad == ["vsiplugin/stray.c: not in scripts/layers.py's LAYERS",
                   "vsiplugin/low.c (layer 0) includes vsiplugin/high.h (layer 1): upward"]
    table["vsiplugin/stray.c"] = 1
    files.remove("vsiplugin/low.c")
    (tmp_path / "vsiplugin/low.c").unlink()
    table.pop("vsiplugin/low.c")
    assert layers.check(files, layers.includes(tmp_path, files), None, table, {}) == []


def _objects(tmp_path, sources):
    """Compile sources into a CMake-shaped build directory; return it."""
    build = tmp_path / "build"
    for name, text in sources.items():
        obj = build / "vsiplugin" / "CMakeFiles" / "vtcore.dir" / (name + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        src = tmp_path / name
        src.write_text(textwrap.dedent(text))
        subprocess.run(["cc", "-c", "-o", str(obj), str(src)], check=True)
    return build


def test_upward_call_through_a_local_prototype_and_circles_fail(tmp_path):
    build = _objects(tmp_path, {
        # low.c declares high's function itself: no include shows the call
        "low.c": "void vt__high(void);\nvoid vt__low(void) { vt__high(); }\n",
        "high.c": "void vt__low(void);\nvoid vt__high(void) { }\n"
                  "void vt__high2(void) { vt__low(); }\n",
        "a.c": "void vt__b(void);\nvoid vt__a(void) { vt__b(); }\n",
        "b.c": "void vt__a(void);\nvoid vt__b(void) { vt__a(); }\n",
    })
    called = layers.calls(build)
    assert called["vsiplugin/low.c"] == {"vsiplugin/high.c"}
    table = {"vsiplugin/low.c": 0, "vsiplugin/high.c": 1,
             "vsiplugin/a.c": 0, "vsiplugin/b.c": 0}
    files = sorted(table)
    bad = layers.check(files, {}, called, table, {})
    assert "vsiplugin/low.c (layer 0) calls vsiplugin/high.c (layer 1): upward" in bad
    assert "call circle: vsiplugin/a.c <-> vsiplugin/b.c" in bad
    assert "call circle: vsiplugin/high.c <-> vsiplugin/low.c" in bad
    # a KNOWN circle passes while it exists; a KNOWN edge no longer called fails
    known = {("vsiplugin/a.c", "vsiplugin/b.c"): "why", ("vsiplugin/b.c", "vsiplugin/a.c"): "why",
             ("vsiplugin/low.c", "vsiplugin/high.c"): "why",
             ("vsiplugin/high.c", "vsiplugin/a.c"): "gone"}
    assert layers.check(files, {}, called, table, known) == [
        "KNOWN vsiplugin/high.c -> vsiplugin/a.c is no longer called: remove it"]


def test_read_path_names_no_service(tmp_path):
    """read/ and gdal/handler.c reach services through backends/backend.h:
    including or calling a file of backends/<service>/ fails, even where the
    layers allow it."""
    table = {"vsiplugin/backends/backend.h": 6, "vsiplugin/backends/s3/s3.h": 6,
             "vsiplugin/backends/s3/s3.c": 6, "vsiplugin/read/obj.c": 8,
             "vsiplugin/gdal/handler.c": 9, "vsiplugin/gdal/plugin.c": 9}
    files = _tree(tmp_path, {
        "vsiplugin/backends/backend.h": "", "vsiplugin/backends/s3/s3.h": "",
        "vsiplugin/backends/s3/s3.c": '#include "s3.h"\n',
        "vsiplugin/read/obj.c": '#include "backends/backend.h"\n'
                                '#include "backends/s3/s3.h"\n',
        "vsiplugin/gdal/handler.c": '#include "backends/s3/s3.h"\n',
        # the plugin's setup names the service its handler serves: allowed
        "vsiplugin/gdal/plugin.c": '#include "backends/s3/s3.h"\n'})
    called = {"vsiplugin/read/obj.c": {"vsiplugin/backends/s3/s3.c"},
              "vsiplugin/gdal/plugin.c": {"vsiplugin/backends/s3/s3.c"}}
    bad = layers.check(files, layers.includes(tmp_path, files), called, table, {})
    why = ": a service's own file (the read path reaches services through backends/backend.h)"
    assert bad == [
        "vsiplugin/gdal/handler.c includes vsiplugin/backends/s3/s3.h" + why,
        "vsiplugin/read/obj.c includes vsiplugin/backends/s3/s3.h" + why,
        "vsiplugin/read/obj.c calls vsiplugin/backends/s3/s3.c" + why]
    (tmp_path / "vsiplugin/read/obj.c").write_text('#include "backends/backend.h"\n')
    (tmp_path / "vsiplugin/gdal/handler.c").write_text('#include "backends/backend.h"\n')
    assert layers.check(files, layers.includes(tmp_path, files), {}, table, {}) == []


def test_service_names_no_other_service(tmp_path):
    """A file of backends/<service>/ includes and calls nothing of another
    service's folder: what services share lives in backends/ itself."""
    table = {"vsiplugin/backends/userhdr.h": 6, "vsiplugin/backends/userhdr.c": 6,
             "vsiplugin/backends/s3/s3_int.h": 6, "vsiplugin/backends/s3/s3.c": 6,
             "vsiplugin/backends/curl/curl.c": 6}
    files = _tree(tmp_path, {
        "vsiplugin/backends/userhdr.h": "",
        "vsiplugin/backends/userhdr.c": '#include "backends/userhdr.h"\n',
        "vsiplugin/backends/s3/s3_int.h": "",
        # its own folder's header and backends/' shared one: allowed
        "vsiplugin/backends/s3/s3.c": '#include "backends/s3/s3_int.h"\n'
                                      '#include "backends/userhdr.h"\n',
        "vsiplugin/backends/curl/curl.c": '#include "backends/userhdr.h"\n'
                                          '#include "backends/s3/s3_int.h"\n'})
    called = {"vsiplugin/backends/curl/curl.c": {"vsiplugin/backends/userhdr.c",
                                                 "vsiplugin/backends/s3/s3.c"},
              "vsiplugin/backends/s3/s3.c": {"vsiplugin/backends/userhdr.c"}}
    bad = layers.check(files, layers.includes(tmp_path, files), called, table, {})
    why = ": another service's file (services share through vsiplugin/backends/*.c|h)"
    assert bad == [
        "vsiplugin/backends/curl/curl.c includes vsiplugin/backends/s3/s3_int.h" + why,
        "vsiplugin/backends/curl/curl.c calls vsiplugin/backends/s3/s3.c" + why]
    (tmp_path / "vsiplugin/backends/curl/curl.c").write_text('#include "backends/userhdr.h"\n')
    called["vsiplugin/backends/curl/curl.c"] = {"vsiplugin/backends/userhdr.c"}
    assert layers.check(files, layers.includes(tmp_path, files), called, table, {}) == []


def test_tunerd_may_include_only_the_shared_plugin_files(tmp_path):
    """tunerd includes common/ and the plugin's shared headers only (none
    since the options' defaults moved to common/defaults.h); common/
    includes nothing of either program."""
    table = {"tunerd/t.c": 3, "vsiplugin/base/config.h": 1, "vsiplugin/read/object.h": 0,
             "vsiplugin/p.c": 5, "tunerd/t.h": 0, "common/c.h": 0, "common/c.c": 0}
    files = _tree(tmp_path, {
        "tunerd/t.c": '#include "base/config.h"\n#include "read/object.h"\n#include "c.h"\n',
        "tunerd/t.h": "", "vsiplugin/base/config.h": "", "vsiplugin/read/object.h": "",
        "vsiplugin/p.c": '#include "../tunerd/t.h"\n#include "c.h"\n',
        "common/c.h": "", "common/c.c": '#include "c.h"\n#include "read/object.h"\n'})
    bad = layers.check(files, layers.includes(tmp_path, files), None, table, {})
    assert bad == ["common/c.c includes vsiplugin/read/object.h: another program's file",
                   "tunerd/t.c includes vsiplugin/base/config.h: another program's file",
                   "tunerd/t.c includes vsiplugin/read/object.h: another program's file",
                   "vsiplugin/p.c includes tunerd/t.h: another program's file"]


def test_python_import_circle_fails(tmp_path):
    (tmp_path / "render.py").write_text("import json\n\ndef r():\n    import shared\n")
    (tmp_path / "shared.py").write_text("from render import f\n")
    (tmp_path / "cells.py").write_text("")
    assert layers.circles(layers.python_imports(tmp_path)) == [["render", "shared"]]
    (tmp_path / "shared.py").write_text("from cells import f\n")
    assert layers.circles(layers.python_imports(tmp_path)) == []
