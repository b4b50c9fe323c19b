/* Reads a resource in-process through a cache with hc_reader: the whole of
 * it (written to OUT_PATH and compared with SOURCE_FILE), ranges and seeks;
 * then, after a line "offline" on stdin (the origin is gone), the cached
 * ranges again and an uncached URL, which fails. With KEY_FILE the cache
 * folder is encrypted at rest under that key (32 bytes or 64 hex digits).
 * usage: reader CACHE_DIR URL SOURCE_FILE OUT_PATH UNCACHED_URL [KEY_FILE] */
#include <httpcache.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *source;
static long source_size;
static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

/* Reads up to `length` bytes (until the end of the range) into `buf`; the
 * count, or a negative code. */
static int64_t read_all(hc_reader *reader, unsigned char *buf, int64_t length)
{
    int64_t done = 0;
    while (done < length) {
        size_t chunk = length - done < 65536 ? (size_t)(length - done) : 65536;
        int64_t n = hc_reader_read(reader, buf + done, chunk, 20000);
        if (n < 0)
            return n;
        if (n == 0)
            break;
        done += n;
    }
    return done;
}

/* Opens [offset, offset + length) (length -1: to the end), reads it and
 * compares it with the source. */
static void check_range(hc_cache *cache, const char *url, int64_t offset, int64_t length, const char *label)
{
    hc_reader *reader = NULL;
    int rc = hc_reader_open(cache, url, offset, length, &reader);
    if (rc != HC_OK) {
        printf("%s open: %s\n", label, hc_strerror(rc));
        failures++;
        return;
    }
    int64_t expected = length < 0 ? source_size - offset : length;
    unsigned char *buf = malloc((size_t)expected + 1);
    int64_t n = read_all(reader, buf, expected + 1);
    int same = n == expected && memcmp(buf, source + offset, (size_t)expected) == 0;
    printf("%s %lld+%lld: %s\n", label, (long long)offset, (long long)expected,
           n < 0 ? hc_strerror((int)n) : same ? "match" : "DIFFER");
    check(same, label);
    free(buf);
    hc_reader_close(reader);
}

/* Seeks inside one reader opened at `offset`: positions count from there. */
static void check_seeks(hc_cache *cache, const char *url, int64_t offset, int64_t length)
{
    hc_reader *reader = NULL;
    check(hc_reader_open(cache, url, offset, length, &reader) == HC_OK, "seek open");
    unsigned char buf[4096];
    int64_t targets[] = {length - 10, 0, length / 2, 7};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        int rc = hc_reader_seek(reader, targets[i]);
        int64_t want = length - targets[i] < 100 ? length - targets[i] : 100;
        int64_t n = read_all(reader, buf, want);
        int same = rc == HC_OK && n == want && memcmp(buf, source + offset + targets[i], (size_t)want) == 0;
        printf("seek %lld read %lld: %s\n", (long long)targets[i], (long long)n, same ? "match" : "DIFFER");
        check(same, "seek");
    }
    check(hc_reader_seek(reader, length) == HC_OK, "seek to the end");
    int64_t at_end = hc_reader_read(reader, buf, sizeof buf, 20000);
    printf("seek end read %lld\n", (long long)at_end);
    check(at_end == 0, "read at the end");
    int beyond = hc_reader_seek(reader, length + 1);
    printf("seek beyond: %s\n", hc_strerror(beyond));
    check(beyond == HC_ERANGE, "seek beyond");
    int before = hc_reader_seek(reader, -1);
    printf("seek before: %s\n", hc_strerror(before));
    check(before == HC_ERANGE, "seek before");
    hc_reader_close(reader);
}

static void check_cached(hc_cache *cache, const char *url)
{
    check_range(cache, url, 0, -1, "whole");
    check_range(cache, url, 1000000, 100, "range");
    check_range(cache, url, source_size - 1000, -1, "tail");
    check_range(cache, url, 3, 1, "byte");
    check_seeks(cache, url, 500000, 200000);
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s CACHE_DIR URL SOURCE_FILE OUT_PATH UNCACHED_URL [KEY_FILE]\n", argv[0]);
        return 2;
    }
    const char *url = argv[2];
    FILE *file = fopen(argv[3], "rb");
    if (!file || fseek(file, 0, SEEK_END) != 0 || (source_size = ftell(file)) < 0) {
        perror(argv[3]);
        return 2;
    }
    rewind(file);
    source = malloc((size_t)source_size);
    if (fread(source, 1, (size_t)source_size, file) != (size_t)source_size) {
        perror(argv[3]);
        return 2;
    }
    fclose(file);

    hc_config *config = hc_config_new();
    if (config == NULL || hc_config_set(config, "cache-dir", argv[1]) != HC_OK ||
        (argc == 7 && hc_config_set(config, "encryption-key-file", argv[6]) != HC_OK)) {
        fprintf(stderr, "hc_config_set: %s\n", config == NULL ? "out of memory" : hc_config_errmsg(config));
        return 1;
    }
    hc_cache *cache = NULL;
    int rc = hc_open(config, &cache);
    hc_config_free(config);
    if (rc != HC_OK) {
        printf("open: %s\n", hc_strerror(rc));
        return 1;
    }

    hc_reader *reader = (hc_reader *)1;
    rc = hc_reader_open(cache, "ftp://example.com/a.mp4", 0, -1, &reader);
    printf("open ftp: %s\n", hc_strerror(rc));
    check(rc == HC_EINVAL && reader == NULL, "ftp refused");
    rc = hc_reader_open(cache, url, -1, -1, &reader);
    printf("open negative offset: %s\n", hc_strerror(rc));
    check(rc == HC_EINVAL, "negative offset refused");

    /* The whole resource, as a host would stream it, written out. */
    check(hc_reader_open(cache, url, 0, -1, &reader) == HC_OK, "open");
    hc_content_info info;
    rc = hc_reader_info(reader, &info, 20000);
    printf("info %s total %lld type \"%s\" ranges %d\n", hc_strerror(rc), (long long)info.total_length,
           info.content_type, info.byte_ranges);
    check(rc == HC_OK && info.total_length == source_size, "info");
    FILE *out = fopen(argv[4], "wb");
    unsigned char buf[65536];
    int64_t total = 0, n;
    while ((n = hc_reader_read(reader, buf, sizeof buf, 20000)) > 0) {
        fwrite(buf, 1, (size_t)n, out);
        total += n;
    }
    fclose(out);
    printf("streamed %lld bytes, last %s\n", (long long)total, n == 0 ? "end" : hc_strerror((int)n));
    check(n == 0 && total == source_size, "streamed");
    check(hc_reader_read(reader, buf, sizeof buf, 0) == 0, "end stays end");
    hc_reader_close(reader);

    check_cached(cache, url);
    printf("online done\n");
    fflush(stdout);

    char line[64];
    if (!fgets(line, sizeof line, stdin) || strcmp(line, "offline\n") != 0) {
        printf("no offline line\n");
        return 1;
    }
    check_cached(cache, url);
    check(hc_reader_open(cache, argv[5], 0, -1, &reader) == HC_OK, "open uncached");
    n = hc_reader_read(reader, buf, sizeof buf, 20000);
    printf("uncached offline: %s\n", n < 0 ? hc_strerror((int)n) : "bytes");
    check(n == HC_EUPSTREAM, "uncached offline fails");
    hc_reader_close(reader);

    hc_close(cache);
    free(source);
    if (failures) {
        printf("%d checks failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
