/* vt_shmread.c: read one object through vsitune's object layer (object.h:
 * the object table, the cache, the shared segment when the options turn it
 * on, the engine) and check every byte against a local copy, for the
 * multi-process tests of the shared cache (tests/integration/
 * test_shared_cache.py): many of these run at once and are SIGKILLed at
 * random moments, so this starts fast (no Python, no GDAL drivers).
 *
 * usage: vt_shmread PATH LOCAL [-n READS] [-s SEED] [-l MAXLEN] [-t THREADS]
 *   PATH   "bucket/key"; options come from the environment (AWS_*, VSITUNE_*)
 *   -n     reads per thread (0: until killed); each opens the object anew
 * Prints "read N" every 10 reads and a final JSON line with the cache
 * counters. Exit: 0 every byte right, 3 a wrong byte, 1 a failed read. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "read/object.h"

static const char *path;
static unsigned char *local;
static size_t local_len;
static long reads = 20, maxlen = 300000;
static unsigned seed = 1;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void *run(void *arg)
{
    uint64_t rnd = seed * 7919ULL + (uint64_t)(uintptr_t)arg;
    unsigned char *buf = malloc((size_t)maxlen);
    long i;

    if (!buf)
        exit(1);
    for (i = 0; reads == 0 || i < reads; i++) {
        vt_object *o = NULL;
        long status = 0;
        char err[1024];
        uint64_t size, off, len;
        void *dst[1] = {buf};

        if (vt__object_open(&vt__backend_s3, path, &o, &status, err,
                            sizeof err) != VT_OK) {
            fprintf(stderr, "open: %s\n", err);
            exit(1);
        }
        size = vt__object_size(o);
        if (size != local_len) {
            fprintf(stderr, "size %" PRIu64 " != %zu\n", size, local_len);
            exit(3);
        }
        len = 1 + splitmix(&rnd) % (uint64_t)maxlen;
        if (len > size)
            len = size;
        off = splitmix(&rnd) % (size - len + 1);
        {
            size_t l = (size_t)len;
            if (vt__object_read(o, NULL, 1, dst, &off, &l, 0, err,
                                sizeof err) != VT_OK) {
                fprintf(stderr, "read: %s\n", err);
                exit(1);
            }
        }
        if (memcmp(buf, local + off, (size_t)len) != 0) {
            fprintf(stderr, "wrong bytes at %" PRIu64 "+%" PRIu64 "\n", off, len);
            exit(3);
        }
        vt__object_release(o);
        if ((i + 1) % 10 == 0) {
            pthread_mutex_lock(&out_mu);
            printf("read %ld\n", i + 1);
            fflush(stdout);
            pthread_mutex_unlock(&out_mu);
        }
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 1, opt, i;
    pthread_t th[64];
    FILE *f;
    vt_cache_stats st;

    while ((opt = getopt(argc, argv, "n:s:l:t:")) != -1) {
        switch (opt) {
        case 'n': reads = atol(optarg); break;
        case 's': seed = (unsigned)atol(optarg); break;
        case 'l': maxlen = atol(optarg); break;
        case 't': threads = atoi(optarg); break;
        default: return 2;
        }
    }
    if (argc - optind != 2 || threads < 1 || threads > 64 || maxlen < 1)
        return 2;
    path = argv[optind];
    f = fopen(argv[optind + 1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        return 2;
    local_len = (size_t)ftell(f);
    rewind(f);
    local = malloc(local_len);
    if (!local || fread(local, 1, local_len, f) != local_len)
        return 2;
    fclose(f);
    for (i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, run, (void *)(uintptr_t)i);
    for (i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    vt__cache_get_stats(vt__object_cache(), &st);
    printf("{\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"waits\": %" PRIu64
           ", \"shared\": %s}\n",
           st.hits, st.misses, st.waits,
           vt__cache_shared(vt__object_cache()) ? "true" : "false");
    return 0;
}
