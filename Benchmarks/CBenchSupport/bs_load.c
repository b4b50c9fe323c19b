/*
 * bs_load.c — the load generator: one thread, epoll over raw non-blocking
 * sockets, one request at a time per keep-alive connection (no pipelining:
 * players and browsers do not pipeline either).
 *
 * Every response is checked: status, Content-Length and Content-Range must
 * match the request, and the body is compared with the pattern of the file it
 * comes from (one word per 4 KiB always, every byte for a sample).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "benchsupport.h"

#define RECV_BUF (256 * 1024)
#define HEAD_MAX 8192
#define SPOT_STRIDE 4096
/* Give up on a run whose connections keep failing rather than spin. */
#define MAX_ERRORS 1000

enum state { C_FREE, C_CONNECTING, C_SENDING, C_HEAD, C_BODY, C_IDLE };

typedef struct lconn {
    int fd;
    enum state state;
    int epoll_out;       /* EPOLLOUT is registered */
    char req[4096];
    size_t req_len, req_sent;
    char head[HEAD_MAX];
    size_t head_len;
    /* The request in progress. */
    int target;
    const char *path;    /* the request target: targets[target].path or index_path */
    char index_path[256]; /* BS_MODE_INDEX_*: formatted per request */
    int step;            /* BS_MODE_SCRIPT: its index, else -1 */
    int has_range;
    uint64_t want_first; /* expected first body byte */
    uint64_t want_len;   /* expected body length */
    uint64_t abandon_after;
    int full_check;
    /* The response. */
    uint64_t body_off;   /* absolute offset of the next body byte */
    uint64_t body_left;
    uint64_t body_used;
    int keep_alive;
    int bad;             /* a byte did not match */
    uint64_t t_sent, t_first;
} lconn;

typedef struct run {
    const bs_load_config *cfg;
    bs_load_result *res;
    int ep;
    lconn *conns;
    uint8_t *buf;
    uint64_t rng;
    uint64_t start, stop_issuing, hard_deadline;
    int next_step;
    uint64_t next_index;  /* BS_MODE_INDEX_SEQUENCE: the next index to ask for */
    uint64_t responses; /* for choosing the full-check sample */
    size_t cap;         /* capacity of the sample arrays */
    int aborted;
} run;

uint64_t bs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long bs_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (long)rl.rlim_cur;
}

int bs_count_fds(int pid)
{
    char dir_path[64];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/fd", pid);
    DIR *dir = opendir(dir_path);
    if (dir == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

static uint64_t next_random(run *r)
{
    /* xorshift64*: plenty for choosing offsets. */
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * 0x2545F4914F6CDD1Dull;
}

static void note_error(run *r, const char *fmt, ...)
{
    r->res->errors++;
    if (r->res->first_error[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->res->first_error, sizeof r->res->first_error, fmt, ap);
        va_end(ap);
    }
    if (r->res->errors >= MAX_ERRORS)
        r->aborted = 1;
}

static int record_sample(run *r, uint32_t latency, uint32_t ttfb, uint64_t used, int step)
{
    bs_load_result *res = r->res;
    if (res->samples == r->cap) {
        size_t cap = r->cap == 0 ? 4096 : r->cap * 2;
        uint32_t *l = realloc(res->latency_us, cap * sizeof *l);
        if (l != NULL)
            res->latency_us = l;
        uint32_t *t = realloc(res->ttfb_us, cap * sizeof *t);
        if (t != NULL)
            res->ttfb_us = t;
        if (l == NULL || t == NULL)
            return -1;
        r->cap = cap;
    }
    res->latency_us[res->samples] = latency;
    res->ttfb_us[res->samples] = ttfb;
    res->samples++;
    if (step >= 0 && res->step_bytes != NULL)
        res->step_bytes[step] = used;
    return 0;
}

/* ------------------------------------------------------------ sockets */

static void set_events(run *r, lconn *c, int out)
{
    if (c->epoll_out == out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->epoll_out = out;
}

static void close_conn(run *r, lconn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->state = C_FREE;
}

static int open_conn(run *r, lconn *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        note_error(r, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->cfg->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) {
        note_error(r, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    c->fd = fd;
    c->state = C_CONNECTING;
    c->epoll_out = 1;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

/* ----------------------------------------------------------- requests */

/* Chooses the next request for c; 0 when there is no more work. */
static int choose_request(run *r, lconn *c)
{
    const bs_load_config *cfg = r->cfg;
    uint64_t now = bs_now_ns();
    if (r->aborted || now >= r->hard_deadline)
        return 0;
    c->step = -1;
    c->abandon_after = 0;
    switch (cfg->mode) {
    case BS_MODE_RANDOM_RANGE: {
        if (now >= r->stop_issuing)
            return 0;
        const bs_target *t = &cfg->targets[0];
        uint64_t len = cfg->range_len < t->size ? cfg->range_len : t->size;
        c->target = 0;
        c->has_range = 1;
        c->want_first = t->size == len ? 0 : next_random(r) % (t->size - len + 1);
        c->want_len = len;
        break;
    }
    case BS_MODE_RANDOM_WHOLE:
        if (now >= r->stop_issuing)
            return 0;
        c->target = (int)(next_random(r) % (uint64_t)cfg->target_count);
        c->has_range = 0;
        c->want_first = 0;
        c->want_len = cfg->targets[c->target].size;
        break;
    case BS_MODE_SCRIPT: {
        if (r->next_step >= cfg->step_count)
            return 0;
        const bs_step *s = &cfg->steps[r->next_step];
        c->step = r->next_step++;
        c->target = s->target;
        uint64_t size = cfg->targets[s->target].size;
        c->has_range = s->first >= 0;
        c->want_first = s->first >= 0 ? (uint64_t)s->first : 0;
        uint64_t last = s->first >= 0 && s->last >= 0 && (uint64_t)s->last < size ? (uint64_t)s->last : size - 1;
        c->want_len = last + 1 - c->want_first;
        c->abandon_after = s->abandon_after;
        break;
    }
    case BS_MODE_INDEX_SEQUENCE:
    case BS_MODE_INDEX_RANDOM: {
        uint64_t index;
        if (cfg->mode == BS_MODE_INDEX_SEQUENCE) {
            if (r->next_index >= cfg->index_count)
                return 0;
            index = cfg->index_first + r->next_index++;
        } else {
            if (now >= r->stop_issuing)
                return 0;
            index = cfg->index_first + next_random(r) % cfg->index_count;
        }
        c->target = 0;
        c->has_range = 0;
        c->want_first = 0;
        c->want_len = cfg->targets[0].size;
        int k = snprintf(c->index_path, sizeof c->index_path, cfg->path_format, (unsigned long long)index);
        if (k <= 0 || (size_t)k >= sizeof c->index_path) {
            note_error(r, "path format too long");
            r->aborted = 1;
            return 0;
        }
        break;
    }
    }
    const bs_target *t = &cfg->targets[c->target];
    c->path = cfg->mode == BS_MODE_INDEX_SEQUENCE || cfg->mode == BS_MODE_INDEX_RANDOM ? c->index_path : t->path;
    int n;
    if (!c->has_range)
        n = snprintf(c->req, sizeof c->req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", c->path);
    else if (cfg->mode == BS_MODE_SCRIPT && cfg->steps[c->step].last < 0)
        n = snprintf(c->req, sizeof c->req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=%llu-\r\n\r\n",
                     c->path, (unsigned long long)c->want_first);
    else
        n = snprintf(c->req, sizeof c->req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=%llu-%llu\r\n\r\n",
                     c->path, (unsigned long long)c->want_first,
                     (unsigned long long)(c->want_first + c->want_len - 1));
    if (n <= 0 || (size_t)n >= sizeof c->req) {
        note_error(r, "request target too long");
        r->aborted = 1;
        return 0;
    }
    c->req_len = (size_t)n;
    c->req_sent = 0;
    c->head_len = 0;
    c->bad = 0;
    c->body_used = 0;
    c->full_check = cfg->full_check_every > 0 && (r->responses++ % cfg->full_check_every) == 0;
    return 1;
}

static void send_request(run *r, lconn *c)
{
    if (c->req_sent == 0)
        c->t_sent = bs_now_ns();
    while (c->req_sent < c->req_len) {
        ssize_t n = send(c->fd, c->req + c->req_sent, c->req_len - c->req_sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                c->state = C_SENDING;
                set_events(r, c, 1);
                return;
            }
            note_error(r, "send: %s", strerror(errno));
            close_conn(r, c);
            return;
        }
        c->req_sent += (size_t)n;
    }
    c->state = C_HEAD;
    c->t_first = 0;
    set_events(r, c, 0);
}

/* Starts the next request on a connected conn, or parks/closes it. */
static void next_request(run *r, lconn *c)
{
    if (r->cfg->hold_idle_ms > 0 && r->cfg->mode == BS_MODE_SCRIPT) {
        /* Holding idle connections: one request each, then stay open. */
        c->state = C_IDLE;
        return;
    }
    if (!choose_request(r, c)) {
        if (r->cfg->hold_idle_ms > 0) {
            c->state = C_IDLE;
            return;
        }
        close_conn(r, c);
        return;
    }
    send_request(r, c);
}

/* ----------------------------------------------------------- responses */

static const char *find_header(const char *head, size_t len, const char *name)
{
    size_t nlen = strlen(name);
    const char *p = head, *end = head + len;
    while (p < end) {
        const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (eol == NULL)
            return NULL;
        if ((size_t)(eol - p) > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            while (*v == ' ')
                v++;
            return v;
        }
        p = eol + 2;
    }
    return NULL;
}

/* Validates the head against the request. Returns 0 or -1 (error noted). */
static int accept_head(run *r, lconn *c)
{
    const char *h = c->head;
    size_t len = c->head_len;
    int status = 0;
    int minor = 1;
    if (sscanf(h, "HTTP/1.%d %d", &minor, &status) != 2) {
        note_error(r, "bad status line");
        return -1;
    }
    const bs_target *t = &r->cfg->targets[c->target];
    int want_status = c->has_range ? 206 : 200;
    /* A range covering the whole file may be answered either way. */
    if (status != want_status && !(c->has_range && status == 200 && c->want_first == 0 && c->want_len == t->size)) {
        note_error(r, "status %d for %s (wanted %d)", status, c->path, want_status);
        return -1;
    }
    const char *cl = find_header(h, len, "Content-Length");
    if (cl == NULL || strtoull(cl, NULL, 10) != (status == 206 ? c->want_len : t->size)) {
        note_error(r, "Content-Length wrong for %s", c->path);
        return -1;
    }
    uint64_t first = 0;
    if (status == 206) {
        const char *cr = find_header(h, len, "Content-Range");
        unsigned long long a, b, total;
        if (cr == NULL || sscanf(cr, "bytes %llu-%llu/%llu", &a, &b, &total) != 3 || a != c->want_first ||
            b + 1 - a != c->want_len || total != t->size) {
            note_error(r, "Content-Range wrong for %s", c->path);
            return -1;
        }
        first = a;
    }
    const char *conn = find_header(h, len, "Connection");
    c->keep_alive = minor >= 1 ? !(conn != NULL && strncasecmp(conn, "close", 5) == 0)
                               : (conn != NULL && strncasecmp(conn, "keep-alive", 10) == 0);
    c->body_off = first;
    c->body_left = status == 206 ? c->want_len : t->size;
    return 0;
}

static void check_body(run *r, lconn *c, const uint8_t *p, size_t n)
{
    uint64_t seed = r->cfg->targets[c->target].seed;
    if (c->full_check) {
        if (bs_pattern_check(seed, c->body_off, p, n) >= 0)
            c->bad = 1;
        r->res->checked_bytes += n;
        return;
    }
    /* One 8-byte word at each 4 KiB boundary inside the chunk. */
    uint64_t off = (c->body_off + SPOT_STRIDE - 1) / SPOT_STRIDE * SPOT_STRIDE;
    for (; off + 8 <= c->body_off + n; off += SPOT_STRIDE) {
        if (bs_pattern_check(seed, off, p + (off - c->body_off), 8) >= 0)
            c->bad = 1;
        r->res->spot_checks++;
    }
}

static void finish_response(run *r, lconn *c, int abandoned)
{
    uint64_t now = bs_now_ns();
    if (c->bad) {
        r->res->mismatches++;
        note_error(r, "wrong bytes from %s", c->path);
    }
    r->res->requests++;
    r->res->elapsed_ns = now - r->start;
    uint64_t lat = (now - c->t_sent) / 1000;
    uint64_t ttfb = (c->t_first - c->t_sent) / 1000;
    record_sample(r, lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat, ttfb > UINT32_MAX ? UINT32_MAX : (uint32_t)ttfb,
                  c->body_used, c->step);
    if (abandoned || !c->keep_alive) {
        close_conn(r, c);
        if (choose_request(r, c)) {
            if (open_conn(r, c) < 0)
                c->state = C_FREE;
        }
        return;
    }
    next_request(r, c);
}

/* Feeds body bytes; returns the number consumed. */
static size_t feed_body(run *r, lconn *c, const uint8_t *p, size_t n)
{
    size_t take = n < c->body_left ? n : (size_t)c->body_left;
    if (c->abandon_after > 0 && c->body_used + take > c->abandon_after)
        take = (size_t)(c->abandon_after - c->body_used);
    check_body(r, c, p, take);
    c->body_off += take;
    c->body_left -= take;
    c->body_used += take;
    r->res->body_bytes += take;
    if (c->abandon_after > 0 && c->body_used >= c->abandon_after && c->body_left > 0) {
        finish_response(r, c, 1);
        return n; /* the rest is dropped with the connection */
    }
    if (c->body_left == 0) {
        if (take < n) {
            note_error(r, "bytes after the body");
            close_conn(r, c);
            return n;
        }
        finish_response(r, c, 0);
    }
    return take;
}

static void on_readable(run *r, lconn *c)
{
    for (int reads = 0; reads < 8; reads++) {
        ssize_t n = recv(c->fd, r->buf, RECV_BUF, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return;
            note_error(r, "recv: %s", strerror(errno));
            close_conn(r, c);
            return;
        }
        if (n == 0) {
            if (c->state != C_IDLE)
                note_error(r, "server closed the connection mid-response");
            close_conn(r, c);
            return;
        }
        if (c->state == C_IDLE || c->state == C_SENDING) {
            note_error(r, "unexpected bytes from the server");
            close_conn(r, c);
            return;
        }
        const uint8_t *p = r->buf;
        size_t left = (size_t)n;
        if (c->state == C_HEAD) {
            if (c->t_first == 0)
                c->t_first = bs_now_ns();
            size_t old = c->head_len;
            size_t room = HEAD_MAX - old;
            size_t k = left < room ? left : room;
            memcpy(c->head + old, p, k);
            c->head_len += k;
            size_t from = old >= 3 ? old - 3 : 0;
            char *end = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
            if (end == NULL) {
                if (c->head_len == HEAD_MAX) {
                    note_error(r, "response head too large");
                    close_conn(r, c);
                }
                continue;
            }
            size_t head_end = (size_t)(end - c->head) + 4;
            c->head_len = head_end;
            if (accept_head(r, c) < 0) {
                close_conn(r, c);
                return;
            }
            c->state = C_BODY;
            size_t consumed = head_end - old;
            p += consumed;
            left -= consumed;
            if (c->body_left == 0) {
                if (left > 0) {
                    note_error(r, "bytes after an empty body");
                    close_conn(r, c);
                    return;
                }
                finish_response(r, c, 0);
                return;
            }
        }
        if (left > 0) {
            lconn *before = c;
            feed_body(r, c, p, left);
            /* The response ended: a new request (or connection) took over. */
            if (before->state != C_BODY)
                return;
        }
        if ((size_t)n < RECV_BUF)
            return;
    }
}

static void on_event(run *r, lconn *c, uint32_t events)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
            note_error(r, "connect: %s", strerror(err != 0 ? err : ECONNRESET));
            close_conn(r, c);
            return;
        }
        if (events & EPOLLOUT)
            send_request(r, c);
        return;
    }
    if ((events & EPOLLOUT) && c->state == C_SENDING) {
        send_request(r, c);
        if (c->fd < 0)
            return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(r, c);
}

/* --------------------------------------------------------------- driver */

static int active_conns(run *r)
{
    int n = 0;
    for (int i = 0; i < r->cfg->connections; i++)
        n += r->conns[i].state != C_FREE && r->conns[i].state != C_IDLE;
    return n;
}

static int open_conns(run *r)
{
    int n = 0;
    for (int i = 0; i < r->cfg->connections; i++)
        n += r->conns[i].state != C_FREE;
    return n;
}

int bs_load_run(const bs_load_config *cfg, bs_load_result *res)
{
    memset(res, 0, sizeof *res);
    if (cfg->connections <= 0 || cfg->target_count <= 0 || (cfg->mode == BS_MODE_SCRIPT && cfg->steps == NULL))
        return -EINVAL;
    if ((cfg->mode == BS_MODE_INDEX_SEQUENCE || cfg->mode == BS_MODE_INDEX_RANDOM) &&
        (cfg->path_format == NULL || cfg->index_count == 0))
        return -EINVAL;
    run r = {.cfg = cfg, .res = res, .rng = cfg->seed | 1};
    r.ep = epoll_create1(EPOLL_CLOEXEC);
    r.conns = calloc((size_t)cfg->connections, sizeof *r.conns);
    r.buf = malloc(RECV_BUF);
    if (cfg->mode == BS_MODE_SCRIPT)
        res->step_bytes = calloc((size_t)cfg->step_count + 1, sizeof *res->step_bytes);
    if (r.ep < 0 || r.conns == NULL || r.buf == NULL) {
        free(r.conns);
        free(r.buf);
        if (r.ep >= 0)
            close(r.ep);
        return -ENOMEM;
    }
    r.start = bs_now_ns();
    r.stop_issuing = r.start + cfg->duration_ms * 1000000ull;
    r.hard_deadline = r.start + (cfg->timeout_ms > 0 ? cfg->timeout_ms : cfg->duration_ms + 30000) * 1000000ull;

    for (int i = 0; i < cfg->connections; i++) {
        lconn *c = &r.conns[i];
        c->fd = -1;
        if (choose_request(&r, c))
            open_conn(&r, c);
    }

    struct epoll_event events[256];
    int idle_reported = 0;
    uint64_t idle_until = 0;
    for (;;) {
        uint64_t now = bs_now_ns();
        if (now >= r.hard_deadline) {
            res->timed_out = active_conns(&r) > 0;
            if (res->timed_out)
                note_error(&r, "timed out with %d requests in flight", active_conns(&r));
            break;
        }
        if (active_conns(&r) == 0) {
            /* Script steps still unstarted (all conns failed): retry on a fresh conn. */
            if (!r.aborted && cfg->mode == BS_MODE_SCRIPT && r.next_step < cfg->step_count &&
                cfg->hold_idle_ms == 0) {
                lconn *c = &r.conns[0];
                close_conn(&r, c);
                if (choose_request(&r, c))
                    open_conn(&r, c);
                continue;
            }
            if (cfg->hold_idle_ms == 0 || open_conns(&r) == 0 || r.aborted)
                break;
            if (!idle_reported) {
                idle_reported = 1;
                idle_until = now + cfg->hold_idle_ms * 1000000ull;
                if (cfg->on_idle != NULL)
                    cfg->on_idle(cfg->idle_ctx);
            }
            if (now >= idle_until)
                break;
        }
        int n = epoll_wait(r.ep, events, 256, 50);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            lconn *c = events[i].data.ptr;
            if (c->fd >= 0)
                on_event(&r, c, events[i].events);
        }
    }
    for (int i = 0; i < cfg->connections; i++)
        close_conn(&r, &r.conns[i]);
    close(r.ep);
    free(r.conns);
    free(r.buf);
    return 0;
}

void bs_load_result_free(bs_load_result *res)
{
    free(res->latency_us);
    free(res->ttfb_us);
    free(res->step_bytes);
    res->latency_us = NULL;
    res->ttfb_us = NULL;
    res->step_bytes = NULL;
    res->samples = 0;
}
