/* probe_curl.c: vt_backend_probe_json's /vsicurl/-only steps: teach the backend
 * a redirect as the engine will once it reports where a GET ended
 * (curl_redirect.c), so that tests see build_get and get use it, and go
 * back to the original URL when the target is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/curl/curl_int.h"

/* "curl-note URL TARGET AGO": a GET of URL ended at TARGET, the server's
 * Date being AGO seconds before now (0: now). Prints one JSON line saying
 * whether it is remembered (GDAL's rules). */
int vt__probe_curl_note(const char *url, const char *target,
                        const char *ago)
{
    time_t now = time(NULL);
    int kept = vt__curl_redirect_note(url, target, (long long)now - atoll(ago),
                                      now, 1);
    printf("{\"op\":\"curl-note\",\"kept\":%d}\n", kept);
    return 0;
}
