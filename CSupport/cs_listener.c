/* cs_listener.c — listening sockets: raw non-blocking sockets under a uv_poll_t, accept4 in batches. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cs_internal.h"

/* Accepts per wakeup, so one busy listener cannot starve the loop. */
#define ACCEPT_BATCH 64
/* Pause after EMFILE/ENFILE: the pending connection keeps the socket readable (polling would spin). */
#define ACCEPT_BACKOFF_MS 50

struct cs_listener {
    cs_base base;
    cs_loop *loop;
    uv_poll_t poll;
    uv_timer_t backoff;
    int fd;
    int port;
    int closing;
    int paused;             /* cs_listener_pause: not accepting until resumed */
    int pending_closes;     /* handles whose close callback has not run */
    cs_listener_callbacks cbs;
    void *ctx;
};

static void listener_on_poll(uv_poll_t *poll, int status, int events);

static void listener_handle_closed(uv_handle_t *h)
{
    cs_listener *l = h->data;
    if (--l->pending_closes > 0)
        return;
    close(l->fd);
    if (l->cbs.on_close != NULL)
        l->cbs.on_close(l->ctx);
    free(l);
}

static void listener_begin_close(cs_listener *l)
{
    if (l->closing)
        return;
    l->closing = 1;
    l->pending_closes = 2;
    uv_close((uv_handle_t *)&l->poll, listener_handle_closed);
    uv_close((uv_handle_t *)&l->backoff, listener_handle_closed);
}

static void listener_shutdown(cs_base *self)
{
    listener_begin_close((cs_listener *)self);
}

static void listener_resume(uv_timer_t *t)
{
    cs_listener *l = t->data;
    if (!l->closing && !l->paused && uv_poll_start(&l->poll, UV_READABLE, listener_on_poll) < 0)
        listener_begin_close(l);
}

static void listener_on_poll(uv_poll_t *poll, int status, int events)
{
    cs_listener *l = poll->data;
    (void)events;
    if (l->closing)
        return;
    if (status < 0) {
        /* The listening socket is broken; closing tells the owner. */
        listener_begin_close(l);
        return;
    }

    for (int i = 0; i < ACCEPT_BATCH && !l->closing && !l->paused; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                uv_poll_stop(&l->poll);
                uv_timer_start(&l->backoff, listener_resume, ACCEPT_BACKOFF_MS, 0);
            }
            return; /* EAGAIN, or nothing useful to do until the next round */
        }
        int err = 0;
        cs_conn *conn = cs__conn_new(l->loop, fd, &err);
        if (conn == NULL)
            continue; /* fd already closed by cs__conn_new */
        if (l->cbs.on_accept != NULL)
            l->cbs.on_accept(l->ctx, conn);
        else
            cs_conn_close(conn);
    }
}

/* Parses an IPv4 or IPv6 literal into addr; returns the address length or 0. */
static socklen_t parse_host(const char *host, int port, struct sockaddr_storage *addr)
{
    memset(addr, 0, sizeof *addr);
    struct sockaddr_in *a4 = (struct sockaddr_in *)addr;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        return sizeof *a4;
    }
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)addr;
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return sizeof *a6;
    }
    return 0;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

int cs_listen(cs_loop *loop, const char *host, int port, int backlog, int flags,
              const cs_listener_callbacks *cbs, void *ctx, cs_listener **out)
{
    if (loop->closing)
        return -ESHUTDOWN;
    if (host == NULL || port < 0 || port > 65535 || out == NULL)
        return -EINVAL;

    struct sockaddr_storage addr;
    socklen_t addrlen = parse_host(host, port, &addr);
    if (addrlen == 0)
        return -EINVAL;

    int one = 1;
    int r = 0;
    if ((flags & CS_LISTEN_FIRST) && port != 0) {
        /* A bind without SO_REUSEPORT fails while any socket listens there. */
        int probe = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe < 0)
            return -errno;
        if (setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind(probe, (struct sockaddr *)&addr, addrlen) < 0)
            r = -errno;
        close(probe);
        if (r < 0)
            return r;
    }

    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        ((flags & CS_LISTEN_REUSEPORT) && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) ||
        bind(fd, (struct sockaddr *)&addr, addrlen) < 0 ||
        listen(fd, backlog > 0 ? backlog : SOMAXCONN) < 0) {
        r = -errno;
        close(fd);
        return r;
    }

    cs_listener *l = calloc(1, sizeof *l);
    if ((r = l == NULL ? -ENOMEM : uv_poll_init(&loop->uv, &l->poll, fd)) < 0) {
        close(fd);
        free(l);
        return r;
    }
    l->base.shutdown = listener_shutdown;
    l->loop = loop;
    l->fd = fd;
    l->port = bound_port(fd);
    if (cbs != NULL)
        l->cbs = *cbs;
    l->ctx = ctx;
    l->poll.data = l;
    uv_timer_init(&loop->uv, &l->backoff); /* cannot fail on unix */
    l->backoff.data = l;
    if ((r = uv_poll_start(&l->poll, UV_READABLE, listener_on_poll)) < 0) {
        /* The handles must be closed; the caller, who gets an error, hears nothing more. */
        memset(&l->cbs, 0, sizeof l->cbs);
        listener_begin_close(l);
        return r;
    }
    *out = l;
    return 0;
}

int cs_listener_port(const cs_listener *listener)
{
    return listener->port;
}

void cs_listener_pause(cs_listener *listener)
{
    if (listener == NULL || listener->closing || listener->paused)
        return;
    listener->paused = 1;
    uv_poll_stop(&listener->poll);
    uv_timer_stop(&listener->backoff);
}

void cs_listener_resume(cs_listener *listener)
{
    if (listener == NULL || listener->closing || !listener->paused)
        return;
    listener->paused = 0;
    listener_resume(&listener->backoff);
}

void cs_listener_close(cs_listener *listener)
{
    if (listener != NULL)
        listener_begin_close(listener);
}
