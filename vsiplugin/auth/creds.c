/* creds.c: the AWS credentials provider chain and its cache (creds.h).
 *
 * Why: users already have credentials set up for GDAL and the AWS CLI; we
 * find them in the same places and order as GDAL 3.6, without an AWS SDK.
 *
 * Every call reads the options for its path (creds_opts.c). Environment keys
 * are used at once. Everything else is the result of a chain run, cached
 * under a key made of those options and the content of the two shared files
 * (read on every call, as GDAL reads them on every open, so an edited file
 * takes effect at once): up to CACHE_CAP entries, so buckets with different
 * path-specific credentials do not evict each other. Temporary credentials
 * are refreshed ahead of expiry; a failed search is answered from memory for
 * FAIL_REMEMBER seconds, so a burst of opens without credentials does not
 * wait on IMDS again and again. Instance credentials (container, EC2) are
 * also kept in one process-wide slot and reused while valid whatever the
 * options, as GDAL reuses them.
 *
 * Locking (state.lock, a leaf lock): held only to read or swap cache
 * entries, never across a file read or an HTTP call. One thread at a time
 * runs the chain for an entry (refreshing); while it does, other threads
 * keep the still-valid credentials, and only threads with nothing usable
 * wait on state.cond. All HTTP goes through vt__engine_perform. */
#include "auth/creds.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <openssl/crypto.h>

#include "auth/creds_int.h"
#include "auth/creds_parse.h"
#include "base/sha256.h"
#include "compat/gdal_error.h"
#include "auth/sigv4.h"

#define CACHE_CAP            16
#define REFRESH_AHEAD        300 /* s before expiry: refresh ahead of time */
#define EXPIRY_SLACK         10  /* s before expiry: stop using them at all */
#define MIN_REFRESH_INTERVAL 5   /* s between two refreshes of valid creds */
#define FAIL_REMEMBER        10  /* s a failed search is answered from memory */

struct entry {
    char *key;          /* malloc'd; NULL: free slot */
    vt_creds cur;       /* owned; meaningful when have */
    int have;
    int refreshing;     /* a thread is running the chain for this key */
    time_t next_try;    /* no refresh of still-valid creds before this */
    char fail_msg[1024];
    time_t fail_until;  /* until then the search fails from memory */
    unsigned long long used;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct entry e[CACHE_CAP];
    unsigned long long tick;
    unsigned gen;     /* bumped by vt__creds_reset and in a fork child */
    vt_creds instance; /* last container/EC2 credentials; have_instance */
    int have_instance;
} state = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* ---- the chain (no lock held) ----------------------------------------- */

/* Instance credentials not yet due for a refresh, copied into out. */
static int instance_reuse(vt_creds *out)
{
    int ok = 0;
    pthread_mutex_lock(&state.lock);
    if (state.have_instance &&
        (state.instance.expiration == 0 ||
         time(NULL) < state.instance.expiration - REFRESH_AHEAD))
        ok = vt__creds_copy(out, &state.instance) == VT_OK;
    pthread_mutex_unlock(&state.lock);
    return ok;
}

static void instance_keep(const vt_creds *c)
{
    vt_creds copy;
    if (vt__creds_copy(&copy, c) != VT_OK)
        return;
    pthread_mutex_lock(&state.lock);
    vt__creds_clear(&state.instance);
    state.instance = copy;
    state.have_instance = 1;
    pthread_mutex_unlock(&state.lock);
}

/* role_arn + source_profile: AssumeRole signed with the source profile's
 * web identity credentials (when it has role_arn + web_identity_token_file)
 * or keys. 1 found, -1 failed (errbuf). */
static int assume_role(const struct vt_copts *o,
                       const struct vt_shared_files *f,
                       const struct vt_profile *p, vt_creds *out, char *errbuf,
                       size_t errlen)
{
    struct vt_profile src;
    vt_creds signer = {0};
    char werr[1024] = "";
    int rc = -1;

    vt__profile_parse(f, p->source_profile, 0, &src);
    if (src.role_arn && src.token_file &&
        vt__creds_from_web_identity(o, &signer, src.role_arn, src.token_file,
                                    NULL, werr, sizeof(werr)) != 1) {
        CPLDebug("VSITUNE", "source profile %s: %s", p->source_profile, werr);
        vt__creds_clear(&signer);
    }
    if (!signer.access_key && src.access_key && src.secret_key) {
        vt_creds k = {.access_key = src.access_key,
                      .secret_key = src.secret_key,
                      .session_token = src.session_token};
        if (vt__creds_copy(&signer, &k) != VT_OK)
            goto out;
    }
    if (!signer.access_key) {
        vt__creds_put(errbuf, errlen,
                      "Cannot retrieve credentials for source profile %s "
                      "(vsitune: no aws_access_key_id/aws_secret_access_key "
                      "for it in %s or %s%s%s)",
                      p->source_profile, f->cred_path, f->config_path,
                      werr[0] ? "; " : "", werr);
        goto out;
    }
    rc = vt__creds_from_assume_role(o, out, p, &signer, errbuf, errlen);
    if (rc == 1)
        CPLDebug("VSITUNE", "using assumed role %s", p->role_arn);
out:
    vt__creds_clear(&signer);
    vt__profile_clear(&src);
    return rc;
}

/* Every provider after the environment, in GDAL's order. Returns VT_OK with
 * *out filled, or VT_ECREDS with errbuf. */
static vt_err run_chain(const struct vt_copts *o,
                        const struct vt_shared_files *f, vt_creds *out,
                        char *errbuf, size_t errlen)
{
    char notes[2048] = "";
    struct vt_profile p;
    const char *name = vt__profile_name(o);
    int rc = 0;

    memset(out, 0, sizeof(*out));
    vt__profile_parse(f, name, 1, &p);

    /* 1. The profile's keys (they win over its role settings, as in GDAL). */
    if (p.access_key && p.secret_key) {
        vt_creds c = {.access_key = p.access_key,
                      .secret_key = p.secret_key,
                      .session_token = p.session_token,
                      .source = "profile"};
        rc = vt__creds_copy(out, &c) == VT_OK ? 1 : -1;
        if (rc < 0)
            vt__creds_put(errbuf, errlen, "out of memory");
        goto done;
    }
    /* 2. role_arn + source_profile: AssumeRole; its failure ends the
     * search (GDAL does not go on either). mfa_serial goes along as
     * SerialNumber, which is all GDAL does with it. */
    if (p.role_arn && p.source_profile) {
        rc = assume_role(o, f, &p, out, errbuf, errlen);
        goto done;
    }
    vt__creds_note(notes, sizeof(notes), "profile '%s': no keys in %s%s or %s%s",
                   name, f->cred_path[0] ? f->cred_path : "(none)",
                   f->ctext ? "" : " (unreadable)",
                   f->config_path[0] ? f->config_path : "(none)",
                   f->ftext ? "" : " (unreadable)");

    /* 3. Web identity: the options, else the profile's own settings. */
    if (vt__copt_bool(o, CO_WEB_IDENTITY, 1)) {
        const char *role = vt__copt(o, CO_ROLE_ARN);
        const char *tfile = vt__copt(o, CO_TOKEN_FILE);
        const char *sname = vt__copt(o, CO_SESSION_NAME);
        if (!role || !tfile) {
            role = p.role_arn;
            tfile = p.token_file;
            if (p.session_name)
                sname = p.session_name;
        }
        if (role && tfile) {
            char werr[1024] = "";
            rc = vt__creds_from_web_identity(o, out, role, tfile, sname, werr,
                                             sizeof(werr));
            if (rc == 1)
                goto done;
            vt__creds_clear(out);
            vt__creds_note(notes, sizeof(notes), "%s", werr);
            rc = 0; /* GDAL goes on to EC2 */
        } else {
            vt__creds_note(notes, sizeof(notes),
                           "no AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE");
        }
    }

    /* 4. Container credentials, then EC2 instance metadata. */
    if (vt__copt_bool(o, CO_IMDS_DISABLED, 0) &&
        !vt__copt(o, CO_CONTAINER_REL) && !vt__copt(o, CO_CONTAINER_FULL)) {
        vt__creds_note(notes, sizeof(notes), "EC2 instance metadata disabled");
        goto done;
    }
    if (instance_reuse(out)) {
        rc = 1;
        goto done;
    }
    int refused = 0;
    char *curl = vt__container_url(vt__copt(o, CO_CONTAINER_REL),
                                   vt__copt(o, CO_CONTAINER_FULL), &refused);
    if (refused) {
        vt__creds_note(notes, sizeof(notes),
                       "container credentials: AWS_CONTAINER_CREDENTIALS_"
                       "FULL_URI must be https or http to a loopback/ECS/EKS "
                       "address");
    } else if (curl) {
        char cerr[1024] = "";
        rc = vt__creds_from_container(o, out, curl, cerr, sizeof(cerr));
        free(curl);
        if (rc == 1) {
            instance_keep(out);
            goto done;
        }
        vt__creds_clear(out);
        vt__creds_note(notes, sizeof(notes), "%s", cerr);
        rc = 0;
        goto done; /* GDAL does not ask EC2 after a container endpoint */
    }
    if (vt__copt_bool(o, CO_IMDS_DISABLED, 0)) {
        vt__creds_note(notes, sizeof(notes), "EC2 instance metadata disabled");
    } else {
        rc = vt__creds_from_imds(o, out, notes, sizeof(notes));
        if (rc == 1)
            instance_keep(out);
    }
done:
    if (rc == 0) {
        char words[1024];
        vt__gdal_no_creds_words(words, sizeof(words), f->cred_path);
        vt__creds_put(errbuf, errlen,
                      "%s (vsitune: %s; AWS_NO_SIGN_REQUEST=YES reads public "
                      "buckets)",
                      words, notes);
    }
    vt__profile_clear(&p);
    if (rc == 1)
        return VT_OK;
    vt__creds_clear(out);
    return VT_ECREDS;
}

/* ---- the cache -------------------------------------------------------- */

/* Cache key: the options and a digest of each shared file (malloc'd). */
static char *cache_key(const struct vt_copts *o, const struct vt_shared_files *f)
{
    char *fp = vt__copts_fingerprint(o), *key;
    char hc[65] = "-", hf[65] = "-";
    size_t n;
    if (!fp)
        return NULL;
    if (f->ctext)
        vt__sha256_hex(f->ctext, f->clen, hc);
    if (f->ftext)
        vt__sha256_hex(f->ftext, f->flen, hf);
    n = strlen(fp) + 140;
    key = malloc(n);
    if (key)
        snprintf(key, n, "%s|%s|%s", fp, hc, hf);
    free(fp);
    return key;
}

/* state.lock held. The entry for key, or NULL. */
static struct entry *entry_find(const char *key)
{
    for (int i = 0; i < CACHE_CAP; i++)
        if (state.e[i].key && !strcmp(state.e[i].key, key))
            return &state.e[i];
    return NULL;
}

/* state.lock held. The entry for key, creating it (evicting the least
 * recently used idle entry) when absent; NULL when every slot is busy. */
static struct entry *entry_for(const char *key)
{
    struct entry *free_e = NULL, *lru = NULL;
    for (int i = 0; i < CACHE_CAP; i++) {
        struct entry *e = &state.e[i];
        if (e->key && !strcmp(e->key, key)) {
            e->used = ++state.tick;
            return e;
        }
        if (!e->key && !free_e)
            free_e = e;
        if (e->key && !e->refreshing && (!lru || e->used < lru->used))
            lru = e;
    }
    struct entry *e = free_e ? free_e : lru;
    if (!e)
        return NULL;
    char *k = strdup(key);
    if (!k)
        return NULL;
    free(e->key);
    vt__creds_clear(&e->cur);
    memset(e, 0, sizeof(*e));
    e->key = k;
    e->used = ++state.tick;
    return e;
}

/* fork(): a child must not inherit a lock held by, or a refresh run by, a
 * parent thread that does not exist in the child (its waiters would wait
 * forever). prepare/parent run in the forking thread around fork(); child
 * runs in the child's only thread. */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&state.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&state.lock);
}

static void fork_child(void)
{
    pthread_mutex_init(&state.lock, NULL);
    pthread_cond_init(&state.cond, NULL);
    for (int i = 0; i < CACHE_CAP; i++)
        state.e[i].refreshing = 0; /* those threads stayed in the parent */
    state.gen++;
}

static void register_atfork(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int usable(const struct entry *e, time_t now)
{
    return e->have && (e->cur.expiration == 0 ||
                       now < e->cur.expiration - EXPIRY_SLACK);
}

/* The cached path: credentials from the entry for key, running the chain
 * when it has none (or they are due for a refresh). */
static vt_err cached_get(const char *key, const struct vt_copts *o,
                         const struct vt_shared_files *f, vt_creds *out,
                         char *errbuf, size_t errlen)
{
    vt_err err;
    vt_creds fresh = {0};
    char cerr[2048] = "";
    struct entry *e;
    int kept = 0; /* a failed refresh, the current ones handed out */

    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&state.lock);
    for (;;) {
        time_t now = time(NULL);
        e = entry_for(key);
        if (!e) { /* every slot refreshing: run uncached */
            pthread_mutex_unlock(&state.lock);
            err = run_chain(o, f, out, errbuf, errlen);
            return err;
        }
        int ok = usable(e, now);
        int fresh_enough = ok && (e->cur.expiration == 0 ||
                                  now < e->cur.expiration - REFRESH_AHEAD ||
                                  now < e->next_try);
        if (fresh_enough || (ok && e->refreshing)) {
            err = vt__creds_copy(out, &e->cur);
            pthread_mutex_unlock(&state.lock);
            return err;
        }
        if (!ok && !e->refreshing && now < e->fail_until) {
            vt__creds_put(errbuf, errlen, "%s", e->fail_msg);
            pthread_mutex_unlock(&state.lock);
            return VT_ECREDS;
        }
        if (!e->refreshing)
            break;
        pthread_cond_wait(&state.cond, &state.lock); /* nothing usable yet */
    }
    e->refreshing = 1;
    unsigned gen = state.gen;
    pthread_mutex_unlock(&state.lock);

    vt_err cerr_code = run_chain(o, f, &fresh, cerr, sizeof(cerr)); /* no lock */

    pthread_mutex_lock(&state.lock);
    time_t now = time(NULL);
    /* Look the entry up again rather than trusting e; after a reset
     * (vt__creds_reset, fork) the result is handed out but not kept. */
    e = entry_find(key);
    if (e) {
        e->refreshing = 0;
        e->next_try = now + MIN_REFRESH_INTERVAL;
        if (gen != state.gen)
            e = NULL;
    }
    pthread_cond_broadcast(&state.cond);
    if (cerr_code == VT_OK) {
        err = vt__creds_copy(out, &fresh);
        if (e) {
            vt__creds_clear(&e->cur);
            e->cur = fresh;
            memset(&fresh, 0, sizeof(fresh));
            e->have = 1;
            e->fail_until = 0;
        }
    } else if (e && usable(e, now)) {
        /* The refresh failed but what we hold is still good: keep it (and
         * say so once the lock is released). */
        kept = 1;
        err = vt__creds_copy(out, &e->cur);
    } else {
        err = VT_ECREDS;
        vt__creds_put(errbuf, errlen, "%s", cerr);
        if (e) {
            snprintf(e->fail_msg, sizeof(e->fail_msg), "%s", cerr);
            e->fail_until = now + FAIL_REMEMBER;
        }
    }
    pthread_mutex_unlock(&state.lock);
    if (kept)
        CPLDebug("VSITUNE", "credentials refresh failed, keeping current "
                            "ones: %s", cerr);
    vt__creds_clear(&fresh);
    return err;
}

vt_err vt__creds_get(const char *path, vt_creds *out, char *errbuf,
                     size_t errlen)
{
    struct vt_copts o;
    struct vt_shared_files f;
    vt_err err;
    char *key = NULL;

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    vt__copts_load(path, &o);
    if (vt__copt_bool(&o, CO_NO_SIGN, 0)) {
        out->anonymous = 1;
        out->source = "anonymous";
        err = VT_OK;
        goto out_opts;
    }
    if (vt__copt(&o, CO_SECRET_KEY)) {
        if (!vt__copt(&o, CO_ACCESS_KEY)) {
            vt__creds_put(errbuf, errlen,
                          "AWS_ACCESS_KEY_ID configuration option not defined");
            err = VT_ECREDS;
            goto out_opts;
        }
        vt_creds c = {.access_key = (char *)vt__copt(&o, CO_ACCESS_KEY),
                      .secret_key = (char *)vt__copt(&o, CO_SECRET_KEY),
                      .session_token = (char *)vt__copt(&o, CO_SESSION_TOKEN),
                      .source = "environment"};
        err = vt__creds_copy(out, &c);
        goto out_opts;
    }
    vt__shared_files_read(&o, &f);
    key = cache_key(&o, &f);
    err = key ? cached_get(key, &o, &f, out, errbuf, errlen)
              : run_chain(&o, &f, out, errbuf, errlen);
    free(key);
    vt__shared_files_clear(&f);
out_opts:
    vt__copts_clear(&o);
    return err;
}

void vt__creds_reset(void)
{
    pthread_mutex_lock(&state.lock);
    for (int i = 0; i < CACHE_CAP; i++) {
        struct entry *e = &state.e[i];
        if (e->refreshing) {
            /* its runner clears the flag and, seeing gen changed, keeps
             * nothing */
            vt__creds_clear(&e->cur);
            e->have = 0;
            e->fail_until = 0;
            continue;
        }
        free(e->key);
        vt__creds_clear(&e->cur);
        memset(e, 0, sizeof(*e));
    }
    vt__creds_clear(&state.instance);
    state.have_instance = 0;
    state.gen++;
    pthread_mutex_unlock(&state.lock);
    vt__creds_imds_reset();
}
