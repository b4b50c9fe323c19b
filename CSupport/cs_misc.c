/* cs_misc.c — name resolution, pool work, error strings, SHA-256, malloc arenas, syncfs, xattrs. */
#define _GNU_SOURCE /* syncfs */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/xattr.h>

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
        if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
            continue;
        size_t size = ai->ai_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        memcpy(&addrs[i], ai->ai_addr, size);
        /* sin_port and sin6_port share their offset (asserted below). */
        ((struct sockaddr_in *)&addrs[i++])->sin_port = htons((uint16_t)port);
    }
    *out = addrs;
    *count = n;
    return 0;
}

_Static_assert(offsetof(struct sockaddr_in, sin_port) == offsetof(struct sockaddr_in6, sin6_port), "ports");

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

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
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
    /* Running lookups cannot be cancelled and finish; either way the callback runs before the loop exits. */
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
    /* uv_strerror would allocate (and leak) for unknown codes; a per-thread buffer does not.
     * libuv's codes are negated errno values plus UV_EAI_*: this covers both. */
    static _Thread_local char buf[128];
    return uv_strerror_r(error, buf, sizeof buf);
}

/* --------------------------------------------------------------- crypto */

/* SHA-256 (FIPS 180-4) in plain C, once per new cache key: no EVP keeps a proxy of http origins
 * from initialising libcrypto (about 2 MB resident). Tested on the standard's vectors and sha256sum. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr32(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* Folds one 64-byte block into the state. */
static void sha256_block(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    /* The standard's a..h as locals (k for h): kept in registers, 2.7 times the speed of an array. */
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
        uint32_t t2 = (rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void cs_sha256(const void *data, size_t len, uint8_t out[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *bytes = data;
    size_t rest = len;
    for (; rest >= 64; rest -= 64, bytes += 64)
        sha256_block(h, bytes);
    /* The tail, the 0x80 marker and the bit length, in one or two blocks. */
    uint8_t tail[128] = {0};
    if (rest > 0)
        memcpy(tail, bytes, rest);
    tail[rest] = 0x80;
    size_t blocks = rest + 1 + 8 <= 64 ? 1 : 2;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[blocks * 64 - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t i = 0; i < blocks; i++)
        sha256_block(h, tail + 64 * i);
    for (int i = 0; i < 32; i++)
        out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
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

int cs_trim_heap(void)
{
    return malloc_trim(0);
}

/* ------------------------------------------------------------- syncfs */

int cs_syncfs(int fd)
{
    return syncfs(fd) == 0 ? 0 : -errno;
}

/* --------------------------------------------------- extended attributes */

int cs_fsetxattr(int fd, const char *name, const void *value, size_t size)
{
    return fsetxattr(fd, name, value, size, 0);
}

long cs_fgetxattr(int fd, const char *name, void *value, size_t size)
{
    return (long)fgetxattr(fd, name, value, size);
}

int cs_lremovexattr(const char *path, const char *name)
{
    return lremovexattr(path, name);
}
