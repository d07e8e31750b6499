"""plugin_defaults.py: the plugin's compiled-in defaults, read from the source they are
compiled from (common/defaults.h), for the tests and the bench alike: one parser, so a
changed default cannot leave one of them expecting the old value.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cache_size_default(src_dir=None):
    """VSITUNE_CACHE_SIZE's default, in bytes, as `src_dir`/common/defaults.h (the
    repository's when None) defines VT_DEFAULT_CACHE_SIZE (a whole number of MiB)."""
    path = Path(src_dir or REPO) / "common" / "defaults.h"
    m = re.search(r"#define VT_DEFAULT_CACHE_SIZE \((\d+)u \* 1024 \* 1024\)",
                  path.read_text())
    if not m:
        raise RuntimeError(f"{path}: no VT_DEFAULT_CACHE_SIZE in MiB")
    return int(m.group(1)) << 20


def block_size_default(src_dir=None):
    """VSITUNE_BLOCK_SIZE's default, in bytes, as `src_dir`/common/defaults.h (the
    repository's when None) defines VT_DEFAULT_BLOCK_SIZE (a whole number of KiB)."""
    path = Path(src_dir or REPO) / "common" / "defaults.h"
    m = re.search(r"#define VT_DEFAULT_BLOCK_SIZE \((\d+)u \* 1024\)", path.read_text())
    if not m:
        raise RuntimeError(f"{path}: no VT_DEFAULT_BLOCK_SIZE in KiB")
    return int(m.group(1)) << 10
