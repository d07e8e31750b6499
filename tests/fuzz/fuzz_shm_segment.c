/* fuzz_shm_segment.c: libFuzzer target for the shared segment's reader
 * (shmcache.c, shmmeta.c, lirs.c): every index and size they read from
 * shared memory comes from a file any process of the user can write, so
 * none may be trusted (docs/reliability.md, "The shared cache's faults").
 *
 * One real segment (in /dev/shm, removed at exit) and a second attachment
 * to it (another process, as far as the OFD locks go). Each input is reset
 * to a populated segment (blocks of two objects, some metadata), then its
 * bytes are written over the index structures as patches
 * [region:1][offset:3][len:1][bytes:len] (regions: shm_regions.h; the
 * locks themselves are never patched), then both attachments look blocks and metadata up, fill,
 * fail, drop and forget. A crash, a hang, or a hit whose bytes are not the
 * block's own (abort) is a finding. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "shm/shm_int.h"
#include "shm/shmcache.h"
#include "shm/shmmeta.h"
#include "shm/shmseg.h"
#include "../unit/shm_regions.h"

/* Few slots (8 MiB of 64 KiB blocks) and short blocks: fast resets. */
enum { BS = 64 * 1024, LEN = 256, OBJS = 2, BLOCKS = 40 };

static vt_shm *seg_a, *seg_b;
static char seg_pool[32], seg_path[128];
static vt_shm_proc procs_saved[VT_SHM_MAX_PROCS];

static void remove_segment(void)
{
    unlink(seg_path);
}

/* Block `index` of object k: every byte a function of (k, index). */
static void block_bytes(int k, uint64_t index, unsigned char *buf)
{
    for (size_t i = 0; i < LEN; i++)
        buf[i] = (unsigned char)(k * 131 + index * 7 + i * 13 + (i >> 8));
}

static void name_of(int k, uint8_t d[32])
{
    char id[64];
    snprintf(id, sizeof id, "https://ep/\nb/fuzz%d.tif\n\"e\"\nakid", k);
    vt__shm_digest(id, d);
}

static vt_shm *attach(void)
{
    vt_shm_opts o = {.dir = "/dev/shm", .pool = seg_pool,
                     .budget = 8u << 20, .block_size = BS};
    char why[512];
    vt_shm *s = vt__shm_open(&o, why, sizeof why);
    if (!s) {
        fprintf(stderr, "fuzz_shm_segment: %s\n", why);
        abort();
    }
    return s;
}

/* Back to a fresh, populated segment, in use again by both. */
static void reset(void)
{
    static unsigned char buf[BS];
    vt_shmc_ref r;
    vt_shm_objinfo in;
    size_t len;
    uint8_t d[32];

    atomic_store(&seg_a->off, 0);
    atomic_store(&seg_a->off_said, 0);
    atomic_store(&seg_b->off, 0);
    atomic_store(&seg_b->off_said, 0);
    memset(seg_a->given_up, 0, sizeof seg_a->given_up);
    memset(seg_b->given_up, 0, sizeof seg_b->given_up);
    memcpy(seg_a->procs, procs_saved, sizeof procs_saved);
    vt__shmcache_init(seg_a);
    vt__shmmeta_init(seg_a);
    memset(&in, 0, sizeof in);
    in.size = 4242;
    in.loaded_at = 1;
    for (int k = 0; k < OBJS; k++) {
        name_of(k, d);
        for (uint64_t i = 0; i < BLOCKS; i += 1 + (uint64_t)k)
            if (vt__shmc_lookup(seg_a, d, i, buf, &len, &r) == VT_SHMC_FILL) {
                block_bytes(k, i, buf);
                vt__shmc_fill(seg_a, &r, buf, LEN);
            }
        if (vt__shmm_get(seg_a, d, 1L << 40, 1L << 40, 0, &in, &r) == VT_SHMM_LOAD) {
            in.size = 4242;
            in.loaded_at = 1;
            vt__shmm_publish(seg_a, &r, &in);
        }
    }
}

static void patch(const uint8_t *data, size_t size)
{
    shm_region reg[SHM_REGIONS];
    size_t p = 0, nreg = SHM_REGIONS;

    shm_regions(seg_a, reg);

    while (p + 5 <= size) {
        size_t g = data[p] % nreg, n = data[p + 4];
        size_t off = ((size_t)data[p + 1] | (size_t)data[p + 2] << 8 |
                      (size_t)data[p + 3] << 16) % reg[g].len;
        p += 5;
        if (n > size - p)
            n = size - p;
        if (n > reg[g].len - off)
            n = reg[g].len - off;
        memcpy(reg[g].at + off, data + p, n);
        p += n;
    }
}

/* What each attachment does after the damage; a hit must be right. */
static void use(vt_shm *s, int round)
{
    static unsigned char buf[BS], want[BS];
    vt_shm_objinfo out;
    vt_shmc_ref r;
    size_t len;
    uint8_t d[32];
    int err;

    for (int k = 0; k < OBJS; k++) {
        name_of(k, d);
        for (uint64_t i = 0; i < BLOCKS + 8; i += 3) {
            vt_shmc_role role = vt__shmc_lookup(s, d, i, buf, &len, &r);
            if (role == VT_SHMC_WAIT)
                role = vt__shmc_wait(s, &r, d, i, 0, buf, &len, &err, NULL, 0);
            if (role == VT_SHMC_HIT) {
                block_bytes(k, i, want);
                if (len != LEN || memcmp(buf, want, LEN) != 0)
                    abort(); /* another block's bytes, or torn ones */
            } else if (role == VT_SHMC_FILL) {
                block_bytes(k, i, buf);
                if ((i + (uint64_t)round) % 5 == 0)
                    vt__shmc_fail(s, &r, VT_ETRANSIENT, "fuzz");
                else
                    vt__shmc_fill(s, &r, buf, LEN);
            }
        }
        vt__shmc_drop(s, d, (uint64_t)(round + k));
        if (vt__shmm_get(s, d, 1L << 40, 1L << 40, 0, &out, &r) == VT_SHMM_LOAD)
            vt__shmm_drop(s, &r);
        else if (vt__shm_usable(s) && out.size != 4242 && out.size != 0)
            ; /* a damaged size is only a number (object.c checks answers) */
    }
    name_of(0, d);
    vt__shmm_forget(s, d);
    if (round == 1)
        vt__shmm_forget_all(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!seg_a) {
        snprintf(seg_pool, sizeof seg_pool, "fz%d", (int)getpid());
        snprintf(seg_path, sizeof seg_path, "/dev/shm/vsitune-%u-%s",
                 (unsigned)geteuid(), seg_pool);
        atexit(remove_segment);
        seg_a = attach();
        seg_b = attach();
        memcpy(procs_saved, seg_a->procs, sizeof procs_saved);
    }
    reset();
    patch(data, size);
    use(seg_b, 0);
    use(seg_a, 1);
    /* no path may leave a lock held */
    if (pthread_mutex_trylock(&seg_a->hdr->blocks_mu) != 0 ||
        pthread_mutex_trylock(&seg_a->hdr->meta_mu) != 0 ||
        pthread_mutex_trylock(&seg_a->hdr->procs_mu) != 0)
        abort();
    pthread_mutex_unlock(&seg_a->hdr->blocks_mu);
    pthread_mutex_unlock(&seg_a->hdr->meta_mu);
    pthread_mutex_unlock(&seg_a->hdr->procs_mu);
    return 0;
}
