/* s3_backend.c: S3 as a vt_backend (backends/backend.h): the table the
 * read path reaches S3 through, over s3.c's requests, s3_route.c's
 * addressing, s3_fail.c's memory of failures and backends/listxml.c's
 * parser. */
#include "backends/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/creds.h"
#include "backends/s3/s3.h"
#include "backends/s3/s3_int.h"
#include "backends/listxml.h"

static vt_err s3_list(const char *bucket, const char *prefix, const char *dir,
                      int max_keys, vt_list_page *out, char *errbuf,
                      size_t errlen)
{
    vt_http_resp r;
    vt_err err = vt__s3_list(bucket, prefix, max_keys, &r, errbuf, errlen);

    if (err == VT_OK) {
        err = vt__listxml_parse((const char *)r.body, r.body_len, dir, out);
        if (err != VT_OK)
            snprintf(errbuf, errlen, "s3://%s/?prefix=%s: not a ListBucketResult",
                     bucket, prefix);
    }
    vt__http_resp_clear(&r);
    return err;
}

/* GDAL's VSICurlClearCache forgets its redirects, the failures it kept and
 * the credentials it fetched; VSICurlPartialClearCache the names under a
 * prefix only. */
static void s3_forget(const char *prefix)
{
    vt__s3_forget_failures(prefix);
    if (!prefix) {
        vt__s3_forget_routes();
        vt__creds_reset();
    }
}

const vt_backend vt__backend_s3 = {
    .name = VT_S3_NAME,
    .gdal_prefix = "/vsis3/",
    .scheme = "s3://",
    .split = vt__s3_split,
    .endpoint = vt__s3_endpoint_base,
    .access_identity = vt__s3_access_identity,
    .build_get = vt__s3_build_get,
    .req_clear = vt__s3_request_clear,
    .get = vt__s3_get,
    .head = vt__s3_head,
    .list = s3_list,
    .describe = vt__s3_describe,
    .status_err = vt__s3_status_err,
    .last_failure = vt__s3_last_failure,
    .forget = s3_forget,
};
