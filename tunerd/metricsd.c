/* metricsd.c: serve /metrics over HTTP/1.1 (metricsd.h).
 *
 * A blocking accept loop with poll() so SIGTERM/SIGINT (installed without
 * SA_RESTART) end it at once; per connection, receive and send timeouts
 * bound every read and write. The answer is built in memory first
 * (open_memstream), so it carries a Content-Length and a render failure
 * becomes a 500, never half a page. */
#include "metricsd.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "exitcode.h"
#include "errbuf.h"

#define HEAD_MAX 8192
#define IO_TIMEOUT_S 5

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

int vt_metrics_parse_listen(const char *listen, char *host, size_t hostcap, int *port,
                            char *err, size_t errlen)
{
    const char *colon, *h = listen;
    size_t hl;
    char *end;
    long p;

    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':') {
            vt__seterr(err, errlen, "--listen '%s': expected [ADDRESS]:PORT", listen);
            return -1;
        }
        h = listen + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon || strchr(listen, ':') != colon) {
            vt__seterr(err, errlen, "--listen '%s': expected ADDRESS:PORT (e.g. 127.0.0.1:9464)",
                       listen);
            return -1;
        }
        hl = (size_t)(colon - listen);
    }
    if (hl == 0 || hl >= hostcap) {
        vt__seterr(err, errlen, "--listen '%s': no address before the port (use 0.0.0.0 "
                   "to listen on every interface)", listen);
        return -1;
    }
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || p < 0 || p > 65535 ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
        vt__seterr(err, errlen, "--listen '%s': port must be 0..65535", listen);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 0;
}

static int bind_addr(const char *addr, char *err, size_t errlen)
{
    char host[256], portstr[16];
    struct addrinfo hints, *ai = NULL;
    int port, fd = -1, one = 1, rc;

    if (vt_metrics_parse_listen(addr, host, sizeof host, &port, err, errlen))
        return -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    snprintf(portstr, sizeof portstr, "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc != 0) {
        vt__seterr(err, errlen, "--listen '%s': '%s' is not a numeric address (%s)", addr,
                   host, gai_strerror(rc));
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
        vt__seterr(err, errlen, "--listen %s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static void say_where(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
    }
    fprintf(stderr, ss.ss_family == AF_INET6 ? "tunerd: serving http://[%s]:%d/metrics\n"
                                             : "tunerd: serving http://%s:%d/metrics\n",
            host, port);
    fflush(stderr);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR && !stop_flag)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void answer(int fd, int code, const char *reason, const char *type, const char *body,
                   size_t len, int with_body)
{
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", code, reason, type, len);

    if (send_all(fd, head, (size_t)n) == 0 && with_body && len)
        (void)send_all(fd, body, len);
}

/* Reads the request head; returns its length, or -1 (timeout, too big, closed). */
static int read_head(int fd, char *buf, size_t cap)
{
    size_t got = 0;

    while (got < cap - 1) {
        ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
        if (r < 0 && errno == EINTR && !stop_flag)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
        buf[got] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return (int)got;
    }
    return -1;
}

/* One connection; returns 1 when it was a scrape of /metrics. */
static int serve_one(int fd, vt_metrics_render render, void *ctx)
{
    static const char text[] = "text/plain; charset=utf-8";
    char head[HEAD_MAX], method[16], target[1024];
    struct timeval tv = { IO_TIMEOUT_S, 0 };
    int scraped = 0;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (read_head(fd, head, sizeof head) < 0) {
        static const char msg[] = "bad request: no complete request head within 8 KiB / 5 s\n";
        answer(fd, 400, "Bad Request", text, msg, sizeof msg - 1, 1);
        return 0;
    }
    if (sscanf(head, "%15s %1023s", method, target) != 2) {
        static const char msg[] = "bad request\n";
        answer(fd, 400, "Bad Request", text, msg, sizeof msg - 1, 1);
        return 0;
    }
    int is_head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !is_head) {
        static const char msg[] = "only GET and HEAD\n";
        answer(fd, 405, "Method Not Allowed", text, msg, sizeof msg - 1, 1);
        return 0;
    }
    target[strcspn(target, "?")] = '\0';
    if (strcmp(target, "/metrics") != 0) {
        static const char msg[] = "tunerd watch: the metrics are at /metrics\n";
        answer(fd, 404, "Not Found", text, msg, sizeof msg - 1, !is_head);
        return 0;
    }
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    int rc = f ? render(f, ctx) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && body) {
        answer(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, len, !is_head);
        scraped = !is_head;
    } else {
        static const char msg[] = "tunerd watch: could not gather the metrics\n";
        answer(fd, 500, "Internal Server Error", text, msg, sizeof msg - 1, !is_head);
    }
    free(body);
    return scraped;
}

int vt_metrics_serve(const char *addr, long max_scrapes, vt_metrics_render render, void *ctx,
                     char *err, size_t errlen)
{
    struct sigaction sa;
    long scrapes = 0;
    int lfd = bind_addr(addr, err, errlen);

    if (lfd < 0)
        return VT_EXIT_USAGE;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    say_where(lfd);
    while (!stop_flag && (max_scrapes <= 0 || scrapes < max_scrapes)) {
        struct pollfd p = { lfd, POLLIN, 0 };
        int r = poll(&p, 1, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
            continue;
        scrapes += serve_one(cfd, render, ctx);
        close(cfd);
    }
    close(lfd);
    return VT_EXIT_OK;
}
