#!/usr/bin/python3
"""measure_header_sizes.py: how many bytes a COG's header (IFDs + tile index) takes,
across layouts: the measurement behind VSITUNE_HEADER_SIZE (docs/architecture.md).
Prints a markdown table: the offset of the first tile byte = what an open must read."""
from osgeo import gdal
gdal.UseExceptions()
def header_end(path):
    ds = gdal.Open(path)
    best = None
    for b in range(1, ds.RasterCount+1):
        band = ds.GetRasterBand(b)
        for lv in [band] + [band.GetOverview(i) for i in range(band.GetOverviewCount())]:
            off = lv.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF")
            if off:
                o = int(off)
                best = o if best is None else min(best, o)
    return best
for size, tile, bands, dtype in [(1024,256,1,"UInt16"),(2048,512,1,"UInt16"),(10980,512,1,"UInt16"),(10980,256,1,"UInt16"),(10980,1024,1,"UInt16"),(10980,512,3,"Byte"),(10980,256,4,"UInt16"),(20000,256,1,"Float32"),(40000,512,1,"UInt16")]:
    drv = gdal.GetDriverByName("MEM")
    src = drv.Create("", size, size, bands, gdal.GetDataTypeByName(dtype))
    src.SetGeoTransform([500000,10,0,5000000,0,-10])
    out = f"/vsimem/hdr_{size}_{tile}_{bands}_{dtype}.tif"
    gdal.Translate(out, src, format="COG", creationOptions=[f"BLOCKSIZE={tile}", "COMPRESS=DEFLATE", "OVERVIEWS=IGNORE_EXISTING" ], )
    src = None
    h = header_end(out)
    print(f"| {size}x{size} | {tile} | {bands} | {dtype} | {h} |", flush=True)
    gdal.Unlink(out)
