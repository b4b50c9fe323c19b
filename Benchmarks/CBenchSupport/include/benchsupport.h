/*
 * benchsupport.h — the C half of the benchmarks: a test-pattern for files,
 * a small origin server and an epoll load generator.
 *
 * Written in C so that on a 2-core machine the client spends as little CPU
 * as possible and the server under test gets the other core: one thread, raw
 * non-blocking sockets, no allocation per request.
 *
 * Files served in the benchmarks hold a deterministic pattern (bs_pattern_*),
 * so the load generator can check any received byte against the file it came
 * from without reading the file: a fast wrong answer cannot win.
 */
#ifndef BENCHSUPPORT_H
#define BENCHSUPPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------------- pattern */

/** Fills buf with the bytes at [offset, offset+len) of the file with this seed. */
void bs_pattern_fill(uint64_t seed, uint64_t offset, void *buf, size_t len);

/**
 * Checks buf against the pattern at offset. Returns -1 when every byte
 * matches, else the index of the first wrong byte.
 */
int64_t bs_pattern_check(uint64_t seed, uint64_t offset, const void *buf, size_t len);

/** Writes a pattern file of `size` bytes and syncs it. Returns 0 or -errno. */
int bs_pattern_write_file(const char *path, uint64_t seed, uint64_t size);

/* ---------------------------------------------------------------- origin */

typedef struct bs_origin bs_origin;

/**
 * Starts an HTTP/1.1 origin on 127.0.0.1 (port 0 picks one) serving the files
 * under root: GET and HEAD, keep-alive, one Range (a-b, a-, -n) with 206/416,
 * Content-Length, ETag, Last-Modified, Accept-Ranges; bodies go out with
 * sendfile(2). The query string is ignored, so `/f?x=1` and `/f?x=2` are one
 * file under two URLs (two cache entries for a proxy). One thread per
 * connection. Ignores SIGPIPE process-wide. Returns NULL and a message in
 * err on failure.
 */
bs_origin *bs_origin_start(const char *root, int port, char *err, size_t errlen);

int bs_origin_port(const bs_origin *origin);

/**
 * Paces every response body to about bytes_per_second per connection
 * (0: as fast as the socket takes it), to stand in for a remote origin.
 */
void bs_origin_set_rate(bs_origin *origin, uint64_t bytes_per_second);

/** Waits this long before the head of each file served (a remote origin's first byte); 0: none. */
void bs_origin_set_latency(bs_origin *origin, uint64_t nanoseconds);

/** Body bytes the origin has handed to its sockets so far. */
uint64_t bs_origin_body_bytes(const bs_origin *origin);

/** Requests answered so far. */
uint64_t bs_origin_requests(const bs_origin *origin);

/**
 * Serves `file` (under root) for every target starting with `prefix`, with
 * `Cache-Control: <cache_control>`: one body under any number of distinct
 * paths (e.g. "/f/" → "entry.bin", "max-age=86400"). Call before any
 * request reaches those paths; NULL prefix turns it off.
 */
void bs_origin_set_alias(bs_origin *origin, const char *prefix, const char *file, const char *cache_control);

/**
 * Sends `Cache-Control: max-age=<seconds>` with every file that has no alias
 * header (0: none, the default): every cache keeps it fresh without
 * heuristics (the reverse-proxy peers: Varnish, Squid, httpcache --origin).
 */
void bs_origin_set_max_age(bs_origin *origin, uint64_t seconds);

/**
 * Pins every thread of process `pid` to CPU `cpu`, or lets them run on every
 * CPU with `cpu` < 0 (0 on success, -errno). Threads and children started
 * later inherit it. pid 0: the calling thread only.
 */
int bs_pin(int pid, int cpu);

/** Stops accepting, ends every connection and frees the origin. */
void bs_origin_stop(bs_origin *origin);

/* ---------------------------------------------------------- load generator */

/** One resource the load generator may ask for. */
typedef struct bs_target {
    const char *path;   /* request target, e.g. "/p/aHR0.../big.bin" */
    uint64_t seed;      /* pattern seed of the file behind it */
    uint64_t size;      /* its length in bytes */
} bs_target;

/** One request of a script (BS_MODE_SCRIPT). */
typedef struct bs_step {
    int target;             /* index into targets */
    int64_t first;          /* Range first byte; -1: no Range header (whole resource) */
    int64_t last;           /* Range last byte; -1: open-ended ("first-") */
    uint64_t abandon_after; /* > 0: read this many body bytes, then close the connection */
} bs_step;

typedef enum bs_mode {
    /* Random `range_len`-byte ranges of targets[0], until the time is up. */
    BS_MODE_RANDOM_RANGE = 0,
    /* Whole resources chosen at random among the targets, until the time is up. */
    BS_MODE_RANDOM_WHOLE = 1,
    /* Each step once, in order; every connection takes the next step when free. */
    BS_MODE_SCRIPT = 2,
    /* Distinct paths: path_format with each index of [index_first,
     * index_first + index_count) once, in order, every one the whole of
     * targets[0]'s bytes (its path is not used). Fills a cache with entries. */
    BS_MODE_INDEX_SEQUENCE = 3,
    /* Like BS_MODE_INDEX_SEQUENCE, an index of the range picked at random
     * for each request, until the time is up. */
    BS_MODE_INDEX_RANDOM = 4,
} bs_mode;

typedef struct bs_load_config {
    int port;                   /* on 127.0.0.1 */
    int connections;
    bs_mode mode;
    const bs_target *targets;
    int target_count;
    uint64_t range_len;         /* BS_MODE_RANDOM_RANGE */
    const bs_step *steps;       /* BS_MODE_SCRIPT */
    int step_count;
    uint64_t duration_ms;       /* random modes: stop issuing requests after this */
    uint64_t timeout_ms;        /* hard bound for the whole run, in-flight requests included */
    uint64_t seed;              /* for the random choices */
    /* Every response gets its bytes spot-checked (one word per 4 KiB); one in
     * full_check_every is checked byte for byte (1: all; 0: none in full). */
    uint32_t full_check_every;
    /* Keep the connections open and idle for this long once done (RSS of idle conns). */
    uint64_t hold_idle_ms;
    /* Called once while the connections are held idle (may be NULL). */
    void (*on_idle)(void *ctx);
    void *idle_ctx;
    /* BS_MODE_INDEX_*: a printf format with one %llu, e.g. "/f/%llu". */
    const char *path_format;
    uint64_t index_first;
    uint64_t index_count;
} bs_load_config;

typedef struct bs_load_result {
    uint64_t requests;          /* completed responses (abandoned ones included) */
    uint64_t body_bytes;        /* body bytes read (and used: not past an abandon point) */
    uint64_t checked_bytes;     /* body bytes compared byte for byte */
    uint64_t spot_checks;       /* words compared by the spot check */
    uint64_t errors;            /* bad status, bad head, early close, connect failures */
    uint64_t mismatches;        /* responses with a wrong byte */
    uint64_t elapsed_ns;        /* from the start to the last completed response */
    int timed_out;              /* the hard timeout cut the run */
    /* Per completed response, in completion order (malloc'ed; bs_load_result_free). */
    uint32_t *latency_us;       /* request sent → last body byte */
    uint32_t *ttfb_us;          /* request sent → first response byte */
    uint64_t *step_bytes;       /* BS_MODE_SCRIPT: body bytes used per step */
    size_t samples;
    char first_error[256];      /* what went wrong first, for the report */
} bs_load_result;

/** Runs the load. Returns 0, or -errno when nothing could run (config error). */
int bs_load_run(const bs_load_config *config, bs_load_result *result);

void bs_load_result_free(bs_load_result *result);

/* ------------------------------------------------------------------ misc */

/** Monotonic clock in nanoseconds. */
uint64_t bs_now_ns(void);

/** Raises the soft open-files limit to the hard one; returns the new soft limit. */
long bs_raise_nofile(void);

/** Descriptors process `pid` has open (entries of /proc/PID/fd), or -1. */
int bs_count_fds(int pid);

#ifdef __cplusplus
}
#endif
#endif /* BENCHSUPPORT_H */
