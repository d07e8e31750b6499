/* gdal_error.c: a failed open as stock GDAL reports it (gdal_error.h). */
#include "compat/gdal_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cpl_error.h>
#include <cpl_vsi_error.h>

#include "compat/gdal_release.h"
#include "base/xmlscan.h"

int vt__gdal_cple_for_vsie(int vsie, int default_cple)
{
    switch (vsie) {
    case VSIE_HttpError: return CPLE_HttpResponse;
    case VSIE_AWSError: return CPLE_AWSError;
    case VSIE_AWSAccessDenied: return CPLE_AWSAccessDenied;
    case VSIE_AWSBucketNotFound: return CPLE_AWSBucketNotFound;
    case VSIE_AWSObjectNotFound: return CPLE_AWSObjectNotFound;
    case VSIE_AWSInvalidCredentials: return CPLE_AWSInvalidCredentials;
    case VSIE_AWSSignatureDoesNotMatch: return CPLE_AWSSignatureDoesNotMatch;
    case VSIE_None: return CPLE_None;
    default: return default_cple;
    }
}

/* GDAL's CanRestartOnError, for an answer that was not followed: the VSIE_*
 * code and GDAL's message into msg. */
static int from_body(const char *body, size_t len, char *msg, size_t cap,
                     char **code_out)
{
    char *code = NULL, *text = NULL;
    int vsie = VSIE_AWSError;
    int xml = (len >= 5 && !strncmp(body, "<?xml", 5)) ||
              (len >= 7 && !strncmp(body, "<Error>", 7));

    if (!xml) {
        snprintf(msg, cap, "Invalid AWS response: %.*s", (int)len, body);
        return vsie;
    }
    code = vt__xml_tag(body, len, "Code");
    /* The redirect codes are followed when they name where to go; without
     * it GDAL calls the answer malformed, as it does one without a code. */
    const char *need = NULL;
    if (code && !strcasecmp(code, "AuthorizationHeaderMalformed"))
        need = "Region";
    else if (code && (!strcasecmp(code, "PermanentRedirect") ||
                      !strcasecmp(code, "TemporaryRedirect")))
        need = "Endpoint";
    if (need)
        text = vt__xml_tag(body, len, need);
    if (!code || (need && !text)) {
        snprintf(msg, cap, "Malformed AWS XML response: %.*s", (int)len, body);
        goto out;
    }
    free(text);
    text = vt__xml_tag(body, len, "Message");
    if (!text) {
        snprintf(msg, cap, "%.*s", (int)len, body);
        goto out;
    }
    if (!strcasecmp(code, "AccessDenied"))
        vsie = VSIE_AWSAccessDenied;
    else if (!strcasecmp(code, "NoSuchBucket"))
        vsie = VSIE_AWSBucketNotFound;
    else if (!strcasecmp(code, "NoSuchKey"))
        vsie = VSIE_AWSObjectNotFound;
    else if (!strcasecmp(code, "SignatureDoesNotMatch"))
        vsie = VSIE_AWSSignatureDoesNotMatch;
    snprintf(msg, cap, "%s", text);
out:
    free(text);
    *code_out = code;
    return vsie;
}

void vt__gdal_error_for_open(const vt_gdal_fail *f, vt_gdal_report *out)
{
    char gdal_msg[VT_GDAL_MSG_CAP - 600], detail[512]; /* both fit message */
    char *code = NULL;
    const char *where = f->where ? f->where : "";
    const char *why = f->transport && *f->transport ? f->transport : NULL;

    memset(out, 0, sizeof(*out));
    if (f->err == VT_ECREDS) {
        /* The chain's message is GDAL's own words plus vsitune's detail. */
        out->vsie = VSIE_AWSInvalidCredentials;
        snprintf(out->message, sizeof(out->message), "%s",
                 f->message && *f->message ? f->message
                 : "AWS_SECRET_ACCESS_KEY and AWS_NO_SIGN_REQUEST "
                   "configuration options not defined");
        out->cple = vt__gdal_cple_for_vsie(out->vsie, CPLE_OpenFailed);
        return;
    }
    if (f->said && f->status > 0) {
        /* the backend's words are GDAL's; the warning as for an S3 body */
        out->vsie = f->said_vsie;
        snprintf(out->message, sizeof(out->message), "%s", f->said);
        snprintf(out->detail, sizeof(out->detail), "%s: HTTP %ld", where,
                 f->status);
        if (f->status != 400 && f->status != 404) {
            out->warn = 1;
            snprintf(out->warning, sizeof(out->warning),
                     "HTTP response code on %s: %ld", f->url ? f->url : where,
                     f->status);
        }
        out->cple = vt__gdal_cple_for_vsie(out->vsie, CPLE_OpenFailed);
        return;
    }
    if (f->status <= 0) {
        out->vsie = VSIE_HttpError;
        snprintf(gdal_msg, sizeof(gdal_msg), "CURL error: %s",
                 why ? why : vt_strerror(f->err));
        snprintf(detail, sizeof(detail), "%s: %s", where,
                 f->cause ? f->cause : vt_strerror(f->err));
    } else if (f->body && f->body_len > 0) {
        out->vsie = from_body(f->body, f->body_len, gdal_msg, sizeof(gdal_msg),
                              &code);
        snprintf(detail, sizeof(detail), "%s: HTTP %ld%s%s", where, f->status,
                 code ? " " : "", code ? code : "");
        if (f->status != 400 && f->status != 404) {
            out->warn = 1;
            snprintf(out->warning, sizeof(out->warning),
                     "HTTP response code on %s: %ld", f->url ? f->url : where,
                     f->status);
        }
    } else {
        out->vsie = VSIE_HttpError;
        if (why)
            snprintf(gdal_msg, sizeof(gdal_msg), "HTTP response code: %ld - %s",
                     f->status, why);
        else
            snprintf(gdal_msg, sizeof(gdal_msg), "HTTP response code: %ld",
                     f->status);
        snprintf(detail, sizeof(detail), "%s: HTTP %ld (%s)", where, f->status,
                 vt_strerror(f->err));
    }
    /* GDAL's words first. Where S3 said why (an error body), vsitune adds
     * the object, the status and S3's code after them; where there was no
     * answer, the object and what failed (docs/credentials.md); where GDAL's
     * words are only the HTTP status, they stay exact (GDAL's own tests
     * compare them), and the detail goes to the debug log alone. */
    if ((f->status > 0 && f->body && f->body_len > 0) || f->status <= 0)
        snprintf(out->message, sizeof(out->message), "%s (vsitune: %s)",
                 gdal_msg, detail);
    else
        snprintf(out->message, sizeof(out->message), "%s", gdal_msg);
    snprintf(out->detail, sizeof(out->detail), "%s", detail);
    out->cple = vt__gdal_cple_for_vsie(out->vsie, CPLE_OpenFailed);
    free(code);
}

void vt__gdal_error_in_context(const vt_gdal_fail *f, int set_error,
                               int vsi_error_set, vt_gdal_report *out)
{
    int from_body = f->status > 0 &&
                    ((f->body && f->body_len > 0) || f->said);
    if (f->err == VT_ECREDS || (set_error && !vsi_error_set))
        return; /* as vt__gdal_error_for_open has it */
    if (!set_error || !from_body) {
        out->vsie = VSIE_None; /* S3's body sets it even over another */
        out->cple = CPLE_None;
    }
    if (!out->warn && f->status != 400 && f->status != 404) {
        out->warn = 1;
        snprintf(out->warning, sizeof(out->warning),
                 "HTTP response code on %s: %ld",
                 f->url ? f->url : (f->where ? f->where : ""), f->status);
    }
}

int vt__gdal_error_for_known(const vt_gdal_fail *f, int set_error,
                             int size_asked, int vsi_error_set,
                             vt_gdal_report *out)
{
    const vt_gdal_release *rel = vt__gdal_release();

    memset(out, 0, sizeof(*out));
    if (!rel->known_failure_says_status || f->err == VT_ECREDS)
        return 0; /* before 3.10: nothing; credentials: no request made */
    if (f->status > 0) {
        if (!set_error || vsi_error_set)
            return 0;
        out->vsie = VSIE_HttpError;
        snprintf(out->message, sizeof(out->message), "HTTP response code: %ld",
                 f->status);
    } else if (rel->network_failure_asked_again) {
        const char *why = f->transport && *f->transport ? f->transport
                                                        : vt_strerror(f->err);
        if ((set_error || size_asked) && !vsi_error_set) {
            out->vsie = VSIE_HttpError;
            snprintf(out->message, sizeof(out->message), "CURL error: %s", why);
        } else {
            out->warn = 1;
            snprintf(out->warning, sizeof(out->warning),
                     "HTTP response code on %s: 0",
                     f->url ? f->url : (f->where ? f->where : ""));
        }
    } else {
        return 0; /* 3.10-3.12 keep the failure: Exists() has no code */
    }
    out->cple = out->vsie != VSIE_None
                    ? vt__gdal_cple_for_vsie(out->vsie, CPLE_OpenFailed)
                    : CPLE_None;
    return 1;
}

int vt__gdal_keeps_failure(const vt_gdal_fail *f)
{
    if (f->err == VT_ECREDS)
        return 0;
    return f->status > 0 || !vt__gdal_release()->network_failure_asked_again;
}

int vt__gdal_error_for_open_again(const vt_gdal_fail *f, int set_error,
                                  int vsi_error_set, vt_gdal_report *out)
{
    vt_gdal_report first;
    if (!vt__gdal_error_for_known(f, set_error, 0, vsi_error_set, out))
        return 0;
    vt__gdal_error_for_open(f, &first); /* for its detail */
    snprintf(out->detail, sizeof(out->detail), "%s", first.detail);
    if (out->vsie != VSIE_None && f->status > 0 && f->body && f->body_len > 0) {
        size_t n = strlen(out->message);
        snprintf(out->message + n, sizeof(out->message) - n, " (vsitune: %s)",
                 first.detail);
    }
    return 1;
}

int vt__gdal_read_of_missing_says(void)
{
    return vt__gdal_release()->read_of_missing_says;
}

void vt__gdal_no_creds_words(char *buf, size_t cap, const char *cred_path)
{
    const vt_gdal_release *rel = vt__gdal_release();

    snprintf(buf, cap, "%s%s%s", rel->no_creds_before, cred_path,
             rel->no_creds_after);
}
