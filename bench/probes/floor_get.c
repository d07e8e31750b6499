/*
 * floor_get.c: the wire's floor for the bench (issue 22): plain libcurl ranged GETs on
 * one easy handle, so every GET after the first reuses the first one's connection (and
 * TLS session). What no COG reader can beat on the same endpoint: the bytes it needs,
 * one request each, no decode, no GDAL.
 *
 * Built by the bench at run time (bench/scen_many.py: cc ... $(curl-config --libs)),
 * never part of the product. Single thread; the handle lives for the whole run.
 *
 * usage: floor_get URL_PREFIX COUNT BYTES [CAFILE]
 *   many-object opens: GETs URL_PREFIX0000.tif ... with Range: bytes=0-(BYTES-1), in
 *   order. The clock starts before the first GET, so the first connection's cost is in
 *   elapsed_s; per_get_s is elapsed_s / COUNT. cpu_per_get_s: this process's user +
 *   system time per GET after the first (the connect and handshake left out), the CPU
 *   a GET on an open connection costs at the least.
 * usage: floor_get --ranges URL CAFILE|- FIRST-LAST...
 *   cold window: one GET of URL per range, in order, the first on a new connection;
 *   elapsed_s runs from before the connect to the end of the last body.
 * Both over HTTP/1.1. With AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and
 * AWS_REGION, default us-east-1) in the environment, every GET is signed (SigV4,
 * signed here: host, x-amz-content-sha256, x-amz-date), as any client of a private
 * bucket must, so the server checks a signature as it does for the contenders;
 * without them the GETs are anonymous. Prints one JSON line {"result": {...}}: GETs,
 * bytes received, connections opened, elapsed seconds, signed or not. Exit 1 if
 * any GET fails or is not a 206.
 */

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static struct curl_slist *sig_headers; /* the last GET's SigV4 headers */

static int
signing(void)
{
  return getenv("AWS_ACCESS_KEY_ID") && getenv("AWS_SECRET_ACCESS_KEY");
}

/* Counts what arrives; the body itself is not kept. */
static size_t
count_body(char *data, size_t size, size_t nmemb, void *userp)
{
  (void)data;
  *(long long *)userp += (long long)(size * nmemb);
  return size * nmemb;
}

static double
now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's user + system CPU seconds so far. */
static double
cpu_s(void)
{
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void
hex(const unsigned char *md, unsigned n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  unsigned i;

  for (i = 0; i < n; i++) {
    out[2 * i] = digits[md[i] >> 4];
    out[2 * i + 1] = digits[md[i] & 15];
  }
  out[2 * n] = '\0';
}

static void
hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
  unsigned n = 32;

  HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n);
}

/* The SigV4 headers of a GET of url (scheme://host/path, no query) into *list, or
 * nothing when the environment has no credentials. 0, or -1 on a URL it cannot sign. */
static int
sign(const char *url, struct curl_slist **list)
{
  const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
  /* the date is taken for each GET: a run of hundreds may cross a second */
  const char *region = getenv("AWS_REGION") ? getenv("AWS_REGION") : "us-east-1";
  const char *host = strstr(url, "://"), *path;
  char date[17], day[9], creq[4096], sts[1024], line[1024], key[256], sig[65];
  static char key_day[9];     /* the day k was derived for (one region, one secret a run) */
  static unsigned char k[32]; /* the signing key */
  unsigned char md[32];
  unsigned n = 32;
  time_t now = time(NULL);
  struct tm tm;

  curl_slist_free_all(*list);
  *list = NULL;
  if (!signing())
    return 0;
  if (!host || !(path = strchr(host + 3, '/')))
    return -1;
  host += 3;
  gmtime_r(&now, &tm);
  strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
  memcpy(day, date, 8);
  day[8] = '\0';
  /* the paths here are plain keys (letters, digits, '/', '.', '_', '-'): no encoding */
  snprintf(creq, sizeof(creq),
           "GET\n%s\n\nhost:%.*s\nx-amz-content-sha256:%s\nx-amz-date:%s\n\n"
           "host;x-amz-content-sha256;x-amz-date\n%s",
           path, (int)(path - host), host, EMPTY_SHA256, date, EMPTY_SHA256);
  EVP_Digest(creq, strlen(creq), md, &n, EVP_sha256(), NULL);
  hex(md, 32, sig);
  snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", date, day,
           region, sig);
  if (strcmp(day, key_day) != 0) { /* the signing key depends on the day alone here */
    snprintf(key, sizeof(key), "AWS4%s", sk);
    hmac(key, strlen(key), day, k);
    hmac(k, 32, region, k);
    hmac(k, 32, "s3", k);
    hmac(k, 32, "aws4_request", k);
    memcpy(key_day, day, sizeof(key_day));
  }
  hmac(k, 32, sts, md);
  hex(md, 32, sig);
  snprintf(line, sizeof(line),
           "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, "
           "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s",
           ak, day, region, sig);
  *list = curl_slist_append(*list, line);
  *list = curl_slist_append(*list, "x-amz-content-sha256: " EMPTY_SHA256);
  snprintf(line, sizeof(line), "x-amz-date: %s", date);
  *list = curl_slist_append(*list, line);
  return 0;
}

/* One ranged GET of url on h; adds the connections it opened to *conns. 0 on a 206. */
static int
get_range(CURL *h, const char *url, const char *range, long *conns)
{
  long status = 0, opened = 0;

  if (sign(url, &sig_headers) != 0) {
    fprintf(stderr, "floor_get: cannot sign a GET of %s\n", url);
    return -1;
  }
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_RANGE, range);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, sig_headers);
  if (curl_easy_perform(h) != CURLE_OK) {
    fprintf(stderr, "floor_get: GET %s (%s) failed\n", url, range);
    return -1;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (status != 206) {
    fprintf(stderr, "floor_get: GET %s (%s): status %ld\n", url, range, status);
    return -1;
  }
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &opened);
  *conns += opened;
  return 0;
}

static CURL *
new_handle(long long *got, const char *cafile)
{
  CURL *h = curl_easy_init();

  if (!h)
    return NULL;
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, got);
  if (cafile && strcmp(cafile, "-") != 0)
    curl_easy_setopt(h, CURLOPT_CAINFO, cafile);
  return h;
}

/* floor_get --ranges URL CAFILE|- FIRST-LAST... */
static int
run_ranges(int argc, char **argv)
{
  long long got = 0;
  long conns = 0;
  double t0, elapsed;
  int i, rc = 1;
  CURL *h;

  if (argc < 5) {
    fprintf(stderr, "usage: floor_get --ranges URL CAFILE|- FIRST-LAST...\n");
    return 2;
  }
  if (!(h = new_handle(&got, argv[3])))
    return 1;
  t0 = now_s();
  for (i = 4; i < argc; i++)
    if (get_range(h, argv[2], argv[i], &conns) != 0)
      goto out;
  elapsed = now_s() - t0;
  printf("{\"result\": {\"gets\": %d, \"bytes\": %lld, \"connections\": %ld, "
         "\"elapsed_s\": %.6f, \"signed\": %s, \"curl\": \"%s\"}}\n",
         argc - 4, got, conns, elapsed, signing() ? "true" : "false",
         curl_version());
  rc = 0;
out:
  curl_easy_cleanup(h);
  return rc;
}

/* floor_get URL_PREFIX COUNT BYTES [CAFILE] */
static int
run_many(int argc, char **argv)
{
  char url[4096], range[64];
  long long got = 0;
  long conns = 0, bytes;
  int count, i, rc = 1;
  double t0, elapsed, c1 = 0;
  CURL *h;

  if (argc < 4 || (count = atoi(argv[2])) < 1 || (bytes = atol(argv[3])) < 1) {
    fprintf(stderr, "usage: floor_get URL_PREFIX COUNT BYTES [CAFILE]\n");
    return 2;
  }
  if (!(h = new_handle(&got, argc > 4 ? argv[4] : NULL)))
    return 1;
  snprintf(range, sizeof(range), "0-%ld", bytes - 1);
  t0 = now_s();
  for (i = 0; i < count; i++) {
    snprintf(url, sizeof(url), "%s%04d.tif", argv[1], i);
    if (get_range(h, url, range, &conns) != 0)
      goto out;
    if (i == 0)
      c1 = cpu_s(); /* after the connect and TLS handshake */
  }
  elapsed = now_s() - t0;
  printf("{\"result\": {\"gets\": %d, \"bytes\": %lld, \"range_bytes\": %ld, "
         "\"connections\": %ld, \"elapsed_s\": %.6f, \"per_get_s\": %.6f, "
         "\"cpu_per_get_s\": %.6f, \"signed\": %s, \"curl\": \"%s\"}}\n",
         count, got, bytes, conns, elapsed, elapsed / count,
         count > 1 ? (cpu_s() - c1) / (count - 1) : 0.0, signing() ? "true" : "false",
         curl_version());
  rc = 0;
out:
  curl_easy_cleanup(h);
  return rc;
}

int
main(int argc, char **argv)
{
  int rc;

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return 1;
  rc = (argc > 1 && strcmp(argv[1], "--ranges") == 0) ? run_ranges(argc, argv)
                                                        : run_many(argc, argv);
  curl_slist_free_all(sig_headers);
  curl_global_cleanup();
  return rc;
}
