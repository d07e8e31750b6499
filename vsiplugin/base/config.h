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

#include "sizeparse.h" /* vt__parse_size: the size syntax, shared with tunerd */

/* The defaults and ranges tunerd shares (documented in
 * docs/configuration.md): VT_DEFAULT_*, VT_MAX_*. */
#include "defaults.h"

/* Every option the plugin reads, one row each in vt__opts (options.c:
 * name, kind, default, range or values, whether it is read for a path, the
 * default as docs/configuration.md writes it, one doc line; test_options.c
 * holds the docs to the table). The numeric ones are read with vt__opt_size
 * / vt__opt_num, vsitune's own booleans and enums with vt__opt_choice, never
 * by name; the rest (GDAL's and AWS's strings and booleans, parsed as GDAL
 * parses them) are read by name where they are used. */
enum vt_opt {
    VT_OPT_CACHE_SIZE,          /* VSITUNE_CACHE_SIZE */
    VT_OPT_CURL_CACHE_SIZE,     /* CPL_VSIL_CURL_CACHE_SIZE (GDAL's) */
    VT_OPT_BLOCK_SIZE,
    VT_OPT_HEADER_SIZE,
    VT_OPT_MERGE_GAP,
    VT_OPT_MAX_REQUEST_SIZE,
    VT_OPT_READAHEAD_MAX,
    VT_OPT_FIRST_READ_MAX,
    VT_OPT_METADATA_TTL,
    VT_OPT_NEGATIVE_TTL,
    VT_OPT_SHARED_METADATA_TTL,
    VT_OPT_SHARED_CACHE_SIZE,
    VT_OPT_SHARED_CACHE_WAIT,
    VT_OPT_READDIR_LIMIT,       /* GDAL_READDIR_LIMIT_ON_OPEN */
    VT_OPT_MAX_RETRY,           /* GDAL_HTTP_MAX_RETRY */
    VT_OPT_RETRY_DELAY,         /* GDAL_HTTP_RETRY_DELAY */
    VT_OPT_TIMEOUT,             /* GDAL_HTTP_TIMEOUT */
    VT_OPT_CONNECT_TIMEOUT,     /* GDAL_HTTP_CONNECTTIMEOUT */
    VT_OPT_LOW_SPEED_TIME,      /* GDAL_HTTP_LOW_SPEED_TIME */
    VT_OPT_LOW_SPEED_LIMIT,     /* GDAL_HTTP_LOW_SPEED_LIMIT */
    VT_OPT_RETRY_WINDOW,        /* VSITUNE_RETRY_WINDOW */
    VT_OPT_MAX_CONNECTIONS,     /* VSITUNE_MAX_CONNECTIONS */
    VT_OPT_MAX_STREAMS,         /* VSITUNE_MAX_STREAMS */
    /* vsitune's own booleans and enums (vt__opt_choice) */
    VT_OPT_TAKEOVER,            /* VSITUNE_TAKEOVER */
    VT_OPT_TAKEOVER_GS,         /* VSITUNE_TAKEOVER_GS */
    VT_OPT_TAKEOVER_AZ,         /* VSITUNE_TAKEOVER_AZ */
    VT_OPT_TAKEOVER_CURL,       /* VSITUNE_TAKEOVER_CURL */
    VT_OPT_SIDECARS,            /* VSITUNE_SIDECARS */
    VT_OPT_SHARED_CACHE,        /* VSITUNE_SHARED_CACHE */
    VT_OPT_ACROSS_CREDENTIALS,  /* VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS */
    VT_OPT_HEADER_LEARN,        /* VSITUNE_HEADER_LEARN */
    /* read by name where used (strings; GDAL's and AWS's booleans) */
    VT_OPT_SHARED_CACHE_NAME, VT_OPT_SHM_DIR, VT_OPT_STATS_DIR,
    VT_OPT_STATS_FILE, VT_OPT_GDAL_SKIP, VT_OPT_OGR_SKIP,
    VT_OPT_ALLOWED_EXTENSIONS, VT_OPT_ALLOWED_FILENAME, VT_OPT_DISABLE_READDIR,
    VT_OPT_NON_CACHED, VT_OPT_S3_ENDPOINT, VT_OPT_HTTPS,
    VT_OPT_VIRTUAL_HOSTING, VT_OPT_DEFAULT_REGION, VT_OPT_REGION,
    VT_OPT_NO_SIGN_REQUEST, VT_OPT_ACCESS_KEY_ID, VT_OPT_SECRET_ACCESS_KEY,
    VT_OPT_SESSION_TOKEN, VT_OPT_REQUEST_PAYER, VT_OPT_DEFAULT_PROFILE,
    VT_OPT_PROFILE, VT_OPT_CREDENTIALS_FILE, VT_OPT_SHARED_CREDENTIALS_FILE,
    VT_OPT_CONFIG_FILE, VT_OPT_HOME, VT_OPT_ROLE_ARN,
    VT_OPT_WEB_IDENTITY_TOKEN_FILE, VT_OPT_ROLE_SESSION_NAME,
    VT_OPT_WEB_IDENTITY_ENABLE, VT_OPT_STS_ROOT_URL,
    VT_OPT_STS_REGIONAL_ENDPOINTS, VT_OPT_STS_ENDPOINT, VT_OPT_STS_REGION,
    VT_OPT_CONTAINER_RELATIVE_URI, VT_OPT_CONTAINER_FULL_URI,
    VT_OPT_CONTAINER_TOKEN, VT_OPT_CONTAINER_TOKEN_FILE, VT_OPT_EC2_ROOT_URL,
    VT_OPT_IMDS_ENDPOINT, VT_OPT_AUTODETECT_EC2, VT_OPT_CHECK_HYPERVISOR_UUID,
    VT_OPT_IMDS_DISABLED, VT_OPT_TIMESTAMP, VT_OPT_HTTP_HEADERS,
    VT_OPT_HTTP_HEADER_FILE, VT_OPT_UNSAFESSL, VT_OPT_GDAL_CA_BUNDLE,
    VT_OPT_CURL_CA_BUNDLE, VT_OPT_SSL_CERT_FILE, VT_OPT_USERAGENT,
    VT_OPT_PROXY, VT_OPT_HTTP_VERSION, VT_OPT_CURL_VERBOSE,
    /* GCS (backends/gs/, auth/gs_*.c), read by name as GDAL's /vsigs/
     * reads them */
    VT_OPT_GS_ENDPOINT, VT_OPT_GS_TIMESTAMP, VT_OPT_GS_USER_PROJECT,
    VT_OPT_GS_NO_SIGN_REQUEST, VT_OPT_GS_SECRET_ACCESS_KEY,
    VT_OPT_GS_ACCESS_KEY_ID, VT_OPT_GS_REFRESH_TOKEN, VT_OPT_GS_CLIENT_ID,
    VT_OPT_GS_CLIENT_SECRET, VT_OPT_GS_APPLICATION_CREDENTIALS,
    VT_OPT_GS_PRIVATE_KEY, VT_OPT_GS_PRIVATE_KEY_FILE, VT_OPT_GS_CLIENT_EMAIL,
    VT_OPT_GS_SCOPE, VT_OPT_GS_CREDENTIALS_FILE, VT_OPT_GOA2_AUTH_URL_TOKEN,
    VT_OPT_GOA2_CLIENT_ID, VT_OPT_GOA2_CLIENT_SECRET, VT_OPT_GO2A_AUD,
    VT_OPT_GOA2_EXPIRATION_DELAY, VT_OPT_GOA2_NOW, VT_OPT_GCE_SKIP,
    VT_OPT_GCE_CREDENTIALS_URL, VT_OPT_MACHINE_IS_GCE,
    VT_OPT_GCE_CHECK_LOCAL_FILES,
    /* Azure (backends/az/, auth/az_*.c), read by name as GDAL's /vsiaz/
     * reads them */
    VT_OPT_AZ_CONNECTION_STRING, VT_OPT_AZ_ACCOUNT, VT_OPT_AZ_ACCESS_TOKEN,
    VT_OPT_AZ_ACCESS_KEY, VT_OPT_AZ_SAS_TOKEN, VT_OPT_AZ_SAS,
    VT_OPT_AZ_NO_SIGN_REQUEST, VT_OPT_AZ_VM_API_ROOT_URL,
    VT_OPT_AZ_IMDS_OBJECT_ID, VT_OPT_AZ_IMDS_CLIENT_ID,
    VT_OPT_AZ_IMDS_MSI_RES_ID, VT_OPT_AZ_CONFIG_DIR, VT_OPT_AZ_ENDPOINT,
    VT_OPT_AZ_USE_HTTPS, VT_OPT_AZ_TIMESTAMP,
    /* /vsicurl/ (backends/curl/), read by name as GDAL's /vsicurl/ reads
     * them */
    VT_OPT_CURL_USERPWD, VT_OPT_CURL_AUTH, VT_OPT_CURL_BEARER,
    VT_OPT_CURL_COOKIE, VT_OPT_CURL_HTTPS_PROXY, VT_OPT_CURL_PROXYUSERPWD,
    VT_OPT_CURL_PROXY_AUTH, VT_OPT_CURL_NETRC, VT_OPT_CURL_NETRC_FILE,
    VT_OPT_CURL_USE_S3_REDIRECT, VT_OPT_CURL_USE_HEAD,
    VT_OPT_COUNT
};

enum vt_opt_kind {
    VT_OPT_SIZE,   /* a whole number, K/KB/M/MB/G/GB suffixes (powers of
                      1024): bytes, counts, seconds (vt__parse_size) */
    VT_OPT_NUMBER, /* a finite decimal number, fractions and exponents
                      allowed (vt__parse_num); integer options truncate */
    VT_OPT_BOOL,   /* YES/TRUE/ON/1 or NO/FALSE/OFF/0, any case */
    VT_OPT_ENUM,   /* one of the row's values, any case */
    VT_OPT_STRING  /* any text: a name, a path, a URL, a list */
};

struct vt_opt_def {
    const char *name;
    enum vt_opt_kind kind;
    int per_path;   /* 1: read for the request's path (path-specific
                       options first; GDAL's HTTP options only where the
                       running GDAL reads them so, vt__cfg_http_path);
                       0: process-wide (path ignored) */
    double def, min, max;   /* SIZE, NUMBER: exact (every value is below
                               2^53); BOOL: def 0 or 1; ENUM: def is the
                               index of the default in values */
    const char *const *values; /* ENUM: the accepted values, NULL-ended */
    const char *def_doc;    /* the default as docs/configuration.md's
                               table writes it ("`64K`", "unset") */
    const char *doc;        /* one line: what it does */
};

extern const struct vt_opt_def vt__opts[VT_OPT_COUNT];

/* The prefix path-specific options are looked up under ("/vsis3/" or
 * "/vsitune/"; default "/vsis3/"). plugin.c sets it once, at registration,
 * before any lookup with a path. The string is copied. */
void vt__cfg_set_prefix(const char *prefix);

/* For this thread's lookups from now on: path-specific options under prefix
 * (a static string, shorter than 32 bytes: the GDAL prefix of the handler
 * whose call the thread serves, "/vsigs/"), or NULL: the process prefix
 * above. Returns the scope it replaces, to restore when the call ends. */
const char *vt__cfg_scope_prefix(const char *prefix);

/* The value for path, malloc'd (caller frees); NULL when unset or empty. */
char *vt__cfg_dup(const char *path, const char *name);

/* The value for path, malloc'd; NULL only when unset: an option set to ""
 * gives "". GDAL tells the two apart for some options
 * (CPL_AWS_CREDENTIALS_FILE="" means "no credentials file"). */
char *vt__cfg_dup_raw(const char *path, const char *name);

/* Boolean per CPLTestBool, as GDAL reads its own options: NO/FALSE/OFF/0
 * are false, any other value true; def when unset or empty. For GDAL's and
 * AWS's booleans only: vsitune's own are read with vt__opt_choice. */
int vt__cfg_bool(const char *path, const char *name, int def);

/* Byte size or count: accepts plain integers and K/KB/M/MB/G/GB suffixes
 * (powers of 1024). def when unset, out of [min, max], or unparsable (a
 * CPLError warning names the option then). For an option not in vt__opts
 * only: the table's are read with vt__opt_size. */
uint64_t vt__cfg_size(const char *path, const char *name, uint64_t def,
                      uint64_t min, uint64_t max);

/* The value of a VT_OPT_SIZE option for path (NULL: process-wide; ignored
 * for a process-wide option). Its default when unset or empty; its default
 * and a CE_Warning naming the option ("vsitune: NAME=VALUE is not a size in
 * [min, max]; using DEF", once per option and value in the process) when
 * the value does not parse (NaN, infinities, overflow, a sign, trailing
 * garbage) or is out of range. */
uint64_t vt__opt_size(const char *path, enum vt_opt id);

/* The same with a lower bound raised to min for this call (a bound that
 * depends on another option, e.g. a request is at least one block). */
uint64_t vt__opt_size_min(const char *path, enum vt_opt id, uint64_t min);

/* The value of a VT_OPT_NUMBER option, as vt__opt_size ("is not a number
 * in [min, max]; using DEF"). Always finite and within the row's range. */
double vt__opt_num(const char *path, enum vt_opt id);

/* The values of VSITUNE_SIDECARS (vt__opt_choice), in its row's order. */
enum vt_sidecars { VT_SIDECARS_AUTO, VT_SIDECARS_YES, VT_SIDECARS_NO };

/* The value of one of vsitune's VT_OPT_BOOL (0 or 1) or VT_OPT_ENUM (the
 * index of the value in the row's values) options for path (as
 * vt__opt_size). A boolean takes YES/TRUE/ON/1 and NO/FALSE/OFF/0, an enum
 * its values, any case; an enum with YES and NO values takes the boolean
 * words for them too. Its default when unset or empty; its default and a
 * CE_Warning naming the option and the accepted values ("vsitune:
 * NAME=VALUE is not one of AUTO, YES, NO (or TRUE, ON, 1, FALSE, OFF, 0);
 * using AUTO", once per option and value in the process) for any other
 * value: where CPLTestBool would have taken it as YES. *set (may be NULL):
 * 1 when the option is set, to any value. GDAL's own booleans keep
 * CPLTestBool (vt__cfg_bool), as stock GDAL reads them. */
int vt__opt_choice(const char *path, enum vt_opt id, int *set);

/* Parse a decimal number: optional sign, digits with an optional fraction,
 * an optional exponent, blanks around; nothing else (no NaN, inf, hex, no
 * trailing garbage), and the value finite and not an underflow. 0 on
 * success. Pure. */
int vt__parse_num(const char *s, double *out);

/* The process-wide cache budget in bytes: VSITUNE_CACHE_SIZE, else GDAL's
 * CPL_VSIL_CURL_CACHE_SIZE (a deployment sized for stock GDAL keeps its
 * bound: vsitune's cache is what serves /vsis3/ reads then), else
 * VT_DEFAULT_CACHE_SIZE. Global (no path): one cache per process. */
uint64_t vt__cfg_cache_budget(void);


/* ---- CA bundle -------------------------------------------------------
 * Which CA file a request verifies TLS with, chosen as the running GDAL
 * chooses it for the request vsitune's request stands for (cpl_http.cpp,
 * read in 3.6.2, 3.10.3 and 3.13.3; the rule changed in 3.7 with
 * path-specific HTTP options, GDAL PR 6632):
 *  - 3.6, a read of a /vsis3/ handle (range GET, HEAD): the three options
 *    go through CPLHTTPGetOptionsFromEnv, where each set one overwrites the
 *    last: SSL_CERT_FILE, else CURL_CA_BUNDLE, else GDAL_CURL_CA_BUNDLE;
 *  - 3.6, a listing and a credentials fetch (no options given to
 *    CPLHTTPSetOptions): GDAL_CURL_CA_BUNDLE, else CURL_CA_BUNDLE, else
 *    SSL_CERT_FILE;
 *  - 3.7 and later, every request: GDAL_CURL_CA_BUNDLE, else
 *    CURL_CA_BUNDLE, else SSL_CERT_FILE; for a read or a listing each name
 *    is looked up for the path first (path-specific options), a
 *    credentials fetch reads the config only.
 * "Set" is set at all: a value set to "" is chosen and handed to curl as
 * GDAL hands it. */
enum vt_ca_use {
    VT_CA_FETCH,   /* CPLHTTPFetch: credentials (IMDS, STS, containers) */
    VT_CA_LIST,    /* GDAL's /vsis3/ listing */
    VT_CA_READ     /* a /vsis3/ handle's GET or HEAD */
};

/* The three names, in GDAL's table order. */
extern const char *const vt__ca_names[3];

/* Index into vt__ca_names of the option that gives the CA file for use
 * under GDAL version_num (GDALVersionInfo("VERSION_NUM"), e.g. 3060200;
 * its row of gdal_release.c), given the values set (vals[i] NULL: unset); -1: none set (curl's
 * default). Pure. */
int vt__ca_pick(int version_num, enum vt_ca_use use,
                const char *const vals[3]);

/* The CA file for a request for path ("bucket/key"; NULL: none) under the
 * running GDAL's rule (gdal_release.h, ca_first_wins_by_path; a test sets
 * another release with vt__gdal_release_set), malloc'd (caller frees);
 * NULL: none set (curl's default). */
char *vt__cfg_ca_bundle(const char *path, enum vt_ca_use use);

/* The path GDAL's HTTP options (GDAL_HTTP_VERSION, timeouts, retries,
 * proxies, GDAL_HTTP_HEADERS, ...: gdal_release.h, http_opts_by_path) are
 * looked up under for a request of path's object: path itself under GDAL
 * 3.7 and later, NULL (the configuration only) under 3.6, as the running
 * GDAL reads them for the request vsitune's stands for. Pure apart from
 * reading the release row. */
const char *vt__cfg_http_path(const char *path);

/* "<prefix><path>" into buf (the GDAL path path-specific options are
 * matched against). Returns buf, or NULL when it does not fit. Pure apart
 * from reading the prefix. */
const char *vt__cfg_gdal_path(const char *path, char *buf, size_t len);

/* 1 when GDAL's CPL_VSIL_CURL_NON_CACHED (':'-separated "/vsis3/..." name
 * prefixes) names path ("bucket/key"): every open then re-validates the
 * object with the server (stock GDAL's AllowCachedDataFor). Here, below the
 * object table and the listings, so that both reach it. */
int vt__cfg_non_cached(const char *path);

#endif
