/* cs_tls.c — bodies of the OpenSSL macro shims declared in cs_tls.h. */
#include "cs_tls.h"

int cs_ssl_set_sni(SSL *ssl, const char *name)
{
    return SSL_set_tlsext_host_name(ssl, name) == 1 ? 1 : 0;
}

int cs_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version)
{
    return SSL_CTX_set_min_proto_version(ctx, version) == 1 ? 1 : 0;
}

void cs_ssl_ctx_release_buffers(SSL_CTX *ctx)
{
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}
