/*
 * A host that embeds the proxy: opens a cache, serves it, mints a proxy URL
 * for the origin URL it is given and prints it, then keeps serving until a
 * line (or end of file) arrives on stdin, and closes the cache.
 *
 *   gcc -Wall -Werror proxy_host.c $(pkg-config --cflags --libs httpcache)
 *   ./a.out CACHE_DIR ORIGIN_URL
 *
 * stdout: "proxy URL", then "closed" after hc_close. Library messages at
 * info and above go to stderr through a log callback, prefixed "log N: ".
 * Exits 0 on success, 1 on a failed call (naming it and its code).
 */
#include <httpcache.h>

#include <stdio.h>
#include <stdlib.h>

/* The library may call this on any of its threads, concurrently. */
static void on_log(void *userdata, int level, const char *message) {
    fprintf((FILE *)userdata, "log %d: %s\n", level, message);
}

static int fail(const char *call, int code) {
    fprintf(stderr, "%s: %s (%d)\n", call, hc_strerror(code), code);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CACHE_DIR ORIGIN_URL\n", argv[0]);
        return 2;
    }
    hc_config *config = hc_config_new();
    if (config == NULL) return fail("hc_config_new", HC_ENOMEM);
    int rc = hc_config_set(config, "cache-dir", argv[1]);
    if (rc == HC_OK) rc = hc_config_set(config, "max-cache-size", "100MB");
    if (rc != HC_OK) return fail("hc_config_set", rc);
    hc_config_set_log(config, 2 /* info */, on_log, stderr);

    hc_cache *cache = NULL;
    rc = hc_open(config, &cache);
    hc_config_free(config); /* hc_open copied it */
    if (rc != HC_OK) return fail("hc_open", rc);

    rc = hc_serve(cache);
    if (rc != HC_OK) {
        hc_close(cache);
        return fail("hc_serve", rc);
    }

    /* Ask for the length first, then mint into a buffer of that size. */
    int length = hc_proxy_url(cache, argv[2], NULL, 0);
    if (length < 0) {
        hc_close(cache);
        return fail("hc_proxy_url", length);
    }
    char *url = malloc((size_t)length + 1);
    if (url == NULL) return fail("malloc", HC_ENOMEM);
    rc = hc_proxy_url(cache, argv[2], url, (size_t)length + 1);
    if (rc != length) {
        hc_close(cache);
        return fail("hc_proxy_url", rc < 0 ? rc : HC_EINVAL);
    }
    printf("%s\n", url);
    fflush(stdout);
    free(url);

    /* Serve until told to stop: the proxy runs on library threads. */
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        /* end of file: stop as well */
    }

    hc_close(cache); /* stops serving, flushes, unlocks, frees */
    printf("closed\n");
    return 0;
}
