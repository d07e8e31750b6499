/*
 * floor_get.c: the floor of a many-object open (issue 22): one plain libcurl ranged
 * GET per object, one easy handle, so every GET after the first reuses the first one's
 * connection (and TLS session). What no COG reader can beat: the bytes the header
 * needs, one request, no decode, no GDAL.
 *
 * Built by the bench at run time (bench/scen_many.py: cc ... $(curl-config --libs)),
 * never part of the product. Single thread; the handle lives for the whole run.
 *
 * usage: floor_get URL_PREFIX COUNT BYTES [CAFILE]
 *   GETs URL_PREFIX0000.tif ... with Range: bytes=0-(BYTES-1) over HTTP/1.1, in order.
 * Prints one JSON line {"result": {...}}: GETs, bytes received, connections opened,
 * elapsed seconds of all GETs and per GET. Exit 1 if any GET fails or is not a 206.
 */

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

int
main(int argc, char **argv)
{
  CURL *h = NULL;
  char url[4096], range[64];
  long long got = 0;
  long conns = 0, status = 0, one = 0;
  int count, i, rc = 1;
  long bytes;
  double t0, elapsed;

  if (argc < 4 || (count = atoi(argv[2])) < 1 || (bytes = atol(argv[3])) < 1) {
    fprintf(stderr, "usage: floor_get URL_PREFIX COUNT BYTES [CAFILE]\n");
    return 2;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return 1;
  h = curl_easy_init();
  if (!h)
    goto out;
  snprintf(range, sizeof(range), "0-%ld", bytes - 1);
  curl_easy_setopt(h, CURLOPT_RANGE, range);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, count_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
  if (argc > 4)
    curl_easy_setopt(h, CURLOPT_CAINFO, argv[4]);
  t0 = now_s();
  for (i = 0; i < count; i++) {
    snprintf(url, sizeof(url), "%s%04d.tif", argv[1], i);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (curl_easy_perform(h) != CURLE_OK) {
      fprintf(stderr, "floor_get: GET %s failed\n", url);
      goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 206) {
      fprintf(stderr, "floor_get: GET %s: status %ld\n", url, status);
      goto out;
    }
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &one);
    conns += one;
  }
  elapsed = now_s() - t0;
  printf("{\"result\": {\"gets\": %d, \"bytes\": %lld, \"range_bytes\": %ld, "
         "\"connections\": %ld, \"elapsed_s\": %.6f, \"per_get_s\": %.6f, "
         "\"curl\": \"%s\"}}\n",
         count, got, bytes, conns, elapsed, elapsed / count, curl_version());
  rc = 0;
out:
  if (h)
    curl_easy_cleanup(h);
  curl_global_cleanup();
  return rc;
}
