"""app.py: an example handler for the vsitune Lambda image: reads one window of
a COG from S3 through GDAL (and so through vsitune) and returns what it read.

Event: {"path": "/vsis3/bucket/key.tif", "window": [xoff, yoff, xsize, ysize]}
Result: the window's checksum and sum, the tuning tunerd applied, and the
plugin's own counters for this process (requests sent, LISTs and HEADs avoided).
"""
import hashlib
import json
import os

from osgeo import gdal

gdal.UseExceptions()

TUNING = ("GDAL_DRIVER_PATH", "GDAL_CACHEMAX", "VSITUNE_CACHE_SIZE", "VSITUNE_STATS_DIR",
          "TUNERD_WORKERS", "TUNERD_WORKER_KIND")


def handler(event, context):
    ds = gdal.Open(event["path"])
    x, y, w, h = event["window"]
    data = ds.GetRasterBand(1).ReadAsArray(x, y, w, h)
    drv = gdal.GetDriverByName("VSITUNE")
    return {
        "request_id": context.aws_request_id,
        "size": [ds.RasterXSize, ds.RasterYSize],
        "sha256": hashlib.sha256(data.tobytes()).hexdigest(),
        "sum": int(data.astype("int64").sum()),
        "tuning": {k: os.environ.get(k) for k in TUNING},
        "vsitune": json.loads(drv.GetMetadataItem("STATS")) if drv else None,
    }
