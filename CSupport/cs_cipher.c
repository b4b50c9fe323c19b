/* cs_cipher.c — block-addressed AES-128 CTR/ECB decryption over OpenSSL EVP. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "cs_cipher.h"

struct cs_cipher {
    EVP_CIPHER_CTX *ctx;
    int kind;
};

/* EVP_DecryptUpdate takes an int length: block-aligned pieces below INT_MAX keep CTR counting. */
#define CS_CIPHER_PIECE ((size_t)1 << 30)

void cs_cipher_counter_at(const uint8_t iv[16], uint64_t block_index, uint8_t out[16])
{
    /* From the low-order (last) byte; the carry runs through all 16, overflow dropped (mod 2^128). */
    unsigned int carry = 0;
    for (int i = 15; i >= 0; i--) {
        unsigned int sum = (unsigned int)iv[i] + (unsigned int)(block_index & 0xff) + carry;
        out[i] = (uint8_t)sum;
        carry = sum >> 8;
        block_index >>= 8;
    }
}

cs_cipher *cs_cipher_new(int kind, const uint8_t key[16])
{
    const EVP_CIPHER *cipher;
    switch (kind) {
    case CS_CIPHER_AES128_CTR: cipher = EVP_aes_128_ctr(); break;
    case CS_CIPHER_AES128_ECB: cipher = EVP_aes_128_ecb(); break;
    default: return NULL;
    }
    if (key == NULL)
        return NULL;
    cs_cipher *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->kind = kind;
    c->ctx = EVP_CIPHER_CTX_new();
    if (c->ctx == NULL || EVP_DecryptInit_ex(c->ctx, cipher, NULL, key, NULL) != 1
        || EVP_CIPHER_CTX_set_padding(c->ctx, 0) != 1) {
        cs_cipher_free(c);
        return NULL;
    }
    return c;
}

int cs_cipher_decrypt_at(cs_cipher *c, const uint8_t iv[16], uint64_t block_index,
                         const uint8_t *in, uint8_t *out, size_t len)
{
    if (c == NULL || (len > 0 && (in == NULL || out == NULL)))
        return -EINVAL;
    if (c->kind == CS_CIPHER_AES128_ECB && len % CS_CIPHER_BLOCK != 0)
        return -EINVAL;
    if (c->kind == CS_CIPHER_AES128_CTR) {
        if (iv == NULL)
            return -EINVAL;
        uint8_t counter[16];
        cs_cipher_counter_at(iv, block_index, counter);
        /* Only the IV changes, which resets the keystream position: no earlier short tail leaks in. */
        if (EVP_DecryptInit_ex(c->ctx, NULL, NULL, NULL, counter) != 1)
            return -EIO;
    }
    /* ECB keeps no state between blocks once padding is off: nothing to reset. */
    size_t done = 0;
    while (done < len) {
        size_t piece = len - done < CS_CIPHER_PIECE ? len - done : CS_CIPHER_PIECE;
        int outl = 0;
        if (EVP_DecryptUpdate(c->ctx, out + done, &outl, in + done, (int)piece) != 1)
            return -EIO;
        if ((size_t)outl != piece) {
            /* Cannot happen for CTR or unpadded ECB; refused rather than return unwritten bytes. */
            ERR_raise_data(ERR_LIB_EVP, ERR_R_INTERNAL_ERROR, "short EVP_DecryptUpdate output");
            return -EIO;
        }
        done += piece;
    }
    return 0;
}

void cs_cipher_last_error(char *buf, size_t buflen)
{
    if (buf == NULL || buflen == 0)
        return;
    /* The earliest error is the root cause; later ones are context. */
    unsigned long code = ERR_get_error();
    if (code == 0)
        snprintf(buf, buflen, "unknown OpenSSL error");
    else
        ERR_error_string_n(code, buf, buflen);
    ERR_clear_error();
}

void cs_cipher_free(cs_cipher *c)
{
    if (c == NULL)
        return;
    EVP_CIPHER_CTX_free(c->ctx); /* cleans the key schedule; NULL is fine */
    free(c);
}
