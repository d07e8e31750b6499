/* shmseg.c: the shared segment's life (see shmseg.h; layout in shm_int.h):
 * creation, the checks before attaching, opening, detaching, the watcher.
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
 * Who is attached (the process table and its OFD locks): shmproc.c. The
 * top of the segment's files: it calls the layout (shmlayout.c), the locks
 * (shmlock.c), the process table (shmproc.c) and each part's
 * initialisation (shmblocks.c, shmmeta.c), and none of them calls it. */
#include "shm/shmseg.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/shm_int.h"
#include "shm/shmcache.h"
#include "defaults.h" /* VT_DEFAULT_SHM_DIR, VT_DEFAULT_SHM_POOL */
#include "shmfit.h"
#include "shm/shmmeta.h"

#define MIB (1024.0 * 1024.0)

/* ---- creation ---- */

/* Build a new segment and link it at path. Returns an fd (ours, linked),
 * -2 when another process linked one first, -1 on failure (why says). */
static int create(const char *dir, const char *path, const vt_shm_opts *o,
                  uint64_t size, char *why, size_t whylen)
{
    vt_shm_layout l;
    vt_shm s;
    char proc_path[64];
    int fd = -1, ret = -1, rc;
    void *base = MAP_FAILED;

    memset(&s, 0, sizeof s);
    if (vt__shm_plan(&l, size, o->block_size) != 0) {
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
    vt__shm_fill_header((vt_shm_hdr *)base, &l, o, strrchr(path, '/') + 1);
    if (vt__shm_bind(&s, why, whylen) != 0)
        goto out; /* never: the header is ours */
    if (vt__shm_mutex_init(&s.hdr->procs_mu) ||
        vt__shm_mutex_init(&s.hdr->blocks_mu) ||
        vt__shm_mutex_init(&s.hdr->meta_mu)) {
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
        ok = vt__shm_geom_of(h, (uint64_t)st->st_size, &g, why, whylen) == 0;
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
    if (vt__shm_ofd(fd, F_OFD_SETLK, F_WRLCK, VT_SHM_LOCK_ATTACHED) != 0)
        return -1; /* a live process uses it */
    if (stat(path, &now) == 0 && now.st_ino == st->st_ino &&
        now.st_dev == st->st_dev)
        unlink(path);
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
        atomic_store(&s->inject,
                     strcmp(inj, "stop-procs") == 0    ? VT_SHM_INJ_PROCS
                     : strcmp(inj, "stop-blocks") == 0 ? VT_SHM_INJ_BLOCKS
                     : strcmp(inj, "stop-meta") == 0   ? VT_SHM_INJ_META
                                                       : VT_SHM_INJ_NONE);
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

    if (vt__shm_ofd_held(s->fd, VT_SHM_LOCK_WATCHER) || fstat(s->fd, &st) != 0)
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
        if (vt__shm_attach(s) != 0) {
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

void vt__shm_exit(vt_shm *s)
{
    if (s)
        vt__shm_leave(s);
}

void vt__shm_close(vt_shm *s)
{
    if (!s)
        return;
    vt__shm_leave(s);
    munmap(s->base, s->size);
    close(s->fd);
    pthread_mutex_destroy(&s->attach_mu);
    pthread_mutex_destroy(&s->gu_mu);
    free(s);
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
             vt__shm_ofd_held(s->fd, VT_SHM_LOCK_PROC_BASE + k)))
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

