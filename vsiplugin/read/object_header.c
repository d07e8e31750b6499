/* object_header.c: an object's first answer: the header GET (its size
 * learned per prefix, hdrsize.h), the judge of what it says
 * (vt__object_judge_first), the HEAD that settles a doubtful one, and the
 * header blocks it seeds into the cache (kept pinned for the last objects
 * loaded). Why apart: the rules for trusting a first answer
 * (issue 13) are a concern of their own, tested on their own
 * (tests/unit/test_object.c). */
#include "read/object_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_error.h>

#include "read/near.h"
#include "cache/cache.h"
#include "base/config.h"
#include "stats/stats.h"
#include "base/xmlscan.h"
#include "read/hdrsize.h"
#include "read/tiffmap.h"

/* The most head blocks one read is served from (vt__object_read_head): a
 * default head is at most VSITUNE_HEADER_SIZE (64 KiB) in 16 KiB blocks;
 * reads across more go through the object's blocks. */
#define HEAD_BLOCKS_MAX 8

/* ---- header blocks of recent objects: kept whatever the budget ----
 * GDAL reads an object's header in dozens of small reads, and often stats,
 * opens and reads it in separate steps. The header blocks of the last
 * HDR_RING objects loaded stay pinned (pinned blocks stay findable even past
 * the budget, cache.h), so VSITUNE_CACHE_SIZE=0 still opens a file with one
 * request: at most HDR_RING x HDR_RING_BLOCKS blocks (4 MiB in 16 KiB
 * blocks: a first GET up to VSITUNE_FIRST_READ_MAX, near.h, stays whole).
 * Own lock, never held with another: the pins it lets go are released
 * after unlocking. */
#define HDR_RING 16
#define HDR_RING_BLOCKS 16
#define TIFF_SPANS 64 /* images of a TIFF whose spans are kept: a COG has
                         one per level, and one per level's mask */
static pthread_mutex_t ring_mu = PTHREAD_MUTEX_INITIALIZER;
static vt_block *hdr_ring[HDR_RING][HDR_RING_BLOCKS];
static unsigned hdr_next;

/* Keeps the n <= HDR_RING_BLOCKS pins (the caller's array holds no more). */
static void ring_keep(vt_cache *c, vt_block *const pins[HDR_RING_BLOCKS],
                      size_t n)
{
    vt_block *old[HDR_RING_BLOCKS];
    size_t i;

    pthread_mutex_lock(&ring_mu);
    memcpy(old, hdr_ring[hdr_next], sizeof(old));
    memset(hdr_ring[hdr_next], 0, sizeof(old));
    for (i = 0; i < n && i < HDR_RING_BLOCKS; i++)
        hdr_ring[hdr_next][i] = pins[i];
    hdr_next = (hdr_next + 1) % HDR_RING;
    pthread_mutex_unlock(&ring_mu);
    for (i = 0; i < HDR_RING_BLOCKS; i++)
        if (old[i])
            vt__cache_release(c, old[i]);
}

/* Store the bytes [0, len) that start the object as blocks of key; the
 * first HDR_RING_BLOCKS of them stay pinned in the ring. short_ok: a last
 * block shorter than a block is kept even where the object goes on (the
 * head block, whose key is its own). */
static void seed_blocks(vt_object *o, const char *key,
                        const unsigned char *data, size_t len, int short_ok)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c), npins = 0;
    vt_block *pins[HDR_RING_BLOCKS];
    uint64_t idx;
    for (idx = 0; (uint64_t)idx * bs < len; idx++) {
        size_t start = (size_t)idx * bs;
        size_t n = len - start < bs ? len - start : bs;
        vt_block_role role;
        vt_block *b;
        /* only whole blocks, or the object's last block */
        if (n < bs && start + n != o->size && !short_ok)
            break;
        b = vt__cache_lookup(c, key, idx, &role);
        if (!b)
            break;
        if (role == VT_ROLE_FILL)
            vt__cache_fill(c, b, data + start, n);
        if (npins < HDR_RING_BLOCKS)
            pins[npins++] = b;
        else
            vt__cache_release(c, b);
    }
    ring_keep(c, pins, npins);
}

/* What the first answer about an object says (see object.h). */
vt_first vt__object_judge_first(const vt_http_resp *r, uint64_t asked,
                                uint64_t *size, char *why, size_t whylen)
{
    char *code = NULL, *actual = NULL;
    vt_first v = VT_FIRST_DOUBT;

    *size = 0;
    why[0] = '\0';
    if (r->status == 416) {
        /* S3 answers a range of an empty object with 416 InvalidRange and
         * <ActualObjectSize>0; a 416 that names another size (in its
         * Content-Range or its body) contradicts itself: we asked from 0. */
        if (r->body && r->body_len) {
            code = vt__xml_tag((const char *)r->body, r->body_len, "Code");
            actual = vt__xml_tag((const char *)r->body, r->body_len,
                                 "ActualObjectSize");
        }
        if (r->has_total && r->total_size > 0)
            snprintf(why, whylen, "HTTP 416 for bytes 0-%llu of an object of "
                     "%llu bytes (Content-Range)", (unsigned long long)asked - 1,
                     (unsigned long long)r->total_size);
        else if (actual && strcmp(actual, "0") != 0)
            snprintf(why, whylen, "HTTP 416 for bytes 0-%llu of an object of "
                     "%.40s bytes (ActualObjectSize)",
                     (unsigned long long)asked - 1, actual);
        else if ((r->has_total && r->total_size == 0) ||
                 (actual && strcmp(actual, "0") == 0))
            v = VT_FIRST_EMPTY;
        else
            snprintf(why, whylen, "HTTP 416%s%s with no object size",
                     code ? " " : "", code ? code : "");
    } else if (r->status == 206) {
        /* The engine checked the range against the request and the body
         * against the range; what it cannot know is the total. A span
         * shorter than asked is a server capping range lengths (stock GDAL
         * takes the size from it too): reads fetch the rest. */
        if (!r->has_content_range)
            snprintf(why, whylen, "HTTP 206 without a usable Content-Range");
        else if (!r->has_total)
            snprintf(why, whylen, "HTTP 206 with Content-Range bytes "
                     "%llu-%llu/* (no object size)",
                     (unsigned long long)r->range_first,
                     (unsigned long long)r->range_last);
        else if (r->range_first != 0 || r->body_len != r->range_last + 1 ||
                 r->range_last >= r->total_size)
            snprintf(why, whylen, "HTTP 206 with Content-Range bytes "
                     "%llu-%llu/%llu and %zu body bytes for bytes 0-%llu",
                     (unsigned long long)r->range_first,
                     (unsigned long long)r->range_last,
                     (unsigned long long)r->total_size, r->body_len,
                     (unsigned long long)asked - 1);
        else {
            *size = r->total_size;
            v = VT_FIRST_OK;
        }
    } else if (r->status == 200) {
        /* The server ignored Range and sent the whole object: usable when
         * its length is stated and met, and not empty (an empty 200 is how
         * a broken proxy answers too; a HEAD tells). */
        if (!r->has_total || r->total_size != r->body_len)
            snprintf(why, whylen, "HTTP 200 with %zu body bytes and no "
                     "matching Content-Length", r->body_len);
        else if (r->body_len == 0)
            snprintf(why, whylen, "HTTP 200 with an empty body");
        else {
            *size = r->body_len;
            v = VT_FIRST_OK;
        }
    } else {
        snprintf(why, whylen, "HTTP %ld", r->status);
    }
    free(code);
    free(actual);
    return v;
}

/* A doubtful first answer: ask for the size and ETag with a HEAD. On
 * success o->size/etag are set (etag malloc'd) and *use_bytes says whether
 * the first answer's bytes belong to that same object version. */
static vt_err confirm_head(vt_object *o, const vt_http_resp *first,
                           const char *why, int *use_bytes, long *http_status,
                           char *errbuf, size_t errlen)
{
    vt_http_resp h;
    vt_err err;
    char herr[512];

    *use_bytes = 0;
    CPLDebug("VSITUNE", "%s%s/%s: first answer doubtful (%s): HEAD",
             o->be->scheme, o->bucket, o->key, why);
    err = o->be->head(o->bucket, o->key, &h, herr, sizeof(herr));
    *http_status = h.status;
    if (err == VT_OK && !h.has_total) {
        err = VT_EPROTO;
        snprintf(herr, sizeof(herr), "%s%s/%s: HTTP %ld without "
                 "Content-Length", o->be->scheme, o->bucket, o->key, h.status);
    }
    if (err != VT_OK) {
        /* Never remembered, not even a 404: the two answers disagree. */
        snprintf(errbuf, errlen, "vsitune: cannot open %s%s/%s: %s; then "
                 "HEAD: %s", o->be->scheme, o->bucket, o->key, why,
                 herr[0] ? herr : vt_strerror(err));
        if (err == VT_ENOTFOUND)
            *http_status = 0;
        goto out;
    }
    o->size = h.total_size;
    o->mtime = h.last_modified;
    o->etag = strdup(h.etag ? h.etag : "");
    if (!o->etag) {
        err = VT_ENOMEM;
        goto out;
    }
    /* The bytes of a 206 are the object's when the HEAD names the same
     * version and a size the range fits in. */
    *use_bytes = first->status == 206 && first->has_content_range &&
                 first->range_first == 0 && first->body_len > 0 &&
                 first->range_last < o->size &&
                 (first->range_last + 1 == first->body_len) &&
                 first->etag && h.etag && strcmp(first->etag, h.etag) == 0;
out:
    vt__http_resp_clear(&h);
    return err;
}

/* The spans of the object's TIFF images, when the header bytes hold its
 * whole IFD chain (tiffmap.h); o->spans is malloc'd, freed with o. None on
 * allocation failure: readahead is then only capped by its options. */
static void keep_spans(vt_object *o, const unsigned char *data, size_t len)
{
    vt_tiff_span tmp[TIFF_SPANS];
    size_t n = vt__tiffmap_spans(data, len, tmp, TIFF_SPANS);

    if (n == 0 || !(o->spans = malloc(n * sizeof(*tmp))))
        return;
    memcpy(o->spans, tmp, n * sizeof(*tmp));
    o->n_spans = n;
}

void vt__object_note_reads(vt_object *o, size_t n, const uint64_t *off,
                           const size_t *len)
{
    uint64_t cap = o->learn_cap, end = 0, seen;
    size_t i;

    for (i = 0; i < n; i++)
        if (len[i] > 0 && off[i] < cap && off[i] + len[i] > end)
            end = off[i] + len[i] < cap ? off[i] + len[i] : cap;
    seen = __atomic_load_n(&o->read_end, __ATOMIC_RELAXED);
    while (end > seen &&
           !__atomic_compare_exchange_n(&o->read_end, &seen, end, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void vt__object_teach(vt_object *o)
{
    uint64_t read = __atomic_load_n(&o->read_end, __ATOMIC_RELAXED);

    if (read == 0 || __atomic_exchange_n(&o->read_noted, 1, __ATOMIC_RELAXED))
        return; /* never read yet (a stat), or taught already */
    vt__hdrsize_note_for(o->id, o->learn_need > read ? o->learn_need : read);
}

/* What the first len bytes of o say its header needs (hdrsize.h): a
 * TIFF's structure end; the whole object when it came whole; else
 * unknown. */
static uint64_t header_need(const vt_object *o, const unsigned char *p,
                            size_t len)
{
    uint64_t need = 0;
    vt_tiff_need t = vt__tiff_header_need(p, len, &need);

    if (t == VT_TIFF_EXACT && need <= o->size)
        return need;
    if (len >= o->size)
        return o->size;
    return VT_HDRSIZE_UNKNOWN;
}

/* "<cache_key>\nhead" into o->head_key (0: no memory). */
static int make_head_key(vt_object *o)
{
    size_t n = strlen(o->cache_key) + sizeof("\nhead");
    o->head_key = malloc(n);
    if (o->head_key)
        snprintf(o->head_key, n, "%s\nhead", o->cache_key);
    return o->head_key != NULL;
}

/* Keep the first GET's body: as blocks of the object when it ends on a
 * block boundary (or is the whole object), else as the head (a learned GET,
 * hdrsize.h): blocks of their own key, the last one short, that reads
 * inside the head are served from. Not as the object's blocks: a short
 * block there would read as the object's end. most: VSITUNE_HEADER_SIZE as
 * this load read it (how long an earlier head of this version can be). */
static void keep_first_bytes(vt_object *o, const unsigned char *data,
                             size_t len, uint64_t most)
{
    size_t bs = vt__cache_block_size(vt__object_cache());

    if (len % bs == 0 || len >= o->size) {
        seed_blocks(o, o->cache_key, data, len, 0);
        return;
    }
    if (!make_head_key(o))
        return; /* the bytes are read again through the blocks */
    /* An earlier load of this version may have left a head of another
     * length (less was learned then, or the option was larger): this
     * answer's replaces it. */
    vt__cache_drop(vt__object_cache(), o->head_key, 0,
                   (most > len ? most : len) / bs + 1);
    seed_blocks(o, o->head_key, data, len, 1);
    o->head_len = len;
}

/* Both read paths copy with it: here, below object_read.c (object_int.h). */
int vt__object_copy_ranges(size_t bs, size_t n, void *const *dst,
                           const uint64_t *off, const size_t *len,
                           vt_block_bytes bytes, const void *ctx)
{
    size_t i;

    for (i = 0; i < n; i++) {
        uint64_t pos = off[i], end = off[i] + len[i];
        unsigned char *d = dst[i];
        while (pos < end) {
            uint64_t b = pos / bs;
            size_t blen = 0, inb = (size_t)(pos - b * bs), take;
            const unsigned char *data = bytes(ctx, b, &blen);
            if (!data || inb >= blen)
                return -1;
            take = blen - inb;
            if (take > end - pos)
                take = (size_t)(end - pos);
            memcpy(d, data + inb, take);
            d += take;
            pos += take;
        }
    }
    return 0;
}

/* vt__object_read_head's blocks: the head's, held from index lo on. */
typedef struct head_blocks {
    uint64_t lo;
    const unsigned char **data;
    const size_t *blen;
} head_blocks;

static const unsigned char *head_bytes(const void *ctx, uint64_t idx,
                                       size_t *blen)
{
    const head_blocks *h = ctx;

    *blen = h->blen[idx - h->lo];
    return h->data[idx - h->lo];
}

/* Serve reads that lie inside the head from its blocks (object_int.h). */
int vt__object_read_head(vt_object *o, size_t n, void *const *dst,
                         const uint64_t *off, const size_t *len)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c), i, nb, blens[HEAD_BLOCKS_MAX];
    vt_block *held[HEAD_BLOCKS_MAX] = {0};
    const unsigned char *data[HEAD_BLOCKS_MAX] = {0};
    head_blocks h = {0, data, blens};
    uint64_t lo = UINT64_MAX, hi = 0, idx;
    vt_block_role role;
    int served;

    for (i = 0; i < n; i++) {
        if (off[i] > o->head_len || len[i] > o->head_len - off[i])
            return 0;
        if (len[i] > 0 && off[i] / bs < lo)
            lo = off[i] / bs;
        if (len[i] > 0 && (off[i] + len[i] - 1) / bs > hi)
            hi = (off[i] + len[i] - 1) / bs;
    }
    if (lo == UINT64_MAX)
        return 1; /* nothing to copy */
    nb = (size_t)(hi - lo + 1);
    if (nb > HEAD_BLOCKS_MAX)
        return 0; /* a long head (a large VSITUNE_HEADER_SIZE): the blocks */
    for (idx = lo; idx <= hi; idx++) {
        vt_block *b = vt__cache_lookup(c, o->head_key, idx, &role);
        held[idx - lo] = b;
        if (b && role == VT_ROLE_FILL) /* evicted: never refetched here */
            vt__cache_fail(c, b, VT_ENOTFOUND, NULL);
        blens[idx - lo] = 0;
        if (b && role == VT_ROLE_HIT)
            data[idx - lo] = vt__block_data(b, &blens[idx - lo]);
    }
    /* a block gone, or shorter than a range needs: the block path reads
     * them (the same key is the same object version: a longer head, an
     * earlier load's asked when more was learned, serves too) */
    h.lo = lo;
    served = vt__object_copy_ranges(bs, n, dst, off, len, head_bytes, &h) == 0;
    for (i = 0; i < nb; i++)
        if (held[i])
            vt__cache_release(c, held[i]);
    return served;
}

void vt__object_find_head(vt_object *o)
{
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c), total = 0, blen = bs;
    uint64_t idx, most = vt__opt_size(o->path, VT_OPT_HEADER_SIZE) / bs + 1;
    vt_block_role role;
    vt_block *b;

    if (!make_head_key(o))
        return;
    /* the head's blocks in order, up to its short last one */
    for (idx = 0; idx < most && blen == bs; idx++) {
        blen = 0;
        b = vt__cache_lookup(c, o->head_key, idx, &role);
        if (b && role == VT_ROLE_HIT)
            (void)vt__block_data(b, &blen);
        else if (b && role == VT_ROLE_FILL)
            vt__cache_fail(c, b, VT_ENOTFOUND, NULL); /* nobody stored it */
        if (b)
            vt__cache_release(c, b);
        total += blen;
    }
    if (blen > 0 && blen < bs && total < o->size)
        o->head_len = total;
    else {
        free(o->head_key);
        o->head_key = NULL;
    }
}

/* Fetch the header of a new object; fills o->size/etag/cache_key. Only a
 * size and ETag from an answer consistent in itself are kept (see
 * vt__object_judge_first); a doubtful one is checked with a HEAD, or fails
 * this open only. */
vt_err vt__object_load_header(vt_object *o, long *http_status, char *errbuf,
                              size_t errlen)
{
    vt_http_resp r;
    vt_err err;
    const uint64_t opt_hsize = vt__opt_size(o->path, VT_OPT_HEADER_SIZE);
    uint64_t hsize = opt_hsize;
    int learn = vt__opt_choice(o->path, VT_OPT_HEADER_LEARN, NULL);
    uint64_t size = 0;
    size_t klen;
    int use_bytes = 0, remember = 1;
    char why[256];
    vt_first v;

    if (learn)
        hsize = vt__hdrsize_for(o->id, hsize);
    /* further when the directory's last objects read on past it (near.h) */
    hsize = vt__near_first_read(o->id, hsize,
                                vt__opt_size(o->path, VT_OPT_FIRST_READ_MAX));
    err = o->be->get(o->bucket, o->key, 0, hsize, NULL, &r, errbuf, errlen);
    *http_status = r.status;
    if (err != VT_OK && r.status != 416) {
        if (errbuf[0] == '\0' || r.status != 0)
            vt__object_describe(o, errbuf, errlen, &r, err,
                                "vsitune: cannot open");
        goto out;
    }
    errbuf[0] = '\0';
    err = VT_OK;
    v = vt__object_judge_first(&r, hsize, &size, why, sizeof(why));
    if (v == VT_FIRST_OK || v == VT_FIRST_EMPTY) {
        o->size = size;
        o->mtime = r.last_modified;
        o->etag = strdup(r.etag ? r.etag : "");
        use_bytes = v == VT_FIRST_OK;
        vt__stats_avoided(o->be->name, VT_AVOIDED_HEAD); /* the size came with the header */
    } else if (r.status == 200 && r.body_len == 0 && r.has_total &&
               r.total_size == 0) {
        /* An empty 200 stating Content-Length 0: an empty object whose
         * server ignored Range (stock GDAL takes it so, without a HEAD), or
         * a broken proxy's answer. Taken for this open only: never
         * remembered, so the next open asks again. */
        o->size = 0;
        o->mtime = r.last_modified;
        o->etag = strdup(r.etag ? r.etag : "");
        remember = 0;
    } else {
        err = confirm_head(o, &r, why, &use_bytes, http_status, errbuf,
                           errlen);
        if (err != VT_OK)
            goto out;
    }
    klen = strlen(o->ident ? o->ident : o->id) +
           strlen(o->etag ? o->etag : "") + 2;
    o->cache_key = malloc(klen);
    if (!o->etag || !o->cache_key) {
        err = VT_ENOMEM;
        goto out;
    }
    snprintf(o->cache_key, klen, "%s\n%s", o->ident ? o->ident : o->id,
             o->etag);
    o->loaded_at = remember ? time(NULL) : 0; /* 0: stale at the next open */
    if (o->size > 0 && use_bytes) {
        keep_first_bytes(o, r.body, r.body_len, opt_hsize);
        keep_spans(o, r.body, r.body_len);
        if (learn) { /* taught when read and let go: vt__object_teach */
            o->learn_need = header_need(o, r.body, r.body_len);
            o->learn_cap = opt_hsize;
            if (o->learn_cap < vt__cache_block_size(vt__object_cache()))
                o->learn_cap = vt__cache_block_size(vt__object_cache());
        }
    }
    o->size_seen = use_bytes && r.body_len == o->size;
out:
    vt__http_resp_clear(&r);
    return err;
}
