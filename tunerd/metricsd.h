/* metricsd.h: the small HTTP server behind `tunerd watch --listen`.
 *
 * Prometheus scrapes GET /metrics; each scrape renders a fresh exposition
 * (prom.h) through the caller's function. One connection at a time (a
 * scraper asks serially), each bounded: at most 8 KiB of request head, 5 s
 * to send it and 5 s to take the answer, then the connection is closed. So
 * no client can make the server hang or grow. It runs until SIGTERM or
 * SIGINT (exit status 0), or after max_scrapes answers to /metrics. */
#ifndef VT_TUNERD_METRICSD_H
#define VT_TUNERD_METRICSD_H

#include <stddef.h>
#include <stdio.h>

/* Writes one exposition to f; returns 0 or -1 (the scrape gets a 500). */
typedef int (*vt_metrics_render)(FILE *f, void *ctx);

/* Splits "HOST:PORT" or "[V6]:PORT" (HOST a numeric address, PORT 0..65535)
 * into host and port. Returns 0, or -1 with the reason in err. */
int vt_metrics_parse_listen(const char *listen, char *host, size_t hostcap, int *port,
                            char *err, size_t errlen);

/* Binds listen, says "tunerd: serving http://ADDR:PORT/metrics" on stderr
 * (the port the kernel chose when PORT is 0) and serves. max_scrapes <= 0:
 * no limit. Returns 0 after a signal or max_scrapes, or an exit status from
 * cli.h with err set when the address cannot be bound. */
int vt_metrics_serve(const char *listen, long max_scrapes, vt_metrics_render render,
                     void *ctx, char *err, size_t errlen);

#endif
