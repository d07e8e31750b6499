/* near.c: how far an object's first GET reaches, learned per directory.
 *
 * Why (issue 22, bench scenario 15): a tile server's mosaic opens many COGs
 * of one directory and reads, right after each header, a block of a
 * low-resolution overview, which a COG keeps just past its header (its
 * smallest levels come first). With the header GET alone that is a second
 * round trip per object, one after the other: 2 x RTT per source of every
 * tile. When the objects of a directory opened last all went on to read data
 * ending within VSITUNE_FIRST_READ_MAX, the first GET of the next one asks
 * for those bytes too: one round trip per object.
 *
 * What is learned, per directory (the object's table id up to its last '/':
 * endpoint, bucket and key prefix), the end of the first read of each object
 * that went past VSITUNE_HEADER_SIZE, rounded up to a cache block; 0 for a
 * read that starts or ends past VSITUNE_FIRST_READ_MAX (far data: nothing to
 * gain by a bigger first GET). The last NEAR_KEEP of them are kept; the next
 * first GET asks for the largest (at least VSITUNE_HEADER_SIZE). So one far
 * object does not undo what NEAR_KEEP-1 near ones taught, and a directory
 * whose reads all went far asks VSITUNE_HEADER_SIZE again after NEAR_KEEP
 * objects. Only the bytes asked change: the answer goes through the same
 * first-answer judge and seeds the same cache blocks, and a read past them
 * fetches what is missing, as before.
 *
 * A directory nothing was noted in yet asks what its family learned: the
 * object's name in any directory of its bucket (hdrsize.h's
 * vt__hdrsize_family; a STAC catalog keeps each item in a directory of its
 * own, its assets named alike, so a mosaic's every source is in a directory
 * never seen). Each note teaches the directory and the family.
 *
 * Bounded: NEAR_DIRS directories and families, the least recently used replaced,
 * directories known by a 64-bit hash of their name (a collision only changes
 * the bytes asked). Own lock (a forksafe leaf), never held with another,
 * never across I/O. */
#include "read/near.h"

#include <pthread.h>
#include <string.h>

#include "base/forksafe.h"
#include "base/hash.h"
#include "read/hdrsize.h"

#define NEAR_DIRS 64
#define NEAR_KEEP 8

typedef struct near_dir {
    uint64_t hash;             /* 0: free */
    uint64_t ends[NEAR_KEEP];  /* learned ends, bytes; 0: far or none */
    unsigned next;             /* where the next end goes */
    unsigned long used;        /* tick of the last note or lookup */
} near_dir;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static near_dir dirs[NEAR_DIRS];
static unsigned long tick;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void reg_lock(void)
{
    vt__forksafe_register(&mu);
}

/* The hash of id's directory: id up to its last '/', all of it when it has
 * none. */
static uint64_t dir_hash(const char *id)
{
    const char *slash = strrchr(id, '/');
    return vt__fnv1a_id(id, slash ? (size_t)(slash - id) : strlen(id));
}

/* The hash of id's family (hdrsize.h); 0 when it has none. */
static uint64_t family_hash(const char *id)
{
    char fam[1024];
    size_t flen = vt__hdrsize_family(id, fam, sizeof(fam));

    return flen ? vt__fnv1a_id(fam, flen) : 0;
}

/* mu held. The directory of hash h, or NULL; with make, a slot made for it
 * (the least recently used one). */
static near_dir *find_dir(uint64_t h, int make)
{
    near_dir *old = &dirs[0];
    size_t i;

    for (i = 0; i < NEAR_DIRS; i++) {
        if (dirs[i].hash == h)
            return &dirs[i];
        if (dirs[i].used < old->used)
            old = &dirs[i];
    }
    if (!make)
        return NULL;
    memset(old, 0, sizeof(*old));
    old->hash = h;
    return old;
}

uint64_t vt__near_first_read(const char *id, uint64_t header, uint64_t max)
{
    uint64_t h, fh, want = header;
    near_dir *d;
    size_t i;

    if (!id || max <= header)
        return header;
    h = dir_hash(id);
    pthread_once(&reg_once, reg_lock);
    pthread_mutex_lock(&mu);
    d = find_dir(h, 0);
    if (!d && (fh = family_hash(id)) != 0) /* a directory never noted */
        d = find_dir(fh, 0);
    if (d) {
        d->used = ++tick;
        for (i = 0; i < NEAR_KEEP; i++)
            if (d->ends[i] > want)
                want = d->ends[i];
    }
    pthread_mutex_unlock(&mu);
    return want > max ? max : want;
}

/* mu held. One note of learned into the slot of hash h. */
static void note_into(uint64_t h, uint64_t learned)
{
    /* a far read of a directory never seen teaches nothing: no slot */
    near_dir *d = find_dir(h, learned != 0);

    if (d) {
        d->ends[d->next] = learned;
        d->next = (d->next + 1) % NEAR_KEEP;
        d->used = ++tick;
    }
}

void vt__near_note(const char *id, uint64_t start, uint64_t end,
                   uint64_t max, size_t bs)
{
    uint64_t h, fh, learned = 0;

    if (!id || bs == 0 || end <= start)
        return;
    if (start < max && end <= max) {
        learned = (end + bs - 1) / bs * bs;
        if (learned > max)
            learned = max;
    }
    h = dir_hash(id);
    fh = family_hash(id);
    pthread_once(&reg_once, reg_lock);
    pthread_mutex_lock(&mu);
    note_into(h, learned);
    if (fh)
        note_into(fh, learned);
    pthread_mutex_unlock(&mu);
}

int vt__near_once(int *flag)
{
    return __atomic_exchange_n(flag, 1, __ATOMIC_RELAXED) == 0;
}
