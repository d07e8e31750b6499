/* config.h: every vsitune option, read in one place.
 *
 * Options are read through CPLGetConfigOption at the moment they matter, so
 * `--config KEY VALUE`, environment variables and rasterio.Env all work as
 * they do for GDAL's own /vsis3/. docs/configuration.md lists them; keep the
 * two in step. Thread-safe (CPLGetConfigOption is). */
#ifndef VT_CONFIG_H
#define VT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* Defaults (documented in docs/configuration.md). */
#define VT_DEFAULT_CACHE_SIZE (64u * 1024 * 1024)  /* VSITUNE_CACHE_SIZE */
#define VT_DEFAULT_BLOCK_SIZE (64u * 1024)         /* VSITUNE_BLOCK_SIZE */
#define VT_DEFAULT_HEADER_SIZE (64u * 1024)        /* VSITUNE_HEADER_SIZE */
#define VT_DEFAULT_MERGE_GAP (64u * 1024)          /* VSITUNE_MERGE_GAP */
#define VT_DEFAULT_MAX_REQUEST (16u * 1024 * 1024) /* VSITUNE_MAX_REQUEST_SIZE */
#define VT_DEFAULT_READAHEAD_MAX (8u * 1024 * 1024)  /* VSITUNE_READAHEAD_MAX */
#define VT_DEFAULT_META_TTL 300                    /* VSITUNE_METADATA_TTL, s */
#define VT_DEFAULT_NEGATIVE_TTL 30                 /* VSITUNE_NEGATIVE_TTL, s */

/* Raw value: CPLGetConfigOption(name, NULL) (config, then environment). */
const char *vt__cfg_str(const char *name);

/* Boolean per CPLTestBool (YES/TRUE/ON/1); def when unset. */
int vt__cfg_bool(const char *name, int def);

/* Byte size or count: accepts plain integers and K/KB/M/MB/G/GB suffixes
 * (powers of 1024). def when unset, out of [min, max], or unparsable (a
 * CPLError warning names the option then). */
uint64_t vt__cfg_size(const char *name, uint64_t def, uint64_t min,
                      uint64_t max);

/* Parse a size like vt__cfg_size; returns 0 on success. Pure. */
int vt__parse_size(const char *s, uint64_t *out);

#endif
