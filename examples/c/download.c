/* A download kept for offline use: added, followed through its events until
 * it completes, then removed: usage: download CACHE_DIR URL */
#include <httpcache.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_int events = 0;
static atomic_int completed = 0;

/* The only download of this cache: every event is its own. */
static void on_event(void *userdata, const char *id, const hc_download_status *status)
{
    (void)userdata;
    (void)id;
    atomic_fetch_add(&events, 1);
    if (status->state == HC_DOWNLOAD_COMPLETED) atomic_store(&completed, 1);
}

static void on_listed(void *userdata, const char *id, const hc_download_status *status)
{
    (void)userdata;
    printf("list %s state %d bytes %lld of %lld\n", id, status->state, (long long)status->bytes_done,
           (long long)status->bytes_total);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CACHE_DIR URL\n", argv[0]);
        return 2;
    }
    hc_config *config = hc_config_new();
    if (config == NULL || hc_config_set(config, "cache-dir", argv[1]) != HC_OK ||
        hc_config_set(config, "download-parallel", "2") != HC_OK) {
        fprintf(stderr, "hc_config_set: %s\n", config == NULL ? "out of memory" : hc_config_errmsg(config));
        return 1;
    }
    hc_cache *cache = NULL;
    int rc = hc_open(config, &cache);
    hc_config_free(config);
    if (rc != HC_OK) {
        printf("open failed: %s\n", hc_strerror(rc));
        return 1;
    }
    printf("bad url %d\n", hc_download_add(cache, "ftp://x/y", NULL, NULL, 0, NULL, (char[HC_DOWNLOAD_ID_SIZE]){0}));
    char id[HC_DOWNLOAD_ID_SIZE] = {0};
    /* The callback first: no event of the new download is missed. */
    if ((rc = hc_download_set_callback(cache, on_event, NULL)) != HC_OK) {
        printf("callback failed: %s\n", hc_strerror(rc));
        hc_close(cache);
        return 1;
    }
    rc = hc_download_add(cache, argv[2], "Clip", NULL, 0, NULL, id);
    printf("add %d\n", rc);
    for (int i = 0; i < 3000 && !atomic_load(&completed); i++) {
        hc_download_status status;
        if (hc_download_get(cache, id, &status) == HC_OK && status.state == HC_DOWNLOAD_COMPLETED) break;
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    hc_download_status status;
    rc = hc_download_get(cache, id, &status);
    printf("status %d state %d error %d bytes %lld/%lld estimate %d resources %d/%d\n", rc, status.state, status.error,
           (long long)status.bytes_done, (long long)status.bytes_total, status.total_is_estimate,
           status.resources_done, status.resources_total);
    if ((rc = hc_download_list(cache, on_listed, NULL)) != HC_OK) printf("list failed: %s\n", hc_strerror(rc));
    printf("cache %lld\n", (long long)hc_cache_size(cache));
    printf("remove %d\n", hc_download_remove(cache, id));
    printf("again %d\n", hc_download_pause(cache, id));
    for (int i = 0; i < 200 && hc_cache_size(cache) > 0; i++) nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    printf("cache %lld\n", (long long)hc_cache_size(cache));
    printf("events %s\n", atomic_load(&events) > 0 ? "seen" : "none");
    hc_close(cache);
    printf("closed\n");
    return 0;
}
