/* Preloads a URL into a cache with progress, then checks it is all there
 * by exporting it: usage: preload CACHE_DIR URL EXPORT_PATH */
#include <httpcache.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_int finished = 0;
static atomic_int result = 1;
static atomic_llong last_done = -1, last_total = -2;
static atomic_int reports = 0;

static void on_progress(void *userdata, int64_t done, int64_t total)
{
    (void)userdata;
    atomic_store(&last_done, done);
    atomic_store(&last_total, total);
    atomic_fetch_add(&reports, 1);
}

static void on_done(void *userdata, int code)
{
    hc_preload **handle = userdata;
    atomic_store(&result, code);
    hc_preload_free(*handle); /* allowed from inside done */
    atomic_store(&finished, 1);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CACHE_DIR URL EXPORT_PATH\n", argv[0]);
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
    static hc_preload *preload = NULL;
    rc = hc_preload_start(cache, argv[2], 0, -1, on_progress, on_done, &preload, &preload);
    if (rc != HC_OK) {
        printf("preload: %s\n", hc_strerror(rc));
        return 1;
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 3000 && !atomic_load(&finished); i++)
        nanosleep(&pause, NULL);
    printf("done %s\n", hc_strerror(atomic_load(&result)));
    printf("progress %lld/%lld after %d reports\n", (long long)atomic_load(&last_done),
           (long long)atomic_load(&last_total), atomic_load(&reports));
    printf("size %lld\n", (long long)hc_cache_size(cache));
    rc = hc_cache_export(cache, argv[2], argv[3]);
    printf("export %s\n", hc_strerror(rc));

    hc_close(cache);
    printf("closed\n");
    return atomic_load(&result) == HC_OK && rc == HC_OK ? 0 : 1;
}
