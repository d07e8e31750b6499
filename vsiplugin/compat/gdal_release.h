/* gdal_release.h: what stock GDAL does differently from one release to the
 * next, as one table chosen at run time from the running GDAL's version.
 *
 * vsitune must say and do what the GDAL it runs under says and does (error
 * words, which failures GDAL keeps, its listing rules, its CA option order).
 * Those rules change between releases. They live here, one row per release
 * that changed one, each row complete, so that the rules of every release are
 * compiled into every build and a unit test on any host can run them all
 * (vt__gdal_release_set). The row is chosen once from
 * GDALVersionInfo("VERSION_NUM") (plugin.c asks at registration, any other
 * first use asks too) and read by gdal_error.c, handler.c and config.c.
 *
 * Only takeover.cpp keeps `#if GDAL_VERSION_NUM`: its branches follow GDAL's
 * C++ signatures and vtable layout, which a table cannot change (plugin.c
 * refuses to run under a release other than the one it was built for).
 *
 * Thread safety: the chosen row is an atomic pointer to a constant row; any
 * thread may read it at any time, no lock. */
#ifndef VT_GDAL_RELEASE_H
#define VT_GDAL_RELEASE_H

/* The rules of one GDAL release (and of the releases up to the next row).
 * Each field names the release that brought it and where it comes from. */
typedef struct vt_gdal_release {
    int from;   /* first GDAL_VERSION_NUM these rules apply to (3100000) */
    const char *name;            /* "3.10" */

    /* 3.7 (cpl_http.cpp, GDAL PR 6632, path-specific HTTP options): the CA
     * options GDAL_CURL_CA_BUNDLE, CURL_CA_BUNDLE, SSL_CERT_FILE are looked
     * up for the path of a read or a listing, and the first set wins for
     * every request. 0 (3.6): a handle's read takes the last set one, a
     * listing or credentials fetch the first, none per path (config.h). */
    int ca_first_wins_by_path;

    /* 3.7 (the same PR: cpl_http.cpp CPLHTTPGetOptionsFromEnv(pszFilename),
     * its asAssocEnvVarOptionName table, read once per handle): a read's
     * and a listing's HTTP options are looked up for the file's path first
     * (GDAL_HTTP_VERSION, _CONNECTTIMEOUT, _TIMEOUT, _LOW_SPEED_TIME,
     * _LOW_SPEED_LIMIT, _USERPWD, _PROXY, GDAL_HTTPS_PROXY,
     * GDAL_HTTP_PROXYUSERPWD, GDAL_PROXY_AUTH, GDAL_HTTP_NETRC, _NETRC_FILE,
     * _MAX_RETRY, _RETRY_DELAY, _HEADERS, _HEADER_FILE, _AUTH, _BEARER,
     * _COOKIE). Not in that table, so read from the configuration only on
     * every release: GDAL_HTTP_USERAGENT, GDAL_HTTP_UNSAFESSL,
     * CPL_CURL_VERBOSE. 0 (3.6, CPLHTTPGetOptionsFromEnv() without a path):
     * all of them from the configuration, none per path. */
    int http_opts_by_path;

    /* 3.10 (cpl_vsil_curl.cpp, VSICurlHandle::Exists): a failure GDAL keeps
     * for a name, met again by an open or stat asked for errors, sets
     * VSIE_HttpError "HTTP response code: <n>". 0: GDAL says nothing. */
    int known_failure_says_status;

    /* 3.11 (cpl_vsil_curl.cpp, Open's listing): an open of a name missing
     * from a listing cut at one page of 1000 opens an empty handle, and a
     * name ending in ".nc.zarr" (a Kerchunk reference) is never listed for.
     * 0: a cut listing sends GDAL to ask whether the name is a directory. */
    int open_listing_one_page;

    /* 3.13 (cpl_vsil_curl.cpp, "Do not update cached file properties if
     * cURL returned a non-HTTP error"): a failure without an HTTP answer is
     * not kept; met again, GDAL asks again and says "CURL error: ..." (or
     * warns "HTTP response code on <url>: 0"). 0: kept like any failure. */
    int network_failure_asked_again;

    /* 3.13 (DownloadRegion asks S3's error with errors on): the first read
     * of a name opened without a check (an empty handle) sets the server's
     * error as the VSI error. 0: it fails quietly. */
    int read_of_missing_says;

    /* cpl_aws.cpp, the end of the credentials chain: GDAL's words when no
     * credentials were found, the credentials file's name between the two
     * (3.13: "No valid AWS credentials found. ..."). */
    const char *no_creds_before;
    const char *no_creds_after;

    /* 3.13 (cpl_azure.cpp, measured on the lab's Azurite): /vsiaz/ sends
     * x-ms-version on every request, with a SAS or unsigned too. 0 (3.6 to
     * 3.10 measured): with a shared key or a bearer token only. */
    int az_ms_version_always;

    /* cpl_azure.cpp, the end of its credentials chain: GDAL's words when no
     * Azure credentials were found (3.13: "InvalidCredentials: No valid
     * Azure credentials found. ..."). */
    const char *az_no_creds;

    /* 3.13 (measured on the lab's Azurite, gdalinfo and VSIStatL): /vsiaz/
     * words a failed open with Azure's error: "<Code>: <Message>" from its
     * error body (VSIE_ObjectStorageGenericError), a 404 of an object
     * "Not Found" as VSIE_ObjectNotFound, which 3.13 reports as
     * "ObjectNotFound: Not Found" (GDAL's open asks with a HEAD, whose 404
     * has no body). 0 (3.6 to 3.10 measured): "HTTP
     * response code: <n>", the body never read. */
    int az_error_words;
} vt_gdal_release;

/* The rules of the running GDAL (or of the release a test set). Never NULL;
 * the row lives for the process. On first use reads
 * GDALVersionInfo("VERSION_NUM"). Any thread. */
const vt_gdal_release *vt__gdal_release(void);

/* The GDAL_VERSION_NUM of the running GDAL (e.g. 3060200), asked of GDAL
 * once; a test's vt__gdal_release_set does not change it. */
int vt__gdal_release_running(void);

/* The rules of GDAL version_num (e.g. 3100300): the last row whose `from`
 * is at most version_num; below 3.6, 3.6's. Pure. */
const vt_gdal_release *vt__gdal_release_for(int version_num);

/* Tests: use the rules of version_num from now on, in every thread (0: the
 * running GDAL's again). */
void vt__gdal_release_set(int version_num);

#endif
