"""test_arch_doc_names.py: every name docs/architecture.md gives exists (issue 19, item 9).

Why: the doc is where a new engineer starts, and files and functions move
(object.c split into object_*.c, handler.c into handler_*.c, ...). A doc that
sends the reader to a file or function that is no longer there is worse than
none. No lab: the doc and the folder READMEs are read against the tree.

Checked, in docs/architecture.md and every README.md under vsiplugin/ and
common/:
  - every file name (`name.c`, `name.h`, `name.cpp`, the short form
    `name.c/.h`) is a file of the tree;
  - every `vt__name` and every backquoted lower-case identifier with an
    underscore (`pin_blocks`) occurs in the sources;
  - a function named beside a file ("object_read.c `pin_blocks`",
    "engine.c's `default_cainfo`", "`vt__s3_split` (s3_route.c)") is
    declared or defined at the top level of that file (a line that starts
    with no indent names it), so a function that moved to another file
    fails where the doc still places it in the old one.
And vsiplugin/README.md's table of what each folder may call names every
folder another folder's sources include.
test_arch_doc.c (ctest) checks the other way: every source file is named.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent

# Files named in the doc that are not vsitune's, each with why.
FOREIGN = {
    "http2.c": "curl's lib/http2.c, where the h2 stall comes from",
    "gdalproxypool.cpp": "GDAL's gcore/gdalproxypool.cpp, the VRT sources' dataset pool",
}
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
SOURCE_DIRS = ("vsiplugin", "common", "tunerd", "tests/unit", "tests/tools")

FILE_RE = re.compile(r"(?<![\w-])([\w-]+)\.(cpp|c|h)(?![\w])(/\.h)?")
VT_RE = re.compile(r"(?<!\w)vt__\w+(?![\w<])")  # not a pattern: vt__backend_<service>
QUOTED_IDENT_RE = re.compile(r"`([a-z][a-z0-9]*_[a-z0-9_]*)(?:\(\))?`")
FILE_PART = r"([\w-]+\.(?:cpp|c|h))"
# a function's name: lower case, an underscore, not a file's name
IDENT_PART = r"`?([a-z][a-z0-9]*_\w*)(?![\w.-])`?"
# "file.c fn", "file.c's fn", "(file.c `fn`"
FILE_THEN_FN = re.compile(FILE_PART + r"(?:'s)? +" + IDENT_PART)
# "`fn` (file.c)", "`fn`, file.h)"
FN_THEN_FILE = re.compile(r"`([a-z][a-z0-9]*_\w*)`(?: \(|, )" + FILE_PART + r"[),;:]")


def tree_files(repo):
    """basename -> list of paths, for every file of the tree (build output
    and dot-folders left out)."""
    out = {}
    for p in repo.rglob("*"):
        rel = p.relative_to(repo)
        if any(part in SKIP_DIRS or part.startswith("build") for part in rel.parts[:-1]):
            continue
        if p.is_file():
            out.setdefault(p.name, []).append(p)
    return out


def source_text(repo):
    text = []
    for d in SOURCE_DIRS:
        for p in sorted((repo / d).rglob("*")):
            if p.suffix in (".c", ".h", ".cpp") and p.is_file():
                text.append(p.read_text(errors="replace"))
    return "\n".join(text)


def top_level_names(path, ident):
    """True when a line of path that starts with no indent names ident."""
    word = re.compile(r"(?<!\w)" + re.escape(ident) + r"(?!\w)")
    for line in path.read_text(errors="replace").splitlines():
        if line[:1] not in ("", " ", "\t", "*", "/") and word.search(line):
            return True
    return False


def problems(doc, files, sources):
    """Every stale name of doc, one line each."""
    out = []
    for m in FILE_RE.finditer(doc):
        names = [m.group(1) + "." + m.group(2)]
        if m.group(3):
            names.append(m.group(1) + ".h")
        for n in names:
            if n not in files and n not in FOREIGN:
                out.append(f"no file {n}")
    idents = set(VT_RE.findall(doc)) | set(QUOTED_IDENT_RE.findall(doc))
    for ident in sorted(idents):
        if not re.search(r"(?<!\w)" + re.escape(ident) + r"(?!\w)", sources):
            out.append(f"no {ident} in the sources")
    pairs = [(m.group(1), m.group(2)) for m in FILE_THEN_FN.finditer(doc)]
    pairs += [(m.group(2), m.group(1)) for m in FN_THEN_FILE.finditer(doc)]
    for fname, ident in pairs:
        if fname in FOREIGN or fname not in files:
            continue
        if not any(top_level_names(p, ident) for p in files[fname]):
            out.append(f"{ident} is not declared or defined in {fname}")
    return sorted(set(out))


def docs(repo):
    yield repo / "docs" / "architecture.md"
    for d in ("vsiplugin", "common"):
        yield from sorted((repo / d).rglob("README.md"))


def test_every_name_in_the_docs_exists():
    files = tree_files(REPO)
    sources = source_text(REPO)
    found = []
    checked = 0
    for doc in docs(REPO):
        text = doc.read_text()
        checked += len(FILE_RE.findall(text))
        found += [f"{doc.relative_to(REPO)}: {p}" for p in problems(text, files, sources)]
    assert checked > 100, "the doc names too few files: the matcher is broken"
    assert not found, "\n".join(found)


def test_matcher_finds_stale_names(tmp_path):
    """Each kind of stale name fails, and what is true passes."""
    (tmp_path / "read").mkdir()
    (tmp_path / "read" / "object.c").write_text(
        "static int pin_blocks(int a)\n{\n    return helper_call(a);\n}\n")
    (tmp_path / "read" / "object.h").write_text("int vt__object_read(void);\n")
    (tmp_path / "read" / "old.c").write_text("void f(void)\n{\n    pin_blocks(1);\n}\n")
    files = tree_files(tmp_path)
    sources = "\n".join(p.read_text() for ps in files.values() for p in ps)

    def bad(text):
        return problems(text, files, sources)

    assert bad("object.c `pin_blocks`; object.c/.h; `vt__object_read` (object.h)") == []
    assert bad("engine's lib/http2.c") == []
    assert bad("`vt__backend_<service>`") == []  # a pattern, not a name
    assert bad("gone.c") == ["no file gone.c"]
    assert bad("old.c/.h") == ["no file old.h"]
    assert bad("`vt__gone`") == ["no vt__gone in the sources"]
    assert bad("`gone_fn`") == ["no gone_fn in the sources"]
    # named in the file, but only as a call: the function lives elsewhere
    assert bad("old.c `pin_blocks`") == ["pin_blocks is not declared or defined in old.c"]
    assert bad("old.c's `pin_blocks`") == ["pin_blocks is not declared or defined in old.c"]
    assert bad("`pin_blocks` (old.c)") == ["pin_blocks is not declared or defined in old.c"]
    assert bad("object.c `helper_call`") == ["helper_call is not declared or defined in object.c"]


# vsiplugin/README.md's table of folders and what each may call, against the
# includes: a folder that includes a header of a folder its row does not
# name makes the table false (docs/architecture.md points readers to it).
FOLDERS = ("gdal", "read", "stats", "backends", "auth", "cache", "shm", "http",
           "compat", "base", "common")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def may_call(readme):
    """folder -> the folders its row of the table names (a row saying
    "everything below" names every folder of the rows under it)."""
    rows = re.findall(r"^\| `(\w+)/` \|[^|]*\| ([^|]*) \|$", readme, re.M)
    out = {}
    for i, (folder, cell) in enumerate(rows):
        if "everything below" in cell:
            out[folder] = {f for f, _ in rows[i + 1:]} | {"common"}
        else:
            out[folder] = {f for f in FOLDERS if re.search(r"(?<![\w/])" + f + r"\b", cell)}
    return out


def folder_includes(repo):
    """(folder, included folder, file) for every include that leaves its folder."""
    out = set()
    for p in sorted((repo / "vsiplugin").rglob("*")):
        if p.suffix not in (".c", ".h", ".cpp") or not p.is_file():
            continue
        folder = p.relative_to(repo / "vsiplugin").parts[0]
        for inc in INCLUDE_RE.findall(p.read_text(errors="replace")):
            if "/" in inc:
                to = inc.split("/")[0]
            elif (repo / "common" / inc).exists():
                to = "common"
            else:
                continue
            if to != folder:
                out.add((folder, to, str(p.relative_to(repo))))
    return out


def table_problems(readme, incl):
    allowed = may_call(readme)
    return sorted(f"{file}: {a}/ includes {b}/, which vsiplugin/README.md's row for {a}/ does not name"
                  for a, b, file in incl if b not in allowed.get(a, set()))


def test_folder_table_names_every_include():
    readme = (REPO / "vsiplugin" / "README.md").read_text()
    assert len(may_call(readme)) >= 10, "the table was not read"
    bad = table_problems(readme, folder_includes(REPO))
    assert not bad, "\n".join(bad)


def test_folder_table_reader():
    readme = ("| `top/` | x | everything below |\n| `read/` | x | cache, base |\n"
              "| `cache/` | x | shm, base |\n| `shm/` | x | base, common |\n")
    assert may_call(readme)["read"] == {"cache", "base"}
    assert may_call(readme)["top"] == {"read", "cache", "shm", "common"}
    incl = {("read", "cache", "read/a.c"), ("cache", "read", "cache/b.c"), ("shm", "common", "shm/c.c")}
    assert table_problems(readme, incl) == [
        "cache/b.c: cache/ includes read/, which vsiplugin/README.md's row for cache/ does not name"]
