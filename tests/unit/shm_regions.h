/* shm_regions.h: where a segment's indices live, for the tests that write
 * garbage over them (test_shmcache.c) and the fuzz target of the segment's
 * reader (tests/fuzz/fuzz_shm_segment.c): the header's fields past its
 * locks, descriptors, LIRS nodes, buckets, metadata entries and buckets,
 * slot owners, the process table. The locks themselves are left alone (a
 * garbage lock is a lock held forever: test_shmcache.c's stopped holders).
 * Header-only; not a test itself. */
#ifndef VT_SHM_REGIONS_H
#define VT_SHM_REGIONS_H

#include <stddef.h>

#include "shm/shm_int.h"

typedef struct shm_region {
    unsigned char *at;
    size_t len;
} shm_region;

enum { SHM_REGIONS = 9, SHM_REGION_META = 4 };

static void shm_regions(vt_shm *s, shm_region r[SHM_REGIONS])
{
    r[0].at = (unsigned char *)&s->hdr->free_desc;
    r[0].len = offsetof(vt_shm_hdr, err_ring) - offsetof(vt_shm_hdr, free_desc);
    r[1].at = (unsigned char *)s->desc;
    r[1].len = (size_t)s->g.ndesc * sizeof(vt_shm_desc);
    r[2].at = (unsigned char *)s->lirs;
    r[2].len = (size_t)s->g.ndesc * sizeof(vt_lirs_node);
    r[3].at = (unsigned char *)s->buckets;
    r[3].len = (size_t)s->g.nbuckets * 4;
    r[SHM_REGION_META].at = (unsigned char *)s->meta;
    r[SHM_REGION_META].len = (size_t)s->g.nmeta * sizeof(vt_shm_meta);
    r[5].at = (unsigned char *)s->meta_buckets;
    r[5].len = (size_t)s->g.nmeta_buckets * 4;
    r[6].at = (unsigned char *)s->owner;
    r[6].len = (size_t)s->g.nslots * 4;
    r[7].at = (unsigned char *)s->procs;
    r[7].len = (size_t)s->g.nprocs * sizeof(vt_shm_proc);
    r[8].at = (unsigned char *)&s->hdr->meta_hand;
    r[8].len = offsetof(vt_shm_hdr, ctr) - offsetof(vt_shm_hdr, meta_hand);
}

#endif
