/* cacheshm.c: the block cache API (cache.h) over the host-wide shared
 * segment (shmcache.h), used once vt__cache_use_shared() was called.
 *
 * Each lookup hands its caller a vt_block of its own (never shared between
 * threads, so it needs no lock): a private copy of a ready block (HIT), or a
 * claim on a segment block to fill (FILL) or to wait for (WAIT). Nothing is
 * retained in the process: the segment holds the bytes, once for the host.
 * When the segment cannot take a block (all slots busy) the caller fills a
 * private block that is dropped at release; when a wait gives up (the
 * filler died or is slower than the bound) the block becomes the waiter's
 * to fill (VT_EAGAIN), shared again if the segment let it take it over.
 *
 * Per-process counters (hits, misses, waits, transient bytes) are kept under
 * the cache's mutex, taken briefly and never while calling the segment. */
#include <stdlib.h>
#include <string.h>

#include "cache/cache_int.h"

static void count(vt_cache *c, uint64_t *field, size_t transient_add)
{
    pthread_mutex_lock(&c->mu);
    if (field)
        (*field)++;
    c->st.transient_bytes += transient_add;
    c->st.blocks++;
    pthread_mutex_unlock(&c->mu);
}

vt_block *vt__cache_sh_lookup(vt_cache *c, const char *key, uint64_t index,
                              vt_block_role *role)
{
    size_t klen = strlen(key), bs = (size_t)vt__shm_block_size(c->shm), len = 0;
    vt_block *b = calloc(1, sizeof *b + klen + 1);
    vt_shmc_role r;

    if (!b)
        return NULL;
    b->data = malloc(bs);
    if (!b->data) {
        free(b);
        return NULL;
    }
    memcpy(b->key, key, klen + 1);
    b->index = index;
    b->pins = 1;
    b->shared = 1;
    vt__shm_digest(key, b->digest);
    r = vt__shmc_lookup(c->shm, b->digest, index, b->data, &len, &b->ref);
    switch (r) {
    case VT_SHMC_HIT:
        b->state = READY;
        b->len = len;
        *role = VT_ROLE_HIT;
        count(c, &c->st.hits, len);
        break;
    case VT_SHMC_WAIT:
        b->state = FILLING;
        b->sh_wait = 1;
        *role = VT_ROLE_WAIT;
        count(c, &c->st.waits, 0);
        break;
    case VT_SHMC_FILL:
        b->sh_fill = 1;
        /* fall through */
    default:                     /* PRIVATE: ours to fill, not kept */
        b->state = FILLING;
        *role = VT_ROLE_FILL;
        count(c, &c->st.misses, 0);
        break;
    }
    return b;
}

void vt__cache_sh_fill(vt_cache *c, vt_block *b, const void *data, size_t len)
{
    size_t bs = (size_t)vt__shm_block_size(c->shm);
    if (b->state != FILLING)
        return;
    if (len > bs)
        len = bs; /* never: blocks are block-sized at most */
    if (len)
        memcpy(b->data, data, len);
    b->len = len;
    b->state = READY;
    if (b->sh_fill) {
        vt__shmc_fill(c->shm, &b->ref, b->data, len);
        b->sh_fill = 0;
    }
    pthread_mutex_lock(&c->mu);
    c->st.transient_bytes += len;
    pthread_mutex_unlock(&c->mu);
}

/* The message goes to the segment for the other processes' waiters, and is
 * kept for this caller's own wait on b. */
void vt__cache_sh_fail(vt_cache *c, vt_block *b, vt_err err, const char *msg)
{
    if (b->state != FILLING)
        return;
    b->state = FAILED;
    b->err = err == VT_OK ? VT_EPROTO : err;
    b->msg = msg && *msg ? strdup(msg) : NULL;
    if (b->sh_fill) {
        vt__shmc_fail(c->shm, &b->ref, (int)b->err, msg);
        b->sh_fill = 0;
    }
}

static void copy_msg(char *msg, size_t msglen, const char *m)
{
    size_t n;
    if (!msg || !msglen)
        return;
    m = m ? m : "";
    n = strlen(m) < msglen - 1 ? strlen(m) : msglen - 1;
    memcpy(msg, m, n);
    msg[n] = '\0';
}

vt_err vt__cache_sh_wait(vt_cache *c, vt_block *b, char *msg, size_t msglen)
{
    size_t len = 0;
    int err = 0;
    vt_shmc_role r;
    char why[1024]; /* the filler's words, kept for a later wait on b */

    copy_msg(msg, msglen, "");
    if (b->state == READY)
        return VT_OK;
    if (b->state == FAILED) {
        copy_msg(msg, msglen, b->msg);
        return b->err;
    }
    if (!b->sh_wait)
        return VT_EAGAIN; /* a fill the caller never made: make it now */
    why[0] = '\0';
    r = vt__shmc_wait(c->shm, &b->ref, b->digest, b->index, c->shm_wait_ms,
                      b->data, &len, &err, why, sizeof(why));
    copy_msg(msg, msglen, why);
    b->sh_wait = 0;
    switch (r) {
    case VT_SHMC_HIT:
        b->state = READY;
        b->len = len;
        pthread_mutex_lock(&c->mu);
        c->st.transient_bytes += len;
        pthread_mutex_unlock(&c->mu);
        return VT_OK;
    case VT_SHMC_FAILED:
        if (err == VT_EAGAIN)
            return VT_EAGAIN;    /* its filler gave up: fetch it ourselves */
        b->state = FAILED;
        b->err = err == VT_OK ? VT_EPROTO : (vt_err)err;
        free(b->msg);
        b->msg = why[0] ? strdup(why) : NULL;
        return b->err;
    case VT_SHMC_FILL:
        b->sh_fill = 1;
        return VT_EAGAIN;
    default:
        return VT_EAGAIN;        /* PRIVATE: fetch it, keep it private */
    }
}

void vt__cache_sh_release(vt_cache *c, vt_block *b)
{
    if (b->sh_fill)
        vt__shmc_abandon(c->shm, &b->ref); /* a filler that gave up */
    pthread_mutex_lock(&c->mu);
    if (b->state == READY)
        c->st.transient_bytes -= b->len;
    c->st.blocks--;
    pthread_mutex_unlock(&c->mu);
    free(b->data);
    free(b->msg);
    free(b);
}
