/* Ends reads blocked on an origin that never answers: hc_reader_cancel from
 * another thread (measured), a timeout that leaves the reader usable, and
 * hc_close, which ends a blocked read with HC_ECLOSED.
 * usage: cancel CACHE_DIR STALLING_URL */
#include <httpcache.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

struct blocked_read {
    hc_reader *reader;
    int64_t result;
    double returned_ms;
};

/* A read with no time limit: only cancel or close can end it. */
static void *read_forever(void *argument)
{
    struct blocked_read *read = argument;
    unsigned char buf[4096];
    read->result = hc_reader_read(read->reader, buf, sizeof buf, -1);
    read->returned_ms = now_ms();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CACHE_DIR STALLING_URL\n", argv[0]);
        return 2;
    }
    hc_config *config = hc_config_new();
    if (config == NULL || hc_config_set(config, "cache-dir", argv[1]) != HC_OK) {
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
    unsigned char buf[16];

    /* 1. Timeouts: the wait runs out and the reader stays usable. */
    hc_reader *timed = NULL;
    if ((rc = hc_reader_open(cache, argv[2], 0, -1, &timed)) != HC_OK) {
        printf("open reader: %s\n", hc_strerror(rc));
        hc_close(cache);
        return 1;
    }
    hc_content_info info;
    printf("info poll: %s\n", hc_strerror(hc_reader_info(timed, &info, 0)));
    double started = now_ms();
    int64_t n = hc_reader_read(timed, buf, sizeof buf, 200);
    printf("read 200 ms: %s after %s\n", hc_strerror((int)n), now_ms() - started >= 190 ? ">=190 ms" : "<190 ms");
    printf("read again: %s\n", hc_strerror((int)hc_reader_read(timed, buf, sizeof buf, 0)));
    hc_reader_close(timed);

    /* 2. Cancel from another thread while a read is blocked. */
    struct blocked_read read = {0};
    if ((rc = hc_reader_open(cache, argv[2], 0, -1, &read.reader)) != HC_OK) {
        printf("open reader: %s\n", hc_strerror(rc));
        hc_close(cache);
        return 1;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, read_forever, &read);
    sleep_ms(300); /* the read is blocked by now: the origin never answers */
    double canceled_ms = now_ms();
    hc_reader_cancel(read.reader);
    pthread_join(thread, NULL);
    double delay = read.returned_ms - canceled_ms;
    printf("canceled read: %s\n", hc_strerror((int)read.result));
    printf("returned within 100 ms of the cancel: %s (%.3f ms)\n", delay < 100 ? "yes" : "no", delay);
    printf("read after cancel: %s\n", hc_strerror((int)hc_reader_read(read.reader, buf, sizeof buf, 0)));
    printf("info after cancel: %s\n", hc_strerror(hc_reader_info(read.reader, &info, -1)));
    printf("seek after cancel: %s\n", hc_strerror(hc_reader_seek(read.reader, 0)));
    hc_reader_close(read.reader);

    /* 3. hc_close ends a blocked read with HC_ECLOSED; the handle is freed after. */
    struct blocked_read closing = {0};
    if ((rc = hc_reader_open(cache, argv[2], 0, -1, &closing.reader)) != HC_OK) {
        printf("open reader: %s\n", hc_strerror(rc));
        hc_close(cache);
        return 1;
    }
    pthread_create(&thread, NULL, read_forever, &closing);
    sleep_ms(300);
    hc_close(cache);
    pthread_join(thread, NULL);
    printf("read during hc_close: %s\n", hc_strerror((int)closing.result));
    printf("read after hc_close: %s\n", hc_strerror((int)hc_reader_read(closing.reader, buf, sizeof buf, 0)));
    hc_reader_close(closing.reader);
    printf("closed\n");
    return 0;
}
