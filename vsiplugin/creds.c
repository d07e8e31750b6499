/* creds.c: the AWS credentials provider chain and its refresh (creds.h).
 *
 * Why: users already have credentials set up for the AWS CLI and GDAL; we
 * find them in the same places and order, without an AWS SDK. Environment
 * keys are read on every call (cheap, and --config changes apply at once).
 * Everything else is found once, cached process-wide (keyed by the options
 * it depends on, so changing AWS_PROFILE takes effect), and refreshed ahead
 * of expiry. A failed search is answered from memory for FAIL_REMEMBER
 * seconds, so a burst of opens without credentials does not wait on IMDS
 * again and again.
 *
 * Locking (state.lock, a leaf lock): held only to read or swap the cached
 * credentials, never across a file read or an HTTP call. One thread at a
 * time runs the chain (state.refreshing); while it does, other threads keep
 * the still-valid credentials, and only threads with nothing usable wait on
 * state.cond. All HTTP goes through vt__engine_perform. */
#include "creds.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <openssl/crypto.h>

#include "creds_int.h"
#include "creds_parse.h"

#define REFRESH_AHEAD        300 /* s before expiry: refresh ahead of time */
#define EXPIRY_SLACK         10  /* s before expiry: stop using them at all */
#define MIN_REFRESH_INTERVAL 5   /* s between two refreshes of valid creds */
#define FAIL_REMEMBER        10  /* s a failed search is answered from memory */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    vt_creds cur; /* owned; meaningful when have */
    int have;
    char *fingerprint; /* options cur was found with (malloc'd) */
    int refreshing;    /* a thread is running the chain */
    time_t next_try;   /* no refresh of still-valid creds before this */
    unsigned gen;      /* bumped by vt__creds_reset */
    char *fail_fp;     /* options of the last failed search (malloc'd) */
    char fail_msg[1024];
    time_t fail_until; /* until then the same search fails from memory, so a
                          burst of opens does not probe IMDS again and again */
} state = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

void vt__creds_clear(vt_creds *c)
{
    if (!c)
        return;
    if (c->secret_key)
        OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
    free(c->access_key);
    free(c->secret_key);
    free(c->session_token);
    memset(c, 0, sizeof(*c));
}

/* ---- provider: environment / GDAL config ------------------------------ */

static int from_env(vt_creds *out)
{
    const char *ak = vt__creds_opt("AWS_ACCESS_KEY_ID"),
               *sk = vt__creds_opt("AWS_SECRET_ACCESS_KEY");
    const char *tok = vt__creds_opt("AWS_SESSION_TOKEN");
    if (!ak || !sk)
        return 0;
    vt_creds c = {.access_key = (char *)ak,
                  .secret_key = (char *)sk,
                  .session_token = (char *)tok,
                  .source = "environment"};
    return vt__creds_copy(out, &c) == VT_OK ? 1 : -1;
}

/* ---- the chain -------------------------------------------------------- */

/* Run every provider after the environment, in order. No lock held. */
static vt_err run_chain(vt_creds *out, char *errbuf, size_t errlen)
{
    char notes[1024] = "";
    struct vt_profile_hint hint = {0};
    vt_err err = VT_ECREDS;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = vt__creds_from_profile(out, &hint, notes, sizeof(notes), errbuf,
                                errlen);
    if (rc)
        goto done;
    if (hint.role_arn && hint.unsupported && !hint.token_file) {
        vt__creds_put(errbuf, errlen,
                      "AWS profile role_arn with %s is not supported by "
                      "vsitune: use source_profile, web_identity_token_file or "
                      "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
                      hint.unsupported);
        rc = -1;
        goto done;
    }
    if (hint.role_arn && hint.source.access_key && !hint.token_file) {
        rc = vt__creds_from_assume_role(out, &hint, errbuf, errlen);
        goto done;
    }

    const char *role = vt__creds_opt("AWS_ROLE_ARN"),
               *tfile = vt__creds_opt("AWS_WEB_IDENTITY_TOKEN_FILE");
    const char *sname = vt__creds_opt("AWS_ROLE_SESSION_NAME");
    if (!role || !tfile) {
        role = hint.role_arn;
        tfile = hint.token_file;
        sname = hint.session_name;
    }
    if (role && tfile) {
        rc = vt__creds_from_web_identity(out, role, tfile, sname, errbuf,
                                         errlen);
        goto done;
    }
    vt__creds_note(notes, sizeof(notes),
                   "no AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE");

    int refused = 0;
    char *curl = vt__container_url(
        vt__creds_opt("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
        vt__creds_opt("AWS_CONTAINER_CREDENTIALS_FULL_URI"), &refused);
    if (refused) {
        vt__creds_put(
            errbuf, errlen,
            "container credentials: AWS_CONTAINER_CREDENTIALS_"
            "FULL_URI must be https or http to a loopback/ECS/EKS address");
        rc = -1;
        goto done;
    }
    if (curl) {
        rc = vt__creds_from_container(out, curl, errbuf, errlen);
        free(curl);
        goto done;
    }
    vt__creds_note(notes, sizeof(notes),
                   "no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI");

    const char *dis = vt__creds_opt("AWS_EC2_METADATA_DISABLED");
    if (dis && CPLTestBool(dis)) {
        vt__creds_note(notes, sizeof(notes), "EC2 instance metadata disabled");
    } else {
        rc = vt__creds_from_imds(out, notes, sizeof(notes));
        if (rc)
            goto done;
    }
    vt__creds_put(
        errbuf, errlen,
        "no AWS credentials found: no AWS_ACCESS_KEY_ID + "
        "AWS_SECRET_ACCESS_KEY; %s (set AWS_NO_SIGN_REQUEST=YES for public "
        "buckets)",
        notes);
done:
    vt__profile_hint_clear(&hint);
    if (rc == 1)
        err = VT_OK;
    else
        vt__creds_clear(out);
    return err;
}

/* The options the cached credentials depend on, joined (malloc'd). */
static char *fingerprint(void)
{
    static const char *names[] = {"AWS_PROFILE",
                                  "AWS_DEFAULT_PROFILE",
                                  "AWS_SHARED_CREDENTIALS_FILE",
                                  "AWS_CONFIG_FILE",
                                  "HOME",
                                  "AWS_ROLE_ARN",
                                  "AWS_WEB_IDENTITY_TOKEN_FILE",
                                  "AWS_ROLE_SESSION_NAME",
                                  "AWS_STS_ENDPOINT",
                                  "CPL_AWS_STS_ROOT_URL",
                                  "AWS_STS_REGIONAL_ENDPOINTS",
                                  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                  "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                  "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                  "CPL_AWS_EC2_API_ROOT_URL",
                                  "AWS_EC2_METADATA_DISABLED",
                                  "CPL_AWS_AUTODETECT_EC2"};
    size_t n = 1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = vt__creds_opt(names[i]);
        n += (v ? strlen(v) : 0) + 1;
    }
    char *fp = malloc(n), *p = fp;
    if (!fp)
        return NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = vt__creds_opt(names[i]);
        size_t l = v ? strlen(v) : 0;
        memcpy(p, v ? v : "", l);
        p[l] = '\x1f';
        p += l + 1;
    }
    *p = '\0';
    return fp;
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
    state.refreshing = 0; /* the refreshing thread stayed in the parent */
    state.gen++;
}

static void register_atfork(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

vt_err vt__creds_get(vt_creds *out, char *errbuf, size_t errlen)
{
    vt_err err = VT_OK;
    char *fp = NULL;
    vt_creds fresh = {0};
    char cerr[1024] = "";

    memset(out, 0, sizeof(*out));
    if (errlen)
        errbuf[0] = '\0';
    const char *nosign = vt__creds_opt("AWS_NO_SIGN_REQUEST");
    if (nosign && CPLTestBool(nosign)) {
        out->anonymous = 1;
        out->source = "anonymous";
        return VT_OK;
    }
    int env = from_env(out);
    if (env)
        return env > 0 ? VT_OK : VT_ENOMEM;
    fp = fingerprint();
    if (!fp)
        return VT_ENOMEM;

    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&state.lock);
    for (;;) {
        time_t now = time(NULL);
        int same = state.have && !strcmp(state.fingerprint, fp);
        int usable = same && (state.cur.expiration == 0 ||
                              now < state.cur.expiration - EXPIRY_SLACK);
        int fresh_enough =
            usable && (state.cur.expiration == 0 ||
                       now < state.cur.expiration - REFRESH_AHEAD ||
                       now < state.next_try);
        if (fresh_enough || (usable && state.refreshing)) {
            err = vt__creds_copy(out, &state.cur);
            pthread_mutex_unlock(&state.lock);
            goto out;
        }
        if (!usable && state.fail_fp && !strcmp(state.fail_fp, fp) &&
            now < state.fail_until) {
            err = VT_ECREDS;
            vt__creds_put(errbuf, errlen, "%s", state.fail_msg);
            pthread_mutex_unlock(&state.lock);
            goto out;
        }
        if (!state.refreshing)
            break;
        pthread_cond_wait(&state.cond, &state.lock); /* nothing usable yet */
    }
    state.refreshing = 1;
    unsigned gen = state.gen;
    pthread_mutex_unlock(&state.lock);

    vt_err cerr_code = run_chain(&fresh, cerr, sizeof(cerr)); /* no lock */

    pthread_mutex_lock(&state.lock);
    state.refreshing = 0;
    pthread_cond_broadcast(&state.cond);
    time_t now = time(NULL);
    if (gen == state.gen) {
        state.next_try = now + MIN_REFRESH_INTERVAL;
        if (cerr_code == VT_OK) {
            vt__creds_clear(&state.cur);
            state.cur = fresh;
            memset(&fresh, 0, sizeof(fresh));
            free(state.fingerprint);
            state.fingerprint = fp;
            fp = NULL;
            state.have = 1;
        }
    }
    int same = state.have && state.fingerprint && fp == NULL;
    if (cerr_code == VT_OK) {
        err = vt__creds_copy(out, same ? &state.cur : &fresh);
    } else if (state.have && state.fingerprint && fp &&
               !strcmp(state.fingerprint, fp) &&
               (state.cur.expiration == 0 ||
                now < state.cur.expiration - EXPIRY_SLACK)) {
        /* The refresh failed but what we hold is still good: keep it. */
        CPLDebug("VSITUNE",
                 "credentials refresh failed, keeping current "
                 "ones: %s",
                 cerr);
        err = vt__creds_copy(out, &state.cur);
    } else {
        err = VT_ECREDS;
        vt__creds_put(errbuf, errlen, "%s", cerr);
        if (gen == state.gen && fp) {
            free(state.fail_fp);
            state.fail_fp = strdup(fp);
            snprintf(state.fail_msg, sizeof(state.fail_msg), "%s", cerr);
            state.fail_until = now + FAIL_REMEMBER;
        }
    }
    if (cerr_code == VT_OK && gen == state.gen) {
        free(state.fail_fp);
        state.fail_fp = NULL;
    }
    pthread_mutex_unlock(&state.lock);
out:
    vt__creds_clear(&fresh);
    free(fp);
    return err;
}

void vt__creds_reset(void)
{
    pthread_mutex_lock(&state.lock);
    vt__creds_clear(&state.cur);
    free(state.fingerprint);
    state.fingerprint = NULL;
    state.have = 0;
    state.next_try = 0;
    free(state.fail_fp);
    state.fail_fp = NULL;
    state.gen++;
    pthread_mutex_unlock(&state.lock);
    vt__creds_profile_region_reset();
}
