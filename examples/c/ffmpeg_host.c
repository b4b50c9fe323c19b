/* An FFmpeg host reading media through the cache: a custom AVIOContext whose
 * read and seek callbacks are hc_reader_read and hc_reader_seek. Demuxes the
 * whole input and prints, per packet, "stream pts size checksum" (FNV-1a of
 * the packet's bytes). With --file it reads a local file through stdio
 * instead: both modes must print the same lines for the same bytes.
 * usage: ffmpeg_host --cache CACHE_DIR URL | --file PATH */
#include <httpcache.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <string.h>

#define IO_BUFFER_SIZE 65536
#define READ_TIMEOUT_MS 30000

/* ------------------------------------------------------- over hc_reader */

struct cache_input {
    hc_reader *reader;
    int64_t position; /* hc_reader has no tell: seek needs it for SEEK_CUR */
};

static int cache_read(void *opaque, uint8_t *buf, int size)
{
    struct cache_input *input = opaque;
    int64_t n = hc_reader_read(input->reader, buf, (size_t)size, READ_TIMEOUT_MS);
    if (n == 0)
        return AVERROR_EOF;
    if (n < 0) {
        fprintf(stderr, "hc_reader_read: %s\n", hc_strerror((int)n));
        return AVERROR(EIO);
    }
    input->position += n;
    return (int)n;
}

static int64_t cache_seek(void *opaque, int64_t offset, int whence)
{
    struct cache_input *input = opaque;
    hc_content_info info = {0};
    int rc = HC_OK;
    if ((whence & AVSEEK_SIZE) || (whence & ~AVSEEK_FORCE) == SEEK_END) {
        rc = hc_reader_info(input->reader, &info, READ_TIMEOUT_MS);
        if (rc != HC_OK || info.total_length < 0)
            return rc != HC_OK ? AVERROR(EIO) : AVERROR(ENOSYS);
        if (whence & AVSEEK_SIZE)
            return info.total_length;
    }
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = input->position + offset; break;
    case SEEK_END: target = info.total_length + offset; break;
    default: return AVERROR(EINVAL);
    }
    rc = hc_reader_seek(input->reader, target);
    if (rc != HC_OK)
        return rc == HC_ERANGE ? AVERROR(EINVAL) : AVERROR(EIO);
    input->position = target;
    return target;
}

/* ------------------------------------------------------- over stdio */

static int file_read(void *opaque, uint8_t *buf, int size)
{
    size_t n = fread(buf, 1, (size_t)size, opaque);
    if (n == 0)
        return ferror((FILE *)opaque) ? AVERROR(EIO) : AVERROR_EOF;
    return (int)n;
}

static int64_t file_seek(void *opaque, int64_t offset, int whence)
{
    FILE *file = opaque;
    if (whence & AVSEEK_SIZE) {
        long here = ftell(file);
        if (fseek(file, 0, SEEK_END) != 0)
            return AVERROR(EIO);
        long size = ftell(file);
        fseek(file, here, SEEK_SET);
        return size;
    }
    if (fseek(file, (long)offset, whence & ~AVSEEK_FORCE) != 0)
        return AVERROR(EINVAL);
    return ftell(file);
}

/* ------------------------------------------------------- the demuxing */

static uint32_t fnv1a(const uint8_t *bytes, int size)
{
    uint32_t hash = 2166136261u;
    for (int i = 0; i < size; i++)
        hash = (hash ^ bytes[i]) * 16777619u;
    return hash;
}

/* Demuxes every packet from the given callbacks; 0 on success. */
static int demux(void *opaque, int (*read)(void *, uint8_t *, int), int64_t (*seek)(void *, int64_t, int))
{
    uint8_t *buffer = av_malloc(IO_BUFFER_SIZE);
    AVIOContext *io = avio_alloc_context(buffer, IO_BUFFER_SIZE, 0, opaque, read, NULL, seek);
    AVFormatContext *format = avformat_alloc_context();
    if (!buffer || !io || !format)
        return 1;
    format->pb = io;
    format->flags |= AVFMT_FLAG_CUSTOM_IO;
    int rc = avformat_open_input(&format, NULL, NULL, NULL);
    if (rc < 0) {
        fprintf(stderr, "avformat_open_input: %s\n", av_err2str(rc));
        return 1;
    }
    if ((rc = avformat_find_stream_info(format, NULL)) < 0) {
        fprintf(stderr, "avformat_find_stream_info: %s\n", av_err2str(rc));
        return 1;
    }
    AVPacket *packet = av_packet_alloc();
    long packets = 0;
    while ((rc = av_read_frame(format, packet)) >= 0) {
        if (packet->pts == AV_NOPTS_VALUE)
            printf("%d nopts %d %08x\n", packet->stream_index, packet->size, fnv1a(packet->data, packet->size));
        else
            printf("%d %lld %d %08x\n", packet->stream_index, (long long)packet->pts, packet->size,
                   fnv1a(packet->data, packet->size));
        packets++;
        av_packet_unref(packet);
    }
    av_packet_free(&packet);
    avformat_close_input(&format);
    av_freep(&io->buffer);
    avio_context_free(&io);
    if (rc != AVERROR_EOF) {
        fprintf(stderr, "av_read_frame: %s\n", av_err2str(rc));
        return 1;
    }
    fprintf(stderr, "%ld packets\n", packets);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--file") == 0) {
        FILE *file = fopen(argv[2], "rb");
        if (!file) {
            perror(argv[2]);
            return 1;
        }
        int rc = demux(file, file_read, file_seek);
        fclose(file);
        return rc;
    }
    if (argc != 4 || strcmp(argv[1], "--cache") != 0) {
        fprintf(stderr, "usage: %s --cache CACHE_DIR URL | --file PATH\n", argv[0]);
        return 2;
    }
    hc_config *config = hc_config_new();
    if (config == NULL || hc_config_set(config, "cache-dir", argv[2]) != HC_OK) {
        fprintf(stderr, "hc_config_set: %s\n", config == NULL ? "out of memory" : hc_config_errmsg(config));
        return 1;
    }
    hc_cache *cache = NULL;
    int rc = hc_open(config, &cache);
    hc_config_free(config);
    if (rc != HC_OK) {
        fprintf(stderr, "hc_open: %s\n", hc_strerror(rc));
        return 1;
    }
    struct cache_input input = {NULL, 0};
    if ((rc = hc_reader_open(cache, argv[3], 0, -1, &input.reader)) != HC_OK) {
        fprintf(stderr, "hc_reader_open: %s\n", hc_strerror(rc));
        hc_close(cache);
        return 1;
    }
    rc = demux(&input, cache_read, cache_seek);
    hc_reader_close(input.reader);
    hc_close(cache);
    return rc;
}
