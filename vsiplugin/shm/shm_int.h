/* shm_int.h: the layout of the shared segment, for the files of shm/ only
 * (shmseg.c, shmlayout.c, shmlock.c, shmproc.c, shmcache.c, shmblocks.c,
 * shmmeta.c).
 *
 * One file in /dev/shm (VSITUNE_SHM_DIR) per user and pool, mapped by every
 * plugin process of that user: a header, the process table, the block
 * descriptors and their hash buckets, the object-metadata entries and their
 * buckets, the owner of each data slot, then the data slots (one cache
 * block each, page aligned). Every
 * link is an index, never a pointer: each process maps the file at its own
 * address.
 *
 * Crash safety rests on three rules, kept by every writer:
 * 1. Structure (hash chains, free lists, the LIRS lists) changes only under
 *    the robust mutex of its region; a lock owner that died leaves
 *    EOWNERDEAD, and the next owner rebuilds that region's structure from
 *    the descriptors' state words (shmcache.c/shmmeta.c *_repair), which are
 *    the only source of truth.
 * 2. A descriptor's fields are written before its state word publishes them,
 *    and a descriptor leaving READY bumps its generation before anything
 *    else, so a reader that copied data outside the lock can tell (seqlock).
 * 3. A block or entry being filled names its filler (process slot + epoch);
 *    a process slot's owner holds an OFD lock on one byte of the file for as
 *    long as it lives, so "is the filler alive" is one fcntl(F_OFD_GETLK),
 *    immune to pid reuse, and the kernel drops the lock when the process
 *    dies, however it dies.
 *
 * Nothing read from the file is trusted (shared memory any process of the
 * user can write, or a bug can scribble on): the counts and offsets are
 * checked once at attach against the layout they imply and kept in the
 * process (vt_shm_geom), and every index or length read from the segment
 * afterwards is checked against those before it is used. A lock held longer
 * than a bound (a stopped process) or any inconsistency turns the segment
 * off for this process (vt__shm_off), which goes on with its own cache. */
#ifndef VT_SHM_INT_H
#define VT_SHM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/lirs.h"
#include "shm/shmofd.h"

#define VT_SHM_MAGIC 0x31304d4853545623ULL /* "#VTSHM01" */
#define VT_SHM_VERSION 2u /* 2: check words, slot owners (shmcache.c) */
#define VT_SHM_MAX_PROCS 256u
#define VT_SHM_DIGEST 32                   /* SHA-256 of the identity */
#define VT_SHM_ETAG_MAX 128
#define VT_SHM_MSG_MAX 480
#define VT_SHM_ERR_RING 64                 /* failure messages kept */
#define VT_SHM_CHUNK (4u << 20)            /* data reserved this much at a time */
#define VT_SHM_HIR_PCT 10                  /* LIRS: resident HIR share */

/* The OFD lock bytes (VT_SHM_LOCK_*) are in shmofd.h, shared with the
 * watcher program. */

/* The longest any lock of the segment (the robust mutexes, the OFD lock of
 * attaching) is waited for: they guard microseconds of in-memory work, so
 * a holder past this is stopped (SIGSTOP, a debugger, a frozen cgroup) or
 * the segment is damaged, and this process goes on without it. */
#define VT_SHM_LOCK_WAIT_MS 2000

/* VSITUNE_SHM_INJECT=stop-*: the lock this process stops in (tests). */
enum { VT_SHM_INJ_NONE = 0, VT_SHM_INJ_PROCS = 1, VT_SHM_INJ_BLOCKS = 2,
       VT_SHM_INJ_META = 3 };

enum { VT_SHM_PROC_FREE = 0, VT_SHM_PROC_LIVE = 1 };

typedef struct vt_shm_proc {
    _Atomic uint32_t state;
    _Atomic uint32_t epoch;      /* bumped when the slot is taken or freed */
    int32_t pid;                 /* for tunerd and debug output only */
    uint32_t pad;
    int64_t attached_at;
} vt_shm_proc;

/* Block descriptor states; `state` is also the futex word waiters sleep on. */
enum {
    VT_D_FREE = 0,
    VT_D_FILLING = 1,            /* a process is fetching it into `data` */
    VT_D_READY = 2,              /* data[0..len) valid while gen unchanged */
    VT_D_FAILED = 3,             /* err + err_ring[msg] for the waiters */
    VT_D_GHOST = 4               /* no data: LIRS remembers its recency */
};

typedef struct vt_shm_desc {
    _Atomic uint32_t state;
    _Atomic uint32_t gen;
    uint32_t len;
    int32_t data;                /* data slot, or -1 */
    int32_t hnext;               /* hash chain, or -1 */
    uint32_t filler_proc, filler_epoch;
    int32_t err;                 /* FAILED: a vt_err */
    uint32_t err_slot, err_seq;  /* FAILED: the message in the error ring */
    uint32_t was_ghost;          /* FILLING: LIRS saw it as a ghost */
    uint32_t check;              /* READY: data, len and name hashed
                                    (shmcache.c desc_check) */
    uint64_t index;              /* block index in the object */
    uint8_t digest[VT_SHM_DIGEST];
} vt_shm_desc;

typedef struct vt_shm_errmsg {
    _Atomic uint32_t seq;        /* odd while being written */
    char text[VT_SHM_MSG_MAX];
} vt_shm_errmsg;

/* Metadata entry states (also a futex word). */
enum {
    VT_M_FREE = 0,
    VT_M_LOADING = 1,            /* a process is fetching the header */
    VT_M_READY = 2,              /* size, ETag, Last-Modified known */
    VT_M_MISSING = 3             /* a remembered 404; msg says what S3 said */
};

typedef struct vt_shm_meta {
    _Atomic uint32_t state;
    _Atomic uint32_t gen;
    int32_t hnext;
    uint32_t pad0;
    uint32_t loader_proc, loader_epoch;
    uint64_t size;
    int64_t loaded_at;           /* wall clock (time()), for every TTL */
    int64_t last_modified;       /* Last-Modified as time_t, 0: unknown */
    uint32_t flags;              /* VT_SHM_META_* */
    uint32_t pad;
    uint8_t digest[VT_SHM_DIGEST];
    char etag[VT_SHM_ETAG_MAX];
    char msg[VT_SHM_MSG_MAX];    /* MISSING: the error text */
} vt_shm_meta;

typedef struct vt_shm_counters {
    _Atomic uint64_t hits, misses, waits, wait_timeouts, fills, fails;
    _Atomic uint64_t evictions, takeovers, repairs, meta_hits, meta_misses;
    _Atomic uint64_t meta_waits, reaped;
} vt_shm_counters;

typedef struct vt_shm_hdr {
    _Atomic uint64_t magic;      /* written last at creation */
    uint32_t version, layout;    /* layout: sizeof checks of the structs */
    uint64_t total_size, block_size;
    uint64_t budget_asked;       /* VSITUNE_SHARED_CACHE_SIZE of the creator */
    int64_t created_at;
    int32_t creator_pid;
    uint32_t nprocs, ndesc, nbuckets, nslots, nmeta, nmeta_buckets;
    uint64_t off_procs, off_desc, off_lirs, off_buckets, off_meta;
    uint64_t off_meta_buckets, off_data;
    char name[64];

    pthread_mutex_t procs_mu;    /* robust, process-shared: the proc table */
    pthread_mutex_t blocks_mu;   /* descriptors, buckets, free lists, LIRS */
    pthread_mutex_t meta_mu;     /* metadata entries and buckets */

    /* blocks_mu: */
    int32_t free_desc;           /* free descriptors, chained by hnext */
    int32_t free_data;           /* free data slots, chained through the
                                    first 4 bytes of each slot's data */
    uint32_t data_used;          /* slots ever handed out (high-water mark) */
    uint32_t data_cap;           /* slots the reserved chunks can hold */
    uint32_t resident;           /* descriptors holding data */
    uint32_t chunk_failed;       /* a reservation failed: data_cap is final */
    vt_lirs lirs;
    uint32_t err_next;           /* next error-ring entry to use */
    vt_shm_errmsg err_ring[VT_SHM_ERR_RING];

    /* meta_mu: */
    uint32_t meta_hand;          /* clock hand for replacing entries */
    uint32_t meta_count;

    vt_shm_counters ctr;         /* host-wide, relaxed atomics */
} vt_shm_hdr;

#define VT_SHM_LAYOUT                                                     \
    ((uint32_t)(sizeof(vt_shm_hdr) * 7 + sizeof(vt_shm_desc) * 5 +        \
                sizeof(vt_shm_meta) * 3 + sizeof(vt_shm_proc) +           \
                sizeof(vt_lirs_node) * 11 + sizeof(pthread_mutex_t)))

/* The segment's geometry, validated at attach and kept in the process: the
 * bounds every index read from the segment is checked against. */
typedef struct vt_shm_geom {
    uint32_t nprocs, ndesc, nbuckets, nslots, nmeta, nmeta_buckets;
    uint64_t block_size;
} vt_shm_geom;

#define VT_SHM_GIVEN_UP 16       /* fillers given up on, remembered */

/* The mapping as one process sees it. */
struct vt_shm {
    unsigned char *base;
    uint64_t size;
    vt_shm_hdr *hdr;
    vt_shm_proc *procs;
    vt_shm_desc *desc;
    vt_lirs_node *lirs;          /* one node per descriptor, same index */
    int32_t *buckets;
    vt_shm_meta *meta;
    int32_t *meta_buckets;
    int32_t *owner;              /* per data slot: its descriptor, or -1 */
    unsigned char *data;
    int fd;                      /* own open file description (OFD locks) */
    _Atomic int proc;            /* own process slot, -1 when not attached */
    uint32_t epoch;              /* own slot's epoch */
    int pid;                     /* the process that attached; 0: a fork
                                    child not attached yet; -1: never */
    pthread_mutex_t attach_mu;   /* process-local: one thread attaches */
    char path[256];
    char why[800];               /* how it was sized (debug output) */
    vt_shm_geom g;               /* the bounds (vt__shm_bind) */
    _Atomic int off;             /* 1: this process no longer uses it */
    _Atomic int off_said;        /* the reason was recorded and told */
    char off_why[300];           /* why it was turned off */
    void (*notice)(const char *why); /* told once, when it is turned off */
    _Atomic int inject;          /* VSITUNE_SHM_INJECT: lock to stop in */
    pthread_mutex_t gu_mu;       /* process-local: given_up */
    struct {
        uint32_t proc, epoch;
        uint64_t until_ms;       /* CLOCK_MONOTONIC */
    } given_up[VT_SHM_GIVEN_UP]; /* fillers whose wait timed out */
};

/* Where each region of a segment of nslots data slots lives (shmlayout.c). */
typedef struct vt_shm_layout {
    uint32_t nprocs, ndesc, nbuckets, nslots, nmeta, nmeta_buckets;
    uint64_t off_procs, off_desc, off_lirs, off_buckets, off_meta;
    uint64_t off_meta_buckets, off_owner, off_data, total;
} vt_shm_layout;

struct vt_shm_opts;

/* shmlayout.c: the most slots of bs bytes whose whole segment fits in
 * budget, into *l; 0, or -1 when fewer than 16 fit. */
int vt__shm_plan(vt_shm_layout *l, uint64_t budget, uint64_t bs);

/* shmlayout.c: stamp a new segment's header (not its magic, not its
 * locks) with l and the creator's options; name is the file's name. */
void vt__shm_fill_header(vt_shm_hdr *h, const vt_shm_layout *l,
                         const struct vt_shm_opts *o, const char *name);

/* shmlayout.c: the geometry the header at h states, each field read once,
 * if it is the layout this build makes for its slot count and block size
 * in a file of file_size bytes: 0 and *g, else -1 and why. */
int vt__shm_geom_of(const vt_shm_hdr *h, uint64_t file_size, vt_shm_geom *g,
                    char *why, size_t whylen);

/* Map the regions of s->base (s->size bytes) after checking the header's
 * counts and offsets against the layout they imply; fills s->g. 0, or -1
 * (why says what is wrong) when the header is not one this build made. */
int vt__shm_bind(struct vt_shm *s, char *why, size_t whylen);

/* shmlock.c: make *mu a robust process-shared mutex (segment creation);
 * 0, or -1 when the system has none. */
int vt__shm_mutex_init(pthread_mutex_t *mu);

/* shmproc.c: read-lock "attached" and take a process slot; 0, or -1 when
 * the name was removed under us (a last process leaving), no slot is free
 * or the attach lock was held too long (then the segment is off). */
int vt__shm_attach(struct vt_shm *s);

/* shmproc.c: give up this process's slot, then remove the name if nobody
 * else is attached. Keeps the mapping. */
void vt__shm_leave(struct vt_shm *s);

/* This process stops using the segment (a lock held too long, an
 * inconsistency found): every later call answers PRIVATE or does nothing.
 * The first call records why and tells s->notice once. Any thread. */
void vt__shm_off(struct vt_shm *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A process-local view of an index read from the segment: v when it is in
 * [0, n), else -1 (NIL), and the segment turned off when v is neither. */
int32_t vt__shm_index(struct vt_shm *s, int32_t v, uint32_t n,
                      const char *what);

/* Fillers (process slot + epoch) this process gave up waiting for: not
 * waited for again for a while (shmlock.c GIVEN_UP_MS); their blocks are
 * fetched by the reader itself. Process-local. */
void vt__shm_give_up(struct vt_shm *s, uint32_t proc, uint32_t epoch);
int vt__shm_given_up(struct vt_shm *s, uint32_t proc, uint32_t epoch);

/* One relaxed read of an index the segment holds (others may write it: it
 * is read once, checked, then used). */
#define VT_SHM_LD(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

#endif
