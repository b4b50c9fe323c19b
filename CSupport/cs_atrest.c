/* cs_atrest.c — AES-256-XTS data units and AES-256-GCM sealing (see cs_atrest.h). */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "cs_atrest.h"

struct cs_xts {
    /* XTS keeps distinct key schedules for each direction: one context each. */
    EVP_CIPHER_CTX *enc;
    EVP_CIPHER_CTX *dec;
    /* Read-only after cs_xts_new, for cs_xts_dec keying its own context on another thread; the
     * serial tells this cs_xts from a freed one at the same address. */
    uint8_t key[64];
    uint64_t serial;
};

struct cs_xts_dec {
    EVP_CIPHER_CTX *ctx;
    uint64_t serial; /* of the cs_xts whose key ctx holds; 0: none */
};

static atomic_uint_fast64_t next_serial = 1;

cs_xts *cs_xts_new(const uint8_t key[64])
{
    if (key == NULL)
        return NULL;
    cs_xts *x = calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    x->enc = EVP_CIPHER_CTX_new();
    x->dec = EVP_CIPHER_CTX_new();
    memcpy(x->key, key, sizeof x->key);
    x->serial = (uint64_t)atomic_fetch_add(&next_serial, 1);
    if (x->enc == NULL || x->dec == NULL
        || EVP_CipherInit_ex(x->enc, EVP_aes_256_xts(), NULL, key, NULL, 1) != 1
        || EVP_CipherInit_ex(x->dec, EVP_aes_256_xts(), NULL, key, NULL, 0) != 1) {
        cs_xts_free(x);
        return NULL;
    }
    return x;
}

/* Runs whole units through ctx from in to out (the same buffer, or apart). */
static int run_units(EVP_CIPHER_CTX *ctx, uint64_t file_id, uint64_t first_unit, const uint8_t *in, uint8_t *out,
                     size_t len, size_t unit_size)
{
    if (unit_size < 16 || unit_size % 16 != 0 || unit_size > INT_MAX || len % unit_size != 0
        || (len > 0 && (in == NULL || out == NULL)))
        return -EINVAL;
    uint8_t tweak[16];
    for (size_t done = 0, unit = 0; done < len; done += unit_size, unit++) {
        uint64_t n = first_unit + unit;
        for (int i = 0; i < 8; i++) {
            tweak[i] = (uint8_t)(n >> (8 * i));
            tweak[8 + i] = (uint8_t)(file_id >> (8 * i));
        }
        /* XTS takes one data unit per update: a new tweak before each. */
        int outl = 0;
        if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, tweak, -1) != 1
            || EVP_CipherUpdate(ctx, out + done, &outl, in + done, (int)unit_size) != 1
            || (size_t)outl != unit_size)
            return -EIO;
    }
    return 0;
}

int cs_xts_units(cs_xts *x, int encrypt, uint64_t file_id, uint64_t first_unit,
                 uint8_t *buf, size_t len, size_t unit_size)
{
    if (x == NULL)
        return -EINVAL;
    return run_units(encrypt ? x->enc : x->dec, file_id, first_unit, buf, buf, len, unit_size);
}

cs_xts_dec *cs_xts_dec_new(void)
{
    cs_xts_dec *d = calloc(1, sizeof *d);
    if (d != NULL && (d->ctx = EVP_CIPHER_CTX_new()) == NULL) {
        free(d);
        d = NULL;
    }
    return d;
}

int cs_xts_dec_units(cs_xts_dec *d, const cs_xts *x, uint64_t file_id, uint64_t first_unit, const uint8_t *in,
                     uint8_t *out, size_t len, size_t unit_size)
{
    if (d == NULL || x == NULL)
        return -EINVAL;
    if (d->serial != x->serial) {
        /* Keyed once per change of file (the key schedule is the costly part). */
        d->serial = 0;
        if (EVP_CipherInit_ex(d->ctx, EVP_aes_256_xts(), NULL, x->key, NULL, 0) != 1)
            return -EIO;
        d->serial = x->serial;
    }
    return run_units(d->ctx, file_id, first_unit, in, out, len, unit_size);
}

void cs_xts_dec_free(cs_xts_dec *d)
{
    if (d == NULL)
        return;
    EVP_CIPHER_CTX_free(d->ctx);
    free(d);
}

void cs_xts_free(cs_xts *x)
{
    if (x == NULL)
        return;
    EVP_CIPHER_CTX_free(x->enc);
    EVP_CIPHER_CTX_free(x->dec);
    OPENSSL_cleanse(x->key, sizeof x->key);
    free(x);
}

static int gcm(int encrypt, const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
               const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
    if (key == NULL || nonce == NULL || tag == NULL || len > INT_MAX || aad_len > INT_MAX
        || (len > 0 && (in == NULL || out == NULL)) || (aad_len > 0 && aad == NULL))
        return -EINVAL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return -EIO;
    int status = -EIO;
    int outl = 0;
    uint8_t tail[16]; /* GCM's final step writes no bytes */
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce, encrypt) != 1)
        goto done;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &outl, aad, (int)aad_len) != 1)
        goto done;
    if (len > 0 && EVP_CipherUpdate(ctx, out, &outl, in, (int)len) != 1)
        goto done;
    if (encrypt) {
        if (EVP_CipherFinal_ex(ctx, tail, &outl) != 1
            || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, CS_GCM_TAG, tag) != 1)
            goto done;
    } else {
        if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, CS_GCM_TAG, tag) != 1)
            goto done;
        if (EVP_CipherFinal_ex(ctx, tail, &outl) != 1) {
            /* Nothing of a forgery or a wrong key's output is handed out. */
            if (len > 0)
                OPENSSL_cleanse(out, len);
            status = -EBADMSG;
            goto done;
        }
    }
    status = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return status;
}

int cs_gcm_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
    return gcm(1, key, nonce, aad, aad_len, in, len, out, tag);
}

int cs_gcm_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                const uint8_t *in, size_t len, uint8_t *out, const uint8_t tag[16])
{
    return gcm(0, key, nonce, aad, aad_len, in, len, out, (uint8_t *)tag);
}

int cs_xts_read(cs_xts *x, cs_xts_dec *d, int fd, uint64_t file_id, int64_t from, int64_t end, uint8_t *buf,
                size_t *start)
{
    if (x == NULL || buf == NULL || start == NULL || from < 0 || end < from)
        return -EINVAL;
    const int64_t unit = CS_XTS_UNIT;
    int64_t first = from / unit * unit;
    size_t whole = (size_t)((end + unit - 1) / unit * unit - first);
    size_t got = 0;
    while (got < whole) {
        ssize_t n = pread(fd, buf + got, whole - got, (off_t)first + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got < (size_t)(end - first))
        return -EIO;
    /* The last unit may stop at the file's end: its missing bytes read as 0, as written. */
    memset(buf + got, 0, whole - got);
    int r = d != NULL ? cs_xts_dec_units(d, x, file_id, (uint64_t)(first / unit), buf, buf, whole, CS_XTS_UNIT)
                      : cs_xts_units(x, 0, file_id, (uint64_t)(first / unit), buf, whole, CS_XTS_UNIT);
    if (r < 0)
        return r;
    *start = (size_t)(from - first);
    return 0;
}
