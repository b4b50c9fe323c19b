/* cs_gzip.c — gzip (zlib) for playlists stored gzipped: decoded to rewrite, encoded for the client. */
#include "csupport.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

/* Runs inflate or deflate over the whole input into a growing buffer of at most cap bytes. */
static int run(z_stream *zs, int inflating, const uint8_t *in, size_t len, size_t cap, uint8_t **out, size_t *out_len) {
    size_t size = len < 4096 ? 4096 : len * (inflating ? 4 : 1) + 64;
    if (size > cap) size = cap;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return -ENOMEM;
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)len;
    size_t used = 0;
    for (;;) {
        if (used == size) {
            if (size >= cap) { free(buf); return -EFBIG; }
            size_t bigger = size * 2 > cap ? cap : size * 2;
            uint8_t *grown = realloc(buf, bigger);
            if (!grown) { free(buf); return -ENOMEM; }
            buf = grown;
            size = bigger;
        }
        zs->next_out = buf + used;
        zs->avail_out = (uInt)(size - used);
        int status = inflating ? inflate(zs, Z_NO_FLUSH) : deflate(zs, Z_FINISH);
        used = size - zs->avail_out;
        if (status == Z_STREAM_END) break;
        if (status == Z_BUF_ERROR && zs->avail_out != 0) { free(buf); return -EBADMSG; } /* truncated input */
        if (status != Z_OK && status != Z_BUF_ERROR) { free(buf); return -EBADMSG; }
    }
    *out = buf;
    *out_len = used;
    return 0;
}

int cs_gunzip(const uint8_t *in, size_t len, size_t cap, uint8_t **out, size_t *out_len) {
    if (len > UINT32_MAX) return -EFBIG;
    z_stream zs = {0};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return -ENOMEM;
    int status = run(&zs, 1, in, len, cap, out, out_len);
    inflateEnd(&zs);
    return status;
}

int cs_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len) {
    if (len > UINT32_MAX) return -EFBIG;
    z_stream zs = {0};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -ENOMEM;
    int status = run(&zs, 0, in, len, deflateBound(&zs, (uLong)len) + 64, out, out_len);
    deflateEnd(&zs);
    return status;
}

void cs_free(void *pointer) { free(pointer); }
