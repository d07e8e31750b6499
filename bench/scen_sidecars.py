"""scen_sidecars.py: scenario 13, what the sibling question costs per layout (issue 9).

Every raster layout of the differential suite (tests/integration/parity_fixtures.py: a
COG, a COG with an .aux.xml, tiled and striped TIFFs with .ovr, .msk, world files and
PAM, a VRT with .vrt.ovr, AAIGrid with .prj, SRTM, ENVI, EHdr, HFA, Idrisi, GeoPackage,
Zarr, archives) is uploaded to the lab, then `gdalinfo -json -checksum` of it runs in a
fresh process per contender, stock and vsitune alternately, on h1. The lab's log gives
the LISTs, GETs and HEADs. Stock GDAL is the oracle: each row also says whether the two
outputs (exit status and stdout) were identical, so no count of a wrong answer is shown
as a saving. The COG with an .aux.xml differs by design (a COG is opened without sidecar
lookups unless VSITUNE_SIDECARS=YES; docs/compatibility.md). Seed 001's tuned settings
are left out: EMPTY_DIR loses the sidecars these layouts carry.
"""

import hashlib
import os
import subprocess

import common

SIDES = ("stock", "vsitune")


def sidecars(ctx):
    os.environ["VT_BUILD_DIR"] = str(ctx.build_dir)  # where parity_fixtures builds
    import parity_fixtures

    lab, prog = ctx.lab, ctx.progress
    cases = parity_fixtures.build()
    parity_fixtures.upload(lab, cases)
    names = sorted(n for n, c in cases.items() if c.kind == "raster"
                   and (ctx.p["sidecar_cases"] is None or n in ctx.p["sidecar_cases"]))
    prog.start("13 sidecars", len(names) * len(SIDES))
    rows = {}
    for n in names:
        path = cases[n].path
        row = {}
        for side in SIDES:
            env = common.contender_env(lab, side, "h1", ctx.build_dir)
            lab.reset()
            cp = subprocess.run(["gdalinfo", "-json", "-checksum", path], env=env,
                                capture_output=True, text=True,
                                timeout=ctx.p["watchdog_s"])
            row[side] = {"rc": cp.returncode,
                         "out": hashlib.sha256(cp.stdout.encode()).hexdigest(),
                         "requests": common.request_summary(lab.log())}
            prog.step(f"{n} {side}")
        row["identical"] = all(row["stock"][k] == row["vsitune"][k] for k in ("rc", "out"))
        for side in SIDES:
            del row[side]["out"]
        rows[n] = row
    return {"endpoint": "h1", "command": "gdalinfo -json -checksum", "cases": rows}
