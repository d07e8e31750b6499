/* gdal_error.h: how a failed open is told to GDAL, the way stock GDAL 3.6
 * tells it (and where a later GDAL words it otherwise, as that release does:
 * the running release's rules from gdal_release.h, which a test may set).
 * Pure (no I/O; the only GDAL call is gdal_release.c asking the version
 * once): the numbers come from GDAL's headers, the rules from
 * cpl_vsil_curl.cpp (GetFileSizeOrHeaders) and cpl_aws.cpp
 * (CanRestartOnError), checked against stock GDAL 3.6.2 on the lab and a
 * fake server (tests/unit/test_gdal_error.c says which answer gave which
 * report).
 *
 * Stock GDAL, on an open whose first request fails, hands VSIError() one of:
 *   - no HTTP answer (connection refused, DNS, timeout): VSIE_HttpError,
 *     "CURL error: <curl's words>";
 *   - an answer without a body: VSIE_HttpError, "HTTP response code: <n>";
 *   - a body that is not S3's XML: VSIE_AWSError, "Invalid AWS response:
 *     <body>"; XML without <Code>: "Malformed AWS XML response: <body>";
 *     <Code> without <Message>: VSIE_AWSError, the body;
 *   - <Code> + <Message>: the message, as VSIE_AWSAccessDenied (AccessDenied),
 *     VSIE_AWSBucketNotFound (NoSuchBucket), VSIE_AWSObjectNotFound
 *     (NoSuchKey), VSIE_AWSSignatureDoesNotMatch (SignatureDoesNotMatch),
 *     else VSIE_AWSError (InvalidAccessKeyId, SlowDown, ExpiredToken, ...);
 *   - no credentials: VSIE_AWSInvalidCredentials with the chain's message.
 * When the body set the error and the status is neither 400 nor 404, GDAL
 * also emits CE_Warning CPLE_AppDefined "HTTP response code on <url>: <n>".
 * GDALOpen turns the VSI error into a CPLError of the matching CPLE_* class
 * (VSIToCPLError), which is what gdalinfo prints and rasterio raises.
 *
 * vsitune's report is GDAL's, word for word; when S3 sent an error body, a
 * detail naming the object, the status and S3's code follows in
 * " (vsitune: ...)" (the class and gist stay GDAL's); when GDAL's words are
 * only the status or curl's, they stay exact (GDAL's own autotest compares
 * them) and the detail goes to the CPL_DEBUG log. */
#ifndef VT_GDAL_ERROR_H
#define VT_GDAL_ERROR_H

#include <stddef.h>

#include "base/error.h"

/* What failed. Pointers are borrowed for the call. */
typedef struct vt_gdal_fail {
    vt_err err;            /* vsitune's conclusion (VT_ECREDS, VT_ENETWORK, ...) */
    long status;           /* last HTTP status; 0: no answer */
    const char *body;      /* the answer's body (S3's XML error) or NULL */
    size_t body_len;
    const char *transport; /* curl's / the engine's words when there was no
                              usable answer, or NULL */
    const char *cause;     /* no answer: the engine's words on what failed
                              and whether it was retried, or NULL */
    const char *message;   /* VT_ECREDS: the credentials chain's message
                              (already in GDAL's words), else NULL */
    const char *where;     /* "s3://bucket/key" */
    const char *url;       /* the URL asked (GDAL's warning names it) or NULL */
    int again;             /* the same failure as the last one this process
                              saw for the name (backends/failmem.h), which stock GDAL
                              would have answered from its cache */
    const char *said;      /* an answer the backend words itself as the
                              running GDAL words it for its prefix (/vsiaz/
                              on 3.13: Azure's code and message), or NULL:
                              the rules above */
    int said_vsie;         /* said's VSIE_* */
} vt_gdal_fail;

#define VT_GDAL_MSG_CAP 2048

typedef struct vt_gdal_report {
    int vsie;                       /* VSIE_* for VSIError() */
    int cple;                       /* the CPLE_* GDALOpen reports for it */
    char message[VT_GDAL_MSG_CAP];  /* GDAL's words [+ " (vsitune: ...)"] */
    char detail[512];               /* vsitune's: "s3://b/k: HTTP n Code" */
    int warn;                       /* 1: also emit warning[] first */
    char warning[VT_GDAL_MSG_CAP];  /* "HTTP response code on <url>: <n>" */
} vt_gdal_report;

/* Fill *out for the failure f of an open (or of a stat asked to set an
 * error). Never fails; out is always filled. */
void vt__gdal_error_for_open(const vt_gdal_fail *f, vt_gdal_report *out);

/* *out (from vt__gdal_error_for_open) as GDAL words the same failure when
 * the open did not ask for errors (set_error 0: GDALOpen without
 * GDAL_OF_VERBOSE_ERROR, as ogrinfo's first try) or a VSI error was already
 * set (vsi_error_set): GDAL sets its VSI error only when asked and none is
 * set, except that S3's error body sets it whenever asked; and whenever it
 * sets none itself, it warns "HTTP response code on <url>: <n>" (n 0 when
 * there was no answer) for any status but 400 and 404. */
void vt__gdal_error_in_context(const vt_gdal_fail *f, int set_error,
                               int vsi_error_set, vt_gdal_report *out);

/* What stock GDAL says when it meets again a name whose answer it keeps in
 * its cache of file properties (or, from 3.13, asks again after a network
 * failure, which it no longer keeps), f being that earlier failure (a 404
 * vsitune remembers, or a name absent from a listing vsitune holds: status
 * 404, no body). This is GDAL's VSICurlHandle::Exists/GetFileSize on a
 * stat, or on an open that checks the object:
 *   - GDAL 3.6 (and up to 3.9): nothing;
 *   - 3.10+, an HTTP status: with set_error, when no VSI error is set yet,
 *     VSIE_HttpError "HTTP response code: <n>";
 *   - 3.13+, no HTTP answer (f->status <= 0, not a credentials failure): with
 *     set_error and no VSI error set yet, VSIE_HttpError "CURL error: <curl's
 *     words>"; otherwise the CE_Warning "HTTP response code on <url>: 0".
 * set_error: the caller asked for the error (VSI_STAT_SET_ERROR_FLAG, an
 * open's bSetError); size_asked: a stat that wants the size (3.13 then asks
 * the server with errors on); vsi_error_set: a VSI error is already set.
 * Returns 0 when GDAL says nothing; else out is filled (vsie != VSIE_None:
 * its message is for VSIError; warn: warning[] for CPLError). */
int vt__gdal_error_for_known(const vt_gdal_fail *f, int set_error,
                             int size_asked, int vsi_error_set,
                             vt_gdal_report *out);

/* 1 when stock GDAL keeps the failure f of a name in its cache of file
 * properties, so that its next open or stat of the name meets it without a
 * request (vt__gdal_error_for_known words that): any HTTP answer; a failure
 * without one only up to GDAL 3.12 (3.13 asks again: "Do not update cached
 * file properties if cURL returned a non-HTTP error"); never a credentials
 * failure (no request was made). */
int vt__gdal_keeps_failure(const vt_gdal_fail *f);

/* The open of a name failing again as f (f->again, vt__gdal_keeps_failure)
 * as stock GDAL words it, its answer coming from its cache: filled by
 * vt__gdal_error_for_known for an open (set_error: the open's bSetError;
 * vsi_error_set: a VSI error is set already), where GDAL's message (3.10+:
 * "HTTP response code: <n>") gets vsitune's detail appended when S3 sent an
 * error body, as vt__gdal_error_for_open does. Returns 0 when GDAL says
 * nothing (GDAL 3.6-3.9; no VSI error, no warning: GDALOpen then reports
 * "... does not exist in the file system ..."), else 1 and *out. */
int vt__gdal_error_for_open_again(const vt_gdal_fail *f, int set_error,
                                  int vsi_error_set, vt_gdal_report *out);

/* 1 when stock GDAL's first read of a name it opened without checking it
 * (an empty handle on an extension-less name) sets the server's error as the
 * VSI error (GDAL 3.13+: DownloadRegion asks S3's error with errors on), 0
 * when it fails quietly (3.6-3.12). GDALOpen then reports that error. */
int vt__gdal_read_of_missing_says(void);

/* Stock GDAL's words when no credentials were found (cpl_aws.cpp, the end
 * of the credentials chain), cred_path being the credentials file it read:
 * the running release's (vt_gdal_release.no_creds_before/after). */
void vt__gdal_no_creds_words(char *buf, size_t cap, const char *cred_path);

/* The CPLE_* class GDAL's VSIToCPLError gives a VSIE_* code, default_cple
 * for VSIE_FileError (GDALOpen passes CPLE_OpenFailed). */
int vt__gdal_cple_for_vsie(int vsie, int default_cple);

#endif
