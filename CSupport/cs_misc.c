/*
 * cs_misc.c — name resolution, thread-pool work, error strings, SHA-256 and
 * the malloc arena cap.
 */
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cs_internal.h"

/* ------------------------------------------------------------- resolve */

struct cs_resolve_req {
    uv_getaddrinfo_t req;
    cs_resolve_req *prev, *next; /* loop->resolves, for cancelling on stop */
    cs_loop *loop;
    cs_resolve_fn cb;
    void *ctx;
    int port;
};

static void resolve_unlink(cs_resolve_req *r)
{
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        r->loop->resolves = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
}

/* Copies the TCP/IP results into a sockaddr_storage array with the port set.
 * Returns 0, UV_EAI_NONAME (no usable address) or UV_ENOMEM. */
static int collect(const struct addrinfo *res, int port,
                   struct sockaddr_storage **out, size_t *count)
{
    size_t n = 0;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
            n++;
    if (n == 0)
        return UV_EAI_NONAME;
    struct sockaddr_storage *addrs = calloc(n, sizeof *addrs);
    if (addrs == NULL)
        return UV_ENOMEM;
    size_t i = 0;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        struct sockaddr_storage *ss = &addrs[i];
        if (ai->ai_family == AF_INET) {
            memcpy(ss, ai->ai_addr, sizeof(struct sockaddr_in));
            ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
        } else if (ai->ai_family == AF_INET6) {
            memcpy(ss, ai->ai_addr, sizeof(struct sockaddr_in6));
            ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
        } else {
            continue;
        }
        i++;
    }
    *out = addrs;
    *count = n;
    return 0;
}

static void resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    cs_resolve_req *r = req->data;
    resolve_unlink(r);

    struct sockaddr_storage *addrs = NULL;
    size_t count = 0;
    if (status == UV_EAI_CANCELED)
        status = UV_ECANCELED; /* the loop is stopping */
    if (status == 0)
        status = collect(res, r->port, &addrs, &count);
    r->cb(r->ctx, status, addrs, count);
    free(addrs);
    uv_freeaddrinfo(res);
    free(r);
}

int cs_resolve(cs_loop *loop, const char *host, int port, cs_resolve_fn cb, void *ctx)
{
    if (loop->closing)
        return -ESHUTDOWN;
    if (host == NULL || cb == NULL || port < 0 || port > 65535)
        return -EINVAL;
    cs_resolve_req *r = calloc(1, sizeof *r);
    if (r == NULL)
        return -ENOMEM;
    r->loop = loop;
    r->cb = cb;
    r->ctx = ctx;
    r->port = port;
    r->req.data = r;

    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = uv_getaddrinfo(&loop->uv, &r->req, resolved, host, NULL, &hints);
    if (rc < 0) {
        free(r);
        return rc;
    }
    r->next = loop->resolves;
    if (r->next != NULL)
        r->next->prev = r;
    loop->resolves = r;
    return 0;
}

void cs__resolve_cancel_all(cs_loop *loop)
{
    /* Lookups already running cannot be cancelled; they finish normally.
     * Either way the callback runs before the loop thread exits. */
    for (cs_resolve_req *r = loop->resolves; r != NULL; r = r->next)
        uv_cancel((uv_req_t *)&r->req);
}

/* ---------------------------------------------------------------- work */

typedef struct {
    uv_work_t req;
    cs_task_fn work, done;
    void *ctx;
} cs_work;

static void work_run(uv_work_t *req)
{
    cs_work *w = req->data;
    if (w->work != NULL)
        w->work(w->ctx);
}

static void work_done(uv_work_t *req, int status)
{
    (void)status; /* never cancelled: the loop waits for work to finish */
    cs_work *w = req->data;
    if (w->done != NULL)
        w->done(w->ctx);
    free(w);
}

int cs_work_submit(cs_loop *loop, cs_task_fn work, cs_task_fn done, void *ctx)
{
    cs_work *w = calloc(1, sizeof *w);
    if (w == NULL)
        return -ENOMEM;
    w->work = work;
    w->done = done;
    w->ctx = ctx;
    w->req.data = w;
    int r = uv_queue_work(&loop->uv, &w->req, work_run, work_done);
    if (r < 0)
        free(w);
    return r;
}

/* --------------------------------------------------------------- errors */

const char *cs_strerror(int error)
{
    if (error >= 0)
        return "success";
    /* uv_strerror would allocate (and leak) a string for unknown codes; a
     * per-thread buffer keeps every case allocation-free. libuv's codes are
     * negated errno values plus its own UV_EAI_* range, so this covers both. */
    static _Thread_local char buf[128];
    return uv_strerror_r(error, buf, sizeof buf);
}

/* --------------------------------------------------------------- crypto */

void cs_sha256(const void *data, size_t len, uint8_t out[32])
{
    static const uint8_t empty = 0;
    unsigned int outlen = 32;
    if (data == NULL)
        data = &empty; /* len is 0 then; EVP wants a valid pointer */
    if (EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL) != 1)
        memset(out, 0, 32);
}

int cs_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32])
{
    static const uint8_t empty = 0;
    size_t outlen = 0;
    if (data == NULL)
        data = &empty;
    if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key, key_len, data, len, out, 32, &outlen) == NULL ||
        outlen != 32) {
        memset(out, 0, 32);
        return -1;
    }
    return 0;
}

int cs_random_bytes(uint8_t *out, size_t len)
{
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

/* ------------------------------------------------------------- process */

int cs_limit_malloc_arenas(int count)
{
    return mallopt(M_ARENA_MAX, count);
}
