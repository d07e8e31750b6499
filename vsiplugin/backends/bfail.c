/* bfail.c: this thread's last backend failure (bfail.h). */
#include "backends/bfail.h"

#include <stdio.h>
#include <string.h>

#include "compat/gdal_error.h"

static _Thread_local struct {
    int set;
    vt_err err;
    long status;
    char where[2100];   /* "s3://bucket/key" */
    char url[4096];
    char transport[256];
    char cause[160];    /* the engine's words on a failure without answer */
    char message[1024]; /* VT_ECREDS: the chain's words */
    char body[VT_BFAIL_BODY_CAP];
    size_t body_len;
    int again;
} t_fail;

void vt__bfail_note(const char *scheme, const char *container,
                    const char *key, vt_err err, const vt_http_resp *r,
                    const char *url, const char *message, int again)
{
    t_fail.set = 1;
    t_fail.err = err;
    t_fail.status = r ? r->status : 0;
    t_fail.again = again;
    snprintf(t_fail.where, sizeof(t_fail.where), "%s%s/%s", scheme,
             container, key);
    snprintf(t_fail.url, sizeof(t_fail.url), "%s", url ? url : "");
    snprintf(t_fail.transport, sizeof(t_fail.transport), "%s",
             r ? r->error : "");
    snprintf(t_fail.cause, sizeof(t_fail.cause), "%s", r ? r->cause : "");
    snprintf(t_fail.message, sizeof(t_fail.message), "%s",
             message ? message : "");
    t_fail.body_len = 0;
    if (r && r->body && r->body_len)
        t_fail.body_len = r->body_len < VT_BFAIL_BODY_CAP - 1
                              ? r->body_len
                              : VT_BFAIL_BODY_CAP - 1;
    if (t_fail.body_len)
        memcpy(t_fail.body, r->body, t_fail.body_len);
    t_fail.body[t_fail.body_len] = '\0';
}

void vt__bfail_forget(void)
{
    t_fail.set = 0;
}

int vt__bfail_get(const char *scheme, const char *container, const char *key,
                  struct vt_gdal_fail *out)
{
    char where[sizeof(t_fail.where)];

    memset(out, 0, sizeof(*out));
    snprintf(where, sizeof(where), "%s%s/%s", scheme, container, key);
    if (!t_fail.set || strcmp(where, t_fail.where) != 0)
        return 0;
    out->err = t_fail.err;
    out->status = t_fail.status;
    out->body = t_fail.body_len ? t_fail.body : NULL;
    out->body_len = t_fail.body_len;
    out->transport = t_fail.transport[0] ? t_fail.transport : NULL;
    out->cause = t_fail.cause[0] ? t_fail.cause : NULL;
    out->message = t_fail.message[0] ? t_fail.message : NULL;
    out->where = t_fail.where;
    out->url = t_fail.url[0] ? t_fail.url : NULL;
    out->again = t_fail.again;
    return 1;
}
