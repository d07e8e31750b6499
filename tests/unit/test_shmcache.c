/* test_shmcache.c: unit tests of the shared segment (shmseg.c), its blocks
 * (shmcache.c) and object metadata (shmmeta.c).
 *
 * Every block's bytes are a function of (digest, index), so any process can
 * check byte-exactly what it was handed without knowing who filled it. Two
 * vt__shm_open() calls in one process behave as two processes (each has its
 * own open file description, so its own OFD locks); fork() gives real ones,
 * and SIGKILL kills them where the tests choose (holding the blocks lock,
 * half-way through a fill) or at random. After kills, the segment's
 * structure is checked against its descriptors (check_structure). Segments
 * live in /dev/shm under a pool name unique to this run and are removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "shm/shm_int.h"
#include "shm/shmcache.h"
#include "shm/shmmeta.h"
#include "shm/shmseg.h"
#include "shm_regions.h"

enum { BS = 64 * 1024 };

static char pool[64];
static char path[256];

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Block `index` of the object named d: its length and bytes. */
static size_t block_len(const uint8_t *d, uint64_t index, size_t bs)
{
    return index % 7 == 6 ? (size_t)(d[0] % 200) + 1 : bs; /* short ones too */
}

static void make_block(const uint8_t *d, uint64_t index, unsigned char *buf,
                       size_t len)
{
    uint64_t s;
    memcpy(&s, d, sizeof s);
    s ^= index * 0x100000001b3ULL;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = splitmix(&s);
        for (size_t j = 0; j < 8 && i + j < len; j++)
            buf[i + j] = (unsigned char)(v >> (8 * j));
    }
}

static int block_ok(const uint8_t *d, uint64_t index, const unsigned char *got,
                    size_t len, size_t bs)
{
    static unsigned char want[1 << 20];
    if (len != block_len(d, index, bs))
        return 0;
    make_block(d, index, want, len);
    return memcmp(got, want, len) == 0;
}

static void digest_of(int k, uint8_t d[32])
{
    char id[64];
    snprintf(id, sizeof id, "https://ep/\nb/obj%d.tif\n\"etag%d\"\nakid", k, k);
    vt__shm_digest(id, d);
}

static vt_shm *open_seg(uint64_t budget, uint64_t bs)
{
    vt_shm_opts o = {.dir = "/dev/shm", .pool = pool, .budget = budget,
                     .block_size = bs};
    char why[512];
    vt_shm *s = vt__shm_open(&o, why, sizeof why);
    if (!s)
        fprintf(stderr, "vt__shm_open: %s\n", why);
    return s;
}

/* Fill a block we were given to fill with its right bytes. */
static void fill(vt_shm *s, const vt_shmc_ref *ref, const uint8_t *d,
                 uint64_t index)
{
    static unsigned char buf[1 << 20];
    size_t bs = (size_t)vt__shm_block_size(s), n = block_len(d, index, bs);
    make_block(d, index, buf, n);
    vt__shmc_fill(s, ref, buf, n);
}

/* Look a block up and settle it: check a hit, fill a miss, wait for a
 * filler. Returns the role of the lookup. */
static vt_shmc_role touch(vt_shm *s, const uint8_t *d, uint64_t index)
{
    static unsigned char buf[1 << 20];
    size_t len = 0, bs = (size_t)vt__shm_block_size(s);
    vt_shmc_ref ref;
    int err;
    vt_shmc_role r = vt__shmc_lookup(s, d, index, buf, &len, &ref), w;

    if (r == VT_SHMC_HIT)
        assert_true(block_ok(d, index, buf, len, bs));
    else if (r == VT_SHMC_FILL)
        fill(s, &ref, d, index);
    else if (r == VT_SHMC_WAIT) {
        w = vt__shmc_wait(s, &ref, d, index, 3000, buf, &len, &err, NULL, 0);
        if (w == VT_SHMC_HIT)
            assert_true(block_ok(d, index, buf, len, bs));
        else if (w == VT_SHMC_FILL)
            fill(s, &ref, d, index);
    }
    return r;
}

/* The structure agrees with the descriptors: every READY/FILLING/FAILED
 * descriptor is in the hash exactly under its name, data slots are never
 * shared, resident counts the descriptors holding data, and every READY
 * block holds its right bytes. */
static void check_structure(vt_shm *s)
{
    vt_shm_hdr *h = s->hdr;
    unsigned char *slot_used = calloc(h->nslots, 1);
    uint32_t i, resident = 0;

    assert_non_null(slot_used);
    for (i = 0; i < h->ndesc; i++) {
        vt_shm_desc *d = &s->desc[i];
        uint32_t st = atomic_load(&d->state);
        if (st == VT_D_READY || st == VT_D_FILLING) {
            assert_true(d->data >= 0 && (uint32_t)d->data < h->nslots);
            assert_false(slot_used[d->data]);
            slot_used[d->data] = 1;
            resident++;
        }
        if (st == VT_D_READY)
            assert_true(block_ok(d->digest, d->index,
                                 s->data + (uint64_t)d->data * h->block_size,
                                 d->len, h->block_size));
        if (st == VT_D_READY || st == VT_D_FILLING || st == VT_D_FAILED ||
            st == VT_D_GHOST) {
            /* findable under its name */
            uint64_t hh;
            int32_t j;
            int found = 0;
            memcpy(&hh, d->digest, 8);
            for (j = 0; j < (int32_t)h->nbuckets && !found; j++)
                for (int32_t k = s->buckets[j]; k != -1; k = s->desc[k].hnext)
                    if (k == (int32_t)i)
                        found = 1;
            assert_true(found);
        }
    }
    assert_int_equal(resident, h->resident);
    free(slot_used);
}

static void test_fit(void **state)
{
    char why[256];
    uint64_t mib = 1 << 20;
    /* Plenty of room: what was asked. */
    assert_int_equal(vt__shm_fit(256 * mib, 24000 * mib, 24000 * mib, BS,
                                 "/dev/shm", why, sizeof why),
                     256 * mib);
    /* A container's 64 MiB /dev/shm: half of it, and it says so. */
    assert_int_equal(vt__shm_fit(256 * mib, 64 * mib, 64 * mib, BS, "/dev/shm",
                                 why, sizeof why),
                     32 * mib);
    assert_non_null(strstr(why, "fitted to 32 MiB"));
    /* Mostly used already: nine tenths of what is free. */
    assert_int_equal(vt__shm_fit(256 * mib, 1024 * mib, 100 * mib, BS,
                                 "/dev/shm", why, sizeof why),
                     90 * mib - (90 * mib) % BS);
    /* Too small to be worth it. */
    assert_int_equal(vt__shm_fit(256 * mib, 8 * mib, 8 * mib, BS, "/dev/shm",
                                 why, sizeof why),
                     0);
    assert_non_null(strstr(why, "minimum"));
}

static void test_create_attach_permissions(void **state)
{
    struct stat st;
    vt_shm *a = open_seg(16u << 20, BS), *b;
    vt_shm_info in;

    assert_non_null(a);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    assert_true((uint64_t)st.st_size <= 16u << 20);
    /* A second attacher with another size asks nothing new: sized once. */
    b = open_seg(64u << 20, BS);
    assert_non_null(b);
    vt__shm_info(b, &in);
    assert_int_equal(in.size, (uint64_t)st.st_size);
    assert_int_equal(in.procs_attached, 2);
    vt__shm_close(b);
    assert_int_equal(stat(path, &st), 0); /* a still attached */
    vt__shm_close(a);
    assert_int_equal(stat(path, &st), -1); /* last one out removed it */
    assert_int_equal(errno, ENOENT);
}

static void test_fill_wait_hit(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b = open_seg(16u << 20, BS);
    static unsigned char buf[BS];
    uint8_t d[32];
    size_t len;
    vt_shmc_ref ra, rb;
    int err;

    assert_non_null(a);
    assert_non_null(b);
    digest_of(1, d);
    assert_int_equal(vt__shmc_lookup(a, d, 0, buf, &len, &ra), VT_SHMC_FILL);
    assert_int_equal(vt__shmc_lookup(b, d, 0, buf, &len, &rb), VT_SHMC_WAIT);
    fill(a, &ra, d, 0);
    assert_int_equal(vt__shmc_wait(b, &rb, d, 0, 1000, buf, &len, &err, NULL, 0),
                     VT_SHMC_HIT);
    assert_true(block_ok(d, 0, buf, len, BS));
    assert_int_equal(touch(b, d, 0), VT_SHMC_HIT);
    /* A failure reaches the waiter with its message, and is not kept. */
    assert_int_equal(vt__shmc_lookup(a, d, 1, buf, &len, &ra), VT_SHMC_FILL);
    assert_int_equal(vt__shmc_lookup(b, d, 1, buf, &len, &rb), VT_SHMC_WAIT);
    vt__shmc_fail(a, &ra, VT_EACCESS, "s3://b/k: HTTP 403 AccessDenied");
    {
        char msg[128];
        assert_int_equal(vt__shmc_wait(b, &rb, d, 1, 1000, buf, &len, &err, msg,
                                       sizeof msg),
                         VT_SHMC_FAILED);
        assert_int_equal(err, VT_EACCESS);
        assert_string_equal(msg, "s3://b/k: HTTP 403 AccessDenied");
    }
    assert_int_equal(touch(b, d, 1), VT_SHMC_FILL);
    assert_int_equal(touch(a, d, 1), VT_SHMC_HIT);
    /* Another ETag (another digest) is another block. */
    digest_of(2, d);
    assert_int_equal(touch(a, d, 0), VT_SHMC_FILL);
    check_structure(a);
    vt__shm_close(b);
    vt__shm_close(a);
}

/* vt__shmc_drop (a reader found a block's bytes wrong): the block leaves the
 * segment for every process, its slot is reused, a block being filled and a
 * missing one are left alone. */
static void test_drop(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b = open_seg(16u << 20, BS);
    static unsigned char buf[BS];
    uint8_t d[32];
    size_t len;
    vt_shmc_ref ra;

    assert_non_null(a);
    assert_non_null(b);
    digest_of(3, d);
    assert_int_equal(touch(a, d, 0), VT_SHMC_FILL);
    assert_int_equal(touch(a, d, 1), VT_SHMC_FILL);
    assert_int_equal(touch(b, d, 0), VT_SHMC_HIT);
    assert_int_equal(vt__shmc_drop(b, d, 0), 1);
    assert_int_equal(vt__shmc_drop(b, d, 0), 0);        /* gone already */
    assert_int_equal(vt__shmc_drop(b, d, 9), 0);        /* never there */
    check_structure(a);
    assert_int_equal(touch(a, d, 1), VT_SHMC_HIT);      /* others stay */
    assert_int_equal(touch(a, d, 0), VT_SHMC_FILL);     /* fetched again */
    assert_int_equal(touch(b, d, 0), VT_SHMC_HIT);
    assert_int_equal(vt__shmc_lookup(a, d, 2, buf, &len, &ra), VT_SHMC_FILL);
    assert_int_equal(vt__shmc_drop(b, d, 2), 0);        /* being filled */
    fill(a, &ra, d, 2);
    assert_int_equal(touch(b, d, 2), VT_SHMC_HIT);
    check_structure(b);
    vt__shm_close(b);
    vt__shm_close(a);
}

/* A slow filler: the waiter's bound expires and it fetches privately. */
static void test_wait_is_bounded(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b = open_seg(16u << 20, BS);
    static unsigned char buf[BS];
    uint8_t d[32];
    size_t len;
    vt_shmc_ref ra, rb;
    int err;

    digest_of(3, d);
    assert_int_equal(vt__shmc_lookup(a, d, 0, buf, &len, &ra), VT_SHMC_FILL);
    assert_int_equal(vt__shmc_lookup(b, d, 0, buf, &len, &rb), VT_SHMC_WAIT);
    assert_int_equal(vt__shmc_wait(b, &rb, d, 0, 250, buf, &len, &err, NULL, 0),
                     VT_SHMC_PRIVATE);
    fill(a, &ra, d, 0);
    assert_int_equal(touch(b, d, 0), VT_SHMC_HIT);
    vt__shm_close(b);
    vt__shm_close(a);
}

/* A filler killed half-way: its block is taken over by the next one. */
static void test_filler_killed(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS);
    static unsigned char buf[BS];
    uint8_t d[32];
    size_t len;
    vt_shmc_ref r;
    int err, status;
    pid_t pid;

    digest_of(4, d);
    pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        if (!c || vt__shmc_lookup(c, d, 5, buf, &len, &r) != VT_SHMC_FILL)
            _exit(2);
        memset(c->data + (uint64_t)c->desc[r.desc].data * BS, 0xAB, BS / 2);
        raise(SIGKILL);              /* half-way through the copy */
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* Whether we find it FILLING (and take it over at once) or wait and
     * then take over, we end up the filler, never with its half block. */
    switch (vt__shmc_lookup(a, d, 5, buf, &len, &r)) {
    case VT_SHMC_FILL:
        break;
    case VT_SHMC_WAIT:
        assert_int_equal(vt__shmc_wait(a, &r, d, 5, 2000, buf, &len, &err, NULL, 0),
                         VT_SHMC_FILL);
        break;
    default:
        fail_msg("a dead filler's block was not taken over");
    }
    fill(a, &r, d, 5);
    assert_int_equal(touch(a, d, 5), VT_SHMC_HIT);
    assert_true(atomic_load(&a->hdr->ctr.takeovers) >= 1);
    check_structure(a);
    vt__shm_close(a);
}

/* A process killed holding the blocks lock: the next one repairs. */
static void test_lock_owner_killed(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS);
    uint8_t d[32];
    int status, i;
    pid_t pid;

    digest_of(5, d);
    for (i = 0; i < 20; i++)
        touch(a, d, (uint64_t)i);
    pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        if (!c)
            _exit(2);
        pthread_mutex_lock(&c->hdr->blocks_mu);
        c->hdr->free_desc = 12345678; /* half-way through an update */
        c->buckets[3] = 7;
        raise(SIGKILL);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    /* Repaired on the next lock: the ready blocks are still hits. */
    for (i = 0; i < 20; i++)
        assert_int_equal(touch(a, d, (uint64_t)i), VT_SHMC_HIT);
    assert_true(atomic_load(&a->hdr->ctr.repairs) >= 1);
    check_structure(a);
    vt__shm_close(a);
}

/* A scan twice the budget, read twice: LIRS keeps a share of it. */
static void test_repeated_scan_keeps_a_share(void **state)
{
    vt_shm *a = open_seg(8u << 20, 256 * 1024);
    uint8_t d[32];
    uint32_t slots, i, hits = 0, n;

    assert_non_null(a);
    slots = a->hdr->nslots;
    n = slots * 2;
    digest_of(6, d);
    for (i = 0; i < n; i++)
        touch(a, d, i);
    for (i = 0; i < n; i++)
        hits += touch(a, d, i) == VT_SHMC_HIT;
    /* LRU would keep 0 of a scan this long; LIRS about slots/n. */
    assert_true(hits * 100 >= n * 30);
    assert_true(a->hdr->resident <= slots);
    check_structure(a);
    vt__shm_close(a);
}

/* Fetches in flight hold slots outside LIRS: new blocks claimed while the
 * resident-HIR room is taken are not kept (PRIVATE), never at the cost of
 * the LIR set; a block that comes back (a ghost) may push LIR out. */
static void test_fills_in_flight_never_wash_out_lir(void **state)
{
    vt_shm *a = open_seg(8u << 20, 256 * 1024);
    static unsigned char buf[256 * 1024];
    uint8_t d[32], e[32];
    vt_shmc_ref refs[40];
    vt_shmc_role roles[40];
    uint32_t slots, i, lir, private_n = 0;
    size_t len;

    assert_non_null(a);
    slots = a->hdr->nslots;
    digest_of(9, d);
    digest_of(10, e);
    for (i = 0; i < slots; i++)
        assert_int_equal(touch(a, d, i), VT_SHMC_FILL);
    lir = a->hdr->lirs.nlir;
    assert_true(lir >= slots * 8 / 10);
    /* 20 new blocks claimed at once, none filled yet (20 fetches in flight) */
    for (i = 0; i < 20; i++) {
        roles[i] = vt__shmc_lookup(a, e, i, buf, &len, &refs[i]);
        assert_true(roles[i] == VT_SHMC_FILL || roles[i] == VT_SHMC_PRIVATE);
        private_n += roles[i] == VT_SHMC_PRIVATE;
    }
    assert_true(private_n >= 20 - (slots - lir));
    for (i = 0; i < 20; i++)
        if (roles[i] == VT_SHMC_FILL)
            fill(a, &refs[i], e, i);
    assert_int_equal(a->hdr->lirs.nlir, lir);
    for (i = 0; i < slots; i++)          /* the LIR set is all still there */
        if (a->lirs[i].status == VT_LIRS_LIR)
            assert_int_equal(touch(a, d, a->desc[i].index), VT_SHMC_HIT);
    /* one of the blocks not kept comes back soon: it is a ghost now, and
     * may take an LIR block's room */
    for (i = 0; i < 20; i++)
        if (roles[i] == VT_SHMC_PRIVATE)
            break;
    assert_true(i < 20);
    assert_int_equal(touch(a, e, i), VT_SHMC_FILL);
    assert_int_equal(touch(a, e, i), VT_SHMC_HIT);
    check_structure(a);
    vt__shm_close(a);
}

static void test_metadata(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b = open_seg(16u << 20, BS);
    vt_shm_objinfo in, out;
    vt_shmc_ref ra, rb;
    uint8_t d[32];

    vt__shm_digest("https://ep/\nb/k.tif\nakid", d);
    assert_int_equal(vt__shmm_get(a, d, 300, 30, 1000, &out, &ra), VT_SHMM_LOAD);
    memset(&in, 0, sizeof in);
    in.size = 123456789;
    in.loaded_at = (int64_t)time(NULL);
    in.last_modified = 1700000000;
    snprintf(in.etag, sizeof in.etag, "\"abc\"");
    vt__shmm_publish(a, &ra, &in);
    assert_int_equal(vt__shmm_get(b, d, 300, 30, 1000, &out, &rb), VT_SHMM_FOUND);
    assert_int_equal(out.size, 123456789);
    assert_int_equal(out.last_modified, 1700000000);
    assert_string_equal(out.etag, "\"abc\"");
    assert_false(out.missing);
    /* A TTL of 0 means "ask again". */
    assert_int_equal(vt__shmm_get(b, d, 0, 30, 1000, &out, &rb), VT_SHMM_LOAD);
    vt__shmm_drop(b, &rb);
    /* A remembered 404 and its words. */
    assert_int_equal(vt__shmm_get(a, d, 300, 30, 1000, &out, &ra), VT_SHMM_LOAD);
    in.missing = 1;
    snprintf(in.msg, sizeof in.msg, "s3://b/k.tif: HTTP 404 NoSuchKey");
    vt__shmm_publish(a, &ra, &in);
    assert_int_equal(vt__shmm_get(b, d, 300, 30, 1000, &out, &rb), VT_SHMM_FOUND);
    assert_true(out.missing);
    assert_string_equal(out.msg, "s3://b/k.tif: HTTP 404 NoSuchKey");
    /* A write forgets it for everyone. */
    vt__shmm_forget(a, d);
    assert_int_equal(vt__shmm_get(b, d, 300, 30, 1000, &out, &rb), VT_SHMM_LOAD);
    /* A loader that dies is replaced; until then the others wait. */
    {
        pid_t pid = fork();
        int status;
        uint8_t d2[32];
        vt__shm_digest("https://ep/\nb/k2.tif\nakid", d2);
        if (pid == 0) {
            vt_shm *c = open_seg(16u << 20, BS);
            vt_shmc_ref rc;
            vt_shm_objinfo o2;
            if (!c || vt__shmm_get(c, d2, 300, 30, 1000, &o2, &rc) != VT_SHMM_LOAD)
                _exit(2);
            raise(SIGKILL);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(vt__shmm_get(a, d2, 300, 30, 2000, &out, &ra),
                         VT_SHMM_LOAD);
        vt__shmm_drop(a, &ra);
    }
    vt__shmm_drop(b, &rb);
    vt__shm_close(b);
    vt__shm_close(a);
}

/* fork(): the child sees the parent's blocks, takes a slot of its own, and
 * its fills are the parent's hits. */
static void test_fork_child(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS);
    uint8_t d[32];
    int status;
    pid_t pid;
    uint32_t epoch;

    digest_of(7, d);
    touch(a, d, 0);
    pid = fork();
    if (pid == 0) {
        vt__shm_fork_child(a);
        if (touch(a, d, 0) != VT_SHMC_HIT || touch(a, d, 1) != VT_SHMC_FILL)
            _exit(3);
        if (vt__shm_attached(a, &epoch) < 0)
            _exit(4);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(touch(a, d, 1), VT_SHMC_HIT);
    vt__shm_close(a);
}

/* A segment left by a dead run is reused; an unusable file under the name
 * is replaced when nobody uses it; one owned by another user is left. */
static void test_stale_and_foreign(void **state)
{
    uint8_t d[32];
    int status, fd;
    pid_t pid;
    vt_shm *a;

    digest_of(8, d);
    pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        if (!c || touch(c, d, 0) != VT_SHMC_FILL)
            _exit(2);
        raise(SIGKILL);              /* never detaches: the file stays */
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(access(path, F_OK), 0);
    a = open_seg(16u << 20, BS);
    assert_non_null(a);
    assert_int_equal(touch(a, d, 0), VT_SHMC_HIT); /* reused */
    vt__shm_close(a);
    assert_int_equal(access(path, F_OK), -1);

    /* Garbage under the name, nobody attached: replaced. */
    fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "garbage", 7), 7);
    close(fd);
    a = open_seg(16u << 20, BS);
    assert_non_null(a);
    assert_int_equal(touch(a, d, 0), VT_SHMC_FILL);
    vt__shm_close(a);

    /* Another user's file under our name: never used, never removed. */
    if (geteuid() == 0) {
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fchown(fd, 65534, 65534), 0);
        close(fd);
        assert_null(open_seg(16u << 20, BS));
        assert_int_equal(access(path, F_OK), 0);
        unlink(path);
    }
}

/* Workers in child processes read and fill random blocks, checking every
 * byte they are handed; the parent SIGKILLs them at random moments, 220
 * times, then reads everything itself and checks the structure. No waiter
 * may hang (alarm), no byte may be wrong (exit 3). */
static void worker(unsigned seed, int fresh, vt_shm *inherited)
{
    vt_shm *s = fresh ? open_seg(8u << 20, 64 * 1024) : inherited;
    uint64_t rnd = seed;
    if (!s)
        _exit(2);
    if (!fresh)
        vt__shm_fork_child(s);
    alarm(20);
    for (;;) {
        static unsigned char buf[64 * 1024];
        uint8_t d[32];
        size_t len;
        vt_shmc_ref ref;
        int err;
        uint64_t r = splitmix(&rnd);
        uint64_t idx = (r >> 8) % 300;
        vt_shmc_role role;

        digest_of((int)(r % 3), d);
        role = vt__shmc_lookup(s, d, idx, buf, &len, &ref);
        if (role == VT_SHMC_WAIT)
            role = vt__shmc_wait(s, &ref, d, idx, 1000, buf, &len, &err, NULL, 0);
        if (role == VT_SHMC_HIT && !block_ok(d, idx, buf, len, 64 * 1024))
            _exit(3);
        if (role == VT_SHMC_FILL) {
            if ((r >> 40) % 50 == 0) {
                vt__shmc_fail(s, &ref, VT_ETRANSIENT, "injected");
            } else {
                size_t n = block_len(d, idx, 64 * 1024);
                make_block(d, idx, buf, n);
                if ((r >> 32) % 4 == 0)
                    usleep((useconds_t)((r >> 48) % 2000)); /* slow filler */
                vt__shmc_fill(s, &ref, buf, n);
            }
        }
    }
}

static void test_random_kills(void **state)
{
    enum { WORKERS = 4, KILLS = 220 };
    vt_shm *a = open_seg(8u << 20, 64 * 1024);
    pid_t pids[WORKERS];
    uint64_t rnd = 12345;
    int i, kills = 0, status;

    assert_non_null(a);
    for (i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            worker((unsigned)(i + 1), i % 2, a);
    }
    while (kills < KILLS) {
        uint64_t r = splitmix(&rnd);
        int w = (int)(r % WORKERS);
        struct timespec ts = {0, (long)((r >> 16) % 8000) * 1000};
        nanosleep(&ts, NULL);
        kill(pids[w], SIGKILL);
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
            fail_msg("worker ended with status %d (3: wrong bytes, 14: hung)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
        kills++;
        pids[w] = fork();
        if (pids[w] == 0)
            worker((unsigned)(kills + 100), kills % 2, a);
    }
    for (i = 0; i < WORKERS; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &status, 0);
    }
    /* Every block is readable and right; nothing is left hanging. */
    alarm(60);
    for (int k = 0; k < 3; k++) {
        uint8_t d[32];
        digest_of(k, d);
        for (uint64_t idx = 0; idx < 300; idx++)
            touch(a, d, idx);
    }
    alarm(0);
    check_structure(a);
    print_message("kills: %d, repairs: %llu, takeovers: %llu, reaped: %llu\n",
                  kills, (unsigned long long)atomic_load(&a->hdr->ctr.repairs),
                  (unsigned long long)atomic_load(&a->hdr->ctr.takeovers),
                  (unsigned long long)atomic_load(&a->hdr->ctr.reaped));
    vt__shm_close(a);
    assert_int_equal(access(path, F_OK), -1); /* no segment left behind */
}

/* ---- stopped processes and damaged segments (issue 18) ---- */

/* A child that attaches, takes `which` (0 procs, 1 blocks, 2 meta) as a
 * process in the middle of its work would, and stops there (SIGSTOP): it
 * is alive, so robust recovery never frees the lock. Returns its pid once
 * it is stopped. */
static pid_t stopped_holder(int which)
{
    int status;
    pid_t pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        pthread_mutex_t *mu;
        if (!c)
            _exit(2);
        mu = which == 0 ? &c->hdr->procs_mu
             : which == 1 ? &c->hdr->blocks_mu : &c->hdr->meta_mu;
        pthread_mutex_lock(mu);
        raise(SIGSTOP);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    return pid;
}

static void kill_stopped(pid_t pid)
{
    int status;
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* The blocks lock's holder is stopped: cached and uncached lookups of an
 * attached process and of a new one end (PRIVATE: each goes on with its own
 * cache) instead of hanging; once the holder is SIGKILLed, the next
 * process recovers the lock and finds the blocks. The alarm is the hang
 * check (a hang ends the test with SIGALRM). */
static void test_stopped_blocks_lock_holder(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b, *e;
    static unsigned char buf[BS];
    uint8_t d[32];
    size_t len;
    vt_shmc_ref r;
    pid_t pid;
    int i;

    assert_non_null(a);
    digest_of(11, d);
    for (i = 0; i < 4; i++)
        assert_int_equal(touch(a, d, (uint64_t)i), VT_SHMC_FILL);
    pid = stopped_holder(1);
    alarm(60);
    assert_int_equal(vt__shmc_lookup(a, d, 0, buf, &len, &r), VT_SHMC_PRIVATE);
    assert_int_equal(vt__shmc_lookup(a, d, 9, buf, &len, &r), VT_SHMC_PRIVATE);
    b = open_seg(16u << 20, BS);   /* attaching needs the process lock only */
    if (b) {
        assert_int_equal(vt__shmc_lookup(b, d, 1, buf, &len, &r), VT_SHMC_PRIVATE);
        vt__shm_close(b);
    }
    alarm(0);
    kill_stopped(pid);
    e = open_seg(16u << 20, BS);
    assert_non_null(e);
    for (i = 0; i < 4; i++)
        assert_int_equal(touch(e, d, (uint64_t)i), VT_SHMC_HIT);
    assert_true(atomic_load(&e->hdr->ctr.repairs) >= 1);
    vt__shm_close(e);
    vt__shm_close(a);
}

/* The process-table lock's holder is stopped (in the middle of attaching):
 * a new process's attach ends (not shared) instead of hanging; the
 * metadata lock's: an attached process's lookup of an object ends. */
static void test_stopped_procs_and_meta_lock_holders(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS);
    vt_shm_objinfo out;
    vt_shmc_ref r;
    uint8_t d[32];
    pid_t pid;

    assert_non_null(a);
    pid = stopped_holder(0);
    alarm(60);
    assert_null(open_seg(16u << 20, BS));
    alarm(0);
    kill_stopped(pid);
    vt__shm_close(a);

    a = open_seg(16u << 20, BS);
    assert_non_null(a);
    vt__shm_digest("https://ep/\nb/stopped.tif\nakid", d);
    pid = stopped_holder(2);
    alarm(60);
    assert_int_equal(vt__shmm_get(a, d, 300, 30, 1000, &out, &r), VT_SHMM_PRIVATE);
    alarm(0);
    kill_stopped(pid);
    vt__shm_close(a);
}

/* The last process leaving holds the "attached" byte's write lock while it
 * removes the name; stopped there, it must not hang a process attaching. */
static void test_stopped_leaver_never_hangs_an_attach(void **state)
{
    int status;
    pid_t pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        struct flock fl;
        if (!c)
            _exit(2);
        memset(&fl, 0, sizeof fl);
        fl.l_whence = SEEK_SET;
        fl.l_start = VT_SHM_LOCK_ATTACHED;
        fl.l_len = 1;
        fl.l_type = F_WRLCK; /* alone: our read lock becomes a write lock */
        if (fcntl(c->fd, F_OFD_SETLK, &fl) != 0)
            _exit(3);
        raise(SIGSTOP);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    alarm(60);
    assert_null(open_seg(16u << 20, BS));
    alarm(0);
    kill_stopped(pid);
}

/* A filler that holds several blocks and does not finish: once one wait for
 * it timed out, its other blocks are not waited for (PRIVATE at once, so
 * the reader fetches them with its own run), where each used to cost the
 * whole wait bound in turn. */
static void test_given_up_filler_is_not_waited_for_again(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS), *b = open_seg(16u << 20, BS);
    static unsigned char buf[BS];
    vt_shmc_ref ra[4], rb0, rb2;
    uint8_t d[32];
    size_t len;
    int err, i;

    assert_non_null(a);
    assert_non_null(b);
    digest_of(12, d);
    for (i = 0; i < 4; i++)
        assert_int_equal(vt__shmc_lookup(a, d, (uint64_t)i, buf, &len, &ra[i]),
                         VT_SHMC_FILL);
    assert_int_equal(vt__shmc_lookup(b, d, 0, buf, &len, &rb0), VT_SHMC_WAIT);
    assert_int_equal(vt__shmc_lookup(b, d, 2, buf, &len, &rb2), VT_SHMC_WAIT);
    assert_int_equal(vt__shmc_wait(b, &rb0, d, 0, 200, buf, &len, &err, NULL, 0),
                     VT_SHMC_PRIVATE);
    /* its other blocks: no wait for them */
    assert_int_equal(vt__shmc_lookup(b, d, 1, buf, &len, &rb0), VT_SHMC_PRIVATE);
    assert_int_equal(vt__shmc_lookup(b, d, 3, buf, &len, &rb0), VT_SHMC_PRIVATE);
    /* one of them fills after all: a hit, whoever fills it */
    fill(a, &ra[3], d, 3);
    assert_int_equal(touch(b, d, 3), VT_SHMC_HIT);
    for (i = 0; i < 3; i++)
        fill(a, &ra[i], d, (uint64_t)i);
    vt__shm_close(b);
    vt__shm_close(a);
}

/* A garbage block-bucket count in the header of a segment in use: a new
 * process does not crash on it (a child, so a SIGSEGV shows as a status). */
static void test_damaged_header_never_crashes_an_attacher(void **state)
{
    vt_shm *a = open_seg(16u << 20, BS);
    uint8_t d[32];
    int status, i;
    pid_t pid;

    assert_non_null(a);
    digest_of(13, d);
    for (i = 0; i < 4; i++)
        touch(a, d, (uint64_t)i);
    a->hdr->nbuckets = 1u << 30;
    a->hdr->nmeta_buckets = 1u << 30;
    pid = fork();
    if (pid == 0) {
        vt_shm *c = open_seg(16u << 20, BS);
        if (c) {
            for (i = 0; i < 8; i++)
                touch(c, d, (uint64_t)i);
        }
        _exit(c ? 1 : 0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* not shared: damaged, in use */
    /* the attached process keeps its own checked counts */
    for (i = 0; i < 4; i++)
        assert_int_equal(touch(a, d, (uint64_t)i), VT_SHMC_HIT);
    vt__shm_close(a);
}

/* A hashed metadata entry in a state that does not exist (FREE, or any
 * garbage) naming a loader that is gone: a lookup of it ends (PRIVATE),
 * where it looped forever (found by fuzz_shm_segment). The alarm is the
 * hang check. */
static void test_damaged_metadata_state_never_loops(void **state)
{
    static const uint32_t bad[] = {VT_M_FREE, 9, 0xffffffffu};
    vt_shm *a = open_seg(16u << 20, BS);
    vt_shm_objinfo in, out;
    vt_shmc_ref r;
    uint8_t d[32];

    assert_non_null(a);
    vt__shm_digest("https://ep/\nb/state.tif\nakid", d);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        vt_shm *b = open_seg(16u << 20, BS);
        assert_non_null(b);
        assert_int_equal(vt__shmm_get(a, d, 300, 30, 1000, &out, &r), VT_SHMM_LOAD);
        memset(&in, 0, sizeof in);
        in.size = 7;
        in.loaded_at = (int64_t)time(NULL);
        vt__shmm_publish(a, &r, &in);
        atomic_store(&a->meta[r.desc].state, bad[k]);
        a->meta[r.desc].loader_proc = VT_SHM_MAX_PROCS - 1; /* nobody */
        alarm(30);
        assert_int_equal(vt__shmm_get(b, d, 300, 30, 0, &out, &r), VT_SHMM_PRIVATE);
        alarm(0);
        vt__shm_close(b);
        vt__shmm_forget_all(a);
        atomic_store(&a->meta[r.desc].state, VT_M_FREE);
        vt__shmmeta_repair(a);
    }
    vt__shm_close(a);
}

/* Random garbage written over the index structures of a live segment
 * (header fields past the locks, descriptors, buckets, LIRS nodes, slot
 * owners, metadata): the processes reading it never crash or hang, and
 * every byte they are handed is right. Each round runs in a child, so a
 * SIGSEGV is a failed status rather than the end of the run. */
static void scribble(vt_shm *s, uint64_t *rnd, int n)
{
    shm_region reg[SHM_REGIONS]; /* each alike, whatever its size */
    shm_regions(s, reg);
    for (int k = 0; k < n; k++) {
        uint64_t r = splitmix(rnd), q = splitmix(rnd);
        int g = (int)(q % SHM_REGIONS);
        uint64_t off = ((q >> 8) % reg[g].len) & ~(uint64_t)3;
        int32_t v;
        if (g == SHM_REGION_META) /* the fields before the digest */
            off = off / sizeof(vt_shm_meta) * sizeof(vt_shm_meta) +
                  ((q >> 40) % offsetof(vt_shm_meta, digest) & ~(uint64_t)3);
        switch (r % 4) {
        case 0: v = -1; break;
        case 1: v = (int32_t)((r >> 8) % 400); break; /* a plausible index */
        case 2: v = (int32_t)(r >> 20); break;
        default: v = (int32_t)(r >> 33) | INT32_MIN; break;
        }
        if (off + 4 <= reg[g].len)
            memcpy(reg[g].at + off, &v, 4);
    }
}

/* touch() for a child: a wrong byte is exit 3, not a cmocka failure. */
static void touch_or_exit(vt_shm *s, const uint8_t *d, uint64_t index)
{
    static unsigned char buf[BS];
    size_t len = 0;
    vt_shmc_ref ref;
    int err;
    vt_shmc_role r = vt__shmc_lookup(s, d, index, buf, &len, &ref);

    if (r == VT_SHMC_WAIT)
        r = vt__shmc_wait(s, &ref, d, index, 200, buf, &len, &err, NULL, 0);
    if (r == VT_SHMC_HIT && !block_ok(d, index, buf, len, BS))
        _exit(3);
    if (r == VT_SHMC_FILL)
        fill(s, &ref, d, index);
}

static void test_garbage_in_a_live_segment(void **state)
{
    enum { ROUNDS = 120 };
    uint64_t rnd = 777;
    int round, status;

    for (round = 0; round < ROUNDS; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            vt_shm *a = open_seg(8u << 20, BS), *b = open_seg(8u << 20, BS);
            vt_shm_objinfo in, out;
            vt_shmc_ref r;
            uint8_t d[32], m[32];
            int k;
            if (!a || !b)
                _exit(2);
            alarm(60);
            memset(&in, 0, sizeof in);
            in.size = 42;
            in.loaded_at = (int64_t)time(NULL);
            for (k = 0; k < 60; k++) {
                digest_of(k % 3, d);
                touch_or_exit(k % 2 ? a : b, d, (uint64_t)(k * 7 % 90));
                vt__shm_digest(k % 2 ? "meta-a" : "meta-b", m);
                if (vt__shmm_get(a, m, 300, 30, 200, &out, &r) == VT_SHMM_LOAD)
                    vt__shmm_publish(a, &r, &in);
            }
            scribble(a, &rnd, 1 + (int)(splitmix(&rnd) % 64));
            for (k = 0; k < 200; k++) {
                digest_of(k % 3, d);
                touch_or_exit(k % 2 ? a : b, d, (uint64_t)(k * 11 % 90));
                vt__shm_digest(k % 5 ? "meta-a" : "meta-c", m);
                if (vt__shmm_get(b, m, 300, 30, 200, &out, &r) == VT_SHMM_LOAD)
                    vt__shmm_publish(b, &r, &in);
                else if (!out.missing && out.size != 0 && out.size != 42)
                    _exit(4);
            }
            unlink(path);
            _exit(0);
        }
        splitmix(&rnd);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        unlink(path);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("round %d: %s %d (3: wrong bytes, 4: wrong size, 14: hung)",
                     round, WIFEXITED(status) ? "exit" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
}

static int setup(void **state)
{
    snprintf(pool, sizeof pool, "ut%d", (int)getpid());
    snprintf(path, sizeof path, "/dev/shm/vsitune-%u-%s", (unsigned)geteuid(),
             pool);
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    unlink(path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit),
        cmocka_unit_test_setup_teardown(test_create_attach_permissions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_wait_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filler_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_owner_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeated_scan_keeps_a_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fills_in_flight_never_wash_out_lir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_and_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_kills, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_blocks_lock_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_procs_and_meta_lock_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_leaver_never_hangs_an_attach, setup, teardown),
        cmocka_unit_test_setup_teardown(test_given_up_filler_is_not_waited_for_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_header_never_crashes_an_attacher, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_metadata_state_never_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_in_a_live_segment, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
