/*
 * cs_cipher.h — block-addressed AES decryption for "decrypt while serving".
 *
 * The cache keeps an origin's ciphertext; readers want plaintext of any byte
 * range. A range is widened to whole 16-byte blocks, and each run of blocks is
 * decrypted on its own, starting at its block index, with this API. OpenSSL's
 * EVP does the cipher work; one EVP context lives in each cs_cipher and is
 * re-keyed only with a new IV per call (no context per call).
 *
 * Schemes
 *  - CS_CIPHER_AES128_CTR: the IV is the initial 16-byte counter block, and
 *    the counter is the whole block as one big-endian 128-bit integer, wrapping
 *    modulo 2^128 (what `openssl enc -aes-128-ctr -K .. -iv ..` produces).
 *    Block i uses counter IV + i.
 *  - CS_CIPHER_AES128_ECB: every block decrypts on its own, no padding; the
 *    IV is ignored and lengths must be multiples of 16.
 *
 * Threading: a cs_cipher is used by one thread at a time (it holds mutable
 * EVP state); distinct cs_ciphers may be used on distinct threads at once.
 * Error messages come from OpenSSL's error queue, which is per thread, so
 * cs_cipher_last_error must be called on the thread whose call failed.
 */
#ifndef CS_CIPHER_H
#define CS_CIPHER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cs_cipher cs_cipher;

/** Cipher kinds for cs_cipher_new. */
enum {
    CS_CIPHER_AES128_CTR = 1,
    CS_CIPHER_AES128_ECB = 2,
};

/** AES block size in bytes. */
#define CS_CIPHER_BLOCK 16

/**
 * A decryption context for `kind` with a 16-byte key. Returns NULL for an
 * unknown kind or when OpenSSL fails (see cs_cipher_last_error).
 */
cs_cipher *cs_cipher_new(int kind, const uint8_t key[16]);

/**
 * Decrypts len bytes of ciphertext that start at block `block_index` of the
 * resource (byte offset block_index * 16) from in to out. `in` and `out` may
 * be the same buffer but must not otherwise overlap. For CTR, len may be any
 * length (a short tail ends the resource); for ECB it must be a multiple of
 * 16. `iv` is the resource's initial counter block (CTR; ignored by ECB, may
 * be NULL then). Returns 0, -EINVAL for a bad argument (nothing written), or
 * -EIO when OpenSSL fails (see cs_cipher_last_error; out is then undefined).
 */
int cs_cipher_decrypt_at(cs_cipher *c, const uint8_t iv[16], uint64_t block_index,
                         const uint8_t *in, uint8_t *out, size_t len);

/**
 * Writes OpenSSL's message for the calling thread's latest failure into
 * buf (always NUL-terminated when buflen > 0) and clears that thread's
 * OpenSSL error queue. Writes "unknown OpenSSL error" when the queue is empty.
 */
void cs_cipher_last_error(char *buf, size_t buflen);

/** Frees the context (and wipes its key schedule). NULL is harmless. */
void cs_cipher_free(cs_cipher *c);

/**
 * IV + block_index as 128-bit big-endian integers, modulo 2^128, into out.
 * Exposed for tests of the carry; cs_cipher_decrypt_at uses it for CTR.
 */
void cs_cipher_counter_at(const uint8_t iv[16], uint64_t block_index, uint8_t out[16]);

#ifdef __cplusplus
}
#endif
#endif /* CS_CIPHER_H */
