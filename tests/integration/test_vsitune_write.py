"""test_vsitune_write.py: writes go to GDAL's own handler, and vsitune's memory of
a name (a remembered 404, an object's size and ETag) never hides what was written.
"""

import json
import subprocess

from osgeo import gdal

import lab_client
from test_vsitune_helpers import VT_UA

WRITE_THEN_READ = r'''
import json, sys
from osgeo import gdal
gdal.UseExceptions()
src, dst = sys.argv[1], sys.argv[2]
out = {"before": gdal.VSIStatL(dst) is not None}
gdal.Translate(dst, src, format="COG", srcWin=[0, 0, 512, 512])
st = gdal.VSIStatL(dst)
out["after_size"] = st.size if st else None
ds = gdal.Open(dst)
out["checksum"] = ds.GetRasterBand(1).Checksum()
ds = None
lds = gdal.Open(src)
wds = gdal.Translate("/vsimem/w.tif", lds, srcWin=[0, 0, 512, 512])  # held while its band is used
out["want"] = wds.GetRasterBand(1).Checksum()
print(json.dumps(out))
'''


def test_write_cog_costs_two_requests_and_reads_back(lab, small_cog):
    key = "written/by-vsitune.tif"
    env = lab_client.gdal_env(lab.env("h1"), vsitune=True,
                              extra={"CPL_VSIL_USE_TEMP_FILE_FOR_RANDOM_WRITE": "YES"})
    cp = subprocess.run(["/usr/bin/python3", "-c", WRITE_THEN_READ, small_cog["path"],
                         f"/vsis3/lab/{key}"], env=env, capture_output=True, text=True,
                        timeout=300)
    assert cp.returncode == 0, cp.stderr[-2000:]
    out = json.loads(cp.stdout.strip().splitlines()[-1])
    # The stat before the write saw a 404; it must not hide the written object.
    assert out["before"] is False
    assert out["after_size"] and out["after_size"] > 0
    assert out["checksum"] == out["want"]
    log = lab.log()
    puts = [e for e in log if e["method"] in ("PUT", "POST")]
    assert puts and all(e["status"] == 200 for e in puts)
    # Before the upload: one GET (404) in all, however many times GDAL asked.
    # vsitune's own listings answer GDAL's stats and sibling lookups: the name's
    # directory and, from GDAL 3.10 on (whose GTiff probes x.xml, x.XML,
    # x.tif.msk ... of a file it writes), the stem of the missing name; each once.
    # Stock GDAL sends a GET and a listing for each of those probes (3.10: 11
    # requests before its upload, 3.13: 15).
    before = log[:log.index(puts[0])]
    gets = [(e["method"], e["status"], e["key"]) for e in before if e["kind"] != "LIST"]
    assert gets == [("GET", 404, key)], before
    ours = [e["query"] for e in before
            if e["kind"] == "LIST" and (e["user_agent"] or "").startswith(VT_UA)]
    assert len(ours) == len(set(ours)) <= 2, ours
    # Listings are GDAL's own code (README): from 3.10 on GTiff's CreateCopy lists the
    # directory once more itself (GTiffDataset::GetSiblingFiles calls VSIReadDirEx,
    # not VSISiblingFiles, which vsitune answers); none on 3.6.
    theirs = [e["query"] for e in before
              if e["kind"] == "LIST" and not (e["user_agent"] or "").startswith(VT_UA)]
    assert len(theirs) == (1 if int(gdal.VersionInfo()) >= 3100000 else 0), theirs
    assert all("prefix=written%2F" in q for q in ours + theirs), ours + theirs
    assert all(e["sig"] == "ok" for e in log)
