/* config.h: every vsitune option, read in one place.
 *
 * Options are read at the moment they matter, so `--config KEY VALUE`,
 * environment variables, rasterio.Env and path-specific options all work as
 * they do for GDAL's own /vsis3/. docs/configuration.md lists them; keep the
 * two in step.
 *
 * Every lookup names the path it is for. `path` is the object path as
 * vsitune's callbacks see it ("bucket/key", "bucket", no prefix), or NULL for
 * a process-wide option (the engine, the cache budget, stats). With a path,
 * the option is read as GDAL 3.6 reads its /vsis3/ options:
 * VSIGetPathSpecificOption("<prefix>bucket/key", NAME) (options set with
 * VSISetPathSpecificOption / gdal.SetCredential on a prefix of that path),
 * falling back to CPLGetConfigOption (config, then environment). <prefix> is
 * the one the router is installed on (vt__cfg_set_prefix). So a per-bucket
 * AWS_S3_ENDPOINT, AWS_ACCESS_KEY_ID or GDAL_HTTP_HEADERS applies to the
 * requests for that bucket only: read every option a request depends on with
 * that request's path.
 *
 * Values are copied out at once (GDAL's pointers live only until the next
 * config change or, for path-specific values, the next CPLSPrintf on the
 * thread). Thread-safe. */
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

/* The prefix path-specific options are looked up under ("/vsis3/" or
 * "/vsitune/"; default "/vsis3/"). plugin.c sets it once, at registration,
 * before any lookup with a path. The string is copied. */
void vt__cfg_set_prefix(const char *prefix);

/* The value for path, malloc'd (caller frees); NULL when unset or empty. */
char *vt__cfg_dup(const char *path, const char *name);

/* The value for path, malloc'd; NULL only when unset: an option set to ""
 * gives "". GDAL tells the two apart for some options
 * (CPL_AWS_CREDENTIALS_FILE="" means "no credentials file"). */
char *vt__cfg_dup_raw(const char *path, const char *name);

/* Boolean per CPLTestBool (YES/TRUE/ON/1); def when unset or empty. */
int vt__cfg_bool(const char *path, const char *name, int def);

/* Byte size or count: accepts plain integers and K/KB/M/MB/G/GB suffixes
 * (powers of 1024). def when unset, out of [min, max], or unparsable (a
 * CPLError warning names the option then). */
uint64_t vt__cfg_size(const char *path, const char *name, uint64_t def,
                      uint64_t min, uint64_t max);

/* The process-wide cache budget in bytes: VSITUNE_CACHE_SIZE, else GDAL's
 * CPL_VSIL_CURL_CACHE_SIZE (a deployment sized for stock GDAL keeps its
 * bound: vsitune's cache is what serves /vsis3/ reads then), else
 * VT_DEFAULT_CACHE_SIZE. Global (no path): one cache per process. */
uint64_t vt__cfg_cache_budget(void);

/* Parse a size like vt__cfg_size; returns 0 on success. Pure. */
int vt__parse_size(const char *s, uint64_t *out);

/* "<prefix><path>" into buf (the GDAL path path-specific options are
 * matched against). Returns buf, or NULL when it does not fit. Pure apart
 * from reading the prefix. */
const char *vt__cfg_gdal_path(const char *path, char *buf, size_t len);

#endif
