/* forksafe.c: fork() handlers for registered leaf mutexes (forksafe.h).
 *
 * Used by the credentials cache and the region tables (creds*.c, s3.c):
 * rasterio users fork worker processes while other threads read. */
#include "base/forksafe.h"

#define FORKSAFE_CAP 16

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *table[FORKSAFE_CAP];
static int count;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Before fork(), in the forking thread: table_lock, then every mutex in
 * registration order (none is ever held while another is taken). */
static void prepare(void)
{
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < count; i++)
        pthread_mutex_lock(table[i]);
}

/* After fork(), in the parent and in the child's only thread. */
static void release(void)
{
    for (int i = count - 1; i >= 0; i--)
        pthread_mutex_unlock(table[i]);
    pthread_mutex_unlock(&table_lock);
}

static void install(void)
{
    pthread_atfork(prepare, release, release);
}

int vt__forksafe_register(pthread_mutex_t *m)
{
    int rc = 0, i;
    pthread_once(&once, install);
    pthread_mutex_lock(&table_lock);
    for (i = 0; i < count && table[i] != m; i++)
        ;
    if (i == count) {
        if (count < FORKSAFE_CAP)
            table[count++] = m;
        else
            rc = -1;
    }
    pthread_mutex_unlock(&table_lock);
    return rc;
}
