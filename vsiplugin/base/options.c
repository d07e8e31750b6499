/* options.c: the one table of every option the plugin reads (config.h,
 * vt__opts): vsitune's own and the GDAL, AWS, GCS, Azure and /vsicurl/
 * options it reads as stock GDAL does. Name, kind, default, range or
 * values, per path or not, the default as docs/configuration.md writes it,
 * one doc line. The numeric and
 * vsitune's boolean and enum rows are also what config.c parses and checks
 * values with; tests/unit/test_options.c holds docs/configuration.md to this
 * table (every row documented with its default, every VSITUNE_* option
 * documented is a row). Data only.
 *
 * Adding an option (a backend's, say) takes four steps. ctest test_options
 * fails while a name the sources spell lacks 1-3, but only for names of a
 * prefix it scans: step 4 is what makes it see a new prefix at all.
 * 1. config.h: VT_OPT_<NAME> in enum vt_opt, in its module's group.
 * 2. Here: its row. STR for a string, and for a number GDAL parses itself
 *    (atoi, CPLAtoGIntBig) read by name; BOOL (default 0 or 1) for one read
 *    with CPLTestBool; SIZE/NUM/ENUM only for what vt__opt_size, vt__opt_num
 *    or vt__opt_choice read. Per path 1 when the stock GDAL release it copies
 *    reads it with VSIGetPathSpecificOption (vt__cfg_dup, vt__gs_opt), 0
 *    for CPLGetConfigOption. The default as the doc writes it: "`value`" in
 *    backquotes (a numeric or boolean row's must parse to def), or "unset".
 * 3. docs/configuration.md: a row in its module's table, the name in
 *    backquotes in the first cell, a default cell holding the row's default
 *    as written here.
 * 4. A name whose prefix is not one of test_options.c's prefixes[]: add the
 *    prefix there, so that the sources' literals of that form are checked. */
#include "base/config.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* Numeric rows: name, per path, default, min, max, default as documented. */
#define SIZE(n, pp, d, lo, hi, dd, doc) \
    {n, VT_OPT_SIZE, pp, d, lo, hi, NULL, dd, doc}
#define NUM(n, pp, d, lo, hi, dd, doc) \
    {n, VT_OPT_NUMBER, pp, d, lo, hi, NULL, dd, doc}
/* A boolean: its default, 0 or 1. */
#define BOOL(n, pp, d, dd, doc) {n, VT_OPT_BOOL, pp, d, 0, 1, NULL, dd, doc}
/* An enum: the index of its default in vals. */
#define ENUM(n, pp, d, vals, dd, doc) \
    {n, VT_OPT_ENUM, pp, d, 0, 0, vals, dd, doc}
#define STR(n, pp, dd, doc) {n, VT_OPT_STRING, pp, 0, 0, 0, NULL, dd, doc}

/* In enum vt_sidecars' order. */
static const char *const sidecars_values[] = {"AUTO", "YES", "NO", NULL};
static const char *const readdir_values[] = {"NO", "YES", "EMPTY_DIR", NULL};

const struct vt_opt_def vt__opts[VT_OPT_COUNT] = {
    /* ---- reads and the cache */
    [VT_OPT_CACHE_SIZE] = SIZE("VSITUNE_CACHE_SIZE", 0, VT_DEFAULT_CACHE_SIZE,
        0, (double)VT_MAX_CACHE_SIZE, "`32M`",
        "the process's range-cache budget, bytes"),
    [VT_OPT_CURL_CACHE_SIZE] = SIZE("CPL_VSIL_CURL_CACHE_SIZE", 0,
        VT_DEFAULT_CACHE_SIZE, 0, (double)VT_MAX_CACHE_SIZE, "`32M`",
        "GDAL's cache budget, taken as vsitune's when VSITUNE_CACHE_SIZE is "
        "unset"),
    [VT_OPT_BLOCK_SIZE] = SIZE("VSITUNE_BLOCK_SIZE", 0, VT_DEFAULT_BLOCK_SIZE,
        4096, 16 * MIB, "`16K`", "cache block size; reads are block-aligned"),
    [VT_OPT_HEADER_SIZE] = SIZE("VSITUNE_HEADER_SIZE", 1,
        VT_DEFAULT_HEADER_SIZE, KIB, 64 * MIB, "`64K`",
        "bytes the first GET of an object fetches"),
    [VT_OPT_MERGE_GAP] = SIZE("VSITUNE_MERGE_GAP", 1, VT_DEFAULT_MERGE_GAP, 0,
        1024 * MIB, "`64K`", "missing ranges this close are one GET"),
    [VT_OPT_MAX_REQUEST_SIZE] = SIZE("VSITUNE_MAX_REQUEST_SIZE", 1,
        VT_DEFAULT_MAX_REQUEST, 4096, 1024 * MIB, "`16M`",
        "the largest range GET"),
    [VT_OPT_READAHEAD_MAX] = SIZE("VSITUNE_READAHEAD_MAX", 1,
        VT_DEFAULT_READAHEAD_MAX, 0, 1024 * MIB, "`8M`",
        "the largest fetch a sequential read doubles up to"),
    [VT_OPT_FIRST_READ_MAX] = SIZE("VSITUNE_FIRST_READ_MAX", 1,
        VT_DEFAULT_FIRST_READ_MAX, 0, 64 * MIB, "`256K`",
        "the most a first GET grows to bring the data a directory's objects "
        "read next"),
    [VT_OPT_METADATA_TTL] = SIZE("VSITUNE_METADATA_TTL", 1,
        VT_DEFAULT_META_TTL, 0, 1024 * MIB, "`300`",
        "seconds an object's size and ETag are trusted"),
    [VT_OPT_NEGATIVE_TTL] = SIZE("VSITUNE_NEGATIVE_TTL", 1,
        VT_DEFAULT_NEGATIVE_TTL, 0, 1024 * MIB, "`30`",
        "seconds a 404 is remembered"),
    /* ---- the shared cache */
    [VT_OPT_SHARED_METADATA_TTL] = SIZE("VSITUNE_SHARED_METADATA_TTL", 1,
        VT_DEFAULT_SHARED_META_TTL, 0, 1024 * MIB, "`30`",
        "seconds another process's answer about an object is trusted"),
    [VT_OPT_SHARED_CACHE_SIZE] = SIZE("VSITUNE_SHARED_CACHE_SIZE", 0,
        VT_DEFAULT_SHARED_CACHE_SIZE, 0, (double)VT_MAX_SHARED_CACHE_SIZE,
        "`192M`", "the shared segment's size, for the whole host"),
    [VT_OPT_SHARED_CACHE_WAIT] = SIZE("VSITUNE_SHARED_CACHE_WAIT", 0,
        VT_DEFAULT_SHARED_WAIT, 0, 3600, "`10`",
        "seconds a reader waits for another process's fetch"),
    [VT_OPT_READDIR_LIMIT] = SIZE("GDAL_READDIR_LIMIT_ON_OPEN", 1, 1000, 1,
        1024 * MIB, "`1000`",
        "GDAL's: the most keys a sibling listing may hold"),
    /* ---- the engine's, read for the request's path (config.h
     * vt__cfg_http_path: per path from GDAL 3.7, as GDAL's
     * CPLHTTPGetOptionsFromEnv; the configuration only on 3.6), once per
     * batch of one path's requests.
     * GDAL's own retry delay is 30 s; ours is the base of an exponential,
     * jittered backoff, and a tile server cannot wait 30 s for a 503. A
     * transfer averaging under 1 KiB/s over 10 s is abandoned (and
     * retried): GDAL's 1 B/s lets a 10 B/s trickle run for ever. No retry
     * starts later than VSITUNE_RETRY_WINDOW after a request's first
     * attempt. */
    [VT_OPT_MAX_RETRY] = NUM("GDAL_HTTP_MAX_RETRY", 1, 3, 0, 100, "`3`",
        "retries of a failed request"),
    [VT_OPT_RETRY_DELAY] = NUM("GDAL_HTTP_RETRY_DELAY", 1, 0.5, 0, 60,
        "`0.5`", "base of the retry backoff, seconds"),
    [VT_OPT_TIMEOUT] = NUM("GDAL_HTTP_TIMEOUT", 1, 0, 0, 86400, "`0`",
        "deadline of a whole request, seconds; 0: none"),
    [VT_OPT_CONNECT_TIMEOUT] = NUM("GDAL_HTTP_CONNECTTIMEOUT", 1, 10, 0.001,
        3600, "`10`", "connect timeout, seconds"),
    [VT_OPT_LOW_SPEED_TIME] = NUM("GDAL_HTTP_LOW_SPEED_TIME", 1, 10, 0, 86400,
        "`10`", "seconds below the low speed limit that abandon an attempt"),
    [VT_OPT_LOW_SPEED_LIMIT] = NUM("GDAL_HTTP_LOW_SPEED_LIMIT", 1, 1024, 0,
        1e9, "`1024`", "bytes per second under which an attempt is slow"),
    [VT_OPT_RETRY_WINDOW] = NUM("VSITUNE_RETRY_WINDOW", 0, 30, 0, 86400,
        "`30`", "no retry starts later than this after the first attempt"),
    [VT_OPT_MAX_CONNECTIONS] = NUM("VSITUNE_MAX_CONNECTIONS", 0, 16, 1, 1024,
        "`16`", "HTTP/1.1 keep-alive connections per host"),
    [VT_OPT_MAX_STREAMS] = NUM("VSITUNE_MAX_STREAMS", 0, 100, 1, 1000,
        "`100`", "concurrent HTTP/2 streams, and transfers in flight"),
    /* ---- vsitune's booleans and enums */
    [VT_OPT_TAKEOVER] = BOOL("VSITUNE_TAKEOVER", 0, VT_DEFAULT_TAKEOVER, "`YES`",
        "serve GDAL's /vsis3/ reads; read once, at registration"),
    [VT_OPT_TAKEOVER_GS] = BOOL("VSITUNE_TAKEOVER_GS", 0, VT_DEFAULT_TAKEOVER_GS, "`YES`",
        "serve GDAL's /vsigs/ reads; read once, at registration"),
    [VT_OPT_TAKEOVER_AZ] = BOOL("VSITUNE_TAKEOVER_AZ", 0, VT_DEFAULT_TAKEOVER_AZ, "`YES`",
        "serve GDAL's /vsiaz/ reads; read once, at registration"),
    [VT_OPT_TAKEOVER_CURL] = BOOL("VSITUNE_TAKEOVER_CURL", 0, VT_DEFAULT_TAKEOVER_CURL, "`YES`",
        "serve GDAL's /vsicurl/ reads; read once, at registration"),
    [VT_OPT_SIDECARS] = ENUM("VSITUNE_SIDECARS", 1, VT_SIDECARS_AUTO,
        sidecars_values,
        "`AUTO`", "who answers the sibling-files question: AUTO, GDAL "
        "(YES) or nobody (NO)"),
    [VT_OPT_SHARED_CACHE] = BOOL("VSITUNE_SHARED_CACHE", 0,
        VT_DEFAULT_SHARED_CACHE, "`NO`",
        "use the host-wide shared cache"),
    [VT_OPT_ACROSS_CREDENTIALS] = BOOL(
        "VSITUNE_SHARED_CACHE_ACROSS_CREDENTIALS", 1, 0, "`NO`",
        "share cached objects between credentials"),
    [VT_OPT_HEADER_LEARN] = BOOL("VSITUNE_HEADER_LEARN", 1, 1, "`YES`",
        "size the first GET by what the prefix's files needed"),
    /* ---- strings */
    [VT_OPT_SHARED_CACHE_NAME] = STR("VSITUNE_SHARED_CACHE_NAME", 0,
        "`" VT_DEFAULT_SHM_POOL "`", "the shared cache's pool name"),
    [VT_OPT_SHM_DIR] = STR("VSITUNE_SHM_DIR", 0, "`" VT_DEFAULT_SHM_DIR "`",
        "the directory of the shared segment"),
    [VT_OPT_STATS_DIR] = STR("VSITUNE_STATS_DIR", 0, "unset",
        "publish the counters to <dir>/vsitune-<pid>.json"),
    [VT_OPT_STATS_FILE] = STR("VSITUNE_STATS_FILE", 0, "unset",
        "write the counters to this file at exit"),
    /* ---- GDAL's own, read as GDAL reads them */
    [VT_OPT_GDAL_SKIP] = STR("GDAL_SKIP", 0, "unset",
        "drivers not to load: VSITUNE leaves /vsis3/ stock"),
    [VT_OPT_OGR_SKIP] = STR("OGR_SKIP", 0, "unset",
        "as GDAL_SKIP (GDAL splits them)"),
    [VT_OPT_ALLOWED_EXTENSIONS] = STR("CPL_VSIL_CURL_ALLOWED_EXTENSIONS", 1,
        "unset", "the only extensions that stat and open"),
    [VT_OPT_ALLOWED_FILENAME] = STR("CPL_VSIL_CURL_ALLOWED_FILENAME", 1,
        "unset", "the only file name that stats and opens"),
    [VT_OPT_DISABLE_READDIR] = ENUM("GDAL_DISABLE_READDIR_ON_OPEN", 1, 0,
        readdir_values, "`NO`", "no listing at open (GDAL's, CPLTestBool)"),
    [VT_OPT_NON_CACHED] = STR("CPL_VSIL_CURL_NON_CACHED", 0, "unset",
        "':'-separated prefixes re-validated at every open"),
    /* ---- S3 and credentials (docs/credentials.md) */
    [VT_OPT_S3_ENDPOINT] = STR("AWS_S3_ENDPOINT", 1, "AWS",
        "S3 host[:port], optional scheme"),
    [VT_OPT_HTTPS] = BOOL("AWS_HTTPS", 1, 1, "`YES`",
        "scheme of S3 and STS requests"),
    [VT_OPT_VIRTUAL_HOSTING] = BOOL("AWS_VIRTUAL_HOSTING", 1, 1, "`TRUE`",
        "the bucket as a subdomain"),
    [VT_OPT_DEFAULT_REGION] = STR("AWS_DEFAULT_REGION", 1, "`us-east-1`",
        "signing region, first choice"),
    [VT_OPT_REGION] = STR("AWS_REGION", 1, "`us-east-1`",
        "signing region, after the profile's"),
    [VT_OPT_NO_SIGN_REQUEST] = BOOL("AWS_NO_SIGN_REQUEST", 1, 0, "`NO`",
        "anonymous requests"),
    [VT_OPT_ACCESS_KEY_ID] = STR("AWS_ACCESS_KEY_ID", 1, "unset", "key id"),
    [VT_OPT_SECRET_ACCESS_KEY] = STR("AWS_SECRET_ACCESS_KEY", 1, "unset",
        "secret key"),
    [VT_OPT_SESSION_TOKEN] = STR("AWS_SESSION_TOKEN", 1, "unset",
        "session token"),
    [VT_OPT_REQUEST_PAYER] = STR("AWS_REQUEST_PAYER", 1, "unset",
        "requester for requester-pays buckets"),
    [VT_OPT_DEFAULT_PROFILE] = STR("AWS_DEFAULT_PROFILE", 1, "`default`",
        "profile of the shared files, first choice"),
    [VT_OPT_PROFILE] = STR("AWS_PROFILE", 1, "`default`",
        "profile of the shared files"),
    [VT_OPT_CREDENTIALS_FILE] = STR("CPL_AWS_CREDENTIALS_FILE", 1,
        "`~/.aws/credentials`", "credentials file (GDAL's name); \"\": none"),
    [VT_OPT_SHARED_CREDENTIALS_FILE] = STR("AWS_SHARED_CREDENTIALS_FILE", 1,
        "`~/.aws/credentials`", "credentials file"),
    [VT_OPT_CONFIG_FILE] = STR("AWS_CONFIG_FILE", 1, "`~/.aws/config`",
        "config file; \"\": none"),
    [VT_OPT_HOME] = STR("HOME", 1, "the environment's",
        "where ~/.aws/ is"),
    [VT_OPT_ROLE_ARN] = STR("AWS_ROLE_ARN", 1, "unset",
        "web identity's role"),
    [VT_OPT_WEB_IDENTITY_TOKEN_FILE] = STR("AWS_WEB_IDENTITY_TOKEN_FILE", 1,
        "unset", "web identity's token file"),
    [VT_OPT_ROLE_SESSION_NAME] = STR("AWS_ROLE_SESSION_NAME", 1, "unset",
        "web identity's session name"),
    [VT_OPT_WEB_IDENTITY_ENABLE] = BOOL("CPL_AWS_WEB_IDENTITY_ENABLE", 1, 1,
        "`YES`", "NO skips web identity"),
    [VT_OPT_STS_ROOT_URL] = STR("CPL_AWS_STS_ROOT_URL", 1, "regional STS",
        "web identity's STS"),
    [VT_OPT_STS_REGIONAL_ENDPOINTS] = STR("AWS_STS_REGIONAL_ENDPOINTS", 1,
        "regional STS", "web identity's STS: regional or legacy"),
    [VT_OPT_STS_ENDPOINT] = STR("AWS_STS_ENDPOINT", 1, "`sts.amazonaws.com`",
        "AssumeRole's STS host"),
    [VT_OPT_STS_REGION] = STR("AWS_STS_REGION", 1, "`us-east-1`",
        "AssumeRole's STS region"),
    [VT_OPT_CONTAINER_RELATIVE_URI] = STR(
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", 1, "unset",
        "container credentials, path on 169.254.170.2"),
    [VT_OPT_CONTAINER_FULL_URI] = STR("AWS_CONTAINER_CREDENTIALS_FULL_URI", 1,
        "unset", "container credentials, URL"),
    [VT_OPT_CONTAINER_TOKEN] = STR("AWS_CONTAINER_AUTHORIZATION_TOKEN", 1,
        "unset", "container credentials' token"),
    [VT_OPT_CONTAINER_TOKEN_FILE] = STR(
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", 1, "unset",
        "container credentials' token file"),
    [VT_OPT_EC2_ROOT_URL] = STR("CPL_AWS_EC2_API_ROOT_URL", 1,
        "`http://169.254.169.254`", "EC2 instance metadata (GDAL's name)"),
    [VT_OPT_IMDS_ENDPOINT] = STR("AWS_EC2_METADATA_SERVICE_ENDPOINT", 1,
        "`http://169.254.169.254`", "EC2 instance metadata"),
    [VT_OPT_AUTODETECT_EC2] = BOOL("CPL_AWS_AUTODETECT_EC2", 1, 1, "`YES`",
        "NO: ask IMDS even where the host does not look like EC2"),
    [VT_OPT_CHECK_HYPERVISOR_UUID] = BOOL("CPL_AWS_CHECK_HYPERVISOR_UUID", 1,
        1, "`YES`", "GDAL's older name of CPL_AWS_AUTODETECT_EC2"),
    [VT_OPT_IMDS_DISABLED] = BOOL("AWS_EC2_METADATA_DISABLED", 1, 0, "unset",
        "true: never ask IMDS"),
    [VT_OPT_TIMESTAMP] = STR("AWS_TIMESTAMP", 1, "unset",
        "a fixed signing time (GDAL's test option)"),
    [VT_OPT_HTTP_HEADERS] = STR("GDAL_HTTP_HEADERS", 1, "unset",
        "extra headers on every request"),
    [VT_OPT_HTTP_HEADER_FILE] = STR("GDAL_HTTP_HEADER_FILE", 1, "unset",
        "a file of extra header lines"),
    /* ---- HTTP (per path: from GDAL 3.7, vt__cfg_http_path; GDAL reads
     * GDAL_HTTP_UNSAFESSL, GDAL_HTTP_USERAGENT and CPL_CURL_VERBOSE from the
     * configuration only, on every release) */
    [VT_OPT_UNSAFESSL] = BOOL("GDAL_HTTP_UNSAFESSL", 0, 0, "`NO`",
        "YES skips TLS verification"),
    [VT_OPT_GDAL_CA_BUNDLE] = STR("GDAL_CURL_CA_BUNDLE", 1, "system",
        "CA file (config.h: the running GDAL's rule)"),
    [VT_OPT_CURL_CA_BUNDLE] = STR("CURL_CA_BUNDLE", 1, "system", "CA file"),
    [VT_OPT_SSL_CERT_FILE] = STR("SSL_CERT_FILE", 1, "system", "CA file"),
    [VT_OPT_USERAGENT] = STR("GDAL_HTTP_USERAGENT", 0, "`vsitune/<version>`",
        "User-Agent"),
    [VT_OPT_PROXY] = STR("GDAL_HTTP_PROXY", 1, "unset", "HTTP proxy"),
    [VT_OPT_HTTP_VERSION] = STR("GDAL_HTTP_VERSION", 1,
        "h2 where ALPN offers it", "1.0, 1.1 or 2PRIOR_KNOWLEDGE"),
    [VT_OPT_CURL_VERBOSE] = BOOL("CPL_CURL_VERBOSE", 0, 0, "`NO`",
        "curl's trace on stderr"),
    /* ---- GCS, as GDAL 3.6's /vsigs/ reads them (cpl_google_cloud.cpp,
     * cpl_google_oauth2.cpp); docs/configuration.md, "GCS" */
    [VT_OPT_GS_ENDPOINT] = STR("CPL_GS_ENDPOINT", 1,
        "`https://storage.googleapis.com/`", "GCS endpoint, bucket appended"),
    [VT_OPT_GS_TIMESTAMP] = STR("CPL_GS_TIMESTAMP", 1, "unset",
        "a fixed Date for GOOG1 signing (GDAL's test option)"),
    [VT_OPT_GS_USER_PROJECT] = STR("GS_USER_PROJECT", 1, "unset",
        "project billed: x-goog-user-project"),
    [VT_OPT_GS_NO_SIGN_REQUEST] = BOOL("GS_NO_SIGN_REQUEST", 1, 0, "`NO`",
        "anonymous requests"),
    [VT_OPT_GS_SECRET_ACCESS_KEY] = STR("GS_SECRET_ACCESS_KEY", 1, "unset",
        "HMAC secret (GOOG1 signing)"),
    [VT_OPT_GS_ACCESS_KEY_ID] = STR("GS_ACCESS_KEY_ID", 1, "unset",
        "HMAC key id"),
    [VT_OPT_GS_REFRESH_TOKEN] = STR("GS_OAUTH2_REFRESH_TOKEN", 1, "unset",
        "OAuth2 refresh token"),
    [VT_OPT_GS_CLIENT_ID] = STR("GS_OAUTH2_CLIENT_ID", 1, "unset",
        "the refresh token's client id (process-wide for the boto file's)"),
    [VT_OPT_GS_CLIENT_SECRET] = STR("GS_OAUTH2_CLIENT_SECRET", 1, "unset",
        "the refresh token's client secret (process-wide for the boto "
        "file's)"),
    [VT_OPT_GS_APPLICATION_CREDENTIALS] = STR(
        "GOOGLE_APPLICATION_CREDENTIALS", 1, "unset",
        "a service_account or authorized_user JSON file"),
    [VT_OPT_GS_PRIVATE_KEY] = STR("GS_OAUTH2_PRIVATE_KEY", 1, "unset",
        "a service account's PEM key"),
    [VT_OPT_GS_PRIVATE_KEY_FILE] = STR("GS_OAUTH2_PRIVATE_KEY_FILE", 1,
        "unset", "a file holding it (first 32 KB)"),
    [VT_OPT_GS_CLIENT_EMAIL] = STR("GS_OAUTH2_CLIENT_EMAIL", 1, "unset",
        "the service account's email"),
    [VT_OPT_GS_SCOPE] = STR("GS_OAUTH2_SCOPE", 1,
        "`https://www.googleapis.com/auth/devstorage.read_write`",
        "the service account's scope"),
    [VT_OPT_GS_CREDENTIALS_FILE] = STR("CPL_GS_CREDENTIALS_FILE", 0,
        "`~/.boto`", "the boto file"),
    [VT_OPT_GOA2_AUTH_URL_TOKEN] = STR("GOA2_AUTH_URL_TOKEN", 0,
        "`https://accounts.google.com/o/oauth2/token`",
        "where a refresh token is exchanged"),
    [VT_OPT_GOA2_CLIENT_ID] = STR("GOA2_CLIENT_ID", 0, "unset",
        "client id when the refresh token has none"),
    [VT_OPT_GOA2_CLIENT_SECRET] = STR("GOA2_CLIENT_SECRET", 0, "unset",
        "client secret when the refresh token has none"),
    [VT_OPT_GO2A_AUD] = STR("GO2A_AUD", 0,
        "`https://www.googleapis.com/oauth2/v4/token`",
        "where a service account's JWT is posted, its aud claim"),
    [VT_OPT_GOA2_EXPIRATION_DELAY] = STR("GOA2_EXPIRATION_DELAY", 0,
        "`3600`", "the JWT's lifetime, seconds (atoi, as GDAL)"),
    [VT_OPT_GOA2_NOW] = STR("GOA2_NOW", 0, "unset",
        "a fixed JWT issue time (GDAL's test option)"),
    [VT_OPT_GCE_SKIP] = BOOL("CPL_GCE_SKIP", 0, 0, "`NO`",
        "YES: never ask GCE's metadata server"),
    [VT_OPT_GCE_CREDENTIALS_URL] = STR("CPL_GCE_CREDENTIALS_URL", 0,
        "`http://metadata.google.internal/computeMetadata/v1/instance/"
        "service-accounts/default/token`", "GCE's token URL"),
    [VT_OPT_MACHINE_IS_GCE] = BOOL("CPL_MACHINE_IS_GCE", 0, 0, "`NO`",
        "YES: take the host for a GCE instance"),
    [VT_OPT_GCE_CHECK_LOCAL_FILES] = BOOL("CPL_GCE_CHECK_LOCAL_FILES", 0, 1,
        "`YES`", "NO: ask GCE's metadata server without looking at the DMI "
        "product name"),
    /* ---- Azure, as GDAL 3.6's /vsiaz/ reads them (cpl_azure.cpp);
     * docs/configuration.md, "Azure" */
    [VT_OPT_AZ_CONNECTION_STRING] = STR("AZURE_STORAGE_CONNECTION_STRING", 1,
        "unset", "account, key or SAS, and endpoint in one string"),
    [VT_OPT_AZ_ACCOUNT] = STR("AZURE_STORAGE_ACCOUNT", 1, "unset",
        "the storage account"),
    [VT_OPT_AZ_ACCESS_TOKEN] = STR("AZURE_STORAGE_ACCESS_TOKEN", 1, "unset",
        "a bearer token (process-wide for the CLI file's account, as GDAL)"),
    [VT_OPT_AZ_ACCESS_KEY] = STR("AZURE_STORAGE_ACCESS_KEY", 1, "unset",
        "the account's shared key"),
    [VT_OPT_AZ_SAS_TOKEN] = STR("AZURE_STORAGE_SAS_TOKEN", 1, "unset",
        "a SAS query string"),
    [VT_OPT_AZ_SAS] = STR("AZURE_SAS", 0, "unset",
        "AZURE_STORAGE_SAS_TOKEN's older name"),
    [VT_OPT_AZ_NO_SIGN_REQUEST] = BOOL("AZURE_NO_SIGN_REQUEST", 1, 0, "`NO`",
        "anonymous requests"),
    [VT_OPT_AZ_VM_API_ROOT_URL] = STR("CPL_AZURE_VM_API_ROOT_URL", 0,
        "`http://169.254.169.254`",
        "the managed identity endpoint; \"disabled\": none"),
    [VT_OPT_AZ_IMDS_OBJECT_ID] = STR("AZURE_IMDS_OBJECT_ID", 1, "unset",
        "the managed identity's object id"),
    [VT_OPT_AZ_IMDS_CLIENT_ID] = STR("AZURE_IMDS_CLIENT_ID", 1, "unset",
        "the managed identity's client id"),
    [VT_OPT_AZ_IMDS_MSI_RES_ID] = STR("AZURE_IMDS_MSI_RES_ID", 1, "unset",
        "the managed identity's resource id"),
    [VT_OPT_AZ_CONFIG_DIR] = STR("AZURE_CONFIG_DIR", 0, "`~/.azure`",
        "the Azure CLI's directory; \"\": no CLI file"),
    [VT_OPT_AZ_ENDPOINT] = STR("CPL_AZURE_ENDPOINT", 1,
        "`https://<account>.blob.core.windows.net`",
        "the endpoint, path included"),
    [VT_OPT_AZ_USE_HTTPS] = BOOL("CPL_AZURE_USE_HTTPS", 1, 1, "`YES`",
        "the default endpoint's scheme"),
    [VT_OPT_AZ_TIMESTAMP] = STR("CPL_AZURE_TIMESTAMP", 0, "unset",
        "a fixed x-ms-date (GDAL's test option)"),
    /* ---- /vsicurl/, as GDAL's /vsicurl/ reads them (cpl_http.cpp,
     * cpl_vsil_curl.cpp): per path from GDAL 3.7 for those in GDAL's
     * CPLHTTPGetOptionsFromEnv table (vt__cfg_http_path), else
     * process-wide; docs/configuration.md, "/vsicurl/".
     * GDAL_HTTP_BEARER exists from GDAL 3.9, GDAL_HTTP_NETRC_FILE from 3.7. */
    [VT_OPT_CURL_USERPWD] = STR("GDAL_HTTP_USERPWD", 1, "unset",
        "user:password, Basic unless GDAL_HTTP_AUTH says otherwise"),
    [VT_OPT_CURL_AUTH] = STR("GDAL_HTTP_AUTH", 1, "unset",
        "the HTTP auth scheme: BASIC, BEARER, NTLM, ANY, NEGOTIATE"),
    [VT_OPT_CURL_BEARER] = STR("GDAL_HTTP_BEARER", 1, "unset",
        "the token GDAL_HTTP_AUTH=BEARER sends"),
    [VT_OPT_CURL_COOKIE] = STR("GDAL_HTTP_COOKIE", 1, "unset",
        "a Cookie header's value"),
    [VT_OPT_CURL_HTTPS_PROXY] = STR("GDAL_HTTPS_PROXY", 1, "unset",
        "proxy for https URLs"),
    [VT_OPT_CURL_PROXYUSERPWD] = STR("GDAL_HTTP_PROXYUSERPWD", 1, "unset",
        "the proxy's user:password"),
    [VT_OPT_CURL_PROXY_AUTH] = STR("GDAL_PROXY_AUTH", 1, "unset",
        "the proxy's auth scheme"),
    [VT_OPT_CURL_NETRC] = BOOL("GDAL_HTTP_NETRC", 1, 1, "`YES`",
        "curl reads the netrc file"),
    [VT_OPT_CURL_NETRC_FILE] = STR("GDAL_HTTP_NETRC_FILE", 1,
        "`$HOME/.netrc`", "the netrc file"),
    [VT_OPT_CURL_USE_S3_REDIRECT] = BOOL("CPL_VSIL_CURL_USE_S3_REDIRECT", 0,
        1, "`YES`", "go straight to a remembered signed redirect target"),
    [VT_OPT_CURL_USE_HEAD] = BOOL("CPL_VSIL_CURL_USE_HEAD", 0, 1, "`YES`",
        "NO: stock GDAL opens with a GET instead of a HEAD"),
};
