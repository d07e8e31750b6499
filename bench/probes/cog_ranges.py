"""cog_ranges.py: the byte ranges a cold window's floor GETs (bench/scen_cold.py).

usage: cog_ranges.py PATH XOFF YOFF

Prints {"result": {"header_bytes", "tile_offset", "tile_bytes"}}: header_bytes =
where the first tile's data starts (everything before it is the header a reader must
have: IFDs, tag arrays, GDAL's ghost area), tile_offset/tile_bytes = the full-resolution
internal tile (band 1) that holds pixel (XOFF, YOFF), as the TIFF's own offsets say.
"""

import json
import sys

from osgeo import gdal


def header_bytes(ds):
    """Where a COG's first tile data starts: the smallest first-block offset of band 1
    over its full resolution and overview levels (0 when no level has data)."""
    band = ds.GetRasterBand(1)
    levels = [band] + [band.GetOverview(i) for i in range(band.GetOverviewCount())]
    firsts = [int(lvl.GetMetadataItem("BLOCK_OFFSET_0_0", "TIFF") or 0) for lvl in levels]
    return min((o for o in firsts if o > 0), default=0)


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    gdal.UseExceptions()
    ds = gdal.Open(sys.argv[1])
    band = ds.GetRasterBand(1)
    bx, by = band.GetBlockSize()
    header = header_bytes(ds)
    tx, ty = int(sys.argv[2]) // bx, int(sys.argv[3]) // by
    off = int(band.GetMetadataItem(f"BLOCK_OFFSET_{tx}_{ty}", "TIFF") or 0)
    size = int(band.GetMetadataItem(f"BLOCK_SIZE_{tx}_{ty}", "TIFF") or 0)
    if not off or not size or not header:
        print(f"cog_ranges: {sys.argv[1]}: tile {tx},{ty} or the first tiles have no data",
              file=sys.stderr)
        return 1
    print(json.dumps({"result": {"header_bytes": header,
                                 "tile_offset": off, "tile_bytes": size}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
