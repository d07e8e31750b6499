/* probe_curl.c: vt_backend_probe's /vsicurl/-only steps: teach the backend
 * a redirect as the engine will once it reports where a GET ended
 * (curl_redirect.c), so that tests see build_get and get use it, and go
 * back to the original URL when the target is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/curl/curl_int.h"
#include "probe.h"

/* "curl-note URL TARGET AGO": a GET of URL ended at TARGET, the server's
 * Date being AGO seconds before now (0: now). Prints one JSON line saying
 * whether it is remembered (GDAL's rules). */
static int curl_note(const vt_backend *be, char **a)
{
    time_t now = time(NULL);
    int kept = vt__curl_redirect_note(a[1], a[2],
                                      (long long)now - atoll(a[3]), now, 1);
    (void)be;
    printf("{\"op\":\"curl-note\",\"kept\":%d}\n", kept);
    return 0;
}

const vt_probe_step vt__probe_steps_curl[] = {
    {"curl-note", 3, curl_note},
    {NULL, 0, NULL},
};
