/*
 * cs_tls.h — OpenSSL for the Swift layer, and shims for the macros it cannot import.
 *
 * The Swift upstream client drives TLS itself (SSL objects over memory BIOs fed from CSupport
 * sockets). OpenSSL's functions and integer constants import through this header; function-like
 * macros do not, so each one Swift needs gets a one-line cs_ssl_... function naming the macro.
 * All are plain OpenSSL calls: any thread, with OpenSSL's rules (one SSL object, one thread at a time).
 */
#ifndef CS_TLS_H
#define CS_TLS_H

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#ifdef __cplusplus
extern "C" {
#endif

/** SSL_set_tlsext_host_name: the SNI server name, host names only (RFC 6066 forbids IP literals).
 * Returns 1 on success, 0 on failure. */
int cs_ssl_set_sni(SSL *ssl, const char *name);

/** SSL_CTX_set_min_proto_version: the lowest version negotiated, e.g. TLS1_2_VERSION. Returns 1 on
 * success, 0 on failure. */
int cs_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version);

/** SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS): idle connections give their read/write buffers
 * back (a keep-alive pool holds many). */
void cs_ssl_ctx_release_buffers(SSL_CTX *ctx);

#ifdef __cplusplus
}
#endif
#endif /* CS_TLS_H */
