/*
 * The C API's failures: each documented error case gives its code.
 *
 *   gcc -Wall -Werror errors.c $(pkg-config --cflags --libs httpcache)
 *   ./a.out CACHE_DIR OTHER_CACHE_DIR
 *
 * Prints "strerror CODE TEXT" for every code, "unusable: MESSAGE" for a
 * configuration with a failed set, and "all checks passed".
 * Exits 0 when every check passes, 1 otherwise.
 */
#include <httpcache.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

/* What one log callback saw. The callback may run on any library thread;
 * here it is set only for one hc_open, which blocks this thread until the
 * library's threads are done with it, so a plain struct is enough. A host
 * whose caches run needs a lock. */
struct seen {
    int warnings;
    char last[512];
};

static void on_log(void *userdata, int level, const char *message) {
    struct seen *seen = userdata;
    if (level == 4) seen->warnings++;
    snprintf(seen->last, sizeof seen->last, "%s", message);
}

static hc_config *config_for(const char *folder) {
    hc_config *config = hc_config_new();
    CHECK(config != NULL);
    CHECK(hc_config_set(config, "cache-dir", folder) == HC_OK);
    return config;
}

static void check_strerror(void) {
    for (int code = HC_OK; code >= HC_EADDRINUSE; code--) {
        const char *text = hc_strerror(code);
        CHECK(text != NULL && text[0] != '\0');
        if (text == NULL) continue;
        printf("strerror %d %s\n", code, text);
        CHECK(strcmp(text, "unknown error") != 0);
        for (int other = HC_OK; other > code; other--) CHECK(strcmp(text, hc_strerror(other)) != 0);
    }
    CHECK(strcmp(hc_strerror(HC_EADDRINUSE - 1), "unknown error") == 0);
    CHECK(strcmp(hc_strerror(1), "unknown error") == 0);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CACHE_DIR OTHER_CACHE_DIR\n", argv[0]);
        return 2;
    }
    check_strerror();

    /* Unknown options and bad values; the first failed set stays on the
     * configuration and makes it unusable, so a host that ignored the result
     * of asking for encryption never gets a plaintext folder. */
    char never[4096], missing_key[4096];
    snprintf(never, sizeof never, "%s-never", argv[1]);
    snprintf(missing_key, sizeof missing_key, "%s-missing.key", argv[1]);
    hc_config *bad = config_for(never);
    CHECK(hc_config_errmsg(bad) == NULL);
    CHECK(hc_config_set(bad, "encryption-key-file", missing_key) == HC_EKEY);
    CHECK(hc_config_set(bad, "no-such-option", "1") == HC_EINVAL);
    CHECK(hc_config_set(bad, "port", "http") == HC_EINVAL);
    CHECK(hc_config_set(bad, "port", "0") == HC_OK); /* does not clear the error */
    const char *message = hc_config_errmsg(bad);
    CHECK(message != NULL && strstr(message, "encryption-key-file") != NULL);
    struct seen refused = {0, ""};
    hc_config_set_log(bad, 4 /* warning */, on_log, &refused);
    hc_cache *cache = (hc_cache *)bad; /* any non-NULL value: hc_open must reset it */
    CHECK(hc_open(bad, &cache) == HC_EKEY); /* the first failure's code */
    CHECK(cache == NULL);
    CHECK(refused.warnings == 1 && strstr(refused.last, "encryption-key-file") != NULL);
    struct stat info;
    CHECK(stat(never, &info) != 0 && errno == ENOENT); /* no folder made */
    printf("unusable: %s\n", message != NULL ? message : "(none)");
    hc_config_free(bad);

    hc_config *config = config_for(argv[1]);

    /* No cache-dir. */
    hc_config *empty = hc_config_new();
    cache = (hc_cache *)empty;
    CHECK(hc_open(empty, &cache) == HC_EINVAL);
    CHECK(cache == NULL);
    hc_config_free(empty);
    CHECK(hc_open(NULL, &cache) == HC_EINVAL);
    CHECK(hc_open(config, NULL) == HC_EINVAL);

    /* The first open locks the folder. */
    CHECK(hc_open(config, &cache) == HC_OK);
    CHECK(cache != NULL);
    if (cache == NULL) return 1;

    /* The same folder again, in this process: HC_EBUSY, the reason logged. */
    struct seen seen = {0, ""};
    hc_config_set_log(config, 4 /* warning */, on_log, &seen);
    hc_cache *second = (hc_cache *)config;
    CHECK(hc_open(config, &second) == HC_EBUSY);
    CHECK(second == NULL);
    CHECK(seen.warnings == 1);
    CHECK(strstr(seen.last, "already open in this process") != NULL);
    printf("busy: %s\n", seen.last);

    /* Another folder opens beside it: several caches in one process. */
    hc_config *other_config = config_for(argv[2]);
    hc_cache *other = NULL;
    CHECK(hc_open(other_config, &other) == HC_OK);
    hc_config_free(other_config);

    /* Before hc_serve. */
    char url[256];
    CHECK(hc_port(cache) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, "http://media.example/a.mp4", url, sizeof url) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, "http://media.example/a.mp4", NULL, 0) < 0);

    CHECK(hc_serve(cache) == HC_OK);
    CHECK(hc_serve(cache) == HC_EINVAL); /* already serving */
    CHECK(hc_port(cache) > 0);
    CHECK(hc_proxy_url(cache, "http://media.example/a.mp4", url, sizeof url) > 0);
    CHECK(hc_proxy_url(cache, "ftp://media.example/a.mp4", url, sizeof url) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, "file:///etc/passwd", url, sizeof url) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, "a.mp4", url, sizeof url) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, NULL, url, sizeof url) == HC_EINVAL);
    CHECK(hc_proxy_url(cache, "http://media.example/a.mp4", NULL, 10) == HC_EINVAL);

    /* The other cache is not serving, whatever the first one does. */
    CHECK(hc_port(other) == HC_EINVAL);

    /* Cache operations on what is not there. */
    CHECK(hc_cache_remove(cache, "http://media.example/none.mp4") == HC_ENOTFOUND);
    CHECK(hc_cache_export(cache, "http://media.example/none.mp4", "/tmp/none") == HC_ENOTFOUND);
    CHECK(hc_cache_import(cache, "http://media.example/none.mp4", "/nonexistent/file") == HC_ENOTFOUND);
    CHECK(hc_cache_remove(cache, NULL) == HC_EINVAL);

    /* NULL handles. */
    CHECK(hc_serve(NULL) == HC_EINVAL);
    CHECK(hc_port(NULL) == HC_EINVAL);
    CHECK(hc_proxy_url(NULL, "http://media.example/a.mp4", NULL, 0) == HC_EINVAL);
    CHECK(hc_cache_size(NULL) == HC_EINVAL);
    CHECK(hc_cache_clear(NULL) == HC_EINVAL);
    CHECK(hc_cache_list(NULL, NULL, NULL) == HC_EINVAL);
    hc_close(NULL);

    /* Closing unlocks: the folder opens again at once. */
    hc_close(cache);
    cache = NULL;
    hc_config_set_log(config, 4, NULL, NULL);
    CHECK(hc_open(config, &cache) == HC_OK);
    hc_close(cache);
    hc_close(other);
    hc_config_free(config);

    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
