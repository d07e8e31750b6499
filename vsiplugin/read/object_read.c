/* object_read.c: the block read path (object.h's vt__object_read): the
 * blocks of a read pinned in the cache, readahead added, the missing ones
 * fetched in as few range GETs as the planner allows (all at once through
 * the engine, each pinned to the ETag with If-Match), answers checked
 * against the size and version opened, blocks filled or failed, then copied
 * out; and the end-of-object check (vt__object_note_end).
 *
 * No lock of the table is held across I/O: vt__object_table_mu is taken
 * only to mark a size confirmed. */
#include "read/object_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>

#include "cache/cache.h"
#include "base/config.h"
#include "read/near.h"
#include "read/planner.h"
#include "read/tiffmap.h"
#include "shm/shmmeta.h"
#include "stats/stats.h"

typedef struct pinned {
    uint64_t idx;
    vt_block *blk;
    vt_block_role role;
    int needed;           /* 0: readahead only */
} pinned;

static int find_pinned(const pinned *p, size_t n, uint64_t idx)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p[mid].idx < idx)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && p[lo].idx == idx ? (int)lo : -1;
}

/* The runs to fetch: the FILL blocks of p merged as the handle's options
 * allow (VSITUNE_MERGE_GAP, VSITUNE_MAX_REQUEST_SIZE). *runs is malloc'd
 * (the caller frees it, also on failure); *nruns 0: nothing to fetch. */
static vt_err plan_fill_runs(const vt_read_opts *opts, size_t bs,
                             const pinned *p, size_t np, vt_block_run **runs,
                             size_t *nruns)
{
    uint64_t gap = opts->merge_gap / bs;
    uint64_t maxb = opts->max_request / bs;
    uint64_t *fill_idx = NULL;
    size_t nfill = 0, i;
    vt_err err = VT_OK;

    *runs = NULL;
    *nruns = 0;
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL)
            nfill++;
    if (nfill == 0)
        return VT_OK;
    fill_idx = malloc(nfill * sizeof(*fill_idx));
    *runs = malloc(nfill * sizeof(**runs));
    if (!fill_idx || !*runs) {
        err = VT_ENOMEM;
        goto out;
    }
    nfill = 0;
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL)
            fill_idx[nfill++] = p[i].idx;
    *nruns = vt__plan_runs(fill_idx, nfill, gap, maxb, *runs);
out:
    free(fill_idx);
    return err;
}

/* Why the answer r (engine result e) to the GET of want bytes at off does
 * not hold them: into why (why[0] 0: it does), and the error it makes. */
static vt_err check_answer(vt_object *o, uint64_t off, uint64_t want,
                           vt_err e, const vt_http_resp *r, char *why,
                           size_t whylen)
{
    why[0] = '\0';
    if (e == VT_OK)
        e = o->be->status_err(r->status);
    if (e == VT_OK && r->status == 200 && off == 0 &&
        r->body_len == o->size)
        ; /* whole object in a 200: fine */
    else if (e == VT_OK && r->status == 200)
        snprintf(why, whylen, "HTTP 200 with %zu bytes for a range "
                 "of %llu at %llu", r->body_len, (unsigned long long)want,
                 (unsigned long long)off);
    else if (e == VT_OK && r->has_total && r->total_size != o->size)
        snprintf(why, whylen, "the object has %llu bytes now, %llu "
                 "when it was opened", (unsigned long long)r->total_size,
                 (unsigned long long)o->size);
    else if (e == VT_OK && (r->body_len != want || r->range_first != off))
        snprintf(why, whylen, "%zu bytes at %llu for %llu at %llu",
                 r->body_len, (unsigned long long)r->range_first,
                 (unsigned long long)want, (unsigned long long)off);
    if (why[0] && r->has_total && r->total_size != o->size)
        e = VT_ECHANGED; /* our size was wrong: reopen to learn it */
    else if (why[0])
        e = VT_EPROTO;
    if (e == VT_ERANGE)
        e = VT_ECHANGED; /* a range inside the size we know is refused */
    if (e == VT_OK && o->etag[0] && r->etag && strcmp(r->etag, o->etag) != 0) {
        e = VT_ECHANGED; /* a server that ignored If-Match */
        snprintf(why, whylen, "ETag %.80s, opened as %.80s", r->etag,
                 o->etag);
    }
    if (e == VT_OK && r->has_total && r->total_size == o->size) {
        /* A second answer states the same total: the size is confirmed
         * as a HEAD would (vt__object_note_end need not ask). Read and
         * written under the table's lock only (TSan saw the unlocked
         * test race with another thread's write). */
        pthread_mutex_lock(&vt__object_table_mu);
        o->size_seen = 1;
        pthread_mutex_unlock(&vt__object_table_mu);
    }
    return e;
}

/* Fill (e VT_OK: with r's bytes) or fail (with msg) the blocks of run; r gives
 * each block's bytes back once copied: a large answer is not held twice. */
static void settle_run(const vt_object *o, vt_cache *c, pinned *p, size_t np,
                       const vt_block_run *run, vt_err e, vt_http_resp *r,
                       const char *msg)
{
    size_t bs = vt__cache_block_size(c);
    uint64_t j;

    for (j = run->first; j < run->first + run->count; j++) {
        int k = find_pinned(p, np, j);
        size_t boff = (size_t)((j - run->first) * bs), blen;
        blen = e == VT_OK && r->body_len > boff
                   ? (r->body_len - boff < bs ? r->body_len - boff : bs)
                   : 0;
        if (k < 0) {
            /* A gap block nobody asked for: we have its bytes anyway. */
            vt_block_role role;
            vt_block *gb;
            if (blen > 0 &&
                (gb = vt__cache_lookup(c, o->cache_key, j, &role)) != NULL) {
                if (role == VT_ROLE_FILL)
                    vt__cache_fill(c, gb, r->body + boff, blen);
                vt__cache_release(c, gb);
            }
        } else if (p[k].role == VT_ROLE_FILL) { /* else another fetches it */
            if (e != VT_OK)
                vt__cache_fail(c, p[k].blk, e, msg);
            else
                vt__cache_fill(c, p[k].blk, r->body + boff, blen);
            p[k].role = VT_ROLE_WAIT; /* now settled: wait returns at once */
        }
        if (blen > 0)
            vt__http_resp_body_done(r, boff + blen);
    }
}

/* A 206 holding only the start of [off, off + want) (a server capping
 * range lengths; the engine kept it, its body filling its Content-Range):
 * GET the rest, appended to r, until all came. A failed or inconsistent
 * further answer takes r's place, to be judged and reported as the run's
 * (check_answer); its engine result is returned. */
static vt_err fetch_rest(vt_object *o, uint64_t off, uint64_t want,
                         vt_http_resp *r)
{
    vt_backend_req rq;
    vt_http_resp n;
    vt_err e = VT_OK;
    char ebuf[512];

    while (r->status == 206 && r->has_content_range &&
           r->range_first == off && r->body_len > 0 && r->body_len < want &&
           (!r->has_total || r->total_size == o->size)) {
        uint64_t at = off + r->body_len;
        if (vt__http_resp_reserve(r, (size_t)want + 1) != VT_OK)
            return VT_ENOMEM;
        memset(&n, 0, sizeof(n));
        e = o->be->build_get(o->bucket, o->key, at, want - r->body_len,
                             o->etag[0] ? o->etag : NULL, &rq, ebuf,
                             sizeof(ebuf));
        if (e != VT_OK)
            return e;
        e = vt__engine_perform(&rq.req, &n);
        o->be->req_clear(&rq);
        if (e == VT_OK && n.status == 206 && n.has_content_range &&
            n.range_first == at && n.body_len > 0 &&
            n.body_len <= want - r->body_len &&
            (!n.has_total || !r->has_total || n.total_size == r->total_size) &&
            (!n.etag || !r->etag || strcmp(n.etag, r->etag) == 0)) {
            CPLDebug("VSITUNE", "%s%s/%s: %zu bytes at %llu came, %zu more "
                     "at %llu", o->be->scheme, o->bucket, o->key, r->body_len,
                     (unsigned long long)off, n.body_len,
                     (unsigned long long)at);
            memcpy(r->body + r->body_len, n.body, n.body_len);
            r->body_len += n.body_len;
            r->body[r->body_len] = '\0';
            r->range_last = n.range_last;
            vt__http_resp_clear(&n);
            continue;
        }
        vt__http_resp_clear(r);
        *r = n; /* judged in its place */
        return e;
    }
    return e;
}

/* Judge the answer to run (engine result e) and settle its blocks; a
 * failure's words go to errbuf when it is the first (*err VT_OK). */
static void take_answer(vt_object *o, vt_cache *c, pinned *p, size_t np,
                        const vt_block_run *run, vt_err e, vt_http_resp *r,
                        vt_err *err, char *errbuf, size_t errlen)
{
    size_t bs = vt__cache_block_size(c);
    uint64_t off = run->first * bs;
    uint64_t want = run->count * bs;
    char msg[1024], why[256];

    msg[0] = '\0';
    if (off + want > o->size)
        want = o->size - off;
    if (e == VT_OK)
        e = fetch_rest(o, off, want, r);
    e = check_answer(o, off, want, e, r, why, sizeof(why));
    if (e != VT_OK) {
        vt_http_resp shown = *r;
        if (why[0])
            snprintf(shown.error, sizeof(shown.error), "%s", why);
        vt__object_describe(o, msg, sizeof(msg), &shown, e,
                            "vsitune: read of");
        if (*err == VT_OK) {
            *err = e;
            snprintf(errbuf, errlen, "%s", msg);
        }
    }
    settle_run(o, c, p, np, run, e, r, msg);
}

/* Fetch the runs of FILL blocks and fill (or fail) them. */
static vt_err fetch_runs(vt_object *o, const vt_read_opts *opts, vt_cache *c,
                         pinned *p, size_t np, char *errbuf, size_t errlen)
{
    size_t bs = vt__cache_block_size(c);
    vt_block_run *runs = NULL;
    vt_backend_req *rq = NULL;
    vt_http_req *reqs = NULL;
    vt_http_resp *resps = NULL;
    vt_err *errs = NULL, err;
    size_t nruns = 0, i, built = 0;

    err = plan_fill_runs(opts, bs, p, np, &runs, &nruns);
    if (err != VT_OK)
        goto fail_all;
    if (nruns == 0)
        goto out;
    rq = calloc(nruns, sizeof(*rq));
    reqs = calloc(nruns, sizeof(*reqs));
    resps = calloc(nruns, sizeof(*resps));
    errs = calloc(nruns, sizeof(*errs));
    if (!rq || !reqs || !resps || !errs) {
        err = VT_ENOMEM;
        goto fail_all;
    }
    for (i = 0; i < nruns; i++) {
        uint64_t off = runs[i].first * bs;
        uint64_t len = runs[i].count * bs;
        if (off + len > o->size)
            len = o->size - off;
        err = o->be->build_get(o->bucket, o->key, off, len,
                               o->etag[0] ? o->etag : NULL, &rq[i], errbuf,
                               errlen);
        if (err != VT_OK)
            goto fail_all;
        built++;
        reqs[i] = rq[i].req;
    }
    vt__engine_perform_many(nruns, reqs, resps, errs);

    for (i = 0; i < nruns; i++) {
        take_answer(o, c, p, np, &runs[i], errs[i], &resps[i], &err, errbuf,
                    errlen);
        vt__http_resp_clear(&resps[i]); /* settled: its memory goes now */
    }
    vt__stats_tick(); /* after the fills: the cache counters include them */
    goto out;

fail_all:
    if (errbuf[0] == '\0')
        snprintf(errbuf, errlen, "vsitune: read of %s%s/%s: %s",
                 o->be->scheme, o->bucket, o->key, vt_strerror(err));
    for (i = 0; i < np; i++)
        if (p[i].role == VT_ROLE_FILL) {
            vt__cache_fail(c, p[i].blk, err, errbuf);
            p[i].role = VT_ROLE_WAIT;
        }
out:
    for (i = 0; i < built; i++)
        o->be->req_clear(&rq[i]);
    if (resps)
        for (i = 0; i < nruns; i++)
            vt__http_resp_clear(&resps[i]);
    free(runs);
    free(rq);
    free(reqs);
    free(resps);
    free(errs);
    return err;
}

void vt__object_read_opts(const vt_object *o, vt_read_opts *out)
{
    size_t bs = vt__cache_block_size(vt__object_cache());

    out->merge_gap = vt__opt_size(o->path, VT_OPT_MERGE_GAP);
    out->max_request = vt__opt_size_min(o->path, VT_OPT_MAX_REQUEST_SIZE, bs);
    out->readahead_max = vt__opt_size(o->path, VT_OPT_READAHEAD_MAX);
    out->header_size = vt__opt_size(o->path, VT_OPT_HEADER_SIZE);
    out->first_read_max = vt__opt_size(o->path, VT_OPT_FIRST_READ_MAX);
}

/* The first read of o reaching past the header size: tell near.c where it
 * went, so the next first GETs of o's directory can bring it along. */
static void note_near(vt_object *o, const vt_read_opts *opts, size_t bs,
                      size_t n, const uint64_t *off, const size_t *len)
{
    uint64_t start = UINT64_MAX, end = 0;
    size_t i;

    if (opts->first_read_max <= opts->header_size)
        return;
    for (i = 0; i < n; i++)
        if (len[i] && off[i] + len[i] > opts->header_size) {
            if (off[i] < start)
                start = off[i];
            if (off[i] + len[i] > end)
                end = off[i] + len[i];
        }
    if (end == 0 || !vt__near_once(&o->near_noted))
        return;
    vt__near_note(o->id, start, end, opts->first_read_max, bs);
}

/* Blocks of readahead a read may add: what the cache can keep (an eighth of
 * its budget, so readahead never flushes it), at most VSITUNE_READAHEAD_MAX;
 * *limit: the process's readahead in flight, half of it (planner.h). */
static uint64_t readahead_cap(const vt_read_opts *opts, vt_cache *c,
                              size_t bs, uint64_t *limit)
{
    vt_cache_stats st;
    vt_shm_info si;
    uint64_t budget, max = opts->readahead_max;

    vt__cache_get_stats(c, &st);
    budget = st.budget;
    if (vt__cache_shared_info(c, &si)) /* the host's segment holds them */
        budget = si.data_bytes;
    if (max > budget / 8)
        max = budget / 8;
    *limit = budget / 2;
    return max / bs;
}

/* The blocks the ranges touch, sorted and unique, into p (room for every
 * block counted by vt__object_check_ranges); returns how many. idx: scratch of that
 * size. */
static size_t list_blocks(size_t bs, size_t n, const uint64_t *off,
                          const size_t *len, uint64_t *idx, pinned *p)
{
    size_t nidx = 0, np, i;

    for (i = 0; i < n; i++) {
        uint64_t b;
        if (len[i] == 0)
            continue;
        for (b = off[i] / bs; b <= (off[i] + len[i] - 1) / bs; b++)
            idx[nidx++] = b;
    }
    np = vt__plan_sort_unique(idx, nidx);
    for (i = 0; i < np; i++) {
        p[i].idx = idx[i];
        p[i].needed = 1;
    }
    return np;
}

/* Pin every block of p (never wait while holding unfilled FILLs); *any_fill
 * and the first and last block this thread fills. VT_ENOMEM when a block
 * cannot be had (the ones pinned so far stay in p). */
static vt_err pin_blocks(const vt_object *o, vt_cache *c, pinned *p,
                         size_t np, int *any_fill, uint64_t *first_fill,
                         uint64_t *last_fill)
{
    int waited_out = 0;
    size_t i;

    for (i = 0; i < np; i++) {
        p[i].blk = vt__cache_lookup(c, o->cache_key, p[i].idx, &p[i].role);
        if (!p[i].blk)
            return VT_ENOMEM;
        if (p[i].role == VT_ROLE_WAIT && vt__cache_shared(c) &&
            (waited_out || (!*any_fill && i + 1 < np))) {
            /* Another process is fetching this block, and we hold no claim
             * yet: it claimed the rest of its run along with it. Wait for
             * it before claiming further, so that a window two processes
             * reach together is fetched once, not split between them into
             * more, smaller requests. A filler given up on (too slow, or
             * dead) makes the block ours, and the next ones it holds are
             * waited for the same way (each wait bounded), so that what we
             * take over is fetched as one run. Any other outcome is settled
             * (the wait below returns it at once). */
            if (vt__cache_wait(c, p[i].blk, NULL, 0) == VT_EAGAIN) {
                p[i].role = VT_ROLE_FILL;
                waited_out = 1;
            }
        }
        if (p[i].role == VT_ROLE_FILL) {
            if (!*any_fill)
                *first_fill = p[i].idx;
            *last_fill = p[i].idx;
            *any_fill = 1;
        }
    }
    return VT_OK;
}

/* Readahead rides only on a read going to the network anyway, on a fetch
 * continuing this handle's previous one (planner.h); never past the block
 * holding the end of the TIFF image (overview level) the read's last byte
 * `pos` is in, nor into the next image from a gap (tiffmap.h), nor past the
 * process's allowance `limit`. Its blocks lie past the needed ones (p stays
 * sorted); *np grows by those to fetch, returned (the caller gives back). */
static uint64_t add_readahead(const vt_object *o, vt_cache *c, size_t bs,
                              pinned *p, size_t *np, vt_readahead *ra,
                              uint64_t first_fill, uint64_t last_fill,
                              uint64_t ra_blocks, uint64_t pos, uint64_t limit)
{
    uint64_t edge = vt__tiffmap_boundary(o->spans, o->n_spans, pos), w, got;
    uint64_t b, last_block = o->size ? (o->size - 1) / bs : 0;
    size_t k = *np;

    if (edge > 0) {
        uint64_t stop = (edge - 1) / bs; /* the boundary's block, no further */
        ra_blocks = stop > last_fill ? (stop - last_fill < ra_blocks
                                            ? stop - last_fill : ra_blocks)
                                     : 0;
    }
    w = vt__readahead_fetch(ra, first_fill, last_fill, ra_blocks);
    got = vt__readahead_take(w, bs, limit);
    vt__readahead_cut(ra, w, got);
    for (w = got, b = p[k - 1].idx + 1; w > 0 && b <= last_block &&
                                        b <= last_fill + w; b++) {
        p[k].idx = b;
        p[k].needed = 0;
        p[k].blk = vt__cache_lookup(c, o->cache_key, b, &p[k].role);
        if (!p[k].blk)
            break;
        if (p[k].role != VT_ROLE_FILL) {
            vt__cache_release(c, p[k].blk); /* already there */
            continue;
        }
        k++;
    }
    if (k == *np && got > 0)
        vt__readahead_done(got, bs); /* all had: holds none */
    else
        vt__readahead_give(got - (k - *np), bs); /* had, or past the end */
    got = k - *np;
    *np = k;
    return got;
}

/* Wait for the needed blocks others fetch; those whose filler was given up
 * on are fetched here. */
static vt_err wait_blocks(vt_object *o, const vt_read_opts *opts,
                          vt_cache *c, pinned *p, size_t np, char *errbuf,
                          size_t errlen)
{
    vt_err err = VT_OK;
    size_t i;

    while (err == VT_OK) {
        int refill = 0;
        for (i = 0; i < np && err == VT_OK; i++) {
            if (!p[i].needed || !p[i].blk || p[i].role != VT_ROLE_WAIT)
                continue;
            /* Another thread's (or process's) failure: its full words
             * become ours. */
            err = vt__cache_wait(c, p[i].blk, errbuf[0] ? NULL : errbuf,
                                 errbuf[0] ? 0 : errlen);
            if (err == VT_EAGAIN) {
                /* The shared cache's filler died or is too slow: ours now. */
                p[i].role = VT_ROLE_FILL;
                refill = 1;
                err = VT_OK;
            } else if (err != VT_OK && errbuf[0] == '\0') {
                snprintf(errbuf, errlen, "vsitune: read of %s%s/%s: %s",
                         o->be->scheme, o->bucket, o->key, vt_strerror(err));
            }
        }
        if (!refill || err != VT_OK)
            break;
        err = fetch_runs(o, opts, c, p, np, errbuf, errlen); /* settles */
    }
    return err;
}

/* copy_out's blocks: the settled blocks of a pinned list, by index. */
typedef struct pinned_list {
    const pinned *p;
    size_t np;
} pinned_list;

static const unsigned char *pinned_bytes(const void *ctx, uint64_t idx,
                                         size_t *blen)
{
    const pinned_list *l = ctx;
    int k = find_pinned(l->p, l->np, idx);

    return k < 0 ? NULL : vt__block_data(l->p[k].blk, blen);
}

/* Copy the ranges out of the settled blocks of p. */
static vt_err copy_out(const vt_object *o, size_t bs, const pinned *p,
                       size_t np, size_t n, void *const *dst,
                       const uint64_t *off, const size_t *len, char *errbuf,
                       size_t errlen)
{
    pinned_list l = {p, np};

    if (vt__object_copy_ranges(bs, n, dst, off, len, pinned_bytes, &l) == 0)
        return VT_OK;
    snprintf(errbuf, errlen, "vsitune: short block in %s%s/%s", o->be->scheme,
             o->bucket, o->key);
    return VT_EPROTO;
}

vt_err vt__object_read(vt_object *o, const vt_read_opts *opts, size_t n,
                       void *const *dst, const uint64_t *off,
                       const size_t *len, vt_readahead *ra, char *errbuf,
                       size_t errlen)
{
    vt_read_opts own;
    vt_cache *c = vt__object_cache();
    size_t bs = vt__cache_block_size(c);
    uint64_t *idx = NULL, ra_blocks = 0, first_fill = 0, last_fill = 0, pos = 0;
    uint64_t ra_limit = 0, ra_held = 0; /* the allowance's, given back at out */
    pinned *p = NULL;
    size_t cap = 0, i, np = 0;
    int any_fill = 0;
    vt_err err;

    errbuf[0] = '\0';
    err = vt__object_check_ranges(o, bs, n, off, len, &cap, errbuf, errlen);
    if (err != VT_OK)
        return err;
    if (o->learn_need)
        vt__object_note_reads(o, n, off, len);
    if (o->head_len && vt__object_read_head(o, n, dst, off, len))
        return VT_OK; /* all inside the first GET's short answer */
    if (!opts) { /* no handle's: as the options say now */
        vt__object_read_opts(o, &own);
        opts = &own;
    }
    note_near(o, opts, bs, n, off, len);
    if (ra)
        ra_blocks = readahead_cap(opts, c, bs, &ra_limit);
    cap += (size_t)ra_blocks;
    if (cap == 0)
        return VT_OK;
    idx = malloc(cap * sizeof(*idx));
    p = calloc(cap, sizeof(*p));
    if (!idx || !p) {
        err = VT_ENOMEM;
        goto out;
    }
    np = list_blocks(bs, n, off, len, idx, p);
    for (i = 0; i < n; i++)
        if (len[i] > 0 && off[i] + len[i] - 1 > pos)
            pos = off[i] + len[i] - 1;
    err = pin_blocks(o, c, p, np, &any_fill, &first_fill, &last_fill);
    if (err == VT_OK && any_fill && ra)
        ra_held = add_readahead(o, c, bs, p, &np, ra, first_fill, last_fill,
                                ra_blocks, pos, ra_limit);
    if (err == VT_OK) {
        err = fetch_runs(o, opts, c, p, np, errbuf, errlen);
    } else {
        for (i = 0; i < np; i++)
            if (p[i].blk && p[i].role == VT_ROLE_FILL) {
                vt__cache_fail(c, p[i].blk, err, NULL);
                p[i].role = VT_ROLE_WAIT;
            }
    }
    if (err == VT_OK)
        err = wait_blocks(o, opts, c, p, np, errbuf, errlen);
    if (err == VT_OK)
        err = copy_out(o, bs, p, np, n, dst, off, len, errbuf, errlen);
out:
    if (ra_held)
        vt__readahead_done(ra_held, bs); /* fetched and settled, or failed */
    if (p)
        for (i = 0; i < np; i++)
            if (p[i].blk)
                vt__cache_release(c, p[i].blk);
    if (err == VT_ECHANGED)
        vt__object_invalidate(o);
    free(idx);
    free(p);
    return err;
}

vt_err vt__object_note_end(vt_object *o, char *errbuf, size_t errlen)
{
    vt_http_resp h;
    vt_err err;
    int ask;

    errbuf[0] = '\0';
    pthread_mutex_lock(&vt__object_table_mu);
    ask = !o->size_seen && !o->end_checked && o->size > 0;
    o->end_checked = 1;
    pthread_mutex_unlock(&vt__object_table_mu);
    if (!ask)
        return VT_OK;
    err = o->be->head(o->bucket, o->key, &h, errbuf, errlen);
    if (err == VT_OK && h.has_total &&
        (h.total_size != o->size ||
         (o->etag[0] && h.etag && strcmp(h.etag, o->etag) != 0))) {
        snprintf(errbuf, errlen, "vsitune: read of %s%s/%s: the object has "
                 "%llu bytes, %llu when it was opened (object changed or a "
                 "wrong size was announced): open it again", o->be->scheme,
                 o->bucket, o->key, (unsigned long long)h.total_size,
                 (unsigned long long)o->size);
        vt__object_invalidate(o);
        err = VT_ECHANGED;
    } else {
        err = VT_OK; /* the size stands (or cannot be checked now) */
        errbuf[0] = '\0';
    }
    vt__http_resp_clear(&h);
    return err;
}
