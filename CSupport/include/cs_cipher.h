/*
 * cs_cipher.h — block-addressed AES decryption for "decrypt while serving".
 *
 * The cache keeps an origin's ciphertext; readers want plaintext of any byte range. A range is
 * widened to whole 16-byte blocks and each run of blocks decrypted on its own from its block
 * index. OpenSSL EVP does the work; each cs_cipher keeps one EVP context, given a new IV per call.
 *
 *  - CS_CIPHER_AES128_CTR: the IV is the initial counter block, one big-endian 128-bit integer
 *    wrapping modulo 2^128 (as `openssl enc -aes-128-ctr -K .. -iv ..`); block i uses IV + i.
 *  - CS_CIPHER_AES128_ECB: each block on its own, no padding; IV ignored, lengths multiples of 16.
 *
 * Threading: a cs_cipher is used by one thread at a time (mutable EVP state); distinct ones may
 * run on distinct threads. OpenSSL's error queue is per thread, so call cs_cipher_last_error on
 * the thread whose call failed.
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

/** A decryption context for `kind` with a 16-byte key. NULL for an unknown kind or when OpenSSL
 * fails (see cs_cipher_last_error). */
cs_cipher *cs_cipher_new(int kind, const uint8_t key[16]);

/**
 * Decrypts len bytes of ciphertext starting at block `block_index` (byte block_index * 16) from in
 * to out (the same buffer, or not overlapping). CTR takes any len (a short tail ends the resource),
 * ECB multiples of 16. `iv` is the initial counter block (CTR; ignored by ECB, may be NULL then).
 * Returns 0, -EINVAL for a bad argument (nothing written), or -EIO when OpenSSL fails (see
 * cs_cipher_last_error; out undefined).
 */
int cs_cipher_decrypt_at(cs_cipher *c, const uint8_t iv[16], uint64_t block_index,
                         const uint8_t *in, uint8_t *out, size_t len);

/** OpenSSL's message for the calling thread's latest failure into buf (NUL-terminated when
 * buflen > 0; "unknown OpenSSL error" when none), clearing that thread's error queue. */
void cs_cipher_last_error(char *buf, size_t buflen);

/** Frees the context (and wipes its key schedule). NULL is harmless. */
void cs_cipher_free(cs_cipher *c);

/** IV + block_index as 128-bit big-endian integers, modulo 2^128, into out (CTR; public for tests
 * of the carry). */
void cs_cipher_counter_at(const uint8_t iv[16], uint64_t block_index, uint8_t out[16]);

#ifdef __cplusplus
}
#endif
#endif /* CS_CIPHER_H */
