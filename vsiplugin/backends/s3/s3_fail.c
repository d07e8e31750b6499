/* s3_fail.c: S3's names in the memory of failures (backends/failmem.h), for
 * wording only (s3_int.h, vt__s3_fail_note): a name is "bucket/key" at its
 * endpoint identity (vt__s3_endpoint_base), so the same key of another
 * server is another name, as in GDAL's cache (by URL). */
#include <stdio.h>
#include <stdlib.h>

#include "backends/failmem.h"
#include "backends/s3/s3.h"
#include "backends/s3/s3_int.h"

int vt__s3_fail_note(const char *bucket, const char *key, long status,
                     vt_err err, const char *code)
{
    char path[2048];
    char *ep;
    int again;

    snprintf(path, sizeof(path), "%s/%s", bucket, key);
    ep = vt__s3_endpoint_base(path);
    again = vt__failmem_note(path, ep, status, err, code);
    free(ep);
    return again;
}

void vt__s3_fail_ok(const char *bucket, const char *key)
{
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s", bucket, key);
    vt__failmem_ok(path);
}

void vt__s3_forget_failures(const char *prefix)
{
    vt__failmem_forget(prefix);
}
