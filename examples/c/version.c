/*
 * A tiny host of libhttpcache: checks the engine-free part of the C API
 * (version, error strings, configuration) and that the library installed no
 * signal handler (run it also with the Swift backtracer forced on:
 * SWIFT_BACKTRACE=enable=yes,swift-backtrace=PATH). Exits 0 when every check
 * passes, 1 otherwise.
 *
 *   gcc -Wall -Werror version.c $(pkg-config --cflags --libs httpcache)
 */
#include <httpcache.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* Crash signals a language runtime might want for a backtracer. */
static const int watched[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT};
#define WATCHED_COUNT (sizeof watched / sizeof watched[0])

/* The handler (or SIG_DFL) and flags of each watched signal. */
static void snapshot(struct sigaction out[WATCHED_COUNT]) {
    for (size_t i = 0; i < WATCHED_COUNT; i++) {
        CHECK(sigaction(watched[i], NULL, &out[i]) == 0);
    }
}

static void check_signals_unchanged(const struct sigaction before[WATCHED_COUNT]) {
    struct sigaction after[WATCHED_COUNT];
    snapshot(after);
    for (size_t i = 0; i < WATCHED_COUNT; i++) {
        int same = after[i].sa_handler == before[i].sa_handler &&
                   (after[i].sa_flags & SA_SIGINFO) == (before[i].sa_flags & SA_SIGINFO);
        if (!same) {
            fprintf(stderr, "signal %d (%s): the library installed a handler\n", watched[i],
                    strsignal(watched[i]));
        }
        CHECK(same);
        /* The library loaded before main ran, so also check that no watched
           signal has a function as its handler (a plain host has none). */
        CHECK(after[i].sa_handler == SIG_DFL || after[i].sa_handler == SIG_IGN);
    }
    /* A backtracer also gives the loading thread an alternate signal stack. */
    stack_t stack;
    CHECK(sigaltstack(NULL, &stack) == 0 && (stack.ss_flags & SS_DISABLE));
}

static void check_version(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", HC_VERSION_MAJOR, HC_VERSION_MINOR, HC_VERSION_PATCH);
    CHECK(hc_version() != NULL);
    CHECK(strcmp(hc_version(), expected) == 0);
    CHECK(hc_version_number() == HC_VERSION_NUMBER);
    CHECK(HC_VERSION_NUMBER == 200); /* 0.2.0 */
}

static void check_errors(void) {
    const int codes[] = {HC_OK,       HC_EINVAL,    HC_ENOMEM,    HC_EIO,  HC_EBUSY,  HC_ENOTFOUND,
                         HC_ETIMEDOUT, HC_ECANCELED, HC_EUPSTREAM, HC_ETLS, HC_ERANGE, HC_ECLOSED, HC_EKEY, HC_ETOOLARGE,
                         HC_EADDRINUSE};
    const size_t count = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < count; i++) {
        CHECK(codes[i] == -(int)i);
        const char *text = hc_strerror(codes[i]);
        CHECK(text != NULL && text[0] != '\0');
        if (text == NULL) continue;
        CHECK(hc_strerror(codes[i]) == text); /* static: the same string every time */
        for (size_t j = 0; j < i; j++) {
            CHECK(strcmp(text, hc_strerror(codes[j])) != 0);
        }
    }
    CHECK(hc_strerror(1) != NULL);
    CHECK(hc_strerror(-12345) != NULL);
}

static void on_log(void *userdata, int level, const char *message) {
    (void)userdata, (void)level, (void)message;
}

static void check_config(void) {
    hc_config *config = hc_config_new();
    CHECK(config != NULL);
    if (config == NULL) return;

    /* known options with good values */
    CHECK(hc_config_set(config, "cache-dir", "/tmp/httpcache-example") == HC_OK);
    CHECK(hc_config_set(config, "max-cache-size", "500MB") == HC_OK);
    CHECK(hc_config_set(config, "max-cache-size", "2GiB") == HC_OK);
    CHECK(hc_config_set(config, "max-cache-size", "1048576") == HC_OK);
    CHECK(hc_config_set(config, "host", "127.0.0.1") == HC_OK);
    CHECK(hc_config_set(config, "host", "::1") == HC_OK);
    CHECK(hc_config_set(config, "port", "0") == HC_OK);
    CHECK(hc_config_set(config, "port", "8080") == HC_OK);
    CHECK(hc_config_set(config, "connect-timeout", "2.5") == HC_OK);
    CHECK(hc_config_set(config, "read-timeout", "30") == HC_OK);
    CHECK(hc_config_set(config, "revalidate-after", "0") == HC_OK);
    CHECK(hc_config_set(config, "header", "Authorization: Bearer abc") == HC_OK);
    CHECK(hc_config_set(config, "header", "X-Empty:") == HC_OK);
    CHECK(hc_config_set(config, "header", "") == HC_OK); /* clears the list */
    CHECK(hc_config_set(config, "ignore-query", "token") == HC_OK);
    CHECK(hc_config_set(config, "forward-header", "Referer") == HC_OK);
    CHECK(hc_config_set(config, "ca-file", "/etc/ssl/certs/ca-certificates.crt") == HC_OK);
    CHECK(hc_config_set(config, "insecure", "false") == HC_OK);
    CHECK(hc_config_set(config, "log-level", "debug") == HC_OK);

    /* unknown options and bad values */
    CHECK(hc_config_set(config, "no-such-option", "1") == HC_EINVAL);
    CHECK(hc_config_set(config, "--port", "8080") == HC_EINVAL);
    CHECK(hc_config_set(config, "", "") == HC_EINVAL);
    CHECK(hc_config_set(config, "port", "65536") == HC_EINVAL);
    CHECK(hc_config_set(config, "port", "-1") == HC_EINVAL);
    CHECK(hc_config_set(config, "port", "80x") == HC_EINVAL);
    CHECK(hc_config_set(config, "port", "") == HC_EINVAL);
    CHECK(hc_config_set(config, "max-cache-size", "lots") == HC_EINVAL);
    CHECK(hc_config_set(config, "max-cache-size", "5 parsecs") == HC_EINVAL);
    CHECK(hc_config_set(config, "host", "not an address") == HC_EINVAL);
    CHECK(hc_config_set(config, "connect-timeout", "soon") == HC_EINVAL);
    CHECK(hc_config_set(config, "read-timeout", "-3") == HC_EINVAL);
    CHECK(hc_config_set(config, "connect-timeout", "0") == HC_EINVAL);
    CHECK(hc_config_set(config, "read-timeout", "inf") == HC_EINVAL);
    CHECK(hc_config_set(config, "header", "no colon here") == HC_EINVAL);
    CHECK(hc_config_set(config, "header", "Bad Name: x") == HC_EINVAL);
    CHECK(hc_config_set(config, "header", "Host: example.com") == HC_EINVAL);
    CHECK(hc_config_set(config, "insecure", "maybe") == HC_EINVAL);
    CHECK(hc_config_set(config, "cache-dir", "") == HC_EINVAL);
    CHECK(hc_config_set(config, "log-level", "loud") == HC_EINVAL);
    CHECK(hc_config_set(config, NULL, "1") == HC_EINVAL);
    CHECK(hc_config_set(config, "port", NULL) == HC_EINVAL);
    CHECK(hc_config_set(NULL, "port", "1") == HC_EINVAL);

    hc_config_set_log(config, 2, on_log, NULL);
    hc_config_set_log(config, 4, NULL, NULL);
    hc_config_free(config);
    hc_config_free(NULL);
}

int main(void) {
    struct sigaction before[WATCHED_COUNT];
    snapshot(before);

    check_version();
    check_errors();
    check_config();
    check_signals_unchanged(before);

    if (failures != 0) {
        fprintf(stderr, "version: %d check(s) failed\n", failures);
        return 1;
    }
    printf("libhttpcache %s: all checks passed\n", hc_version());
    return 0;
}
