/* handler.c: VSI plugin callbacks for reads (see handler.h): stat and
 * open, the open's failure in GDAL's words, GDAL's ReadDir news, and the
 * callbacks filled for GDAL. A handle's reads are handler_io.c's, the
 * sibling question handler_sib.c's (handler_int.h). */
#include "gdal/handler.h"
#include "gdal/handler_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi_error.h>

#include "cache/cache.h"
#include "base/config.h"
#include "compat/gdal_error.h"
#include "compat/gdal_release.h"
#include "read/object.h"
#include "read/listing.h"
#include "read/planner.h"
#include "read/policy.h"
#include "backends/backend.h"
#include "gdal/stock.h"

/* The handlers installed: one per backend (vt__handler_fill_callbacks),
 * each callbacks struct's pUserData pointing at its own. Filled before GDAL
 * calls any callback, never changed after. */
#define VT_READERS 8
static vt_reader g_readers[VT_READERS];
static size_t g_nreaders;

/* Why the last open on this thread failed (see vt__handler_open_error). */
static _Thread_local char t_open_error[VT_GDAL_MSG_CAP];
static _Thread_local int t_open_error_class;
static _Thread_local int t_open_error_vsie; /* report_as_gdal's VSIE_* */
static _Thread_local int t_open_quiet;  /* GDAL sets no VSI error for it */
static _Thread_local int t_open_no_error; /* this open asks for none */
static _Thread_local int t_stat_asked;    /* vt__handler_stat_asked */

/* Stock GDAL's IsAllowedFilename, on the name GDAL asked for. */
static int allowed(const vt_backend *be, const char *path)
{
    char name[4096];
    char *file = vt__cfg_dup_raw(path, "CPL_VSIL_CURL_ALLOWED_FILENAME");
    char *exts = vt__cfg_dup_raw(path, "CPL_VSIL_CURL_ALLOWED_EXTENSIONS");
    int ok;
    snprintf(name, sizeof(name), "%s%s", be->gdal_prefix, path);
    ok = vt__policy_allowed_name(name, file, exts);
    free(file);
    free(exts);
    return ok;
}

/* Fill st as GDAL's /vsis3/ does: S_IFREG or S_IFDIR without permission
 * bits, the size, Last-Modified as st_mtime. */
static void fill_stat(VSIStatBufL *st, int is_dir, uint64_t size,
                      long long mtime)
{
    memset(st, 0, sizeof(*st));
    st->st_mode = is_dir ? S_IFDIR : S_IFREG;
    st->st_size = is_dir ? 0 : (GIntBig)size;
    st->st_mtime = is_dir ? 0 : (time_t)mtime;
}

/* Listings allowed for path: not under GDAL_DISABLE_READDIR_ON_OPEN (or
 * EMPTY_DIR), nor CPL_VSIL_CURL_NON_CACHED. */
static int may_list(const char *path)
{
    char *readdir = vt__cfg_dup(path, "GDAL_DISABLE_READDIR_ON_OPEN");
    int skip = readdir && (EQUAL(readdir, "EMPTY_DIR") || CPLTestBool(readdir));
    free(readdir);
    return !skip && !vt__cfg_non_cached(path);
}

/* 1 when path's basename has an extension (a '.' or '_' after its stem):
 * the names drivers probe for sidecars (x.prj, X.CLR, x.tif.aux.xml). */
static int has_extension(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return base[0] && base[vt__listing_stem_len(base)] != '\0';
}

/* What the stem-scoped listing of path says of it (listing.h: one LIST of
 * the keys starting with its stem, which GDAL's next probes of the same
 * stem are then answered from): 1 present (*e), 0 absent, -1 no answer
 * (listings not allowed, the LIST failed or was cut at 1000 keys). */
static int stem_lookup(const vt_backend *be, const char *path,
                       vt_list_entry *e)
{
    vt_listing *l = NULL;
    char errbuf[1024];
    int cut;
    if (!has_extension(path) || !may_list(path))
        return -1;
    if (vt__listing_get(be, path, &l, errbuf, sizeof(errbuf)) != VT_OK) {
        CPLDebug("VSITUNE", "stat %s: %s", path, errbuf);
        return -1;
    }
    cut = vt__listing_truncated(l);
    vt__listing_release(l);
    return cut ? -1 : vt__listing_lookup(be, path, e);
}

/* 1 when path names a "directory" (keys under path/): from a listing we
 * hold; when S3 said the name is missing (missing != 0) and it has an
 * extension (a probe for a sidecar, seldom a directory), from its stem's
 * listing, whose "name/" prefix answers it as GDAL's LIST of "name/" would,
 * and GDAL's probes of the same stem after; else GDAL's own request, one
 * page of 100 keys under "name/". */
static int is_directory(const vt_backend *be, const char *path, int missing)
{
    vt_list_entry e;
    vt_listing *l = NULL;
    char errbuf[1024];
    int known = vt__listing_lookup(be, path, &e), isdir;
    if (known < 0 && missing)
        known = stem_lookup(be, path, &e);
    if (known >= 0)
        return known == 1 && e.is_dir;
    /* As GDAL's Stat: one page of 100 keys under "path/" (the same request;
     * it also answers GDAL's probes of names inside without a request) */
    if (vt__listing_get_dir(be, path, 100, &l, errbuf, sizeof(errbuf)) != VT_OK)
        return 0;
    isdir = vt__listing_count(l) > 0 || vt__listing_has_marker(l);
    vt__listing_release(l);
    return isdir;
}

/* A name that is not an object may be a "directory" (a prefix of keys
 * without a trailing slash: a Zarr store, a shapefile folder): GDAL's own
 * Stat then lists it; so does vsitune (is_directory). */
static int stat_as_directory(const vt_backend *be, const char *path,
                             int missing, VSIStatBufL *st)
{
    if (!is_directory(be, path, missing))
        return -1;
    fill_stat(st, 1, 0, 0);
    return 0;
}

/* What is known of path without a request: 1 and *st filled (from GDAL's
 * own cache, where a listing the user made or a write put it; from
 * vsitune's object table; from a listing vsitune holds), -1 when a listing
 * says it is absent, 0 when unknown. */
static int stat_known(const vt_backend *be, const char *path,
                      VSIStatBufL *st)
{
    uint64_t size;
    long long mtime;
    vt_list_entry e;
    int known;
    /* GDAL's cache: its full Stat then answers from it, with the st_mode its
     * cache-only answer leaves at 0 for a directory */
    if (vt__stock_stat(be, path, st, VSI_STAT_CACHE_ONLY) == 0 &&
        vt__stock_stat(be, path, st, VSI_STAT_EXISTS_FLAG | VSI_STAT_NATURE_FLAG |
                                     VSI_STAT_SIZE_FLAG) == 0)
        return 1;
    if (vt__object_peek(be, path, &size, &mtime)) {
        fill_stat(st, 0, size, mtime);
        return 1;
    }
    known = vt__listing_lookup(be, path, &e); /* 1 present, 0 absent, -1 ? */
    if (known == 1)
        fill_stat(st, e.is_dir, e.size, e.mtime);
    return known == 1 ? 1 : known == 0 ? -1 : 0;
}

/* What stock GDAL says when its stat (or its open's existence check) meets
 * path failing again (gdal_error.h, vt__gdal_error_for_known): the failure
 * this thread's last request for path got, else a 404 without a body (one
 * vsitune remembers, or a name absent from a listing it holds). Taken before
 * any later request (a listing) replaces that answer. 1 when GDAL says
 * something: *rep is filled. */
static int known_failure(const vt_backend *be, const char *path, vt_err err, long status,
                         int set_error, int size_asked, int vsi_error_set,
                         vt_gdal_report *rep)
{
    char *bucket = NULL, *key = NULL;
    vt_gdal_fail f;
    int r;
    if (vt__object_missing_was_read(be, path))
        return 0; /* GDAL's cache holds no status for it */
    if (!(be->split(path, &bucket, &key) == VT_OK &&
          be->last_failure(bucket, key, &f))) {
        memset(&f, 0, sizeof(f));
        f.err = err;
        f.status = status;
    }
    r = vt__gdal_error_for_known(&f, set_error, size_asked, vsi_error_set, rep);
    free(bucket);
    free(key);
    return r;
}

/* Hand GDAL what known_failure worded, as GDAL's own code would. */
static void tell_gdal(const vt_gdal_report *rep)
{
    if (rep->warn)
        CPLError(CE_Warning, CPLE_AppDefined, "%s", rep->warning);
    if (rep->vsie != VSIE_None)
        VSIError(rep->vsie, "%s", rep->message);
}

int vt__handler_stat_asked(void)
{
    return t_stat_asked;
}

int vt__handler_stat_known(const vt_backend *be, const char *path,
                           VSIStatBufL *st)
{
    if (vt__policy_is_dir_like(path))
        return 0;
    return stat_known(be, path, st) == 1;
}

static int stat_in(const vt_backend *be, const char *path, VSIStatBufL *st,
                   int flags)
{
    vt_object *o = NULL;
    long status = 0;
    char errbuf[1024];
    vt_err err;
    vt_gdal_report rep;
    int set_error = (flags & VSI_STAT_SET_ERROR_FLAG) != 0;
    int size_asked = (flags & VSI_STAT_SIZE_FLAG) != 0;
    int vsi_set = VSIGetLastErrorNo() != 0, say;

    t_stat_asked = 0;
    if (!allowed(be, path)) {
        errno = ENOENT;
        return -1;
    }
    if (vt__policy_is_dir_like(path))
        return vt__stock_stat(be, path, st, flags); /* a directory: GDAL's */
    /* A service vsitune cannot list (/vsicurl/): a name GDAL's cache knows
     * (from its HTML index, its stat) is GDAL's to answer, with the caller's
     * flags (a size asked of a name its index listed is GDAL's HEAD) */
    if (!be->list && vt__stock_stat(be, path, st, VSI_STAT_CACHE_ONLY) == 0)
        return vt__stock_stat(be, path, st, flags);
    switch (stat_known(be, path, st)) {
    case 1:
        vt__handler_done_with(be, path);
        return 0;
    case -1:
        CPLDebug("VSITUNE", "stat %s: not in its listing, no request", path);
        if (!(flags & VSI_STAT_CACHE_ONLY) &&
            known_failure(be, path, VT_ENOTFOUND, 404, set_error, size_asked,
                          vsi_set, &rep))
            tell_gdal(&rep);
        errno = ENOENT;
        return -1;
    default:
        break;
    }
    if (flags & VSI_STAT_CACHE_ONLY) {
        errno = ENOENT;
        return -1;
    }
    /* GDAL's Stat answers a name absent from its own listing of the
     * directory without a request (3.13's gdalinfo stats x.tif.vat.dbf after
     * GDAL listed for the sibling question) */
    if (vt__listing_in_gdal_dir(be, path) == 0) {
        CPLDebug("VSITUNE", "stat %s: not in GDAL's listing, no request", path);
        errno = ENOENT;
        return -1;
    }
    /* A driver probing a directory we already listed part of (another stem,
     * or the same in capitals: CPLFormCIFilename's X.CLR after x.clr): one
     * LIST of this stem answers this probe and its siblings, as GDAL's one
     * listing of the directory does, where a GET would miss and still need
     * the LIST to tell a directory. */
    if (has_extension(path) && vt__listing_dir_held(be, path)) {
        vt_list_entry e;
        int known = stem_lookup(be, path, &e);
        if (known == 1) {
            fill_stat(st, e.is_dir, e.size, e.mtime);
            vt__handler_done_with(be, path);
            return 0;
        }
        if (known == 0) {
            CPLDebug("VSITUNE", "stat %s: not in its stem's listing", path);
            errno = ENOENT;
            return -1;
        }
    }
    t_stat_asked = 1;
    err = vt__object_open(be, path, &o, &status, errbuf, sizeof(errbuf));
    if (err != VT_OK) {
        /* Quiet, as GDAL's own stat of a name it met before: stat is how
         * GDAL probes, and a CE_Failure here would make the Python bindings
         * raise even when the open around it then succeeds (a transient
         * error a retry fixed). A failing open reports the reason (see
         * cb_open). What later GDALs do say is said (known_failure). */
        CPLDebug("VSITUNE", "stat: %s", errbuf);
        say = known_failure(be, path, err, status, set_error, size_asked, vsi_set,
                            &rep);
        vt__handler_done_with(be, path);
        if (stat_as_directory(be, path, status == 404 &&
                                        !strstr(errbuf, "NoSuchBucket"), st) == 0)
            return 0;
        if (say)
            tell_gdal(&rep);
        errno = vt__handler_errno_for(err);
        return -1;
    }
    fill_stat(st, 0, vt__object_size(o), vt__object_mtime(o));
    vt__object_release(o);
    vt__handler_done_with(be, path);
    return 0;
}

/* When the open failed on an S3 answer (or on credentials), word it as stock
 * GDAL does (gdal_error.h): GDAL's class and message, vsitune's detail after
 * it, and GDAL's warning "HTTP response code on <url>: <n>" where GDAL emits
 * one, for this open (set_error: vt__handler_open_asks_no_error) with a VSI
 * error set before it or not (vsi_error_set); again_ok: when the failure is
 * the one this name met last (gdal_error.h, vt_gdal_fail.again), as GDAL
 * words a failure it remembers. 0 when there is no such answer to report
 * (the caller words it). */
static int report_as_gdal(const vt_backend *be, const char *path,
                          int vsi_error_set, int again_ok)
{
    char *bucket = NULL, *key = NULL;
    vt_gdal_fail f;
    vt_gdal_report rep;
    int found = be->split(path, &bucket, &key) == VT_OK &&
                be->last_failure(bucket, key, &f);

    if (found && again_ok && f.again && vt__gdal_keeps_failure(&f) &&
        !vt__cfg_non_cached(path)) {
        /* The same failure as this name's last one: GDAL would have met it
         * in its cache (asked again here all the same: a healed server is
         * read at once) and words it so; 3.6 says nothing at all. */
        memset(&rep, 0, sizeof(rep));
        if (!vt__gdal_error_for_open_again(&f, !t_open_no_error,
                                           vsi_error_set, &rep))
            rep.vsie = VSIE_None;
        CPLDebug("VSITUNE", "open %s failed as before: worded as GDAL's "
                 "remembered failure", path);
    } else if (found) {
        vt__gdal_error_for_open(&f, &rep);
        vt__gdal_error_in_context(&f, !t_open_no_error, vsi_error_set, &rep);
    }
    if (found) {
        t_open_quiet = rep.vsie == VSIE_None;
        if (rep.warn)
            CPLError(CE_Warning, CPLE_AppDefined, "%s", rep.warning);
        t_open_error_class = rep.cple;
        t_open_error_vsie = rep.vsie;
        snprintf(t_open_error, sizeof(t_open_error), "%s", rep.message);
        if (rep.detail[0])
            CPLDebug("VSITUNE", "open failed as GDAL words it: %s (%s)",
                     rep.message, rep.detail);
    }
    free(bucket);
    free(key);
    return found;
}

/* What stock GDAL's Open does with a name the server says is missing
 * (GDAL 3.6 to 3.13, cpl_vsil_curl.cpp and cpl_vsil_s3.cpp), so that the
 * handle, the error class and the message GDALOpen reports are the same:
 * - listings disabled (GDAL_DISABLE_READDIR_ON_OPEN, CPL_VSIL_CURL_NON_CACHED):
 *   it checks the object and reports S3's error;
 * - a last component without '.', or an extension starting with "zip": it
 *   does not check, and returns a handle on an empty file, unless a listing
 *   of the directory it holds says the name is absent;
 * - any other name: it lists the directory. Listed (not empty): a name in it
 *   (a "directory") gets an empty handle, any other nothing and no error
 *   (GDALOpen: "does not exist in the file system"); not listed (an empty
 *   or unlistable directory): it checks the object and reports S3's error. */
enum missing { MISSING_REPORT, MISSING_SILENT, MISSING_EMPTY_HANDLE };

static enum missing stock_on_missing(const vt_backend *be, const char *path)
{
    const char *slash = strrchr(path, '/'), *base, *dot;
    char *readdir = vt__cfg_dup(path, "GDAL_DISABLE_READDIR_ON_OPEN");
    int skip = readdir && (EQUAL(readdir, "EMPTY_DIR") || CPLTestBool(readdir));
    vt_list_entry e;
    vt_listing *l = NULL;
    char dir[4096], errbuf[1024];
    enum missing m;

    free(readdir);
    if (skip || vt__cfg_non_cached(path) || !slash)
        return MISSING_REPORT;
    base = slash + 1;
    dot = strrchr(base, '.');
    if (dot == NULL || strncmp(dot + 1, "zip", 3) == 0) {
        size_t listed = 0; /* an empty page is no listing to GDAL */
        return vt__listing_lookup_n(be, path, &e, &listed) == 0 && listed > 0
                   ? MISSING_SILENT
                   : MISSING_EMPTY_HANDLE;
    }
    /* a Kerchunk reference: GDAL 3.11+ does not list for it */
    if (vt__gdal_release()->open_listing_one_page && strlen(base) >= 8 &&
        strcmp(base + strlen(base) - 8, ".nc.zarr") == 0)
        return MISSING_EMPTY_HANDLE;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (vt__listing_get_dir(be, dir, 1000, &l, errbuf, sizeof(errbuf)) != VT_OK ||
        vt__listing_count(l) == 0)
        m = MISSING_REPORT;
    else if (vt__listing_find(l, base, &e))
        m = MISSING_EMPTY_HANDLE;
    else if (vt__listing_find_ci(l, base))
        m = MISSING_REPORT; /* GDAL checks the object then: a case mismatch */
    else if (vt__listing_truncated(l))
        /* 3.11+ reads one page of 1000, then opens; before, it asks */
        m = vt__gdal_release()->open_listing_one_page || is_directory(be, path, 1)
                ? MISSING_EMPTY_HANDLE
                : MISSING_SILENT;
    else
        m = MISSING_SILENT;
    vt__listing_release(l);
    return m;
}

static vt_handle *open_in(const vt_reader *rd, const char *path,
                          const char *access)
{
    vt_handle *h;
    vt_object *o = NULL;
    vt_list_entry e;
    size_t listed = 0;
    long status = 0;
    char errbuf[1024];
    vt_err err;
    vt_gdal_report rep;
    int vsi_set = VSIGetLastErrorNo() != 0;
    const vt_backend *be = rd->be;

    if (strpbrk(access, "wa+")) { /* takeover.cpp sends these to GDAL's */
        errno = EACCES;
        return NULL;
    }
    t_open_error[0] = '\0';
    t_open_quiet = 0;
    if (!allowed(be, path)) { /* as GDAL: no request, no error message */
        errno = ENOENT;
        return NULL;
    }
    if (vt__listing_lookup_n(be, path, &e, &listed) == 0 && listed > 0) {
        /* absent from a listing we hold, with other keys in it (so the
         * directory is not empty): GDAL answers from its own the same way,
         * without a request and without an error */
        CPLDebug("VSITUNE", "open %s: not in its listing, no request", path);
        errno = ENOENT;
        return NULL;
    }
    err = vt__object_open(be, path, &o, &status, errbuf, sizeof(errbuf));
    if (err != VT_OK) {
        /* Not a CPLError: GDALOpen tries stat after a failed open, and may
         * still succeed (a transient error). takeover.cpp hands this text to
         * VSIError, which GDALOpen turns into the CPLError it reports when
         * the whole open fails. */
        CPLDebug("VSITUNE", "open: %s", errbuf);
        errno = vt__handler_errno_for(err);
        /* A missing key: as stock GDAL (stock_on_missing). A missing bucket,
         * a denial, a server or network failure: reported with their cause. */
        if (status == 404 && !strstr(errbuf, "NoSuchBucket")) {
            /* GDAL's words now: the listing below replaces the last answer */
            int remembered = vt__object_open_remembered();
            int words = remembered ? known_failure(be, path, err, status, 1, 0,
                                                   vsi_set, &rep)
                                   : report_as_gdal(be, path, vsi_set, 0);
            switch (stock_on_missing(be, path)) {
            case MISSING_SILENT:
                t_open_error[0] = '\0';
                return NULL;
            case MISSING_REPORT:
                if (remembered) {
                    /* GDAL meets its cached "absent": 3.6 says nothing,
                     * 3.10+ its status (gdal_error.h) */
                    t_open_error[0] = '\0';
                    if (words && rep.vsie != VSIE_None) {
                        t_open_error_class = rep.cple;
                        snprintf(t_open_error, sizeof(t_open_error), "%s",
                                 rep.message);
                    }
                } else if (!words) {
                    t_open_error_class = vt__handler_cple_for(status, errbuf);
                    snprintf(t_open_error, sizeof(t_open_error), "%s", errbuf);
                }
                return NULL;
            case MISSING_EMPTY_HANDLE: break;
            }
            CPLDebug("VSITUNE", "open %s: missing, an empty handle as GDAL's",
                     path);
            h = calloc(1, sizeof(*h));
            if (!h)
                errno = ENOMEM;
            else
                h->rd = rd;
            if (h && !remembered) {
                /* GDAL learns of the 404 by reading the handle: its cache
                 * keeps no status, and 3.13+ hands the read's error to
                 * GDALOpen (gdal_error.h) */
                vt__object_missing_by_read(be, path);
                if (words && vt__gdal_read_of_missing_says()) {
                    h->says = strdup(t_open_error);
                    h->says_vsie = t_open_error_vsie;
                }
            }
            t_open_error[0] = '\0';
            return h;
        }
        if (vt__object_open_remembered()) {
            /* A missing bucket vsitune remembers (VSITUNE_NEGATIVE_TTL), no
             * request: GDAL meets its cached failure too (gdal_error.h) */
            t_open_error[0] = '\0';
            if (known_failure(be, path, err, status, !t_open_no_error, 0, vsi_set,
                              &rep) &&
                rep.vsie != VSIE_None) {
                t_open_error_class = rep.cple;
                snprintf(t_open_error, sizeof(t_open_error), "%s",
                         rep.message);
            }
            return NULL;
        }
        if (!report_as_gdal(be, path, vsi_set, 1)) {
            t_open_error_class = vt__handler_cple_for(status, errbuf);
            snprintf(t_open_error, sizeof(t_open_error), "%s", errbuf);
        }
        return NULL;
    }
    t_open_error[0] = '\0';
    h = calloc(1, sizeof(*h));
    if (!h) {
        vt__object_release(o);
        errno = ENOMEM;
        return NULL;
    }
    h->obj = o;
    h->rd = rd;
    vt__object_read_opts(o, &h->opts);
    return h;
}


/* The GDAL callbacks: each runs its question for the handler GDAL called
 * (ud: its vt_reader), with path-specific options looked up under that
 * handler's prefix for the call's duration (config.h). */
static int cb_stat(void *ud, const char *path, VSIStatBufL *st, int flags)
{
    const vt_reader *rd = ud;
    const char *was = vt__cfg_scope_prefix(rd->cfg_prefix);
    int ret = stat_in(rd->be, path, st, flags);
    vt__cfg_scope_prefix(was);
    return ret;
}

static void *cb_open(void *ud, const char *path, const char *access)
{
    const vt_reader *rd = ud;
    const char *was = vt__cfg_scope_prefix(rd->cfg_prefix);
    vt_handle *h = open_in(rd, path, access);
    vt__cfg_scope_prefix(was);
    return h;
}

/* handler_sib.c answers, for the backend served. */
static char **cb_sibling_files(void *ud, const char *path)
{
    const vt_reader *rd = ud;
    const char *was = vt__cfg_scope_prefix(rd->cfg_prefix);
    char **names = vt__handler_siblings(rd->be, path);
    vt__cfg_scope_prefix(was);
    return names;
}

static char **cb_read_dir(void *ud, const char *path, int max_files)
{
    const vt_reader *rd = ud;
    return vt__stock_read_dir(rd->be, path, max_files);
}

void vt__handler_note_read_dir(const vt_backend *be, const char *path,
                               char **names, int max_files)
{
    /* complete (not cut at max_files): the sibling answer of its files */
    if (names && (max_files <= 0 || CSLCount(names) < max_files))
        vt__listing_remember_names(be, path, names);
}

void vt__handler_open_asks_no_error(int no_error)
{
    t_open_no_error = no_error;
}

const char *vt__handler_open_error(int *cple_class)
{
    *cple_class = t_open_error_class;
    return t_open_error[0] && !t_open_quiet ? t_open_error : NULL;
}

int vt__handler_fill_callbacks(VSIFilesystemPluginCallbacksStruct *cb,
                               const vt_backend *be, const char *cfg_prefix)
{
    vt_reader *rd = NULL;
    size_t i;
    for (i = 0; i < g_nreaders; i++)
        if (g_readers[i].be == be)
            rd = &g_readers[i];
    if (rd == NULL) {
        if (g_nreaders == VT_READERS)
            return -1;
        rd = &g_readers[g_nreaders++];
        rd->be = be;
    }
    rd->cfg_prefix = cfg_prefix;
    cb->pUserData = rd;
    cb->stat = cb_stat;
    cb->open = cb_open;
    vt__handler_io_callbacks(cb);
    cb->sibling_files = cb_sibling_files;
    cb->read_dir = cb_read_dir;
    cb->nBufferSize = 0; /* no VSICachedFile on top: the cache is ours */
    cb->nCacheSize = 0;
    return 0;
}
