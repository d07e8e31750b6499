/* engine_origin.c: what the I/O thread remembers about the servers and
 * objects it talked to: which origins ("https://host:port") answer over
 * HTTP/2 (their transfers end at END_STREAM, see engine_io.c), and which
 * origins and objects recently ran out of retries (then other requests to
 * them get one attempt each instead of each running its own ladder). Two
 * small round-robin tables in struct vt_engine (engine_int.h).
 *
 * All on the I/O thread, no lock. */
#include "http/engine_int.h"

#include <string.h>

#include "base/hash.h"

/* The origin part of a URL ("https://host:port") into out; 0 if it does not
 * fit (then it is simply not remembered). */
static int origin_of(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    size_t n;

    if (!p)
        return 0;
    p += 3;
    n = (size_t)(p - url) + strcspn(p, "/?#");
    if (n >= cap)
        return 0;
    memcpy(out, url, n);
    out[n] = '\0';
    return 1;
}

struct vt_eng_origin *vt__eng_origin_find(struct vt_engine *e, const char *url)
{
    char name[sizeof(e->origins[0].name)];

    if (!origin_of(url, name, sizeof(name)))
        return NULL;
    for (size_t i = 0; i < sizeof(e->origins) / sizeof(e->origins[0]); i++)
        if (strcmp(e->origins[i].name, name) == 0)
            return &e->origins[i];
    return NULL;
}

/* The slot of url's origin, taking the round-robin slot for a new one. */
static struct vt_eng_origin *origin_add(struct vt_engine *e, const char *url)
{
    struct vt_eng_origin *o = vt__eng_origin_find(e, url);
    size_t n = sizeof(e->origins) / sizeof(e->origins[0]);

    if (o)
        return o;
    o = &e->origins[e->origin_next++ % n];
    memset(o, 0, sizeof(*o));
    if (!origin_of(url, o->name, sizeof(o->name)))
        return NULL;
    return o;
}

/* Remember whether url's origin answered over h2 (I/O thread). */
void vt__eng_origin_learn(struct vt_engine *e, const char *url, int h2)
{
    struct vt_eng_origin *o = h2 ? origin_add(e, url) : vt__eng_origin_find(e, url);

    if (o)
        o->h2 = h2;
}

/* The object a URL names: a hash of it up to its query. */
static uint64_t object_id(const char *url)
{
    return vt__fnv1a(url, strcspn(url, "?#"));
}

static struct vt_eng_failing *object_failing_slot(struct vt_engine *e,
                                                  uint64_t id)
{
    for (size_t i = 0; i < sizeof(e->failing) / sizeof(e->failing[0]); i++)
        if (e->failing[i].until > 0 && e->failing[i].id == id)
            return &e->failing[i];
    return NULL;
}

/* 1 while another request to url's origin, or to the object url names,
 * recently ran out of retries. The object is remembered apart: a success
 * elsewhere on the server (a listing) says nothing about it, and S3 throttles
 * by key prefix (503 SlowDown). */
int vt__eng_origin_failing(struct vt_engine *e, const char *url, double now)
{
    struct vt_eng_origin *o = vt__eng_origin_find(e, url);
    struct vt_eng_failing *f = object_failing_slot(e, object_id(url));

    return (o && o->failing_until > now) || (f && f->until > now);
}

/* Remember (until > 0) or forget (0) that url's server and object fail. */
void vt__eng_set_failing(struct vt_engine *e, const char *url, double until)
{
    uint64_t id = object_id(url);
    struct vt_eng_failing *f = object_failing_slot(e, id);
    struct vt_eng_origin *o =
        until > 0 ? origin_add(e, url) : vt__eng_origin_find(e, url);
    size_t n = sizeof(e->failing) / sizeof(e->failing[0]);

    if (o)
        o->failing_until = until;
    if (!f && until > 0)
        f = &e->failing[e->failing_next++ % n];
    if (f) {
        f->id = id;
        f->until = until;
    }
}
