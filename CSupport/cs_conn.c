/* cs_conn.c — TCP connections: a raw non-blocking socket owned by a uv_poll_t. Reading,
 * connecting, closing and the close-after-drain linger (the output queue: cs_conn_out.c). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cs_internal.h"

/* Reads per wakeup: enough for throughput, bounded for fairness. */
#define READS_PER_WAKEUP 4
/* How long close_after_drain keeps discarding input after shutdown(SHUT_WR). */
#define LINGER_MS 1000

static void conn_on_poll(uv_poll_t *poll, int status, int events);

static void conn_handle_closed(uv_handle_t *h)
{
    cs_conn *c = h->data;
    if (--c->pending_closes > 0)
        return;
    if (c->xts_jobs > 0) {
        /* A pool thread still reads for the queue: what it uses stays until it ends. */
        c->close_waits = 1;
        return;
    }
    cs__conn_finish_close(c);
}

void cs__conn_finish_close(cs_conn *c)
{
    if (!c->detached)
        close(c->fd);
    cs__out_free_all(c);
    if (c->cbs.on_close != NULL)
        c->cbs.on_close(c->ctx, c->close_error);
    free(c);
}

void cs__conn_begin_close(cs_conn *c, int error)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->close_error = error;
    c->pending_closes = 2;
    uv_close((uv_handle_t *)&c->poll, conn_handle_closed);
    uv_close((uv_handle_t *)&c->linger, conn_handle_closed);
}

static void conn_shutdown(cs_base *self)
{
    cs__conn_begin_close((cs_conn *)self, -ECANCELED);
}

int cs__conn_update_poll(cs_conn *c)
{
    if (c->closing)
        return 0;
    int want = 0;
    if (c->connecting) {
        want = UV_WRITABLE;
    } else {
        if (c->head != NULL && !c->out_waiting)
            want |= UV_WRITABLE;
        if (c->lingering || (c->reading && !c->eof))
            want |= UV_READABLE;
    }
    if (want == c->events)
        return 0;
    c->events = want;
    if (want == 0)
        return uv_poll_stop(&c->poll);
    int r = uv_poll_start(&c->poll, want, conn_on_poll);
    if (r < 0)
        cs__conn_begin_close(c, r);
    return r;
}

cs_conn *cs__conn_new(cs_loop *loop, int fd, int *err)
{
    cs_conn *c = calloc(1, sizeof *c);
    int r = c == NULL ? -ENOMEM : uv_poll_init(&loop->uv, &c->poll, fd);
    if (r < 0) {
        close(fd);
        free(c);
        *err = r;
        return NULL;
    }
    /* Responses go in few large pieces: Nagle would only delay the last partial segment. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uv_timer_init(&loop->uv, &c->linger); /* cannot fail on unix */
    c->base.shutdown = conn_shutdown;
    c->loop = loop;
    c->fd = fd;
    c->poll.data = c;
    c->linger.data = c;
    return c;
}

/* ---------------------------------------------------------------- linger */

static void conn_linger_expired(uv_timer_t *t)
{
    cs__conn_begin_close(t->data, 0);
}

void cs__conn_begin_linger(cs_conn *c)
{
    /* After EOF nothing unread can remain, so close() sends no RST. */
    if (c->eof || shutdown(c->fd, SHUT_WR) < 0) {
        cs__conn_begin_close(c, 0);
        return;
    }
    c->lingering = 1;
    uv_timer_start(&c->linger, conn_linger_expired, LINGER_MS, 0);
    cs__conn_update_poll(c);
}

/* Discards input so close() does not reset the connection while the peer still reads. */
static void conn_linger_read(cs_conn *c)
{
    for (int i = 0; i < READS_PER_WAKEUP; i++) {
        ssize_t n = read(c->fd, c->loop->read_buf, CS_READ_BUF_SIZE);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        /* EOF, or an error: the response is out either way. */
        cs__conn_begin_close(c, 0);
        return;
    }
}

/* ------------------------------------------------------------ read path */

static void conn_read_some(cs_conn *c)
{
    uint8_t *buf = c->loop->read_buf;
    for (int i = 0; i < READS_PER_WAKEUP; i++) {
        /* Callbacks may have stopped reading or closed the conn. */
        if (c->closing || !c->reading || c->eof)
            return;
        ssize_t n = read(c->fd, buf, CS_READ_BUF_SIZE);
        if (n > 0) {
            if (c->cbs.on_read != NULL)
                c->cbs.on_read(c->ctx, buf, (size_t)n);
            /* A short read likely emptied the socket (the level-triggered poll calls again if not). */
            if ((size_t)n < CS_READ_BUF_SIZE)
                return;
            continue;
        }
        if (n == 0) {
            c->eof = 1;
            cs__conn_update_poll(c);
            if (c->cbs.on_eof != NULL)
                c->cbs.on_eof(c->ctx);
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            cs__conn_begin_close(c, -errno);
        return;
    }
}

/* --------------------------------------------------------------- connect */

/* The pending socket error as a positive errno, or 0. */
static int socket_error(int fd)
{
    int soerr = 0;
    socklen_t len = sizeof soerr;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 ? errno : soerr;
}

/* `fallback` (a negative code) is used when the socket has no error to give. */
static void conn_finish_connect(cs_conn *c, int fallback)
{
    int err = socket_error(c->fd);
    err = err != 0 ? -err : fallback;
    c->connecting = 0;
    if (err != 0) {
        cs__conn_begin_close(c, err);
        if (c->cbs.on_connect != NULL)
            c->cbs.on_connect(c->ctx, err);
        return;
    }
    if (cs__conn_update_poll(c) < 0)
        return;
    if (c->cbs.on_connect != NULL)
        c->cbs.on_connect(c->ctx, 0);
    /* Writes queued while connecting go out on the next writable event. */
    if (!c->closing && c->drain_close && c->head == NULL)
        cs__conn_begin_linger(c);
}

/* ------------------------------------------------------------------ poll */

static void conn_on_poll(uv_poll_t *poll, int status, int events)
{
    cs_conn *c = poll->data;
    if (c->closing)
        return;
    if (status < 0) {
        /* libuv reports EPOLLERR as UV_EBADF and stops the poll; the socket knows the real reason. */
        c->events = 0;
        if (c->connecting) {
            conn_finish_connect(c, status);
        } else {
            int err = socket_error(c->fd);
            cs__conn_begin_close(c, c->lingering ? 0 : err != 0 ? -err : status);
        }
        return;
    }
    if (c->connecting) {
        conn_finish_connect(c, 0);
        return;
    }
    if ((events & UV_WRITABLE) && c->head != NULL) {
        cs__out_on_writable(c);
        if (c->closing)
            return;
    }
    if (events & UV_READABLE) {
        if (c->lingering)
            conn_linger_read(c);
        else
            conn_read_some(c);
    }
}

/* ------------------------------------------------------------ public API */

int cs_connect(cs_loop *loop, const struct sockaddr *addr, const cs_conn_callbacks *cbs,
               void *ctx, cs_conn **out)
{
    if (loop->closing)
        return -ESHUTDOWN;
    if (addr == NULL || out == NULL)
        return -EINVAL;
    socklen_t addrlen;
    if (addr->sa_family == AF_INET)
        addrlen = sizeof(struct sockaddr_in);
    else if (addr->sa_family == AF_INET6)
        addrlen = sizeof(struct sockaddr_in6);
    else
        return -EAFNOSUPPORT;

    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* Even an immediate success comes through the writable event: on_connect never runs in here. */
    if (connect(fd, addr, addrlen) < 0 && errno != EINPROGRESS && errno != EINTR) {
        int r = -errno;
        close(fd);
        return r;
    }
    int err = 0;
    cs_conn *c = cs__conn_new(loop, fd, &err);
    if (c == NULL)
        return err;
    c->connecting = 1;
    int r = cs__conn_update_poll(c);
    if (r < 0)
        return r; /* closing already, with no callbacks set: silent */
    cs_conn_bind(c, cbs, ctx);
    *out = c;
    return 0;
}

void cs_conn_bind(cs_conn *conn, const cs_conn_callbacks *cbs, void *ctx)
{
    conn->cbs = cbs != NULL ? *cbs : (cs_conn_callbacks){0};
    conn->ctx = ctx;
}

int cs_conn_read_start(cs_conn *conn)
{
    if (conn->closing || conn->drain_close)
        return -EPIPE;
    conn->reading = 1;
    return cs__conn_update_poll(conn);
}

int cs_conn_read_stop(cs_conn *conn)
{
    conn->reading = 0;
    return cs__conn_update_poll(conn);
}

int cs_conn_peer(const cs_conn *conn, struct sockaddr_storage *out, socklen_t *len)
{
    socklen_t size = sizeof *out;
    memset(out, 0, sizeof *out);
    if (getpeername(conn->fd, (struct sockaddr *)out, &size) < 0)
        return -errno;
    *len = size;
    return 0;
}

void cs_conn_close(cs_conn *conn)
{
    if (conn != NULL)
        cs__conn_begin_close(conn, 0);
}

int cs_conn_detach(cs_conn *conn)
{
    if (conn == NULL || conn->closing || conn->drain_close || conn->head != NULL || conn->connecting)
        return -EBUSY;
    /* uv_close of the poll takes the fd out of this loop's epoll set at once: only the adopter watches. */
    conn->detached = 1;
    cs__conn_begin_close(conn, 0);
    return conn->fd;
}

int cs_conn_adopt(cs_loop *loop, int fd, cs_conn **out)
{
    if (loop->closing) {
        close(fd);
        return -ESHUTDOWN;
    }
    int err = 0;
    cs_conn *c = cs__conn_new(loop, fd, &err);
    if (c == NULL)
        return err;
    *out = c;
    return 0;
}

void cs_conn_close_after_drain(cs_conn *conn)
{
    if (conn == NULL || conn->closing || conn->drain_close)
        return;
    conn->drain_close = 1;
    conn->reading = 0; /* the owner is done with input */
    if (conn->head == NULL && !conn->connecting)
        cs__conn_begin_linger(conn);
    else
        cs__conn_update_poll(conn);
}
