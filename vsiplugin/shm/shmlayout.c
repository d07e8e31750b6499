/* shmlayout.c: where each part of the shared segment lives in the file
 * (layout in shm_int.h): the offsets for a slot count and block size, the
 * most slots a budget holds, the header a new segment is stamped with, the
 * check of a header found against the layout it implies, and the mapping of
 * the regions once checked (vt__shm_bind). Pure arithmetic over the header
 * apart from the data region's reservation (vt__shm_reserve).
 *
 * Below shmseg.c (creation, attaching) and shmcache.c/shmblocks.c (data
 * slots): it calls no other file of the segment. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_int.h"
#include "shm/shmseg.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t p = 64;
    while (p < n && p < (1u << 30))
        p <<= 1;
    return p;
}

/* Offsets for nslots data slots. */
static void place(vt_shm_layout *l, uint32_t nslots, uint64_t bs)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    l->nslots = nslots;
    l->nprocs = VT_SHM_MAX_PROCS;
    l->ndesc = nslots * 3 + 64;  /* resident + ghosts (2x) + filling spare */
    l->nbuckets = pow2_at_least(l->ndesc);
    l->nmeta = nslots < 512 ? 512 : nslots > 8192 ? 8192 : nslots;
    l->nmeta_buckets = pow2_at_least(l->nmeta);
    l->off_procs = align_up(sizeof(vt_shm_hdr), 64);
    l->off_desc = align_up(l->off_procs + (uint64_t)l->nprocs * sizeof(vt_shm_proc), 64);
    l->off_lirs = align_up(l->off_desc + (uint64_t)l->ndesc * sizeof(vt_shm_desc), 64);
    l->off_buckets = align_up(l->off_lirs + (uint64_t)l->ndesc * sizeof(vt_lirs_node), 64);
    l->off_meta = align_up(l->off_buckets + (uint64_t)l->nbuckets * 4, 64);
    l->off_meta_buckets =
        align_up(l->off_meta + (uint64_t)l->nmeta * sizeof(vt_shm_meta), 64);
    /* each data slot's owner (shmcache.c), found from the layout alone */
    l->off_owner = align_up(l->off_meta_buckets + (uint64_t)l->nmeta_buckets * 4, 64);
    l->off_data = align_up(l->off_owner + (uint64_t)nslots * 4, page);
    l->total = l->off_data + (uint64_t)nslots * bs;
}

/* The most slots whose whole segment fits in budget (0: none). */
int vt__shm_plan(vt_shm_layout *l, uint64_t budget, uint64_t bs)
{
    uint64_t lo = 0, hi = budget / bs;
    if (hi > (1u << 26))
        hi = 1u << 26;
    while (lo < hi) {
        uint64_t mid = (lo + hi + 1) / 2;
        place(l, (uint32_t)mid, bs);
        if (l->total <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo < 16)
        return -1;
    place(l, (uint32_t)lo, bs);
    return 0;
}

/* ---- the header, checked ---- */

/* The geometry the header at h states, each field read once, if it is the
 * layout this build makes for its slot count and block size in a file of
 * file_size bytes: 0 and *g, else -1 and why. */
int vt__shm_geom_of(const vt_shm_hdr *h, uint64_t file_size, vt_shm_geom *g,
                    char *why, size_t whylen)
{
    uint32_t nprocs = VT_SHM_LD(h->nprocs), ndesc = VT_SHM_LD(h->ndesc);
    uint32_t nbuckets = VT_SHM_LD(h->nbuckets), nslots = VT_SHM_LD(h->nslots);
    uint32_t nmeta = VT_SHM_LD(h->nmeta);
    uint32_t nmeta_buckets = VT_SHM_LD(h->nmeta_buckets);
    uint64_t bs = VT_SHM_LD(h->block_size), total = VT_SHM_LD(h->total_size);
    vt_shm_layout l;

    if (file_size < sizeof(vt_shm_hdr) || bs < 4096 || bs > (16u << 20) ||
        nslots < 16 || nslots > (1u << 26)) {
        snprintf(why, whylen, "damaged (block size %llu, %u slots)",
                 (unsigned long long)bs, nslots);
        return -1;
    }
    place(&l, nslots, bs);
    if (nprocs != l.nprocs || ndesc != l.ndesc || nbuckets != l.nbuckets ||
        nmeta != l.nmeta || nmeta_buckets != l.nmeta_buckets ||
        VT_SHM_LD(h->off_procs) != l.off_procs ||
        VT_SHM_LD(h->off_desc) != l.off_desc ||
        VT_SHM_LD(h->off_lirs) != l.off_lirs ||
        VT_SHM_LD(h->off_buckets) != l.off_buckets ||
        VT_SHM_LD(h->off_meta) != l.off_meta ||
        VT_SHM_LD(h->off_meta_buckets) != l.off_meta_buckets ||
        VT_SHM_LD(h->off_data) != l.off_data || total != l.total ||
        total != file_size) {
        snprintf(why, whylen, "damaged (counts or offsets not those of %u "
                 "slots of %llu bytes)", nslots, (unsigned long long)bs);
        return -1;
    }
    g->nprocs = nprocs;
    g->ndesc = ndesc;
    g->nbuckets = nbuckets;
    g->nslots = nslots;
    g->nmeta = nmeta;
    g->nmeta_buckets = nmeta_buckets;
    g->block_size = bs;
    return 0;
}

int vt__shm_bind(struct vt_shm *s, char *why, size_t whylen)
{
    const vt_shm_hdr *h = (const vt_shm_hdr *)s->base;
    vt_shm_geom g;
    vt_shm_layout l;

    if (vt__shm_geom_of(h, s->size, &g, why, whylen) != 0)
        return -1;
    place(&l, g.nslots, g.block_size); /* offsets from the checked counts */
    s->g = g;
    s->hdr = (vt_shm_hdr *)s->base;
    s->procs = (vt_shm_proc *)(s->base + l.off_procs);
    s->desc = (vt_shm_desc *)(s->base + l.off_desc);
    s->lirs = (vt_lirs_node *)(s->base + l.off_lirs);
    s->buckets = (int32_t *)(s->base + l.off_buckets);
    s->meta = (vt_shm_meta *)(s->base + l.off_meta);
    s->meta_buckets = (int32_t *)(s->base + l.off_meta_buckets);
    s->owner = (int32_t *)(s->base + l.off_owner);
    s->data = s->base + l.off_data;
    return 0;
}

void vt__shm_fill_header(vt_shm_hdr *h, const vt_shm_layout *l,
                         const vt_shm_opts *o, const char *name)
{
    h->version = VT_SHM_VERSION;
    h->layout = VT_SHM_LAYOUT;
    h->total_size = l->total;
    h->block_size = o->block_size;
    h->budget_asked = o->budget;
    h->created_at = (int64_t)time(NULL);
    h->creator_pid = (int32_t)getpid();
    h->nprocs = l->nprocs;
    h->ndesc = l->ndesc;
    h->nbuckets = l->nbuckets;
    h->nslots = l->nslots;
    h->nmeta = l->nmeta;
    h->nmeta_buckets = l->nmeta_buckets;
    h->off_procs = l->off_procs;
    h->off_desc = l->off_desc;
    h->off_lirs = l->off_lirs;
    h->off_buckets = l->off_buckets;
    h->off_meta = l->off_meta;
    h->off_meta_buckets = l->off_meta_buckets;
    h->off_data = l->off_data;
    snprintf(h->name, sizeof h->name, "%s", name);
}

uint64_t vt__shm_block_size(const vt_shm *s)
{
    return s->g.block_size;
}

int vt__shm_reserve(vt_shm *s, uint64_t off, uint64_t len)
{
    uint64_t off_data = (uint64_t)(s->data - s->base);
    return posix_fallocate(s->fd, (off_t)(off_data + off), (off_t)len) == 0
               ? 0
               : -1;
}
