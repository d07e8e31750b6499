/* handler_sib.c: GDAL's question "which files lie beside this one?"
 * (the plugin's sibling_files callback): GDAL's own listing when one went
 * through lately, "none" for a COG (VSITUNE_SIDECARS, said once), else one
 * stem-scoped listing. Why apart: the sidecar rules are the one answer that
 * differs from stock GDAL's by design, and have their own options. */
#include "gdal/handler_int.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>

#include "base/config.h"
#include "base/notice.h"
#include "read/listing.h"
#include "read/object.h"
#include "read/policy.h"
#include "stats/stats.h"

/* The sibling answer from GDAL's own listing of path's directory, when one
 * went through the router lately (a driver's or the user's ReadDir):
 * exactly what stock GDAL answers, since its open reuses that listing, and
 * no LIST. NULL when none is held, or when it holds more names than
 * GDAL_READDIR_LIMIT_ON_OPEN (stock then gives no list either and the stem
 * listing decides). */
static char **gdal_listed_siblings(const vt_backend *be, const char *path)
{
    size_t limit = (size_t)vt__opt_size(path, VT_OPT_READDIR_LIMIT);
    char **names = vt__listing_names_of_dir(be, path, limit), **out;
    size_t n = 0, i;
    if (!names)
        return NULL;
    while (names[n])
        n++;
    out = (char **)CPLCalloc(n + 1, sizeof(char *));
    for (i = 0; i < n; i++) {
        out[i] = CPLStrdup(names[i]);
        free(names[i]);
    }
    free(names);
    CPLDebug("VSITUNE", "siblings of %s: GDAL's listing of its directory "
             "(%zu names), no request", path, n);
    vt__stats_avoided(be->name, VT_AVOIDED_LIST);
    return out;
}

enum sibling_mode { SIBLINGS_AUTO, SIBLINGS_NONE, SIBLINGS_GDAL };

/* Who answers the sibling question for path (see vt__handler_siblings);
 * *chosen: VSITUNE_SIDECARS is set (to any value). */
static enum sibling_mode sibling_mode(const char *path, int *chosen)
{
    int sidecars = vt__opt_choice(path, VT_OPT_SIDECARS, chosen);
    char *readdir = vt__cfg_dup(path, "GDAL_DISABLE_READDIR_ON_OPEN");
    enum sibling_mode m = SIBLINGS_AUTO;
    if (readdir && (EQUAL(readdir, "EMPTY_DIR") || CPLTestBool(readdir)))
        m = SIBLINGS_GDAL; /* GDAL applies its own option to a NULL answer */
    else if (sidecars != VT_SIDECARS_AUTO)
        m = sidecars == VT_SIDECARS_YES ? SIBLINGS_GDAL : SIBLINGS_NONE;
    free(readdir);
    return m;
}

/* The one answer of the plugin that differs from stock GDAL's by design (a
 * COG's external .aux.xml, .ovr, .msk are not read), said where it happens:
 * once per process, the first time a COG is opened so while the user has
 * not set VSITUNE_SIDECARS (any value, AUTO included, silences it), as a
 * notice (notice.h: GDAL's debug channel, shown without CPL_DEBUG, GDAL's
 * error state untouched). */
static atomic_int cog_notice_said;

static void say_cog_without_sidecars(const char *path)
{
    if (atomic_exchange(&cog_notice_said, 1))
        return;
    vt__notice("a COG is opened without looking for its sidecar files (the "
               "first: s3://%s): an external .aux.xml (nodata, statistics, "
               "metadata), .ovr or .msk beside a COG is not read, where stock "
               "GDAL reads it. VSITUNE_SIDECARS=YES reads them as stock GDAL "
               "does; VSITUNE_SIDECARS=AUTO keeps this and silences this line "
               "(said once per process)",
               path);
}

/* GDAL's question "which files lie beside this one?". GDALOpenInfo asks it
 * on every open (a non-NULL answer is kept for the drivers that look for
 * .aux.xml, .ovr, .msk, world files, .prj, ...); NULL makes GDAL list the
 * directory itself, later, and only if a driver asks (stock behaviour).
 *  VSITUNE_SIDECARS=YES: NULL, always.
 *  VSITUNE_SIDECARS=NO: "none", always, without a request.
 *  default (automatic): "none" for a COG (by its header, already in
 *    memory); else, for a name with an extension (one stock GDAL's open
 *    lists the directory for anyway), the names of one stem-scoped listing
 *    (listing.h), or NULL when that page was cut (more than 1000 keys share
 *    the stem) or failed; for a name without an extension (or a .zip,
 *    which stock's open does not list for), NULL: a LIST only if a driver
 *    asks, as stock GDAL.
 * GDAL_DISABLE_READDIR_ON_OPEN (GDAL's own option): NULL, so that GDAL
 * applies it exactly (EMPTY_DIR: the file alone; YES: probe each). */
char **vt__handler_siblings(const vt_backend *be, const char *path)
{
    vt_object *o = NULL;
    vt_listing *l = NULL;
    long status;
    char errbuf[1024];
    char **out = NULL;
    size_t i, n;
    int chosen;

    switch (sibling_mode(path, &chosen)) {
    case SIBLINGS_NONE:
        vt__stats_avoided(be->name, VT_AVOIDED_LIST);
        return (char **)CPLCalloc(1, sizeof(char *));
    case SIBLINGS_GDAL: return NULL;
    default: break;
    }
    if (vt__object_open(be, path, &o, &status, errbuf, sizeof(errbuf)) == VT_OK) {
        unsigned char head[1024];
        size_t hn = vt__object_size(o) < sizeof(head)
                        ? (size_t)vt__object_size(o)
                        : sizeof(head);
        uint64_t zero = 0;
        void *dst = head;
        int cog = hn > 0 &&
                  vt__object_read(o, NULL, 1, &dst, &zero, &hn, NULL,
                                  errbuf, sizeof(errbuf)) == VT_OK &&
                  vt__policy_is_cog(head, hn);
        if (cog)
            vt__listing_remember_no_sidecars(be, path, vt__object_size(o),
                                             vt__object_mtime(o));
        vt__object_release(o);
        if (cog) {
            CPLDebug("VSITUNE", "siblings of %s: a COG, none looked for", path);
            if (!chosen)
                say_cog_without_sidecars(path);
            vt__stats_avoided(be->name, VT_AVOIDED_LIST);
            return (char **)CPLCalloc(1, sizeof(char *));
        }
    }
    {
        const char *base = strrchr(path, '/'), *dot;
        base = base ? base + 1 : path;
        dot = strrchr(base, '.');
        if (!dot || strncmp(dot + 1, "zip", 3) == 0)
            return NULL; /* GDAL lists if and when a driver needs it */
    }
    if ((out = gdal_listed_siblings(be, path)) != NULL)
        return out;
    if (vt__listing_get(be, path, &l, errbuf, sizeof(errbuf)) != VT_OK) {
        CPLDebug("VSITUNE", "siblings of %s: %s; GDAL lists", path, errbuf);
        return NULL;
    }
    if (vt__listing_truncated(l)) {
        CPLDebug("VSITUNE", "siblings of %s: over 1000 keys share its stem; "
                 "GDAL lists", path);
        vt__listing_release(l);
        return NULL;
    }
    n = vt__listing_count(l);
    out = (char **)CPLCalloc(n + 1, sizeof(char *));
    for (i = 0; i < n; i++)
        out[i] = CPLStrdup(vt__listing_entry(l, i)->name);
    vt__listing_release(l);
    return out;
}
