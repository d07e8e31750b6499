/* engine_sock.c: the I/O thread's last defence against a stalled
 * connection (see the top of engine_io.c): curl opens and closes its
 * sockets through us (CURLOPT_OPENSOCKETFUNCTION, CLOSESOCKETFUNCTION), so
 * every socket is known; each attempt records its connection's local port
 * just before its request is sent (CURLOPT_PREREQFUNCTION, which also stops
 * curl's own resends while a server is failing); and a connection that
 * stalled or that we ended a stream on early is shut down by that port, so
 * curl retires it and every stream parked on it fails now and is retried.
 *
 * All on the I/O thread, no lock; the socket list lives in struct
 * vt_engine (engine_int.h) and is freed by engine_io.c when the thread
 * ends. */
#include "http/engine_int.h"

#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* Socket bookkeeping, so a stalled connection can be found and shut down.
 * curl 7.88 cannot say which connection a transfer used once it is done if
 * other streams still use it (CURLINFO_ACTIVESOCKET needs the transfer to
 * have released an idle connection). So curl opens its sockets through us
 * (we know them all), and each attempt records the local port of its
 * connection just before its request is sent. All on the I/O thread. */
curl_socket_t vt__eng_open_socket(void *clientp, curlsocktype purpose,
                                  struct curl_sockaddr *addr)
{
    struct vt_eng_xfer *x = clientp;
    struct vt_engine *e = x->eng;
    curl_socket_t s;

    (void)purpose;
    /* curl 7.88 retries a stream the server refused (RST_STREAM
     * REFUSED_STREAM) on a fresh connection by itself, up to 5 times per
     * attempt: a server refusing every stream got 6 requests per attempt.
     * One fresh connection per attempt is enough; a second one fails the
     * attempt, and our own retry rules (budget, deadline) decide. */
    if (++x->socks_opened > 2)
        return CURL_SOCKET_BAD;
    /* CLOEXEC: a program we exec must not inherit our connections. */
    s = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
    if (s == CURL_SOCKET_BAD)
        return s;
    if (e->n_socks == e->cap_socks) {
        size_t cap = e->cap_socks ? e->cap_socks * 2 : 16;
        curl_socket_t *n = realloc(e->socks, cap * sizeof(*n));
        if (!n)
            return s; /* works, just cannot be shut down by us */
        e->socks = n;
        e->cap_socks = cap;
    }
    e->socks[e->n_socks++] = s;
    return s;
}

int vt__eng_close_socket(void *clientp, curl_socket_t s)
{
    struct vt_engine *e = clientp;

    for (size_t i = 0; i < e->n_socks; i++) {
        if (e->socks[i] == s) {
            e->socks[i] = e->socks[--e->n_socks];
            break;
        }
    }
    return close(s);
}

int vt__eng_on_prereq(void *clientp, char *primary_ip, char *local_ip,
                      int primary_port, int local_port)
{
    struct vt_eng_xfer *x = clientp;

    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    /* curl sends an attempt's request again by itself on a refused h2
     * stream or a dead reused connection. While the server or object is
     * failing, an attempt is one request. */
    if (++x->requests > 1 && x->single) {
        x->resend_refused = 1;
        return CURL_PREREQFUNC_ABORT;
    }
    x->local_port = local_port;
    return CURL_PREREQFUNC_OK;
}

static int local_port_of(curl_socket_t s)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(s, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

/* Shut down the socket of the connection x's attempt used, so curl retires
 * it and fails (and we retry) whatever else was parked on it (see the top of
 * this file). Only when a response had started over h2 on it: curl already
 * closes an HTTP/1.1 connection after a timeout or an abort, and a request
 * that timed out before any answer may just be queued by a busy server. The
 * socket stays curl's: curl closes it when it drops the connection. */
void vt__eng_kill_connection(struct vt_engine *e, struct vt_eng_xfer *x,
                             long httpver)
{
    if (httpver != CURL_HTTP_VERSION_2_0 || x->local_port <= 0)
        return;
    for (size_t i = 0; i < e->n_socks; i++) {
        if (local_port_of(e->socks[i]) == x->local_port) {
            shutdown(e->socks[i], SHUT_RDWR);
            return;
        }
    }
}
