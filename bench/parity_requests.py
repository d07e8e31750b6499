#!/usr/bin/env python3
"""parity_requests.py: the requests of the parity suite, stock GDAL beside vsitune.

The differential suite (tests/integration/test_parity_*.py) records, for every case, what
the S3 lab saw from each side ($VT_BUILD_DIR/parity/requests.json; counts by kind and
bytes). This prints the `gdalinfo` rows of it as a markdown table (the shape of
docs/performance.md's section 13, which bench scenario 13 measures on its own): how many
LISTs and GETs an open costs per layout, measured in the same run for both. Nothing is asserted here (the suite asserts the answers are equal);
this only reports the wire.

    VT_BUILD_DIR=build /usr/bin/python3 bench/parity_requests.py [requests.json]
"""

import json
import os
import sys
from pathlib import Path


def load(path=None):
    if path is None:
        path = Path(os.environ.get("VT_BUILD_DIR", "build")) / "parity" / "requests.json"
    return json.loads(Path(path).read_text())


def cell(c):
    if not c:
        return "-"
    parts = [f"{c.get('LIST', 0)} LIST", f"{c.get('GET_RANGE', 0) + c.get('GET', 0)} GET"]
    if c.get("HEAD"):
        parts.append(f"{c['HEAD']} HEAD")
    return f"{c.get('total', 0)} ({', '.join(parts)})"


def table(data, what="gdalinfo"):
    rows = ["| case | stock GDAL | vsitune |", "| --- | --- | --- |"]
    for case in sorted(data):
        sides = data[case].get(what)
        if not sides or "stock" not in sides or "vsitune" not in sides:
            continue
        rows.append(f"| {case} | {cell(sides['stock'])} | {cell(sides['vsitune'])} |")
    return "\n".join(rows)


def main(argv):
    data = load(argv[1] if len(argv) > 1 else None)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
