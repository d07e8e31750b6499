"""make_cogs.py: the COGs of the bench's user workloads (issue 22), made from a lab fixture.

many OUT SRC
    One COG with the s2 fixture's layout (10980x10980 uint16, EPSG:32632, 10 m,
    512x512 DEFLATE + predictor tiles, nodata 0, internal overviews), so its header is
    what a Sentinel-2 band's is, but sparse (SPARSE_OK: only its first tile holds
    pixels, SRC's 512x512 tile at its centre), so the hundreds of copies the many-object
    scenario uploads stay small. Prints {"result": {"bytes", "header_bytes"}}:
    header_bytes = where the first tile's data starts (everything before it is
    IFDs, tag arrays and the ghost area: what an open must read).

mosaic DIR SRC C
    A 5x5 grid of adjacent web-mercator COGs, C x C pixels each (SRC resampled to C),
    named DIR/m_<row>_<col>.tif, at the resolution of XYZ zoom 10 + log2(C / 256), the
    grid shifted by C/2 pixels from the XYZ grid (as real scenes are), plus
    DIR/local.vrt over them. A zoom-10 tile then needs 4 COGs and a zoom-9 tile 9
    (bench/probes/mosaic.py). Prints {"result": {"cogs", "bytes", "cog_px", "zoom"}}.
"""

import json
import math
import os
import sys

from osgeo import gdal, osr

from cog_ranges import header_bytes

gdal.UseExceptions()
ORIGIN = 20037508.342789244   # web mercator half-width, m
RES0 = 2 * ORIGIN / 256       # zoom-0 resolution, m/pixel
ZOOM_A = 10                   # the 4-COG tiles' zoom
TILE_X0, TILE_Y0 = 530, 350   # the zoom-10 XYZ tile the grid starts in
GRID = 5
COG_OPTS = ["COMPRESS=DEFLATE", "PREDICTOR=2", "BLOCKSIZE=512", "OVERVIEW_RESAMPLING=AVERAGE",
            "BIGTIFF=NO"]


def many(out, src):
    size, block = 10980, 512
    mem = gdal.GetDriverByName("MEM").Create("", size, size, 1, gdal.GDT_UInt16)
    mem.SetGeoTransform([600000.0, 10.0, 0.0, 5100000.0, 0.0, -10.0])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32632)
    mem.SetProjection(srs.ExportToWkt())
    band = mem.GetRasterBand(1)
    band.SetNoDataValue(0)
    band.Fill(0)
    s = gdal.Open(src)
    # a tile of data (the fixture's edges may be all nodata, which SPARSE_OK would drop)
    cx, cy = (s.RasterXSize // 2) // block * block, (s.RasterYSize // 2) // block * block
    band.WriteRaster(0, 0, block, block, s.GetRasterBand(1).ReadRaster(cx, cy, block, block))
    s = None
    tmp = out + ".tmp"
    gdal.Translate(tmp, mem, format="COG", creationOptions=COG_OPTS + ["SPARSE_OK=YES"])
    mem = None
    os.replace(tmp, out)
    header = header_bytes(gdal.Open(out))
    if not header:
        raise RuntimeError(f"{out}: no level's first tile holds data")
    return {"bytes": os.path.getsize(out), "header_bytes": header}


def mosaic(out_dir, src, cog_px):
    zoom_native = ZOOM_A + int(math.log2(cog_px // 256))
    res = RES0 / 2 ** zoom_native
    os.makedirs(out_dir, exist_ok=True)
    x0 = -ORIGIN + (TILE_X0 * cog_px + cog_px / 2) * res
    y0 = ORIGIN - (TILE_Y0 * cog_px + cog_px / 2) * res
    names, total = [], 0
    for r in range(GRID):
        for c in range(GRID):
            name = os.path.join(out_dir, f"m_{r}_{c}.tif")
            ulx, uly = x0 + c * cog_px * res, y0 - r * cog_px * res
            if not os.path.exists(name):
                gdal.Translate(name + ".tmp", src, format="COG", width=cog_px, height=cog_px,
                               outputSRS="EPSG:3857",
                               outputBounds=[ulx, uly, ulx + cog_px * res, uly - cog_px * res],
                               resampleAlg="average", creationOptions=COG_OPTS)
                os.replace(name + ".tmp", name)
            names.append(name)
            total += os.path.getsize(name)
    gdal.BuildVRT(os.path.join(out_dir, "local.vrt"), names)
    return {"cogs": len(names), "bytes": total, "cog_px": cog_px, "zoom": ZOOM_A,
            "names": [os.path.basename(n) for n in names]}


def main(argv):
    if len(argv) >= 3 and argv[0] == "many":
        res = many(argv[1], argv[2])
    elif len(argv) >= 4 and argv[0] == "mosaic":
        res = mosaic(argv[1], argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps({"result": res}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
