/*
 * cs_atrest.h — encryption at rest of a cache folder, over OpenSSL EVP.
 *
 *  - AES-256-XTS over fixed data units (data files): unit n of a file is encrypted with the tweak
 *    (n little-endian, 8 bytes; the file's id, 8 bytes). Units are independent (any one read or
 *    rewritten alone), length-preserving, no per-unit storage.
 *  - AES-256-GCM one-shot seal/open (metadata, index, journal entries, the folder's wrapped key):
 *    a fresh random 12-byte nonce per seal and a 16-byte tag, so tampering or a wrong key shows.
 *
 * Threading: a cs_xts is used by one thread at a time, except that any thread may decrypt with it
 * through a cs_xts_dec of its own (which only reads the cs_xts); the GCM calls keep no state.
 * Error details are left in OpenSSL's per-thread error queue.
 */
#ifndef CS_ATREST_H
#define CS_ATREST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cs_xts cs_xts;

/** The data unit of an encrypted data file, in bytes. */
#define CS_XTS_UNIT 4096

/** An XTS context for a 64-byte key (two different AES-256 keys). NULL on failure. */
cs_xts *cs_xts_new(const uint8_t key[64]);

/** Encrypts (encrypt != 0) or decrypts in place len bytes of whole units of unit_size bytes (a
 * multiple of 16, at least 16), the first being unit first_unit of file file_id. Returns 0, -EINVAL
 * for a bad argument, -EIO when OpenSSL fails. */
int cs_xts_units(cs_xts *x, int encrypt, uint64_t file_id, uint64_t first_unit,
                 uint8_t *buf, size_t len, size_t unit_size);

/** Frees the context (and wipes its keys). NULL is harmless. */
void cs_xts_free(cs_xts *x);

/** A decryption context owned by one thread, keyed from whichever cs_xts it is used with (re-keyed
 * only when that changes): a thread other than the cs_xts's own decrypts with it, e.g. a loop
 * sending a file another loop owns. */
typedef struct cs_xts_dec cs_xts_dec;

/** NULL when out of memory. */
cs_xts_dec *cs_xts_dec_new(void);

/** Decrypts len bytes of whole units from in into out (the same buffer or apart), as cs_xts_units
 * with x's key; x must stay alive during the call. Returns 0, -EINVAL or -EIO. */
int cs_xts_dec_units(cs_xts_dec *d, const cs_xts *x, uint64_t file_id, uint64_t first_unit, const uint8_t *in,
                     uint8_t *out, size_t len, size_t unit_size);

/** NULL is harmless. */
void cs_xts_dec_free(cs_xts_dec *d);

/**
 * The one encrypted read (the loop's sends, their read-ahead, every Swift read): the plaintext
 * bytes [from, end) of data file fd, encrypted with x under file_id. The read widens to whole units
 * into buf (at least cs_xts_read_capacity(end - from) bytes); a last unit cut short by the file's
 * end reads its missing bytes as 0 (as written); units are decrypted in place with d (a thread's
 * own context) when given, else with x's own (x's thread only). *start is where byte `from` is in
 * buf. Returns 0, -EINVAL, -EIO (file ends before `end`, or OpenSSL failed) or -errno of pread.
 */
int cs_xts_read(cs_xts *x, cs_xts_dec *d, int fd, uint64_t file_id, int64_t from, int64_t end, uint8_t *buf,
                size_t *start);

/** Bytes of buf a cs_xts_read of len bytes may use (len widened to whole units on both sides). */
#define cs_xts_read_capacity(len) ((size_t)(len) + 2 * (size_t)CS_XTS_UNIT)

/** GCM nonce and tag sizes. */
#define CS_GCM_NONCE 12
#define CS_GCM_TAG 16

/** AES-256-GCM: len bytes of ciphertext into out, its 16-byte tag into tag. aad (NULL when aad_len
 * is 0) is authenticated, not encrypted. Returns 0 or -EIO. */
int cs_gcm_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16]);

/** The inverse of cs_gcm_seal. Returns 0; -EBADMSG when the tag does not match (wrong key or aad,
 * damaged or altered bytes: out is wiped); -EIO when OpenSSL fails. */
int cs_gcm_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_len,
                const uint8_t *in, size_t len, uint8_t *out, const uint8_t tag[16]);

#ifdef __cplusplus
}
#endif
#endif /* CS_ATREST_H */
