"""tile_app.py: a TiTiler-shaped FastAPI app, for issue 11's uvicorn scenario.

GET /tiles/{scene}/{z}/{x}/{y} opens scene number `scene` (TILE_SCENES: comma-separated
GDAL paths) with rasterio, reads the window a web-map tile of zoom z covers (the
scene's width over 2^z, as if the scene filled zoom 0), resampled to 256x256 (GDAL
picks the overview level, as TiTiler's readers do), and returns the raw uint16
pixels. A plain `def` endpoint: FastAPI runs it in its thread pool, as TiTiler does.
Run under uvicorn: uvicorn --app-dir bench/probes tile_app:app --workers N.
"""

import os

import rasterio
from fastapi import FastAPI, Response
from rasterio.enums import Resampling
from rasterio.windows import Window

SCENES = [s for s in os.environ.get("TILE_SCENES", "").split(",") if s]
app = FastAPI()


def read_tile(path, z, x, y):
    """The tile's pixels as a (256, 256) uint16 array (shared with the checker)."""
    with rasterio.open(path) as src:
        span = src.width / (2 ** z)
        win = Window(x * span, y * span, span, span)
        return src.read(1, window=win, out_shape=(256, 256), resampling=Resampling.nearest,
                        boundless=True, fill_value=0)


@app.get("/tiles/{scene}/{z}/{x}/{y}")
def tile(scene: int, z: int, x: int, y: int):
    a = read_tile(SCENES[scene], z, x, y)
    return Response(a.tobytes(), media_type="application/octet-stream",
                    headers={"x-worker-pid": str(os.getpid())})  # the load's spread


@app.get("/pid")
def pid():
    return {"pid": os.getpid()}
