/* hdrsize.c: the first GET's size, learned per prefix (see hdrsize.h). Why
 * its own file: the learning table is state of its own with its own lock,
 * kept apart from the header load that asks it (object_header.c). */
#include "read/hdrsize.h"

#include <pthread.h>
#include <string.h>

#include "base/forksafe.h"
#include "base/hash.h"

#define HDRSIZE_SLOTS 256
#define HDRSIZE_SETS (HDRSIZE_SLOTS / VT_HDRSIZE_WAYS)

typedef struct slot {
    uint64_t id;                         /* the prefix's hash; 0: free */
    uint64_t need[VT_HDRSIZE_SAMPLES];   /* 0: no sample in this place */
    unsigned next;
    unsigned long used;                  /* tick of the last note or ask */
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static slot slots[HDRSIZE_SLOTS];
static unsigned long tick;

static void init_once(void) { vt__forksafe_register(&mu); }

uint64_t vt__hdrsize_round(uint64_t need, uint64_t max)
{
    uint64_t want;

    if (need >= max)
        return max; /* max is at most 64 MiB: no overflow below */
    want = (need + need / 8 + 1024 + 1023) / 1024 * 1024;
    return want < max ? want : max;
}

/* mu held. The slot of prefix id in its set, or NULL; with make, a slot
 * made for it: a free one, else the set's least recently used. A set of
 * ways, not one slot per hash: a directory and its family are two prefixes
 * noted together, and one must not evict the other. */
static slot *find(uint64_t id, int make)
{
    slot *set = &slots[(id % HDRSIZE_SETS) * VT_HDRSIZE_WAYS], *old = set;
    unsigned w;

    for (w = 0; w < VT_HDRSIZE_WAYS; w++) {
        if (set[w].id == id) {
            set[w].used = ++tick;
            return &set[w];
        }
        if (set[w].used < old->used)
            old = &set[w];
    }
    if (!make)
        return NULL;
    memset(old, 0, sizeof(*old)); /* a free slot has used 0: taken first */
    old->id = id;
    old->used = ++tick;
    return old;
}

/* The largest need of the prefix's samples; 0: it has none. */
static uint64_t largest(const char *prefix, size_t plen)
{
    uint64_t id = vt__fnv1a_id(prefix, plen), most = 0;
    slot *s;
    unsigned i;

    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    if ((s = find(id, 0)) != NULL)
        for (i = 0; i < VT_HDRSIZE_SAMPLES; i++)
            if (s->need[i] > most)
                most = s->need[i];
    pthread_mutex_unlock(&mu);
    return most;
}

uint64_t vt__hdrsize_get(const char *prefix, size_t plen, uint64_t max)
{
    uint64_t most = largest(prefix, plen);
    return most == 0 ? max : vt__hdrsize_round(most, max);
}

size_t vt__hdrsize_family(const char *id, char *out, size_t cap)
{
    const char *path = strchr(id, '\n'), *bucket_end, *last, *dir, *name;
    size_t head, nlen, dlen;
    char mark = '\001';

    path = path ? path + 1 : id;
    bucket_end = strchr(path, '/');
    last = strrchr(path, '/');
    if (!bucket_end || last == bucket_end)
        return 0; /* at the bucket's top: the directory is the family */
    name = last + 1;
    nlen = strlen(name);
    for (dir = last; dir[-1] != '/'; dir--)
        ; /* the directory's own name: dir[0..dlen) */
    dlen = (size_t)(last - dir);
    if (dlen > 0 && nlen > dlen && memcmp(name, dir, dlen) == 0) {
        name += dlen; /* the item's name leads its file's: the rest names the asset */
        nlen -= dlen;
        mark = '\002';
    }
    head = (size_t)(bucket_end + 1 - id);
    if (head + 1 + nlen > cap)
        return 0;
    memcpy(out, id, head);
    out[head] = mark;
    memcpy(out + head + 1, name, nlen);
    return head + 1 + nlen;
}

/* The directory of a table id: up to its last '/'. */
static size_t dir_len(const char *id)
{
    const char *slash = strrchr(id, '/');
    return slash ? (size_t)(slash - id) : strlen(id);
}

uint64_t vt__hdrsize_for(const char *id, uint64_t max)
{
    char fam[1024];
    uint64_t most = largest(id, dir_len(id));
    size_t flen;

    if (most == 0 && (flen = vt__hdrsize_family(id, fam, sizeof(fam))) > 0)
        most = largest(fam, flen);
    return most == 0 ? max : vt__hdrsize_round(most, max);
}

void vt__hdrsize_note_for(const char *id, uint64_t need)
{
    char fam[1024];
    size_t flen = vt__hdrsize_family(id, fam, sizeof(fam));

    vt__hdrsize_note(id, dir_len(id), need);
    if (flen > 0)
        vt__hdrsize_note(fam, flen, need);
}

void vt__hdrsize_note(const char *prefix, size_t plen, uint64_t need)
{
    uint64_t id = vt__fnv1a_id(prefix, plen);
    slot *s;

    if (need == 0)
        need = 1;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    s = find(id, 1);
    s->need[s->next] = need;
    s->next = (s->next + 1) % VT_HDRSIZE_SAMPLES;
    pthread_mutex_unlock(&mu);
}

void vt__hdrsize_reset(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    memset(slots, 0, sizeof(slots));
    tick = 0;
    pthread_mutex_unlock(&mu);
}
