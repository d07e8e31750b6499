/* engine.c: the engine's public face (engine.h): submission, waiting,
 * lifecycle (lazy start, shutdown, fork) and options. The I/O thread itself
 * lives in engine_io.c; the pure decisions in engine_retry.c.
 *
 * State: g_eng, the one live engine, guarded by vt__eng_lock (defined in
 * engine_state.c; the only lock of the engine; never held while calling
 * out, except for the non-blocking curl_multi_wakeup). A caller builds one transfer per request, queues them
 * all under the lock, wakes the I/O thread and waits on its batch's
 * condition variable; the I/O thread fills the responses and signals.
 *
 * Lifecycle: the first request starts the thread (and registers atexit and
 * pthread_atfork handlers once). vt__engine_shutdown() detaches g_eng under
 * the lock, so a request arriving meanwhile starts a fresh engine, then
 * stops and joins the old one. Across fork() the I/O thread is parked
 * outside libcurl (prepare handler); the child forgets the parent's engine
 * without touching its handles or sockets (they leak in the child, which is
 * what keeps the parent's TLS connections intact) and builds its own on its
 * first request. */
#include "base/config.h"
#include "http/engine_int.h"
#include "http/engine_retry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>

#ifndef VT_VERSION
#define VT_VERSION "dev"
#endif

static struct vt_engine *g_eng;           /* lock */
static pthread_once_t g_hooks_once = PTHREAD_ONCE_INIT;

/* ---- fork -------------------------------------------------------------- */

/* prepare: runs in the forking thread. Keeps the lock across fork() and,
 * if an engine runs, waits until its thread is parked outside libcurl. */
static void atfork_prepare(void)
{
    struct vt_engine *e;

    pthread_mutex_lock(&vt__eng_lock);
    e = g_eng;
    if (!e || e->dead)
        return;
    e->fork_hold = 1;
    if (e->ready)
        curl_multi_wakeup(e->multi);
    /* e stays allocated while it is g_eng; re-read it after every wait. */
    while ((e = g_eng) && !e->parked && !e->dead)
        pthread_cond_wait(&vt__eng_park_cv, &vt__eng_lock);
}

static void atfork_parent(void)
{
    if (g_eng) {
        g_eng->fork_hold = 0;
        pthread_cond_broadcast(&vt__eng_resume_cv);
    }
    pthread_mutex_unlock(&vt__eng_lock);
}

/* child: the I/O thread does not exist here. Forget (leak) the parent's
 * engine: its curl handles, sockets and TLS state belong to the parent. */
static void atfork_child(void)
{
    g_eng = NULL;
    /* Stats describe this process: the child starts from zero. */
    atomic_store(&vt__eng_st_requests, 0);
    atomic_store(&vt__eng_st_retries, 0);
    atomic_store(&vt__eng_st_bytes, 0);
    atomic_store(&vt__eng_st_connections, 0);
    atomic_store(&vt__eng_st_in_flight, 0);
    atomic_store(&vt__eng_st_h2, 0);
    pthread_mutex_unlock(&vt__eng_lock);
}

static void install_hooks(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(vt__engine_shutdown);
}

/* ---- options ----------------------------------------------------------- */

/* The CA bundle when no option names one. A distribution's libcurl has its
 * system's bundle compiled in (curl_version_info's cainfo/capath): libcurl
 * uses it, as it does under stock GDAL, and this returns NULL. A libcurl built
 * without one (the portable Lambda layer's static copy, which cannot know
 * whether it runs on Debian or Amazon Linux) gets the first readable
 * well-known bundle: Debian/Ubuntu, Amazon Linux/Fedora/RHEL, openSUSE,
 * Alpine/macOS-style. Looked up once per process (the libcurl linked and the
 * host's files do not change under it): before, every request paid
 * curl_version_info's version strings and up to four access() calls.
 * Returns the path (static) or NULL. */
static const char *g_cainfo_default;
static pthread_once_t g_cainfo_once = PTHREAD_ONCE_INIT;

static void find_default_cainfo(void)
{
    static const char *const known[] = {
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
    };
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    size_t i;

    if (v->age < CURLVERSION_SEVENTH || v->cainfo || v->capath)
        return;
    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (access(known[i], R_OK) == 0) {
            CPLDebug("VSITUNE", "CA bundle %s (libcurl has none built in)",
                     known[i]);
            g_cainfo_default = known[i];
            return;
        }
    }
    CPLDebug("VSITUNE", "no CA bundle found and libcurl has none built in: "
             "set CURL_CA_BUNDLE for https");
}

static const char *default_cainfo(void)
{
    pthread_once(&g_cainfo_once, find_default_cainfo);
    return g_cainfo_default;
}

/* GDAL_PROXY_AUTH's word as CPLHTTPSetOptions maps it; 0: unset or a word
 * GDAL ignores (it warns "Unsupported PROXYAUTH value"). */
static long proxy_auth_bits(const char *v)
{
    static const struct { const char *word; unsigned long bits; } map[] = {
        {"BASIC", CURLAUTH_BASIC}, {"NTLM", CURLAUTH_NTLM},
        {"DIGEST", CURLAUTH_DIGEST}, {"ANY", CURLAUTH_ANY},
        {"ANYSAFE", CURLAUTH_ANYSAFE}, {"NEGOTIATE", CURLAUTH_NEGOTIATE},
    };
    for (size_t i = 0; v && i < sizeof(map) / sizeof(map[0]); i++)
        if (EQUAL(v, map[i].word))
            return (long)map[i].bits;
    return 0;
}

/* The options of a request for path (vt_http_req.opts_path): the HTTP
 * options GDAL looks up for a file's path are read for it where the running
 * GDAL does (config.h vt__cfg_http_path: 3.7+; 3.6 reads the configuration
 * only); GDAL_HTTP_USERAGENT, GDAL_HTTP_UNSAFESSL and CPL_CURL_VERBOSE come
 * from the configuration on every release, as GDAL reads them. On the
 * submitting thread (its prefix scope names the handler's prefix). */
static vt_err read_opts(const char *path, struct vt_eng_opts *o)
{
    const char *hp = vt__cfg_http_path(path);
    char *ver = vt__cfg_dup(hp, "GDAL_HTTP_VERSION");
    char *pauth = vt__cfg_dup(hp, "GDAL_PROXY_AUTH");

    memset(o, 0, sizeof(*o));
    /* config.c's table: finite, within range (integers truncate, as
     * GDAL's atoi does). */
    o->max_retries = (int)vt__opt_num(hp, VT_OPT_MAX_RETRY);
    o->retry_delay = vt__opt_num(hp, VT_OPT_RETRY_DELAY);
    o->timeout_ms = (long)(vt__opt_num(hp, VT_OPT_TIMEOUT) * 1000);
    o->retry_window = vt__opt_num(NULL, VT_OPT_RETRY_WINDOW);
    o->connect_timeout_ms = (long)(vt__opt_num(hp, VT_OPT_CONNECT_TIMEOUT) *
                                   1000);
    o->low_speed_time = (long)vt__opt_num(hp, VT_OPT_LOW_SPEED_TIME);
    o->low_speed_limit = (long)vt__opt_num(hp, VT_OPT_LOW_SPEED_LIMIT);
    o->http_version = CURL_HTTP_VERSION_2TLS;
    if (ver && (strcmp(ver, "1.0") == 0 || strcmp(ver, "1.1") == 0))
        o->http_version = CURL_HTTP_VERSION_1_1;
    else if (ver && EQUAL(ver, "2PRIOR_KNOWLEDGE"))
        o->http_version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
    /* as GDAL tests them: a value set to "" counts as YES */
    o->unsafe_ssl = CPLTestBool(CPLGetConfigOption("GDAL_HTTP_UNSAFESSL", "NO"));
    o->verbose = CPLTestBool(CPLGetConfigOption("CPL_CURL_VERBOSE", "NO"));
    /* The CA file of requests that do not choose their own (credentials):
     * GDAL's CPLHTTPFetch rule. S3 requests choose theirs (s3.c). With no
     * option set, libcurl's own bundle; a libcurl built without one (the
     * portable Lambda layer's) gets the first readable well-known bundle,
     * for every request that names none. */
    o->cainfo_default = default_cainfo();
    o->cainfo = vt__cfg_ca_bundle(NULL, VT_CA_FETCH);
    if (!o->cainfo && o->cainfo_default)
        o->cainfo = strdup(o->cainfo_default);
    o->useragent = vt__cfg_dup(NULL, "GDAL_HTTP_USERAGENT");
    if (!o->useragent)
        o->useragent = strdup("vsitune/" VT_VERSION);
    /* Set but empty is kept, as GDAL passes it to curl: no proxy, not even
     * one from the environment (http_proxy, https_proxy). */
    o->proxy = vt__cfg_dup_raw(hp, "GDAL_HTTP_PROXY");
    o->https_proxy = vt__cfg_dup_raw(hp, "GDAL_HTTPS_PROXY");
    o->proxy_userpwd = vt__cfg_dup(hp, "GDAL_HTTP_PROXYUSERPWD");
    o->proxy_auth = proxy_auth_bits(pauth);
    free(ver);
    free(pauth);
    return o->useragent ? VT_OK : VT_ENOMEM;
}

static void free_opts(struct vt_eng_opts *o)
{
    free(o->cainfo);
    free(o->useragent);
    free(o->proxy);
    free(o->https_proxy);
    free(o->proxy_userpwd);
}

/* 1 when two requests read their options for the same path. */
static int same_path(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* ---- start / stop -------------------------------------------------------- */

static void engine_free(struct vt_engine *e)
{
    free(e);
}

/* Return the live engine, starting one if needed. Lock held. The new thread
 * blocks on the lock until the caller waits, then drains the queue. */
static struct vt_engine *engine_get_locked(vt_err *err)
{
    struct vt_engine *e = g_eng;

    *err = VT_OK;
    if (e && e->dead) {
        /* Its thread may still need the lock to fail what it held: join it
         * unlocked, then look again (another thread may have started one). */
        g_eng = NULL;
        pthread_mutex_unlock(&vt__eng_lock);
        pthread_join(e->thread, NULL);
        engine_free(e);
        pthread_mutex_lock(&vt__eng_lock);
        e = g_eng;
    }
    if (e)
        return e;
    pthread_once(&g_hooks_once, install_hooks);
    e = calloc(1, sizeof(*e));
    if (!e) {
        *err = VT_ENOMEM;
        return NULL;
    }
    e->max_conns = (long)vt__opt_num(NULL, VT_OPT_MAX_CONNECTIONS);
    e->max_streams = (long)vt__opt_num(NULL, VT_OPT_MAX_STREAMS);
    if (pthread_create(&e->thread, NULL, vt__eng_io_main, e) != 0) {
        engine_free(e);
        *err = VT_ENOMEM;
        return NULL;
    }
    g_eng = e;
    return e;
}

void vt__engine_shutdown(void)
{
    struct vt_engine *e;

    pthread_mutex_lock(&vt__eng_lock);
    e = g_eng;
    g_eng = NULL;
    if (e) {
        e->stopping = 1;
        pthread_cond_broadcast(&vt__eng_resume_cv);
        if (e->ready && !e->dead)
            curl_multi_wakeup(e->multi);
    }
    pthread_mutex_unlock(&vt__eng_lock);
    if (!e)
        return;
    if (pthread_equal(pthread_self(), e->thread)) {
        pthread_detach(e->thread); /* cannot happen: curl never calls us */
        return;
    }
    pthread_join(e->thread, NULL);
    engine_free(e);
}

/* ---- requests ------------------------------------------------------------ */

static void find_range(struct vt_eng_xfer *x)
{
    const char *const *h = x->req->headers;

    for (; h && *h; h++) {
        if (EQUALN(*h, "Range:", 6)) {
            x->has_req_range = vt__parse_range_request(*h + 6, &x->req_first,
                                                       &x->req_last) == VT_OK;
            return;
        }
    }
}

/* The attempt's phases (note_phases) in words: where a slow request spent
 * its time (a new connection, the TLS handshake, the server's first byte). */
static void phases_text(const struct vt_eng_xfer *x, char *out, size_t n)
{
    out[0] = '\0';
    if (!x->ph.set)
        return;
    snprintf(out, n, " (%s; connect %.1f, TLS %.1f, first byte %.1f, total %.1f ms%s)",
             x->ph.nconn > 0 ? "new connection" : "reused connection",
             (double)x->ph.conn / 1e3, (double)x->ph.tls / 1e3,
             (double)x->ph.first / 1e3, (double)x->ph.total / 1e3,
             !x->ended_early ? "" : x->end_retires
                 ? "; body complete, no END_STREAM: stream ended, connection retired"
                 : "; body complete, no END_STREAM: stream ended");
}

static void log_request(const struct vt_eng_xfer *x, vt_err err)
{
    const vt_http_resp *r = x->resp;
    char range[64] = "", ms[32] = "", phases[208];

    /* CPLDebug prints nothing without CPL_DEBUG: the line's words are not
     * worth building then (one per request, on the caller's thread). */
    if (!CPLGetConfigOption("CPL_DEBUG", NULL))
        return;
    phases_text(x, phases, sizeof(phases));
    if (x->has_req_range)
        snprintf(range, sizeof(range), " bytes=%llu-%llu",
                 (unsigned long long)x->req_first, (unsigned long long)x->req_last);
    if (x->first_sent_at > 0 && x->done_at >= x->first_sent_at)
        snprintf(ms, sizeof(ms), ", %.1f ms", (x->done_at - x->first_sent_at) * 1e3);
    CPLDebug("VSITUNE", "%s %s%s -> %ld, %zu bytes, HTTP/%d, %d attempt(s)%s"
             "%s%s%s%s%s",
             x->req->method ? x->req->method : "GET", x->req->url, range, r->status,
             r->body_len, r->http_version, r->attempts, ms, phases,
             err == VT_OK ? "" : ": ", err == VT_OK ? "" : r->error,
             x->retry_why[0] ? "; last retry: " : "", x->retry_why);
}

vt_err vt__engine_perform_many(size_t n, const vt_http_req *reqs,
                               vt_http_resp *resps, vt_err *errs)
{
    struct vt_eng_opts *sets = NULL; /* one per run of one opts_path */
    size_t nsets = 0;
    const char *set_path = NULL;
    struct vt_eng_batch batch;
    struct vt_eng_xfer *xs = NULL, *head = NULL, *tail = NULL;
    struct vt_engine *e;
    vt_err ret = VT_OK, err = VT_OK;
    size_t queued = 0;

    for (size_t i = 0; i < n; i++) {
        memset(&resps[i], 0, sizeof(resps[i]));
        errs[i] = VT_ENOMEM;
    }
    if (n == 0)
        return VT_OK;
    if (!(xs = calloc(n, sizeof(*xs))) || !(sets = calloc(n, sizeof(*sets)))) {
        ret = VT_ENOMEM;
        goto out;
    }
    /* Each request's options, read again only where the path changes: a
     * batch is mostly one object's requests (GDAL reads a handle's options
     * once). xs[i].opts shares its set's strings. */
    for (size_t i = 0; i < n; i++) {
        if (nsets == 0 || !same_path(set_path, reqs[i].opts_path)) {
            if (read_opts(reqs[i].opts_path, &sets[nsets++]) != VT_OK) {
                ret = VT_ENOMEM;
                goto out;
            }
            set_path = reqs[i].opts_path;
        }
        xs[i].opts = sets[nsets - 1];
    }
    pthread_cond_init(&batch.cv, NULL);
    batch.pending = 0;
    for (size_t i = 0; i < n; i++) {
        struct vt_eng_xfer *x = &xs[i];
        const vt_http_req *r = &reqs[i];

        errs[i] = VT_OK;
        if (!r->url || !*r->url) {
            errs[i] = VT_EINVAL;
            snprintf(resps[i].error, sizeof(resps[i].error), "no URL");
            continue;
        }
        x->req = r;
        x->resp = &resps[i];
        x->err = &errs[i];
        x->batch = &batch;
        x->content_length = -1;
        if (r->max_retries >= 0)
            x->opts.max_retries = r->max_retries;
        if (r->retry_delay >= 0)
            x->opts.retry_delay = r->retry_delay;
        if (r->timeout_ms > 0)
            x->opts.timeout_ms = r->timeout_ms;
        if (r->connect_timeout_ms > 0)
            x->opts.connect_timeout_ms = r->connect_timeout_ms;
        if (r->has_cainfo) /* the caller's (or the default); not freed */
            x->opts.cainfo = (char *)(r->cainfo ? r->cainfo
                                                : x->opts.cainfo_default);
        find_range(x);
        if (tail)
            tail->next = x;
        else
            head = x;
        tail = x;
        queued++;
    }

    pthread_mutex_lock(&vt__eng_lock);
    e = queued ? engine_get_locked(&err) : NULL;
    if (e) {
        batch.pending = queued;
        if (e->q_tail)
            e->q_tail->next = head;
        else
            e->q_head = head;
        e->q_tail = tail;
        if (e->ready)
            curl_multi_wakeup(e->multi);
        while (batch.pending > 0)
            pthread_cond_wait(&batch.cv, &vt__eng_lock);
    }
    pthread_mutex_unlock(&vt__eng_lock);
    pthread_cond_destroy(&batch.cv);

    for (size_t i = 0; i < n; i++) {
        if (!xs[i].req)
            continue;
        if (!e) {
            errs[i] = err;
            snprintf(resps[i].error, sizeof(resps[i].error),
                     "could not start the I/O engine");
        }
        log_request(&xs[i], errs[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (errs[i] != VT_OK) {
            ret = errs[i];
            break;
        }
    }
out:
    free(xs);
    for (size_t i = 0; i < nsets; i++)
        free_opts(&sets[i]);
    free(sets);
    return ret;
}

vt_err vt__engine_perform(const vt_http_req *req, vt_http_resp *resp)
{
    vt_err err;

    vt__engine_perform_many(1, req, resp, &err);
    return err;
}

void vt__http_resp_clear(vt_http_resp *resp)
{
    if (!resp)
        return;
    vt__eng_body_free(resp->body, resp->body_cap);
    free(resp->etag);
    free(resp->bucket_region);
    free(resp->retry_after);
    free(resp->location);
    memset(resp, 0, sizeof(*resp));
}

void vt__http_resp_body_done(vt_http_resp *resp, size_t upto)
{
    if (!resp || !resp->body || upto > resp->body_len ||
        upto <= resp->body_done)
        return;
    resp->body_done = vt__eng_body_drop(resp->body, resp->body_cap,
                                        resp->body_done, upto);
}

vt_err vt__http_resp_reserve(vt_http_resp *resp, size_t want)
{
    size_t cap = resp->body_cap;

    if (resp->body && cap == 0) { /* a body made with malloc (tests) */
        unsigned char *nb;
        if (want <= resp->body_len + 1)
            return VT_OK;
        if (!(nb = realloc(resp->body, want)))
            return VT_ENOMEM;
        resp->body = nb;
        return VT_OK;
    }
    if (vt__eng_body_grow(&resp->body, &cap, resp->body_len, want) != VT_OK)
        return VT_ENOMEM;
    resp->body_cap = cap;
    return VT_OK;
}

void vt__engine_get_stats(vt_engine_stats *out)
{
    out->requests = atomic_load(&vt__eng_st_requests);
    out->retries = atomic_load(&vt__eng_st_retries);
    out->bytes_received = atomic_load(&vt__eng_st_bytes);
    out->connections = atomic_load(&vt__eng_st_connections);
    out->in_flight = atomic_load(&vt__eng_st_in_flight);
    out->h2_responses = atomic_load(&vt__eng_st_h2);
}
