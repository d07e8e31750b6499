/* shmseg.c: the shared segment's life (see shmseg.h; layout in shm_int.h).
 *
 * Creation: open(dir, O_TMPFILE), size, reserve the non-data part
 * (fallocate: a page of tmpfs that cannot be allocated later would be a
 * SIGBUS, not an error), map, initialise (robust process-shared mutexes,
 * free lists, LIRS), write the magic last, then linkat() it under its name.
 * linkat() never replaces or follows what is there (O_EXCL's rule), so
 * losing the race (EEXIST) means attaching to what won it, after checking
 * it: the name is opened O_PATH|O_NOFOLLOW (a symbolic link is not
 * followed, a FIFO not opened), its owner, type, links and mode are read
 * from that descriptor, and only a regular file of this uid with one name
 * is then opened read-write. Anything else under the name (another user's
 * file, planted before us: in sticky /dev/shm only its owner can remove it)
 * is never read, locked, mapped or removed; the caller warns. Data chunks
 * are reserved as the cache grows (vt__shm_reserve).
 *
 * Who is attached: every attached process read-locks byte 0 of the file and
 * write-locks byte 1+k for its process slot k, with OFD locks (owned by the
 * open file description, released by the kernel when the process dies, not
 * confused by pid reuse or pid namespaces). "Is slot k alive" is an
 * F_OFD_GETLK; "am I the last" is a non-blocking write lock on byte 0. */
#include "shm/shmseg.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_int.h"
#include "shm/shmcache.h"
#include "defaults.h" /* VT_DEFAULT_SHM_DIR, VT_DEFAULT_SHM_POOL */
#include "shmfit.h"
#include "shm/shmmeta.h"

#define MIB (1024.0 * 1024.0)
/* The longest any lock of the segment (the robust mutexes, the OFD lock of
 * attaching) is waited for: they guard microseconds of in-memory work, so
 * a holder past this is stopped (SIGSTOP, a debugger, a frozen cgroup) or
 * the segment is damaged, and this process goes on without it. */
#define LOCK_WAIT_MS 2000
/* How long a filler given up on (its wait timed out) is not waited for. */
#define GIVEN_UP_MS 60000

enum { INJ_NONE = 0, INJ_PROCS = 1, INJ_BLOCKS = 2, INJ_META = 3 };

/* ---- OFD locks ---- */

static int ofd(int fd, int cmd, short type, off_t byte)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    return fcntl(fd, cmd, &fl);
}

/* 1 when some other open file description holds a lock on byte. */
static int ofd_held(int fd, off_t byte)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return 1; /* cannot tell: assume alive (waits stay bounded) */
    return fl.l_type != F_UNLCK;
}

/* ---- layout ---- */

typedef struct layout {
    uint32_t nprocs, ndesc, nbuckets, nslots, nmeta, nmeta_buckets;
    uint64_t off_procs, off_desc, off_lirs, off_buckets, off_meta;
    uint64_t off_meta_buckets, off_owner, off_data, total;
} layout;

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
static void place(layout *l, uint32_t nslots, uint64_t bs)
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
static int plan(layout *l, uint64_t budget, uint64_t bs)
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
static int geom_of(const vt_shm_hdr *h, uint64_t file_size, vt_shm_geom *g,
                   char *why, size_t whylen)
{
    uint32_t nprocs = VT_SHM_LD(h->nprocs), ndesc = VT_SHM_LD(h->ndesc);
    uint32_t nbuckets = VT_SHM_LD(h->nbuckets), nslots = VT_SHM_LD(h->nslots);
    uint32_t nmeta = VT_SHM_LD(h->nmeta);
    uint32_t nmeta_buckets = VT_SHM_LD(h->nmeta_buckets);
    uint64_t bs = VT_SHM_LD(h->block_size), total = VT_SHM_LD(h->total_size);
    layout l;

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
    layout l;

    if (geom_of(h, s->size, &g, why, whylen) != 0)
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

/* ---- creation ---- */

static int init_mutex(pthread_mutex_t *mu)
{
    pthread_mutexattr_t a;
    int rc;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) |
         pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) |
         pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc ? -1 : 0;
}

static void fill_header(vt_shm_hdr *h, const layout *l, const vt_shm_opts *o,
                        const char *name)
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

/* Build a new segment and link it at path. Returns an fd (ours, linked),
 * -2 when another process linked one first, -1 on failure (why says). */
static int create(const char *dir, const char *path, const vt_shm_opts *o,
                  uint64_t size, char *why, size_t whylen)
{
    layout l;
    vt_shm s;
    char proc_path[64];
    int fd = -1, ret = -1, rc;
    void *base = MAP_FAILED;

    memset(&s, 0, sizeof s);
    if (plan(&l, size, o->block_size) != 0) {
        snprintf(why, whylen, "%.1f MiB holds too few %llu-byte blocks",
                 size / MIB, (unsigned long long)o->block_size);
        return -1;
    }
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, whylen, "cannot create in %s: %s", dir, strerror(errno));
        return -1;
    }
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)l.total) != 0) {
        snprintf(why, whylen, "cannot size a %.1f MiB segment in %s: %s",
                 l.total / MIB, dir, strerror(errno));
        goto out;
    }
    rc = posix_fallocate(fd, 0, (off_t)l.off_data);
    if (rc != 0) {
        snprintf(why, whylen, "cannot reserve %.1f MiB in %s: %s",
                 l.off_data / MIB, dir, strerror(rc));
        goto out;
    }
    base = mmap(NULL, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(why, whylen, "mmap: %s", strerror(errno));
        goto out;
    }
    s.base = base;
    s.size = l.total;
    fill_header((vt_shm_hdr *)base, &l, o, strrchr(path, '/') + 1);
    if (vt__shm_bind(&s, why, whylen) != 0)
        goto out; /* never: the header is ours */
    if (init_mutex(&s.hdr->procs_mu) || init_mutex(&s.hdr->blocks_mu) ||
        init_mutex(&s.hdr->meta_mu)) {
        snprintf(why, whylen, "robust process-shared mutexes unavailable");
        goto out;
    }
    vt__shmcache_init(&s);
    vt__shmmeta_init(&s);
    atomic_store_explicit(&s.hdr->magic, VT_SHM_MAGIC, memory_order_release);
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc_path, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0) {
        if (errno == EEXIST) {
            ret = -2;
            goto out;
        }
        snprintf(why, whylen, "cannot name the segment %.100s: %s", path,
                 strerror(errno));
        goto out;
    }
    ret = fd;
    fd = -1;
out:
    if (base != MAP_FAILED)
        munmap(base, l.total);
    if (fd >= 0)
        close(fd);
    return ret;
}

/* ---- attaching ---- */

/* What check() found under the name (SEG_ERROR: could not look). */
enum { SEG_OURS = 0, SEG_REPLACEABLE = -1, SEG_FOREIGN = -2, SEG_ERROR = -3 };

static const char *kind_of(mode_t m)
{
    return S_ISREG(m)    ? "a regular file"
           : S_ISLNK(m)  ? "a symbolic link"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISSOCK(m) ? "a socket"
                         : "a device";
}

/* Whether the thing at fd (opened O_PATH: nothing was opened for I/O) is a
 * segment of ours this build can use (SEG_OURS), a file of ours that is not
 * one (SEG_REPLACEABLE: removed when nobody uses it), or anything else
 * (SEG_FOREIGN: a symbolic link, FIFO, directory, another user's file, a
 * file with other names: never read, locked, mapped or removed). why says
 * what is wrong. The checks are on what was opened (fstat), never on the
 * name, so nothing can be swapped in between. */
static int check(int fd, struct stat *st, char *why, size_t whylen)
{
    if (fstat(fd, st) != 0) {
        snprintf(why, whylen, "fstat: %s", strerror(errno));
        return SEG_ERROR;
    }
    if (st->st_uid != geteuid() || !S_ISREG(st->st_mode)) {
        snprintf(why, whylen, "%s owned by uid %u", kind_of(st->st_mode),
                 (unsigned)st->st_uid);
        return SEG_FOREIGN;
    }
    if (st->st_nlink != 1) {
        snprintf(why, whylen, "a file of uid %u with %u names",
                 (unsigned)st->st_uid, (unsigned)st->st_nlink);
        return SEG_FOREIGN; /* a segment has one name: a planted hard link */
    }
    if ((st->st_mode & 07777) != 0600) {
        snprintf(why, whylen, "mode %o, not 600", (unsigned)(st->st_mode & 07777));
        return SEG_REPLACEABLE;
    }
    return SEG_OURS;
}

/* The layout of the segment open at fd (ours by check()): SEG_OURS when this
 * build can use it, else SEG_REPLACEABLE. */
static int check_layout(int fd, const struct stat *st, char *why, size_t whylen)
{
    vt_shm_hdr *h;
    int ok;

    if ((uint64_t)st->st_size < sizeof(vt_shm_hdr)) {
        snprintf(why, whylen, "too short (%lld bytes)", (long long)st->st_size);
        return SEG_REPLACEABLE;
    }
    h = mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        snprintf(why, whylen, "mmap: %s", strerror(errno));
        return SEG_REPLACEABLE;
    }
    ok = atomic_load_explicit(&h->magic, memory_order_acquire) == VT_SHM_MAGIC &&
         h->version == VT_SHM_VERSION && h->layout == VT_SHM_LAYOUT &&
         h->total_size == (uint64_t)st->st_size && h->nprocs == VT_SHM_MAX_PROCS;
    if (!ok) {
        snprintf(why, whylen, "another layout (version %u, layout %u; ours %u, %u)",
                 h->version, h->layout, VT_SHM_VERSION, VT_SHM_LAYOUT);
    } else {
        vt_shm_geom g;
        ok = geom_of(h, (uint64_t)st->st_size, &g, why, whylen) == 0;
    }
    munmap(h, sizeof *h);
    return ok ? SEG_OURS : SEG_REPLACEABLE;
}

/* Open what is under path without following a symbolic link or opening
 * anything for I/O (O_PATH: a FIFO is not opened, so nothing can block),
 * check it, and only then open that same inode read-write (through
 * /proc/self/fd, which names the inode, not the path). Returns an fd with
 * *rc SEG_OURS or SEG_REPLACEABLE; else -1 with *rc SEG_OURS and errno
 * ENOENT (nothing there: create it), or *rc SEG_FOREIGN or SEG_ERROR and
 * why saying what was found. */
static int open_checked(const char *path, struct stat *st, int *rc, char *why,
                        size_t whylen)
{
    char proc_path[64];
    int pfd, fd = -1, e;

    *rc = SEG_OURS;
    pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        e = errno;
        snprintf(why, whylen, "%.100s: %s", path, strerror(e));
        *rc = e == ENOENT ? SEG_OURS : SEG_ERROR;
        errno = e;
        return -1;
    }
    *rc = check(pfd, st, why, whylen);
    if (*rc == SEG_FOREIGN || *rc == SEG_ERROR)
        goto out;
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", pfd);
    fd = open(proc_path, O_RDWR | O_NOCTTY | O_CLOEXEC); /* the inode checked */
    if (fd < 0) {
        snprintf(why, whylen, "%s: %s", proc_path, strerror(errno));
        *rc = SEG_ERROR;
        goto out;
    }
    if (*rc == SEG_OURS)
        *rc = check_layout(fd, st, why, whylen);
out:
    close(pfd);
    errno = 0;
    return fd;
}

/* The file at path is unusable: remove it if nobody is attached to it. */
static int replace_if_unused(const char *path, int fd, const struct stat *st)
{
    struct stat now;
    if (ofd(fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_ATTACHED) != 0)
        return -1; /* a live process uses it */
    if (stat(path, &now) == 0 && now.st_ino == st->st_ino &&
        now.st_dev == st->st_dev)
        unlink(path);
    return 0;
}

/* Take a free process slot (OFD lock first, then LIVE, under procs_mu). */
static int take_slot(vt_shm *s)
{
    uint32_t k;
    int got = -1;

    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) != 0)
        return -1;
    for (k = 0; k < s->g.nprocs && got < 0; k++) {
        vt_shm_proc *p = &s->procs[k];
        if (atomic_load(&p->state) == VT_SHM_PROC_LIVE) {
            if (ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + k))
                continue;
            atomic_store(&p->state, VT_SHM_PROC_FREE); /* its holder died */
            atomic_fetch_add(&p->epoch, 1);
            atomic_fetch_add_explicit(&s->hdr->ctr.reaped, 1, memory_order_relaxed);
        }
        if (ofd(s->fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_PROC_BASE + k) != 0)
            continue;
        s->epoch = atomic_fetch_add(&p->epoch, 1) + 1;
        p->pid = (int32_t)getpid();
        p->attached_at = (int64_t)time(NULL);
        atomic_store(&p->state, VT_SHM_PROC_LIVE);
        got = (int)k;
    }
    vt__shm_unlock(&s->hdr->procs_mu);
    return got;
}

/* Read-lock "attached" and take a slot; -1 when the name was removed under
 * us (a last process leaving) or no slot is free. */
static int attach(vt_shm *s)
{
    struct stat st;
    int k, waited = 0;
    /* Never F_OFD_SETLKW: a process stopped while it holds the write lock
     * (leaving last, or the watcher removing the name) would hang us. */
    while (ofd(s->fd, F_OFD_SETLK, F_RDLCK, VT_SHM_LOCK_ATTACHED) != 0) {
        if ((errno != EAGAIN && errno != EACCES) || waited >= LOCK_WAIT_MS) {
            vt__shm_off(s, "the segment's attach lock was held for more "
                        "than %d ms", LOCK_WAIT_MS);
            return -1;
        }
        usleep(10000);
        waited += 10;
    }
    if (fstat(s->fd, &st) != 0 || st.st_nlink == 0)
        return -1;
    k = take_slot(s);
    if (k < 0)
        return -1;
    s->pid = (int)getpid();
    atomic_store(&s->proc, k);
    return 0;
}

static vt_shm *map_segment(int fd, const char *path)
{
    struct stat st;
    vt_shm *s = calloc(1, sizeof *s);
    const char *inj = getenv("VSITUNE_SHM_INJECT");
    char why[200];
    void *base;
    if (!s || fstat(fd, &st) != 0)
        goto fail;
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                fd, 0);
    if (base == MAP_FAILED)
        goto fail;
    s->base = base;
    s->size = (uint64_t)st.st_size;
    if (vt__shm_bind(s, why, sizeof why) != 0) { /* changed since check() */
        munmap(base, s->size);
        goto fail;
    }
    s->fd = fd;
    atomic_store(&s->proc, -1);
    pthread_mutex_init(&s->attach_mu, NULL);
    pthread_mutex_init(&s->gu_mu, NULL);
    snprintf(s->path, sizeof s->path, "%s", path);
    /* Failure injection for the tests (debug only, docs/reliability.md):
     * stop this process (SIGSTOP) the first time it holds that lock. */
    if (inj)
        atomic_store(&s->inject, strcmp(inj, "stop-procs") == 0    ? INJ_PROCS
                                 : strcmp(inj, "stop-blocks") == 0 ? INJ_BLOCKS
                                 : strcmp(inj, "stop-meta") == 0   ? INJ_META
                                                                   : INJ_NONE);
    return s;
fail:
    free(s);
    return NULL;
}

/* Start vsitune-shmwatch (from the plugin's own directory) unless the
 * segment has a watcher already: it removes the name once no process is
 * attached, even when the last ones leave by _exit() or SIGKILL. Without
 * the helper (unit tests, a partial install) the name stays until the next
 * process of this user and pool reuses it. */
static void start_watcher(vt_shm *s)
{
    Dl_info info;
    char helper[4096], dev[32], ino[32];
    const char *slash;
    char *argv[5];
    char *envp[1] = {NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    struct stat st;
    pid_t pid;

    if (ofd_held(s->fd, VT_SHM_LOCK_WATCHER) || fstat(s->fd, &st) != 0)
        return;
    if (!dladdr((void *)start_watcher, &info) || !info.dli_fname ||
        !(slash = strrchr(info.dli_fname, '/')))
        return;
    if ((size_t)snprintf(helper, sizeof helper, "%.*s/vsitune-shmwatch",
                         (int)(slash - info.dli_fname), info.dli_fname) >=
            sizeof helper ||
        access(helper, X_OK) != 0)
        return;
    snprintf(dev, sizeof dev, "%llu", (unsigned long long)st.st_dev);
    snprintf(ino, sizeof ino, "%llu", (unsigned long long)st.st_ino);
    argv[0] = helper;
    argv[1] = s->path;
    argv[2] = dev;
    argv[3] = ino;
    argv[4] = NULL;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return;
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    if (posix_spawn(&pid, helper, &fa, &at, argv, envp) == 0)
        waitpid(pid, NULL, 0); /* it forks and returns at once */
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
}

static int valid_pool(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 32)
        return 0;
    return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == n && p[0] != '.';
}

/* Failure injection for the tests (debug only, docs/reliability.md):
 * VSITUNE_SHM_INJECT=hold-create:FILE makes vt__shm_open create FILE.held
 * and then wait while FILE exists (at most 60 s), so that a test can hold a
 * process in the segment's creation and see what else waits for it. */
static void inject_hold(void)
{
    const char *inj = getenv("VSITUNE_SHM_INJECT");
    const char *file;
    char held[4200];
    int fd, ms;

    if (!inj || strncmp(inj, "hold-create:", 12) != 0 || !inj[12])
        return;
    file = inj + 12;
    if ((size_t)snprintf(held, sizeof held, "%s.held", file) >= sizeof held)
        return;
    fd = open(held, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    for (ms = 0; ms < 60000 && access(file, F_OK) == 0; ms += 10)
        usleep(10000);
}

vt_shm *vt__shm_open(const vt_shm_opts *o, char *why, size_t whylen)
{
    const char *dir = o->dir && *o->dir ? o->dir : VT_DEFAULT_SHM_DIR;
    const char *pool = o->pool && *o->pool ? o->pool : VT_DEFAULT_SHM_POOL;
    char path[256], bad[160];
    struct statvfs vfs;
    uint64_t size = 0;
    int attempt, rc;

    why[0] = '\0';
    inject_hold();
    if (!valid_pool(pool)) {
        snprintf(why, whylen, "pool name '%s' is not [A-Za-z0-9_.-]{1,32}", pool);
        return NULL;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/vsitune-%u-%s", dir,
                         (unsigned)geteuid(), pool) >= sizeof path) {
        snprintf(why, whylen, "directory name too long");
        return NULL;
    }
    for (attempt = 0; attempt < 4; attempt++) {
        struct stat st;
        vt_shm *s;
        int fd = open_checked(path, &st, &rc, bad, sizeof bad);

        if (fd < 0 && rc == SEG_OURS && errno == ENOENT) {
            if (size == 0) {
                if (statvfs(dir, &vfs) != 0) {
                    snprintf(why, whylen, "%s: %s", dir, strerror(errno));
                    return NULL;
                }
                size = vt__shm_fit(o->budget,
                                   (uint64_t)vfs.f_blocks * vfs.f_frsize,
                                   (uint64_t)vfs.f_bavail * vfs.f_frsize,
                                   o->block_size, dir, why, whylen);
                if (size == 0)
                    return NULL;
            }
            fd = create(dir, path, o, size, bad, sizeof bad);
            if (fd == -2)
                continue; /* another process created it first: attach */
            if (fd < 0) {
                snprintf(why, whylen, "%s", bad);
                return NULL;
            }
        } else if (rc == SEG_FOREIGN) {
            /* Planted, or another user's: never touched. In a sticky
             * directory (/dev/shm) only its owner can remove it. */
            if (fd >= 0)
                close(fd);
            if (o->refused)
                *o->refused = 1;
            snprintf(why, whylen, "%s is %s, not a segment of uid %u", path,
                     bad, (unsigned)geteuid());
            return NULL;
        } else if (rc == SEG_ERROR) {
            snprintf(why, whylen, "%s", bad);
            return NULL;
        } else if (rc == SEG_REPLACEABLE) {
            if (replace_if_unused(path, fd, &st) == 0) {
                close(fd);
                continue; /* removed: create a fresh one */
            }
            close(fd);
            snprintf(why, whylen, "%s is %s and in use: not shared", path, bad);
            return NULL;
        } else {
            snprintf(bad, sizeof bad, "attached");
        }
        s = map_segment(fd, path);
        if (!s) {
            close(fd);
            snprintf(why, whylen, "cannot map %s", path);
            return NULL;
        }
        if (attach(s) != 0) {
            int off = atomic_load(&s->off);
            munmap(s->base, s->size);
            close(fd);
            pthread_mutex_destroy(&s->attach_mu);
            pthread_mutex_destroy(&s->gu_mu);
            if (off) {
                snprintf(why, whylen, "%s", s->off_why);
                free(s);
                return NULL; /* a lock held too long: not shared */
            }
            free(s);
            continue; /* removed while we attached: start over */
        }
        {
            char head[400];
            snprintf(head, sizeof head, "%s", why);
            snprintf(s->why, sizeof s->why,
                     "%s %s: %.1f MiB, %u blocks of %llu KiB%s%s",
                     strcmp(bad, "attached") == 0 ? "attached to" : "created",
                     path, s->size / MIB, s->g.nslots,
                     (unsigned long long)(s->g.block_size >> 10),
                     head[0] ? "; " : "", head);
        }
        snprintf(why, whylen, "%s", s->why);
        s->notice = o->notice;
        start_watcher(s);
        return s;
    }
    snprintf(why, whylen, "%s kept changing while attaching", path);
    return NULL;
}

/* ---- detaching, fork ---- */

/* Free our slot; then remove the name if nobody else is attached. */
static void leave(vt_shm *s)
{
    int k = atomic_load(&s->proc);
    struct stat mine, now;

    if (k < 0 || s->pid != (int)getpid())
        return;
    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) == 0) {
        atomic_store(&s->procs[k].state, VT_SHM_PROC_FREE);
        atomic_fetch_add(&s->procs[k].epoch, 1);
        vt__shm_unlock(&s->hdr->procs_mu);
    }
    ofd(s->fd, F_OFD_SETLK, F_UNLCK, VT_SHM_LOCK_PROC_BASE + k);
    atomic_store(&s->proc, -1);
    if (ofd(s->fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_ATTACHED) == 0) {
        if (fstat(s->fd, &mine) == 0 && stat(s->path, &now) == 0 &&
            mine.st_ino == now.st_ino && mine.st_dev == now.st_dev)
            unlink(s->path);
    }
    ofd(s->fd, F_OFD_SETLK, F_UNLCK, VT_SHM_LOCK_ATTACHED);
}

void vt__shm_exit(vt_shm *s)
{
    if (s)
        leave(s);
}

void vt__shm_close(vt_shm *s)
{
    if (!s)
        return;
    leave(s);
    munmap(s->base, s->size);
    close(s->fd);
    pthread_mutex_destroy(&s->attach_mu);
    pthread_mutex_destroy(&s->gu_mu);
    free(s);
}

/* Only async-signal-safe calls: this runs in the child of a fork() that
 * other threads may have been in the middle of anything. */
void vt__shm_fork_child(vt_shm *s)
{
    char p[64];
    int nfd, n;

    if (!s)
        return;
    atomic_store(&s->proc, -1);
    n = snprintf(p, sizeof p, "/proc/self/fd/%d", s->fd);
    nfd = n > 0 ? open(p, O_RDWR | O_CLOEXEC) : -1;
    if (nfd >= 0 && dup3(nfd, s->fd, O_CLOEXEC) >= 0) {
        /* The parent's description is dropped; keep the name alive for
         * this child until it attaches (a parent leaving now sees us). */
        ofd(s->fd, F_OFD_SETLK, F_RDLCK, VT_SHM_LOCK_ATTACHED);
        s->pid = 0;                  /* attach lazily */
    } else {
        s->pid = -1;                 /* cannot: never attach in this child */
    }
    if (nfd >= 0)
        close(nfd);
    pthread_mutex_init(&s->attach_mu, NULL); /* no other thread here */
    pthread_mutex_init(&s->gu_mu, NULL);
}

int vt__shm_attached(vt_shm *s, uint32_t *epoch)
{
    int k = atomic_load(&s->proc);
    if (atomic_load_explicit(&s->off, memory_order_relaxed)) {
        *epoch = 0;
        return -1;
    }
    if (k >= 0) {
        *epoch = s->epoch;
        return k;
    }
    pthread_mutex_lock(&s->attach_mu);
    k = atomic_load(&s->proc);
    if (k < 0 && s->pid == 0) {
        if (attach(s) != 0)
            s->pid = -1;
        k = atomic_load(&s->proc);
    }
    *epoch = s->epoch;
    pthread_mutex_unlock(&s->attach_mu);
    return k;
}

int vt__shm_proc_alive(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    vt_shm_proc *p;
    int alive = 1;

    if (proc >= s->g.nprocs)
        return 0;
    p = &s->procs[proc];
    if (atomic_load(&p->epoch) != epoch ||
        atomic_load(&p->state) != VT_SHM_PROC_LIVE)
        return 0;
    if ((int)proc == atomic_load(&s->proc))
        return 1;
    if (ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + proc))
        return 1;
    if (vt__shm_lock(s, &s->hdr->procs_mu, NULL) != 0)
        return 1;
    if (atomic_load(&p->epoch) == epoch &&
        atomic_load(&p->state) == VT_SHM_PROC_LIVE &&
        !ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + proc)) {
        atomic_store(&p->state, VT_SHM_PROC_FREE);
        atomic_fetch_add(&p->epoch, 1);
        atomic_fetch_add_explicit(&s->hdr->ctr.reaped, 1, memory_order_relaxed);
        alive = 0;
    } else {
        alive = atomic_load(&p->epoch) == epoch;
    }
    vt__shm_unlock(&s->hdr->procs_mu);
    return alive;
}

/* ---- locks and waits ---- */

static pthread_mutex_t *injected_lock(vt_shm *s, int which)
{
    return which == INJ_PROCS    ? &s->hdr->procs_mu
           : which == INJ_BLOCKS ? &s->hdr->blocks_mu
           : which == INJ_META   ? &s->hdr->meta_mu
                                 : NULL;
}

/* Uncontended: one trylock, no clock read and no system call. Contended:
 * a wait bounded by LOCK_WAIT_MS, after which the segment is off for this
 * process (a holder that long is stopped, not working). A dead holder is
 * EOWNERDEAD at once, whichever call meets it. */
int vt__shm_lock(vt_shm *s, pthread_mutex_t *mu, void (*repair)(vt_shm *))
{
    int rc;

    if (atomic_load_explicit(&s->off, memory_order_relaxed))
        return ECANCELED;
    rc = pthread_mutex_trylock(mu);
    if (rc == EBUSY) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += LOCK_WAIT_MS / 1000;
        t.tv_nsec += (LOCK_WAIT_MS % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        rc = pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &t);
        if (rc == ETIMEDOUT) {
            vt__shm_off(s, "a lock of the segment was held for more than "
                        "%d ms (a stopped process?)", LOCK_WAIT_MS);
            return rc;
        }
    }
    if (rc == EOWNERDEAD) {
        /* Its owner died inside: rebuild what it guards, then carry on. A
         * death inside repair leaves EOWNERDEAD again for the next one. */
        if (repair)
            repair(s);
        atomic_fetch_add_explicit(&s->hdr->ctr.repairs, 1, memory_order_relaxed);
        pthread_mutex_consistent(mu);
        rc = 0;
    }
    if (rc == 0 && atomic_load_explicit(&s->inject, memory_order_relaxed) &&
        mu == injected_lock(s, atomic_load(&s->inject)) &&
        atomic_exchange(&s->inject, INJ_NONE) != INJ_NONE)
        raise(SIGSTOP); /* VSITUNE_SHM_INJECT: stopped holding mu */
    if (rc == 0 && atomic_load_explicit(&s->off, memory_order_relaxed)) {
        pthread_mutex_unlock(mu); /* turned off while we waited */
        rc = ECANCELED;
    }
    return rc;
}

void vt__shm_off(vt_shm *s, const char *fmt, ...)
{
    va_list ap;
    atomic_store(&s->off, 1);
    if (atomic_exchange(&s->off_said, 1) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(s->off_why, sizeof s->off_why, fmt, ap);
    va_end(ap);
    if (s->notice)
        s->notice(s->off_why);
}

int32_t vt__shm_index(vt_shm *s, int32_t v, uint32_t n, const char *what)
{
    if (v >= 0 && (uint32_t)v < n)
        return v;
    if (v != -1)
        vt__shm_off(s, "the segment is damaged: %s %d out of range [0, %u)",
                    what, (int)v, n);
    return -1;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void vt__shm_give_up(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    uint64_t now = mono_ms();
    int k, use = 0;
    pthread_mutex_lock(&s->gu_mu);
    for (k = 0; k < VT_SHM_GIVEN_UP; k++) {
        if (s->given_up[k].proc == proc && s->given_up[k].epoch == epoch) {
            use = k;
            break;
        }
        if (s->given_up[k].until_ms < s->given_up[use].until_ms)
            use = k; /* the oldest (or an empty one) makes room */
    }
    s->given_up[use].proc = proc;
    s->given_up[use].epoch = epoch;
    s->given_up[use].until_ms = now + GIVEN_UP_MS;
    pthread_mutex_unlock(&s->gu_mu);
}

int vt__shm_given_up(vt_shm *s, uint32_t proc, uint32_t epoch)
{
    uint64_t now = mono_ms();
    int k, found = 0;
    pthread_mutex_lock(&s->gu_mu);
    for (k = 0; k < VT_SHM_GIVEN_UP && !found; k++)
        found = s->given_up[k].proc == proc && s->given_up[k].epoch == epoch &&
                s->given_up[k].until_ms > now;
    pthread_mutex_unlock(&s->gu_mu);
    return found;
}

void vt__shm_unlock(pthread_mutex_t *mu)
{
    pthread_mutex_unlock(mu);
}

void vt__shm_wait(_Atomic uint32_t *w, uint32_t val, long timeout_ms)
{
    struct timespec ts;
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (timeout_ms % 1000) * 1000000L;
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, &ts, NULL, 0);
}

void vt__shm_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

uint64_t vt__shm_block_size(const vt_shm *s)
{
    return s->g.block_size;
}

int vt__shm_usable(const vt_shm *s)
{
    return s && !atomic_load_explicit(&s->off, memory_order_relaxed);
}

int vt__shm_reserve(vt_shm *s, uint64_t off, uint64_t len)
{
    uint64_t off_data = (uint64_t)(s->data - s->base);
    return posix_fallocate(s->fd, (off_t)(off_data + off), (off_t)len) == 0
               ? 0
               : -1;
}

void vt__shm_info(vt_shm *s, vt_shm_info *out)
{
    vt_shm_hdr *h = s->hdr;
    vt_shm_counters *c = &h->ctr;
    uint32_t k, n = 0;

    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", s->path);
    out->size = s->size;
    out->budget_asked = h->budget_asked;
    out->block_size = s->g.block_size;
    out->slots = s->g.nslots;
    out->data_bytes = (uint64_t)s->g.nslots * s->g.block_size;
    out->resident = h->resident;
    out->used_bytes = (uint64_t)h->resident * s->g.block_size;
    out->reserved_bytes = (uint64_t)(s->data - s->base) +
                          (uint64_t)h->data_cap * s->g.block_size;
    out->objects = h->meta_count;
    out->created_at = h->created_at;
    out->creator_pid = h->creator_pid;
    for (k = 0; k < s->g.nprocs; k++)
        if (atomic_load(&s->procs[k].state) == VT_SHM_PROC_LIVE &&
            ((int)k == atomic_load(&s->proc) ||
             ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + k)))
            n++;
    out->procs_attached = n;
#define LD(x) atomic_load_explicit(&c->x, memory_order_relaxed)
    out->hits = LD(hits);
    out->misses = LD(misses);
    out->waits = LD(waits);
    out->wait_timeouts = LD(wait_timeouts);
    out->fills = LD(fills);
    out->fails = LD(fails);
    out->evictions = LD(evictions);
    out->takeovers = LD(takeovers);
    out->repairs = LD(repairs);
    out->meta_hits = LD(meta_hits);
    out->meta_misses = LD(meta_misses);
    out->meta_waits = LD(meta_waits);
    out->reaped = LD(reaped);
#undef LD
}
