/*
 * bs_origin.c — the origin of the benchmarks: a small blocking HTTP/1.1 file
 * server, one thread per connection.
 *
 * It exists so that every run has the same origin whether or not nginx is
 * installed, counts exactly the body bytes it hands to its sockets (the
 * "origin bytes" of the report), and can be paced to stand in for a remote
 * server. Simplicity beats speed here: the hit scenarios never reach it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "benchsupport.h"

#define MAX_CONNS 512
#define HEAD_MAX 8192
/* Bytes per sendfile when paced: small enough that an abandoned response
 * wastes little, large enough to keep syscalls few. */
#define PACE_CHUNK (64 * 1024)
/* An idle keep-alive connection is dropped after this. */
#define IDLE_MS 30000

struct bs_origin {
    char root[4096];
    int listen_fd;
    int port;
    pthread_t acceptor;
    atomic_int stopping;
    atomic_uint_fast64_t rate;
    atomic_uint_fast64_t latency_ns; /* before each found file's head: a remote origin's first byte */
    atomic_uint_fast64_t body_bytes;
    atomic_uint_fast64_t requests;
    pthread_mutex_t mutex;
    pthread_cond_t idle;
    int conns[MAX_CONNS]; /* open connection fds, -1 for free slots */
    int active;
    /* bs_origin_set_alias: targets under alias_prefix serve alias_file. */
    char alias_prefix[256];
    char alias_file[1024];
    char alias_cache_control[128];
    /* bs_origin_set_max_age: Cache-Control: max-age=N on every file (0: none). */
    atomic_uint_fast64_t max_age;
};

typedef struct conn_arg {
    bs_origin *origin;
    int fd;
    int slot;
} conn_arg;

/* ------------------------------------------------------------- helpers */

static int send_all(int fd, const char *p, size_t n, int flags)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | flags);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void http_date(time_t t, char *out, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static int header_value(const char *head, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            const char *end = strstr(v, "\r\n");
            size_t n = end != NULL ? (size_t)(end - v) : strlen(v);
            if (n >= outlen)
                n = outlen - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return 1;
        }
    }
    return 0;
}

/* Parses one "bytes=a-b" / "a-" / "-n" spec against size into [first, last].
 * Returns 1 satisfiable, 0 unsatisfiable, -1 not a single valid range. */
static int parse_range(const char *v, uint64_t size, uint64_t *first, uint64_t *last)
{
    if (strncmp(v, "bytes=", 6) != 0 || strchr(v, ',') != NULL)
        return -1;
    v += 6;
    char *end;
    if (*v == '-') {
        unsigned long long n = strtoull(v + 1, &end, 10);
        if (end == v + 1 || *end != 0)
            return -1;
        if (n == 0 || size == 0)
            return 0;
        *first = n >= size ? 0 : size - n;
        *last = size - 1;
        return 1;
    }
    unsigned long long a = strtoull(v, &end, 10);
    if (end == v || *end != '-')
        return -1;
    const char *b = end + 1;
    unsigned long long z = size == 0 ? 0 : size - 1;
    if (*b != 0) {
        z = strtoull(b, &end, 10);
        if (end == b || *end != 0 || z < a)
            return -1;
        if (size > 0 && z > size - 1)
            z = size - 1;
    }
    if (a >= size)
        return 0;
    *first = a;
    *last = z;
    return 1;
}

/* Sends [off, off+len) of fd, paced when a rate is set. Returns 0 or -1. */
static int send_body(bs_origin *o, int sock, int fd, uint64_t off, uint64_t len)
{
    uint64_t start = bs_now_ns();
    uint64_t sent = 0;
    while (sent < len) {
        if (atomic_load(&o->stopping))
            return -1;
        uint64_t rate = atomic_load(&o->rate);
        size_t want = len - sent > (1u << 30) ? (1u << 30) : (size_t)(len - sent);
        if (rate > 0) {
            if (want > PACE_CHUNK)
                want = PACE_CHUNK;
            /* Sleep until the bytes sent so far are due at this rate. */
            uint64_t due = start + sent * 1000000000ull / rate;
            uint64_t now = bs_now_ns();
            if (due > now) {
                struct timespec ts = {(time_t)((due - now) / 1000000000ull), (long)((due - now) % 1000000000ull)};
                nanosleep(&ts, NULL);
            }
        }
        off_t o_off = (off_t)(off + sent);
        ssize_t n = sendfile(sock, fd, &o_off, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            return -1; /* file shorter than it claimed */
        sent += (uint64_t)n;
        atomic_fetch_add(&o->body_bytes, (uint64_t)n);
    }
    return 0;
}

/* Answers one request head. Returns 1 to keep the connection, 0 to close. */
static int answer(bs_origin *o, int sock, char *head)
{
    char method[16], target[2048], version[16];
    if (sscanf(head, "%15s %2047s %15s", method, target, version) != 3)
        return 0;
    int keep = strcmp(version, "HTTP/1.1") == 0;
    char conn_hdr[64];
    if (header_value(head, "Connection", conn_hdr, sizeof conn_hdr))
        keep = strcasecmp(conn_hdr, "close") != 0 && (keep || strcasecmp(conn_hdr, "keep-alive") == 0);
    int is_head = strcmp(method, "HEAD") == 0;
    atomic_fetch_add(&o->requests, 1);

    char *q = strchr(target, '?');
    if (q != NULL)
        *q = 0;
    char path[8192];
    int fd = -1;
    struct stat st;
    int aliased = o->alias_prefix[0] != 0 && strncmp(target, o->alias_prefix, strlen(o->alias_prefix)) == 0;
    if ((strcmp(method, "GET") == 0 || is_head) && target[0] == '/' && strstr(target, "..") == NULL) {
        snprintf(path, sizeof path, "%s%s", o->root, aliased ? o->alias_file : target);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            fd = -1;
        }
    }
    char out[1024];
    if (fd < 0) {
        const char *body = "not found\n";
        int n = snprintf(out, sizeof out,
                         "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                         "Connection: %s\r\n\r\n%s",
                         strlen(body), keep ? "keep-alive" : "close", is_head ? "" : body);
        return send_all(sock, out, (size_t)n, 0) == 0 && keep;
    }

    uint64_t size = (uint64_t)st.st_size, first = 0, last = size == 0 ? 0 : size - 1;
    int status = 200;
    char range[256];
    if (header_value(head, "Range", range, sizeof range)) {
        int r = parse_range(range, size, &first, &last);
        status = r == 1 ? 206 : r == 0 ? 416 : 200;
        if (r == -1) {
            first = 0;
            last = size == 0 ? 0 : size - 1;
        }
    }
    uint64_t latency = atomic_load(&o->latency_ns);
    if (latency > 0) {
        struct timespec pause = {(time_t)(latency / 1000000000ull), (long)(latency % 1000000000ull)};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
        }
    }
    const char *dot = strrchr(target, '.');
    const char *type = dot != NULL && strcmp(dot, ".m3u8") == 0 ? "application/vnd.apple.mpegurl"
                       : dot != NULL && strcmp(dot, ".ts") == 0 ? "video/mp2t"
                                                                : "application/octet-stream";
    char date[64], modified[64];
    http_date(time(NULL), date, sizeof date);
    http_date(st.st_mtime, modified, sizeof modified);
    uint64_t len = status == 416 ? 0 : (size == 0 ? 0 : last - first + 1);
    int n = snprintf(out, sizeof out,
                     "HTTP/1.1 %d %s\r\nServer: bench-origin\r\nDate: %s\r\n"
                     "Content-Type: %s\r\nContent-Length: %llu\r\n"
                     "Last-Modified: %s\r\nETag: \"%llx-%llx\"\r\nAccept-Ranges: bytes\r\n",
                     status, status == 206 ? "Partial Content" : status == 416 ? "Range Not Satisfiable" : "OK",
                     date, type, (unsigned long long)len, modified, (unsigned long long)st.st_mtime,
                     (unsigned long long)size);
    uint64_t max_age = atomic_load(&o->max_age);
    if (aliased && o->alias_cache_control[0] != 0)
        n += snprintf(out + n, sizeof out - (size_t)n, "Cache-Control: %s\r\n", o->alias_cache_control);
    else if (max_age > 0)
        n += snprintf(out + n, sizeof out - (size_t)n, "Cache-Control: max-age=%llu\r\n", (unsigned long long)max_age);
    if (status == 206)
        n += snprintf(out + n, sizeof out - (size_t)n, "Content-Range: bytes %llu-%llu/%llu\r\n",
                      (unsigned long long)first, (unsigned long long)last, (unsigned long long)size);
    else if (status == 416)
        n += snprintf(out + n, sizeof out - (size_t)n, "Content-Range: bytes */%llu\r\n", (unsigned long long)size);
    n += snprintf(out + n, sizeof out - (size_t)n, "Connection: %s\r\n\r\n", keep ? "keep-alive" : "close");

    int ok = send_all(sock, out, (size_t)n, len > 0 && !is_head ? MSG_MORE : 0) == 0;
    if (ok && len > 0 && !is_head)
        ok = send_body(o, sock, fd, first, len) == 0;
    close(fd);
    return ok && keep;
}

static void *conn_main(void *p)
{
    conn_arg *a = p;
    bs_origin *o = a->origin;
    int sock = a->fd;
    char buf[HEAD_MAX + 1];
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
            if (have == HEAD_MAX || atomic_load(&o->stopping))
                goto done;
            struct pollfd pfd = {sock, POLLIN, 0};
            int pr = poll(&pfd, 1, IDLE_MS);
            if (pr <= 0)
                goto done;
            ssize_t r = recv(sock, buf + have, HEAD_MAX - have, 0);
            if (r <= 0) {
                if (r < 0 && errno == EINTR)
                    continue;
                goto done;
            }
            have += (size_t)r;
        }
        size_t head_len = (size_t)(end - buf) + 4;
        char saved = buf[head_len];
        buf[head_len] = 0;
        int keep = answer(o, sock, buf);
        buf[head_len] = saved;
        if (!keep)
            goto done;
        memmove(buf, buf + head_len, have - head_len);
        have -= head_len;
    }
done:
    pthread_mutex_lock(&o->mutex);
    o->conns[a->slot] = -1;
    close(sock);
    o->active--;
    pthread_cond_broadcast(&o->idle);
    pthread_mutex_unlock(&o->mutex);
    free(a);
    return NULL;
}

static void *accept_main(void *p)
{
    bs_origin *o = p;
    while (!atomic_load(&o->stopping)) {
        int fd = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE)
                    usleep(10000);
                continue;
            }
            break; /* the listener was shut down */
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_mutex_lock(&o->mutex);
        int slot = -1;
        for (int i = 0; i < MAX_CONNS && slot < 0; i++)
            if (o->conns[i] < 0)
                slot = i;
        conn_arg *a = slot >= 0 && !atomic_load(&o->stopping) ? malloc(sizeof *a) : NULL;
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        if (a != NULL) {
            *a = (conn_arg){o, fd, slot};
            o->conns[slot] = fd;
            o->active++;
            if (pthread_create(&t, &attr, conn_main, a) != 0) {
                o->conns[slot] = -1;
                o->active--;
                free(a);
                a = NULL;
            }
        }
        pthread_attr_destroy(&attr);
        pthread_mutex_unlock(&o->mutex);
        if (a == NULL)
            close(fd);
    }
    return NULL;
}

/* ----------------------------------------------------------- public API */

bs_origin *bs_origin_start(const char *root, int port, char *err, size_t errlen)
{
    /* sendfile(2) to a socket the client closed raises SIGPIPE (it has no
     * MSG_NOSIGNAL); abandoned responses are normal here. */
    signal(SIGPIPE, SIG_IGN);
    bs_origin *o = calloc(1, sizeof *o);
    if (o == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(o->root, sizeof o->root, "%s", root);
    for (int i = 0; i < MAX_CONNS; i++)
        o->conns[i] = -1;
    pthread_mutex_init(&o->mutex, NULL);
    pthread_cond_init(&o->idle, NULL);
    o->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(o->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t salen = sizeof sa;
    if (o->listen_fd < 0 || bind(o->listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(o->listen_fd, 1024) < 0 || getsockname(o->listen_fd, (struct sockaddr *)&sa, &salen) < 0) {
        snprintf(err, errlen, "origin listen: %s", strerror(errno));
        if (o->listen_fd >= 0)
            close(o->listen_fd);
        free(o);
        return NULL;
    }
    o->port = ntohs(sa.sin_port);
    if (pthread_create(&o->acceptor, NULL, accept_main, o) != 0) {
        snprintf(err, errlen, "origin thread: %s", strerror(errno));
        close(o->listen_fd);
        free(o);
        return NULL;
    }
    return o;
}

int bs_origin_port(const bs_origin *origin) { return origin->port; }

void bs_origin_set_rate(bs_origin *origin, uint64_t bytes_per_second) { atomic_store(&origin->rate, bytes_per_second); }

void bs_origin_set_latency(bs_origin *origin, uint64_t nanoseconds) { atomic_store(&origin->latency_ns, nanoseconds); }

uint64_t bs_origin_body_bytes(const bs_origin *origin)
{
    return atomic_load(&((bs_origin *)origin)->body_bytes);
}

uint64_t bs_origin_requests(const bs_origin *origin)
{
    return atomic_load(&((bs_origin *)origin)->requests);
}

void bs_origin_set_alias(bs_origin *o, const char *prefix, const char *file, const char *cache_control)
{
    if (prefix == NULL) {
        o->alias_prefix[0] = 0;
        return;
    }
    snprintf(o->alias_file, sizeof o->alias_file, "/%s", file[0] == '/' ? file + 1 : file);
    snprintf(o->alias_cache_control, sizeof o->alias_cache_control, "%s", cache_control != NULL ? cache_control : "");
    snprintf(o->alias_prefix, sizeof o->alias_prefix, "%s", prefix);
}

void bs_origin_set_max_age(bs_origin *o, uint64_t seconds)
{
    atomic_store(&o->max_age, seconds);
}

void bs_origin_stop(bs_origin *o)
{
    if (o == NULL)
        return;
    atomic_store(&o->stopping, 1);
    shutdown(o->listen_fd, SHUT_RDWR); /* wakes accept() */
    pthread_join(o->acceptor, NULL);
    close(o->listen_fd);
    pthread_mutex_lock(&o->mutex);
    for (int i = 0; i < MAX_CONNS; i++)
        if (o->conns[i] >= 0)
            shutdown(o->conns[i], SHUT_RDWR); /* wakes poll/sendfile; the thread closes it */
    /* Bounded wait for the connection threads (they only touch `o` until they
     * decrement `active`). */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    while (o->active > 0 && pthread_cond_timedwait(&o->idle, &o->mutex, &deadline) == 0) {
    }
    int leaked = o->active > 0;
    pthread_mutex_unlock(&o->mutex);
    if (leaked)
        return; /* a stuck thread still holds `o`; leaking beats a use-after-free */
    pthread_mutex_destroy(&o->mutex);
    pthread_cond_destroy(&o->idle);
    free(o);
}
