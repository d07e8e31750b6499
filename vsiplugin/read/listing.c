/* listing.c: stem-scoped listings (see listing.h).
 *
 * A small table (at most MAX_LISTINGS, the oldest linked that nobody holds
 * dropped first) of immutable listings keyed by endpoint +
 * "bucket/dir/stem", newest first and indexed by that key (listing_table.c). `mu` guards the table, refcounts
 * and loading flags; it is a leaf lock (registered with forksafe), never held
 * across the LIST. */
#include "read/listing.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "http/engine.h"
#include "base/forksafe.h"
#include "base/hash.h"
#include "backends/backend.h"
#include "read/listing_table.h"

#define MAX_LISTINGS 256

struct vt_listing {
    char *id;          /* endpoint + "\n" + "bucket/dir/stem" [+ "\n" + page
                          size when not 1000] */
    int max_keys;      /* page size asked for */
    char *path;        /* "bucket/dir/stem" */
    size_t dir_len;    /* length of "bucket/dir/" within path */
    int sidecars_of;   /* not a LIST: a COG's "no sidecars", covering the
                          file's own name and names starting with it + "." */
    int names_only;    /* not a LIST of ours: GDAL's own listing of the
                          directory (names, no sizes): for the sibling
                          question only (vt__listing_names_of_dir) */
    const vt_backend *be; /* the service listed */
    vt_list_page page;
    time_t at;
    pid_t loader;      /* mu: process whose thread is listing (0: loaded) */
    int refs;          /* mu */
    vt_ltab_node node; /* mu: its place in the table (node.linked) */
    vt_listing *next;  /* a chain of listings to free (free_chain) */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static vt_ltab table;
static size_t lists_linked; /* mu: linked listings that are LISTs of ours
                               (neither sidecars_of nor names_only) */

#define LISTING_OF(n) ((vt_listing *)((char *)(n) - offsetof(vt_listing, node)))

/* The table's key of a listing: its id up to its path, "endpoint\npath"
 * (an endpoint has no newline; a key may). */
static size_t key_len_of(const vt_listing *l)
{
    return (size_t)(strchr(l->id, '\n') - l->id) + 1 + strlen(l->path);
}

static int is_list(const vt_listing *l)
{
    return !l->sidecars_of && !l->names_only;
}

/* mu held: l becomes the table's newest listing. */
static void link_listing(vt_listing *l)
{
    vt__ltab_link(&table, &l->node, l->id, key_len_of(l));
    lists_linked += is_list(l);
}

/* mu held: the newest listing of this id (whose key is id[0..kl)). */
static vt_listing *find_id(const char *id, size_t kl)
{
    uint64_t h = vt__fnv1a(id, kl);
    for (vt_ltab_node *n = vt__ltab_chain(&table, h); n; n = vt__ltab_next_of(n))
        if (strcmp(LISTING_OF(n)->id, id) == 0)
            return LISTING_OF(n);
    return NULL;
}

size_t vt__listing_stem_len(const char *base)
{
    size_t i;
    if (!base[0])
        return 0;
    for (i = 1; base[i]; i++)
        if (base[i] == '.' || base[i] == '_')
            return i;
    return i;
}

static void listing_free(vt_listing *l)
{
    if (!l)
        return;
    free(l->id);
    free(l->path);
    vt__list_page_clear(&l->page);
    free(l);
}

/* mu held. */
static void unlink_listing(vt_listing *l)
{
    if (l->node.linked)
        lists_linked -= is_list(l);
    vt__ltab_unlink(&table, &l->node);
}

/* mu held: unlink l; when nobody holds it, chain it on *dead (to free
 * unlocked, free_chain). */
static void drop(vt_listing *l, vt_listing **dead)
{
    unlink_listing(l);
    if (l->refs == 0) {
        l->next = *dead;
        *dead = l;
    }
}

static long ttl(const char *path)
{
    return (long)vt__opt_size(path, VT_OPT_METADATA_TTL);
}

/* Split "bucket/dir/name" into the stem path ("bucket/dir/stem") and the
 * directory length; NULL on a path without a key. malloc'd. */
static char *stem_path(const char *path, size_t *dir_len)
{
    const char *slash = strchr(path, '/'), *base;
    size_t n;
    char *out;
    if (!slash || !slash[1])
        return NULL;
    base = strrchr(path, '/') + 1;
    *dir_len = (size_t)(base - path);
    n = *dir_len + vt__listing_stem_len(base);
    out = malloc(n + 1);
    if (out) {
        memcpy(out, path, n);
        out[n] = '\0';
    }
    return out;
}

/* The endpoint identity of path's bucket (be->endpoint); 0 on
 * error. */
static int endpoint_of(const vt_backend *be, const char *path, char *ep,
                       size_t eplen)
{
    char *base = be->endpoint(path);
    int ok = base && (size_t)snprintf(ep, eplen, "%s", base) < eplen;
    free(base);
    return ok;
}

static vt_err fetch(vt_listing *l, char *errbuf, size_t errlen)
{
    char *bucket = NULL, *prefix = NULL, dir[4096];
    const char *slash = strchr(l->path, '/');
    vt_err err;
    size_t bl;

    if (!l->be->list || !slash) { /* a service whose listings stay GDAL's */
        snprintf(errbuf, errlen, "%s%s: vsitune does not list for this "
                 "backend (%s)", l->be->scheme, l->path, l->be->name);
        return VT_EINVAL;
    }
    bl = (size_t)(slash - l->path);
    bucket = strndup(l->path, bl);
    prefix = strdup(slash + 1);
    if (!bucket || !prefix) {
        free(bucket);
        free(prefix);
        return VT_ENOMEM;
    }
    snprintf(dir, sizeof(dir), "%.*s", (int)(l->dir_len - bl - 1),
             l->path + bl + 1);
    err = l->be->list(bucket, prefix, dir, l->max_keys, &l->page, errbuf,
                      errlen);
    free(bucket);
    free(prefix);
    return err;
}

/* mu held: drops the oldest linked listings nobody holds or loads until
 * the table has room for one more; the walk starts at the oldest, so it
 * costs one step per listing dropped (and one per listing held). */
static void trim_locked(vt_listing **dead)
{
    vt_ltab_node *n = vt__ltab_oldest(&table);

    while (table.count >= MAX_LISTINGS && n) {
        vt_listing *l = LISTING_OF(n);
        n = vt__ltab_newer_of(n);
        if (l->refs == 0 && !l->loader)
            drop(l, dead);
    }
}

static void free_chain(vt_listing *l)
{
    while (l) {
        vt_listing *n = l->next;
        listing_free(l);
        l = n;
    }
}

/* Find or fetch the listing of keys starting with sp ("bucket/dir/stem",
 * whose "bucket/dir/" part is dir_len long); takes sp (malloc'd). */
static vt_err listing_get_at(const vt_backend *be, const char *path, char *sp,
                             size_t dir_len, int max_keys, vt_listing **out,
                             char *errbuf, size_t errlen)
{
    char ep[1024], *id = NULL;
    size_t idl;
    vt_listing *l = NULL, *dead = NULL;
    vt_err err;
    long t = ttl(path);

    if (!endpoint_of(be, path, ep, sizeof(ep))) {
        free(sp);
        snprintf(errbuf, errlen, "vsitune: cannot address %s%s", be->scheme,
                 path);
        return VT_EINVAL;
    }
    idl = strlen(ep) + strlen(sp) + 16;
    id = malloc(idl);
    if (!id) {
        free(sp);
        return VT_ENOMEM;
    }
    if (max_keys == 1000)
        snprintf(id, idl, "%s\n%s", ep, sp);
    else
        snprintf(id, idl, "%s\n%s\n%d", ep, sp, max_keys);

    vt__forksafe_register(&mu);
    pthread_mutex_lock(&mu);
    for (;;) {
        l = find_id(id, strlen(ep) + 1 + strlen(sp));
        if (l && l->loader && l->loader != getpid()) {
            drop(l, &dead); /* its loader was in the parent of this fork */
            l = NULL;
            break;
        }
        if (l && l->loader) {
            pthread_cond_wait(&cv, &mu);
            continue;
        }
        if (l && time(NULL) - l->at >= t) {
            drop(l, &dead);
            l = NULL;
        }
        break;
    }
    if (l) {
        l->refs++;
        pthread_mutex_unlock(&mu);
        free_chain(dead);
        free(id);
        free(sp);
        *out = l;
        return VT_OK;
    }
    l = calloc(1, sizeof(*l));
    if (!l) {
        pthread_mutex_unlock(&mu);
        free_chain(dead);
        free(id);
        free(sp);
        return VT_ENOMEM;
    }
    l->id = id;
    l->be = be;
    l->path = sp;
    l->dir_len = dir_len;
    l->max_keys = max_keys;
    l->loader = getpid();
    l->refs = 1;
    link_listing(l);
    pthread_mutex_unlock(&mu);
    free_chain(dead);

    err = fetch(l, errbuf, errlen);

    dead = NULL;
    pthread_mutex_lock(&mu);
    l->loader = 0;
    l->at = time(NULL);
    if (err != VT_OK) {
        unlink_listing(l); /* a failure is never remembered */
        l->refs--;
    }
    trim_locked(&dead);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    free_chain(dead);
    if (err != VT_OK) {
        listing_free(l);
        return err;
    }
    *out = l;
    return VT_OK;
}

vt_err vt__listing_get(const vt_backend *be, const char *path,
                       vt_listing **out, char *errbuf, size_t errlen)
{
    size_t dir_len = 0;
    char *sp;
    *out = NULL;
    errbuf[0] = '\0';
    sp = stem_path(path, &dir_len);
    if (!sp) {
        snprintf(errbuf, errlen, "vsitune: no key in %s", path);
        return VT_EINVAL;
    }
    return listing_get_at(be, path, sp, dir_len, 1000, out, errbuf, errlen);
}

vt_err vt__listing_get_dir(const vt_backend *be, const char *dirpath,
                           int max_keys, vt_listing **out, char *errbuf,
                           size_t errlen)
{
    size_t n = strlen(dirpath);
    char *sp = malloc(n + 2);
    *out = NULL;
    errbuf[0] = '\0';
    if (!sp)
        return VT_ENOMEM;
    snprintf(sp, n + 2, "%s/", dirpath);
    return listing_get_at(be, dirpath, sp, n + 1, max_keys, out, errbuf,
                          errlen);
}

int vt__listing_find(const vt_listing *l, const char *name,
                     vt_list_entry *out)
{
    size_t i;
    for (i = 0; i < l->page.n; i++)
        if (strcmp(l->page.e[i].name, name) == 0) {
            memset(out, 0, sizeof(*out));
            out->size = l->page.e[i].size;
            out->mtime = l->page.e[i].mtime;
            out->is_dir = l->page.e[i].is_dir;
            return 1;
        }
    return 0;
}

int vt__listing_find_ci(const vt_listing *l, const char *name)
{
    size_t i;
    for (i = 0; i < l->page.n; i++)
        if (strcasecmp(l->page.e[i].name, name) == 0)
            return 1;
    return 0;
}

void vt__listing_release(vt_listing *l)
{
    int gone;
    if (!l)
        return;
    pthread_mutex_lock(&mu);
    gone = --l->refs == 0 && !l->node.linked;
    pthread_mutex_unlock(&mu);
    if (gone)
        listing_free(l);
}

size_t vt__listing_count(const vt_listing *l) { return l->page.n; }

const vt_list_entry *vt__listing_entry(const vt_listing *l, size_t i)
{
    return i < l->page.n ? &l->page.e[i] : NULL;
}

int vt__listing_truncated(const vt_listing *l) { return l->page.truncated; }

int vt__listing_has_marker(const vt_listing *l) { return l->page.marker; }

/* l covers path: same "bucket/dir/" and the basename starts with the stem. */
static int covers(const vt_listing *l, const char *path)
{
    const char *base = strrchr(path, '/');
    size_t plen = strlen(l->path);
    if (!base || (size_t)(base + 1 - path) != l->dir_len)
        return 0;
    if (strncmp(path, l->path, plen) != 0)
        return 0;
    return !l->sidecars_of || path[plen] == '\0' || path[plen] == '.';
}

int vt__listing_lookup(const vt_backend *be, const char *path,
                       vt_list_entry *out)
{
    return vt__listing_lookup_n(be, path, out, NULL);
}

int vt__listing_lookup_n(const vt_backend *be, const char *path,
                         vt_list_entry *out, size_t *entries)
{
    vt_listing *l;
    int ret = -1;
    long t = ttl(path);
    time_t now = time(NULL);
    const char *base = strrchr(path, '/');
    char ep[1024];
    size_t epl, dl, pl, k;
    uint64_t h;
    vt_listing *best = NULL;

    if (!base || vt__cfg_non_cached(path) ||
        !endpoint_of(be, path, ep, sizeof(ep)))
        return -1; /* GDAL uses no listing for CPL_VSIL_CURL_NON_CACHED */
    base++;
    epl = strlen(ep);
    ep[epl++] = '\n'; /* the keys are "endpoint\nbucket/dir/stem" */
    dl = (size_t)(base - path);
    pl = strlen(path);
    /* A listing covering path has a key of path's directory and a prefix
     * of its basename (covers()): one probe per prefix, the newest that
     * answers wins, as a walk of the table (newest first) would find. */
    h = vt__fnv1a_more(vt__fnv1a(ep, epl), path, dl);
    pthread_mutex_lock(&mu);
    for (k = dl; k <= pl; k++) {
        if (k > dl)
            h = vt__fnv1a_more(h, path + k - 1, 1);
        for (vt_ltab_node *n = vt__ltab_chain(&table, h); n;
             n = vt__ltab_next_of(n)) {
            l = LISTING_OF(n);
            if (!vt__ltab_is(n, h, ep, epl, path, k) || l->loader ||
                l->names_only || l->page.truncated || now - l->at >= t ||
                !covers(l, path))
                continue;
            if (!best || n->seq > best->node.seq)
                best = l;
            break; /* the chain is newest first */
        }
    }
    if ((l = best) != NULL) {
        size_t i;
        ret = 0;
        if (entries)
            *entries = l->page.n;
        for (i = 0; i < l->page.n; i++)
            if (strcmp(l->page.e[i].name, base) == 0) {
                memset(out, 0, sizeof(*out));
                out->size = l->page.e[i].size;
                out->mtime = l->page.e[i].mtime;
                out->is_dir = l->page.e[i].is_dir;
                ret = 1;
                break;
            }
    }
    pthread_mutex_unlock(&mu);
    return ret;
}

int vt__listing_dir_held(const vt_backend *be, const char *path)
{
    vt_listing *l;
    int held = 0;
    long t = ttl(path);
    time_t now = time(NULL);
    const char *base = strrchr(path, '/');
    char ep[1024];
    size_t epl, dl;

    if (!base || vt__cfg_non_cached(path) ||
        !endpoint_of(be, path, ep, sizeof(ep)))
        return 0;
    epl = strlen(ep);
    dl = (size_t)(base + 1 - path);
    pthread_mutex_lock(&mu);
    for (vt_ltab_node *n = lists_linked ? table.head : NULL; n && !held;
         n = n->next) {
        l = LISTING_OF(n);
        held = !l->loader && !l->sidecars_of && !l->names_only &&
               now - l->at < t && l->dir_len == dl &&
               strncmp(l->path, path, dl) == 0 &&
               strncmp(l->id, ep, epl) == 0 && l->id[epl] == '\n';
    }
    pthread_mutex_unlock(&mu);
    return held;
}

/* Put l (made here, not fetched) in the table, replacing one of the same
 * id, stamped now. Takes l. */
static void insert_made(vt_listing *l)
{
    vt_listing *o, *dead = NULL;
    vt_ltab_node *n, *next;
    uint64_t h = vt__fnv1a(l->id, key_len_of(l));
    l->at = time(NULL);
    vt__forksafe_register(&mu);
    pthread_mutex_lock(&mu);
    for (n = vt__ltab_chain(&table, h); n; n = next) { /* replace older ones */
        next = vt__ltab_next_of(n);
        o = LISTING_OF(n);
        if (!o->loader && strcmp(o->id, l->id) == 0)
            drop(o, &dead);
    }
    trim_locked(&dead);
    link_listing(l);
    pthread_mutex_unlock(&mu);
    free_chain(dead);
}

void vt__listing_remember_no_sidecars(const vt_backend *be, const char *path,
                                      uint64_t size, long long mtime)
{
    const char *base = strrchr(path, '/');
    char ep[1024];
    size_t idl, pl = strlen(path);
    vt_listing *l;

    if (!base || !endpoint_of(be, path, ep, sizeof(ep)))
        return;
    l = calloc(1, sizeof(*l));
    if (!l)
        return;
    l->be = be;
    idl = strlen(ep) + pl + 16;
    l->id = malloc(idl);
    l->path = strdup(path);
    l->page.e = calloc(1, sizeof(*l->page.e));
    if (!l->id || !l->path || !l->page.e ||
        !(l->page.e[0].name = strdup(base + 1))) {
        listing_free(l);
        return;
    }
    snprintf(l->id, idl, "%s\n%s\nsidecars", ep, path);
    l->dir_len = (size_t)(base + 1 - path);
    l->sidecars_of = 1;
    l->max_keys = 1000;
    l->page.n = 1;
    l->page.e[0].size = size;
    l->page.e[0].mtime = mtime;
    insert_made(l);
}

void vt__listing_remember_names(const vt_backend *be, const char *dirpath,
                                char **names)
{
    char ep[1024];
    size_t n = 0, i, dl = strlen(dirpath), idl;
    vt_listing *l;

    while (dl > 0 && dirpath[dl - 1] == '/')
        dl--;
    if (dl == 0 || !names || vt__cfg_non_cached(dirpath) ||
        !endpoint_of(be, dirpath, ep, sizeof(ep)))
        return;
    while (names[n])
        n++;
    l = calloc(1, sizeof(*l));
    if (!l)
        return;
    l->be = be;
    idl = strlen(ep) + dl + 16;
    l->id = malloc(idl);
    l->path = malloc(dl + 2);
    l->page.e = calloc(n ? n : 1, sizeof(*l->page.e));
    if (!l->id || !l->path || !l->page.e) {
        listing_free(l);
        return;
    }
    snprintf(l->path, dl + 2, "%.*s/", (int)dl, dirpath);
    snprintf(l->id, idl, "%s\n%s\nnames", ep, l->path);
    for (i = 0; i < n; i++) {
        if (!(l->page.e[i].name = strdup(names[i]))) {
            listing_free(l);
            return;
        }
        l->page.n = i + 1;
    }
    l->dir_len = dl + 1;
    l->names_only = 1;
    l->max_keys = 1000;
    insert_made(l);
}

/* mu held: the fresh names-only listing of path's directory, or NULL;
 * ep is path's endpoint identity, t its ttl() (read before taking mu: an
 * option lookup takes GDAL's lock). */
static vt_listing *gdal_dir_of(const char *path, const char *ep, long t)
{
    vt_listing *l;
    size_t epl = strlen(ep), dl = (size_t)(strrchr(path, '/') + 1 - path);
    time_t now = time(NULL);
    uint64_t h = vt__fnv1a_more(vt__fnv1a(ep, epl), "\n", 1);
    h = vt__fnv1a_more(h, path, dl); /* its key: "endpoint\nbucket/dir/" */
    for (vt_ltab_node *n = vt__ltab_chain(&table, h); n; n = vt__ltab_next_of(n)) {
        l = LISTING_OF(n);
        if (l->names_only && now - l->at < t && l->dir_len == dl &&
            n->key_len == epl + 1 + dl && strncmp(l->path, path, dl) == 0 &&
            strncmp(l->id, ep, epl) == 0 && l->id[epl] == '\n')
            return l;
    }
    return NULL;
}

char **vt__listing_names_of_dir(const vt_backend *be, const char *path,
                                size_t max_names)
{
    vt_listing *l;
    char ep[1024], **out = NULL;
    size_t i;
    long t;

    if (!strrchr(path, '/') || vt__cfg_non_cached(path) ||
        !endpoint_of(be, path, ep, sizeof(ep)))
        return NULL;
    t = ttl(path);
    pthread_mutex_lock(&mu);
    l = gdal_dir_of(path, ep, t);
    if (l && (max_names == 0 || l->page.n <= max_names)) {
        out = calloc(l->page.n + 1, sizeof(char *));
        for (i = 0; out && i < l->page.n; i++)
            if (!(out[i] = strdup(l->page.e[i].name))) {
                while (i > 0)
                    free(out[--i]);
                free(out);
                out = NULL;
            }
    }
    pthread_mutex_unlock(&mu);
    return out;
}

int vt__listing_in_gdal_dir(const vt_backend *be, const char *path)
{
    vt_listing *l;
    char ep[1024];
    const char *base = strrchr(path, '/');
    int found = -1;
    size_t i;
    long t;

    if (!base || vt__cfg_non_cached(path) ||
        !endpoint_of(be, path, ep, sizeof(ep)))
        return -1;
    t = ttl(path);
    pthread_mutex_lock(&mu);
    if ((l = gdal_dir_of(path, ep, t)) != NULL)
        for (found = 0, i = 0; i < l->page.n && !found; i++)
            found = strcmp(l->page.e[i].name, base + 1) == 0;
    pthread_mutex_unlock(&mu);
    return found;
}

static void forget_where(int (*match)(const vt_listing *, const char *),
                         const char *arg)
{
    vt_listing *l, *dead = NULL;
    vt_ltab_node *n, *next;
    pthread_mutex_lock(&mu);
    for (n = table.head; n; n = next) {
        next = n->next;
        l = LISTING_OF(n);
        if (!l->loader && match(l, arg))
            drop(l, &dead);
    }
    pthread_mutex_unlock(&mu);
    free_chain(dead);
}

static int match_covers(const vt_listing *l, const char *path)
{
    return covers(l, path);
}

static int match_prefix(const vt_listing *l, const char *prefix)
{
    size_t n = strlen(prefix);
    /* listings under the prefix, or whose directory contains it */
    return strncmp(l->path, prefix, n) == 0 ||
           (l->dir_len <= n && strncmp(l->path, prefix, l->dir_len) == 0);
}

void vt__listing_forget(const char *path) { forget_where(match_covers, path); }

void vt__listing_forget_prefix(const char *prefix)
{
    forget_where(match_prefix, prefix);
}
