/* breq.c: see breq.h. */
#include "backends/breq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

#define ERROR_BODY_MIN (64 * 1024) /* room for an XML error on a short range */

vt_err vt__breq_add(vt_backend_req *r, size_t *n, const char *name,
                    const char *value)
{
    size_t l;
    char *h;

    /* a line break would end the header and start another one */
    if (strpbrk(name, "\r\n") || strpbrk(value, "\r\n"))
        return VT_EINVAL;
    l = strlen(name) + strlen(value) + 3;
    h = malloc(l);
    if (!h)
        return VT_ENOMEM;
    snprintf(h, l, "%s: %s", name, value);
    r->headers[(*n)++] = h;
    r->headers[*n] = NULL;
    return VT_OK;
}

void vt__breq_finish(vt_backend_req *r, const char *method, uint64_t len,
                     const char *path, int listing)
{
    r->req.method = method;
    r->req.url = r->url;
    r->req.headers = (const char *const *)r->headers;
    r->req.expect_len = len;
    r->req.max_body = len == 0 ? 0
                      : len > ERROR_BODY_MIN ? (size_t)len : ERROR_BODY_MIN;
    r->req.max_retries = -1;
    r->req.retry_delay = -1;
    r->cainfo = vt__cfg_ca_bundle(path, listing ? VT_CA_LIST : VT_CA_READ);
    r->req.cainfo = r->cainfo;
    r->req.has_cainfo = 1;
    /* the engine's options for the same path (NULL when out of memory:
     * the configuration's, as for a request of no path) */
    r->opts_path = path ? strdup(path) : NULL;
    r->req.opts_path = r->opts_path;
}

void vt__breq_clear(vt_backend_req *r)
{
    if (!r)
        return;
    if (r->headers)
        for (char **h = r->headers; *h; h++)
            free(*h);
    free(r->headers);
    free(r->url);
    free(r->cainfo);
    free(r->opts_path);
    memset(r, 0, sizeof(*r));
}
