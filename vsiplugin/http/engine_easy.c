/* engine_easy.c: one attempt's libcurl easy handle, made ready to send.
 *
 * Why a file of its own: engine_io.c decides when an attempt is sent, how it
 * is judged and whether it is sent again; what it is sent as is a separate
 * question with rules of its own, answered here, on the I/O thread:
 *  - the easy-handle pool (curl 7.88 refuses CURLOPT_BUFFERSIZE on a handle
 *    that still holds its buffer, so only handles with curl's default
 *    receive buffer are reused; see vt__eng_easy_put);
 *  - the receive buffer an attempt gets: room for its whole body when that
 *    is known, so that its h2 stream never pauses the connection (the stall
 *    engine_io.c's top comment describes);
 *  - the request's header lines as curl's list;
 *  - the mapping of vt_http_req and its vt_eng_opts to libcurl options, the
 *    only place those options are set.
 * All on the I/O thread, no lock; e and x are the I/O thread's (engine_int.h). */
#include "http/engine_int.h"

#include <string.h>
#include <strings.h>

#define DEFAULT_RECV_BUFFER 16384L /* curl's CURLOPT_BUFFERSIZE default */
#define MAX_RECV_BUFFER (1L << 20) /* per transfer; curl 7.88 allows 10 MB */

/* Is the transfer sure to go over HTTP/1.1: forced by the options, or a
 * cleartext URL (CURL_HTTP_VERSION_2TLS speaks h2 over TLS only)? */
static int surely_http1(const struct vt_eng_xfer *x)
{
    return x->opts.http_version == CURL_HTTP_VERSION_1_1 ||
           (x->opts.http_version == CURL_HTTP_VERSION_2TLS &&
            strncasecmp(x->req->url, "http://", 7) == 0);
}

/* Receive buffer for a transfer: room for its whole body when that is known
 * (a stream whose data always fits never pauses the connection), in powers
 * of two up to MAX_RECV_BUFFER. A transfer sure to go over HTTP/1.1 has its
 * connection to itself, nothing a full buffer could hold up: it takes curl's
 * default, whatever its size (a 1 MiB buffer per transfer, its pages touched
 * by each large read, was measured to cost peak RSS: 16 threads over
 * HTTP/1.1, docs/architecture.md "The engine"). */
long vt__eng_recv_buffer(const struct vt_eng_xfer *x)
{
    uint64_t want = x->req->expect_len;
    long size = DEFAULT_RECV_BUFFER;

    if (surely_http1(x))
        return size;
    if (!want && x->has_req_range)
        want = x->req_last - x->req_first + 1;
    /* powers of two from 16 KiB to 1 MiB: few classes to reuse within */
    while (size < MAX_RECV_BUFFER && (uint64_t)size < want + 1024)
        size *= 2;
    return size;
}

CURL *vt__eng_easy_get(struct vt_engine *e, long bufsize)
{
    if (bufsize == DEFAULT_RECV_BUFFER && e->n_free > 0) {
        CURL *c = e->free_easy[--e->n_free];
        curl_easy_reset(c);
        return c;
    }
    return curl_easy_init();
}

/* Easy handles with curl's default receive buffer are kept for reuse; the
 * others are freed. curl 7.88 refuses CURLOPT_BUFFERSIZE while a handle still
 * holds its buffer, which it keeps after a transfer that ended while other
 * streams were using the connection, and curl_easy_reset() sets the size
 * back to the default: so a bigger buffer needs a fresh handle. */
void vt__eng_easy_put(struct vt_engine *e, CURL *easy, long bufsize)
{
    if (bufsize == DEFAULT_RECV_BUFFER &&
        e->n_free < (int)(sizeof(e->free_easy) / sizeof(e->free_easy[0])))
        e->free_easy[e->n_free++] = easy;
    else
        curl_easy_cleanup(easy);
}

void vt__eng_easy_pool_free(struct vt_engine *e)
{
    for (int i = 0; i < e->n_free; i++)
        curl_easy_cleanup(e->free_easy[i]);
    e->n_free = 0;
}

vt_err vt__eng_build_headers(struct vt_eng_xfer *x)
{
    const char *const *h = x->req->headers;

    for (; h && *h; h++) {
        struct curl_slist *n = curl_slist_append(x->hdrs, *h);
        if (!n)
            return VT_ENOMEM;
        x->hdrs = n;
    }
    return VT_OK;
}

CURLcode vt__eng_set_options(struct vt_engine *e, struct vt_eng_xfer *x,
                             double now)
{
    const struct vt_eng_opts *o = &x->opts;
    const char *method = x->req->method ? x->req->method : "GET";
    CURL *c = x->easy;
    CURLcode rc = CURLE_OK;

#define SET(opt, val)                                                       \
    do {                                                                    \
        if (rc == CURLE_OK)                                                 \
            rc = curl_easy_setopt(c, opt, val);                             \
    } while (0)
    SET(CURLOPT_URL, x->req->url);
    SET(CURLOPT_PRIVATE, (void *)x);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_SHARE, e->share);
    SET(CURLOPT_HTTP_VERSION, o->http_version);
    SET(CURLOPT_PIPEWAIT, 1L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_HTTPHEADER, x->hdrs);
    SET(CURLOPT_HEADERFUNCTION, vt__eng_on_header);
    SET(CURLOPT_HEADERDATA, (void *)x);
    SET(CURLOPT_WRITEFUNCTION, vt__eng_on_write);
    SET(CURLOPT_WRITEDATA, (void *)x);
    SET(CURLOPT_ERRORBUFFER, x->errbuf);
    SET(CURLOPT_OPENSOCKETFUNCTION, vt__eng_open_socket);
    SET(CURLOPT_OPENSOCKETDATA, (void *)x);
    SET(CURLOPT_CLOSESOCKETFUNCTION, vt__eng_close_socket);
    SET(CURLOPT_CLOSESOCKETDATA, (void *)e);
    SET(CURLOPT_PREREQFUNCTION, vt__eng_on_prereq);
    SET(CURLOPT_PREREQDATA, (void *)x);
    if (x->bufsize != DEFAULT_RECV_BUFFER)
        SET(CURLOPT_BUFFERSIZE, x->bufsize); /* a fresh handle: allowed */
    if (o->http_version != CURL_HTTP_VERSION_1_1) {
        const struct vt_eng_origin *org = vt__eng_origin_find(e, x->req->url);
        /* On an origin known to answer over h2, END_STREAM ends the
         * transfer, not Content-Length (engine_io.c's top comment). Never
         * on HTTP/1.1, where the body would then end only at close. */
        if (org && org->h2)
            SET(CURLOPT_IGNORE_CONTENT_LENGTH, 1L);
    }
    SET(CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    if (x->deadline > 0) {
        /* What is left of the request's deadline (the caller checked > 0). */
        long left = (long)((x->deadline - now) * 1000.0);
        SET(CURLOPT_TIMEOUT_MS, left > 1 ? left : 1L);
    }
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_XFERINFOFUNCTION, vt__eng_on_progress);
    SET(CURLOPT_XFERINFODATA, (void *)x);
    if (o->low_speed_time > 0 && o->low_speed_limit > 0) {
        SET(CURLOPT_LOW_SPEED_TIME, o->low_speed_time);
        SET(CURLOPT_LOW_SPEED_LIMIT, o->low_speed_limit);
    }
    if (o->unsafe_ssl) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (o->cainfo)
        SET(CURLOPT_CAINFO, o->cainfo);
    if (o->verbose)
        SET(CURLOPT_VERBOSE, 1L);
    if (o->useragent)
        SET(CURLOPT_USERAGENT, o->useragent);
    if (o->https_proxy && strncmp(x->req->url, "https", 5) == 0)
        SET(CURLOPT_PROXY, o->https_proxy);
    else if (o->proxy)
        SET(CURLOPT_PROXY, o->proxy);
    if (o->proxy_userpwd)
        SET(CURLOPT_PROXYUSERPWD, o->proxy_userpwd);
    if (o->proxy_auth)
        SET(CURLOPT_PROXYAUTH, (unsigned long)o->proxy_auth);

    if (strcmp(method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        SET(CURLOPT_NOBODY, 1L);
    } else {
        if (x->req->body || strcmp(method, "POST") == 0 ||
            strcmp(method, "PUT") == 0) {
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->req->body_len);
            SET(CURLOPT_POSTFIELDS, x->req->body ? x->req->body : "");
        }
        if (strcmp(method, "POST") != 0)
            SET(CURLOPT_CUSTOMREQUEST, method);
    }
#undef SET
    return rc;
}
