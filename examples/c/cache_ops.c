/*
 * Cache management from C: size, import a local file, export it back, list,
 * remove, clear. No server and no origin are needed.
 *
 *   gcc -Wall -Werror cache_ops.c $(pkg-config --cflags --libs httpcache)
 *   ./a.out CACHE_DIR SOURCE_FILE EXPORT_PATH
 *
 * Imports SOURCE_FILE as http://media.example/clip.mp4, exports it to
 * EXPORT_PATH (left there for the caller to compare) and checks every step;
 * prints "list URL CACHED TOTAL COMPLETE" per entry and "all checks passed".
 * Exits 0 when every check passes, 1 otherwise.
 */
#include <httpcache.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

#define URL "http://media.example/clip.mp4"

/* The whole file in memory, or NULL; *size gets its length. */
static unsigned char *read_file(const char *path, long *size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    unsigned char *bytes = NULL;
    if (fseek(file, 0, SEEK_END) == 0 && (*size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
        bytes = malloc((size_t)*size + 1);
        if (bytes != NULL && fread(bytes, 1, (size_t)*size, file) != (size_t)*size) {
            free(bytes);
            bytes = NULL;
        }
    }
    fclose(file);
    return bytes;
}

struct listing {
    int count;
    int found; /* URL seen with every byte cached */
    int64_t expected;
};

/* Runs on the thread that called hc_cache_list; `url` is valid during the call. */
static void on_entry(void *userdata, const char *url, int64_t cached, int64_t total, int complete) {
    struct listing *listing = userdata;
    listing->count++;
    printf("list %s %" PRId64 " %" PRId64 " %d\n", url, cached, total, complete);
    if (strcmp(url, URL) == 0 && cached == listing->expected && total == listing->expected && complete) {
        listing->found = 1;
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s CACHE_DIR SOURCE_FILE EXPORT_PATH\n", argv[0]);
        return 2;
    }
    long size = 0;
    unsigned char *source = read_file(argv[2], &size);
    if (source == NULL) {
        perror(argv[2]);
        return 2;
    }

    hc_config *config = hc_config_new();
    CHECK(config != NULL);
    CHECK(hc_config_set(config, "cache-dir", argv[1]) == HC_OK);
    hc_cache *cache = NULL;
    int rc = hc_open(config, &cache);
    hc_config_free(config);
    CHECK(rc == HC_OK && cache != NULL);
    if (cache == NULL) return 1;

    CHECK(hc_cache_size(cache) == 0);

    /* Import, then export byte-exact. */
    CHECK(hc_cache_import(cache, URL, argv[2]) == HC_OK);
    CHECK(hc_cache_size(cache) == size);
    CHECK(hc_cache_export(cache, URL, argv[3]) == HC_OK);
    long exported_size = -1;
    unsigned char *exported = read_file(argv[3], &exported_size);
    CHECK(exported != NULL && exported_size == size);
    CHECK(exported != NULL && memcmp(exported, source, (size_t)size) == 0);
    free(exported);

    /* One entry, complete. */
    struct listing listing = {0, 0, size};
    CHECK(hc_cache_list(cache, on_entry, &listing) == HC_OK);
    CHECK(listing.count == 1 && listing.found);
    CHECK(hc_cache_list(cache, NULL, NULL) == HC_EINVAL);

    /* What is not cached. */
    CHECK(hc_cache_export(cache, "http://media.example/other.mp4", argv[3]) == HC_ENOTFOUND);
    CHECK(hc_cache_remove(cache, "http://media.example/other.mp4") == HC_ENOTFOUND);

    /* Remove, twice. */
    CHECK(hc_cache_remove(cache, URL) == HC_OK);
    CHECK(hc_cache_remove(cache, URL) == HC_ENOTFOUND);
    CHECK(hc_cache_size(cache) == 0);

    /* Two entries, then clear. */
    CHECK(hc_cache_import(cache, URL, argv[2]) == HC_OK);
    CHECK(hc_cache_import(cache, URL "?copy=2", argv[2]) == HC_OK);
    CHECK(hc_cache_size(cache) == 2 * (int64_t)size);
    listing = (struct listing){0, 0, size};
    CHECK(hc_cache_list(cache, on_entry, &listing) == HC_OK);
    CHECK(listing.count == 2 && listing.found);
    CHECK(hc_cache_clear(cache) == HC_OK);
    CHECK(hc_cache_size(cache) == 0);
    listing = (struct listing){0, 0, size};
    CHECK(hc_cache_list(cache, on_entry, &listing) == HC_OK);
    CHECK(listing.count == 0);

    /* Leave one entry behind and check it survives a close and reopen. */
    CHECK(hc_cache_import(cache, URL, argv[2]) == HC_OK);
    hc_close(cache);
    config = hc_config_new();
    CHECK(hc_config_set(config, "cache-dir", argv[1]) == HC_OK);
    cache = NULL;
    CHECK(hc_open(config, &cache) == HC_OK);
    hc_config_free(config);
    if (cache != NULL) {
        CHECK(hc_cache_size(cache) == size);
        listing = (struct listing){0, 0, size};
        CHECK(hc_cache_list(cache, on_entry, &listing) == HC_OK);
        CHECK(listing.count == 1 && listing.found);
        hc_close(cache);
    }
    free(source);

    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
