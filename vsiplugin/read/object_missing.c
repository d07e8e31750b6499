/* object_missing.c: the 404 memory's marks: whether this thread's last open
 * was answered from a remembered 404, and whether GDAL met a path's 404 by
 * reading an empty handle (object.h). The 404s themselves are table entries
 * (object.c keeps and expires them). Why apart: what GDAL's handler reports
 * about a missing file is a rule of its own. */
#include "read/object_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Whether this thread's last vt__object_open was a remembered 404. */
static _Thread_local int t_remembered;

int vt__object_open_remembered(void) { return t_remembered; }

void vt__object_set_remembered(int remembered) { t_remembered = remembered; }

/* The remembered 404 of path, marked or asked (mark: set the mark). */
static int by_read(const vt_backend *be, const char *path, int mark)
{
    char *id = vt__object_id(be, path);
    vt_object *o;
    int marked = 0;
    if (!id)
        return 0;
    pthread_mutex_lock(&vt__object_table_mu);
    for (o = vt__object_table[vt__object_hash(id)]; o; o = o->next)
        if (strcmp(o->id, id) == 0 && o->missing) {
            if (mark)
                o->missing_by_read = 1;
            marked |= o->missing_by_read;
        }
    pthread_mutex_unlock(&vt__object_table_mu);
    free(id);
    return marked;
}

void vt__object_missing_by_read(const vt_backend *be, const char *path)
{
    (void)by_read(be, path, 1);
}

int vt__object_missing_was_read(const vt_backend *be, const char *path)
{
    return by_read(be, path, 0);
}
