/*
 * httpcache.h — the C API of HTTPCache, a play-while-download HTTP caching
 * proxy for media (libhttpcache.so, pkg-config name "httpcache").
 *
 * Conventions
 * - Calls that return int give HC_OK (0) or a negative HC_E* code; calls that
 *   return int64_t give a value >= 0 or a negative HC_E* code.
 * - Handles (hc_config, hc_cache, hc_reader, hc_preload) are opaque; each is
 *   freed by exactly one call, named below. Passing NULL where a handle is
 *   expected gives HC_EINVAL (or does nothing for the void calls).
 * - Strings passed in are copied before the call returns, unless stated.
 * - Callbacks receive the userdata given with them, and run on a library
 *   thread unless stated: keep them short and never call hc_close from one.
 * - The library installs no signal handlers and no crash reporter: the host
 *   owns SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT and the rest. One
 *   exception: hc_open sets SIGPIPE to SIG_IGN process-wide, because
 *   sendfile(2) to a closed client socket has no per-call MSG_NOSIGNAL.
 * - Without a log callback, messages at warning level and above go to stderr.
 * - One process may open several caches, each on its own folder; opening the
 *   same folder twice (in this process or another) gives HC_EBUSY.
 */
#ifndef HTTPCACHE_H
#define HTTPCACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */

#define HC_VERSION_MAJOR 0
#define HC_VERSION_MINOR 2
#define HC_VERSION_PATCH 0
#define HC_VERSION_NUMBER (HC_VERSION_MAJOR * 10000 + HC_VERSION_MINOR * 100 + HC_VERSION_PATCH)

/* The version of the loaded library as HC_VERSION_NUMBER computes it; compare
 * with the header's HC_VERSION_NUMBER to detect a mismatch. Any thread. */
int hc_version_number(void);

/* The version of the loaded library as "MAJOR.MINOR.PATCH": a static string,
 * never freed. Any thread. */
const char *hc_version(void);

/* ------------------------------------------------------------------ errors */

#define HC_OK 0
#define HC_EINVAL (-1)      /* bad argument, unknown option, bad URL */
#define HC_ENOMEM (-2)      /* out of memory */
#define HC_EIO (-3)         /* file system error in the cache folder */
#define HC_EBUSY (-4)       /* the cache folder is locked by another cache */
#define HC_ENOTFOUND (-5)   /* no such resource (cache operations), or 404 */
#define HC_ETIMEDOUT (-6)   /* the wait ran out; the handle stays usable */
#define HC_ECANCELED (-7)   /* hc_reader_cancel or hc_preload_cancel */
#define HC_EUPSTREAM (-8)   /* the origin failed, refused or answered badly */
#define HC_ETLS (-9)        /* TLS handshake or certificate verification */
#define HC_ERANGE (-10)     /* offset or length outside the resource */
#define HC_ECLOSED (-11)    /* the cache was closed (hc_close) */
#define HC_EKEY (-12)       /* encryption key wrong, missing, or not wanted by the folder */
#define HC_ETOOLARGE (-13)  /* a download does not fit in the cache limit */
#define HC_EADDRINUSE (-14) /* hc_serve: another program listens on the port */

/* A short English description of `code` (HC_OK included): a static string,
 * never NULL, never freed; unknown codes give "unknown error". Any thread. */
const char *hc_strerror(int code);

/* ----------------------------------------------------------- configuration */

/* Options are set by name: the long options of `httpcache serve` without the
 * dashes, values as on the command line ("insecure" takes "true"/"false").
 * Repeatable options accumulate; setting one to "" clears its list. Others
 * replace the previous value. "cache-dir" is required by hc_open. The list
 * below is the library's option table (Tests/HTTPCacheCTests checks it):
 *   "host": Address to listen on, an IPv4 or IPv6 literal (default 127.0.0.1;
 *       another than loopback turns on LAN mode).
 *   "port": Port to listen on (0 picks a free one).
 *   "cache-dir": Cache folder (httpcache serve: $XDG_CACHE_HOME/httpcache or
 *       ~/.cache/httpcache).
 *   "log-level": trace, debug, info, notice, warning, error or critical
 *       (default info; the C library: warning).
 *   "log-file": Also append log lines to this file.
 *   "connect-timeout": Seconds to connect to an origin (TCP and TLS, default
 *       10).
 *   "read-timeout": Seconds without data from an origin before 504 (default
 *       30).
 *   "idle-timeout": Seconds an idle client connection is kept (default 60).
 *   "head-timeout": Seconds a client has to send a whole request head
 *       (default 10, at most the idle timeout).
 *   "client-timeout": Seconds a client may accept no byte of its response
 *       before it is closed (default 60).
 *   "max-connections": Most client connections (default: what the open-file
 *       limit leaves after origin connections and data files, about 3/4 of
 *       it).
 *   "loops": Event loops (threads) serving clients (httpcache serve: the
 *       number of CPU cores; the library: 1).
 *   "max-cache-size": Cache size limit: bytes, K, M, G, T (x1000) or KiB,
 *       MiB, GiB, TiB (x1024); default 500MB.
 *   "ignore-query": A query parameter left out of the cache key (repeatable).
 *   "revalidate-after": Seconds a response without explicit freshness
 *       (Cache-Control, Expires) stays fresh; overrides the heuristic.
 *   "cache-types": Content types kept, in every mode: media, all, or
 *       TYPE[,TYPE...] (a subtype of * takes a whole type); default media for
 *       proxy URLs, all (RFC 9111) for forward and reverse proxying.
 *   "cache-status-name": The cache's name in the Cache-Status field of every
 *       response (default httpcache).
 *   "origin": Reverse-proxy mode: map every request path and query onto this
 *       http(s) origin.
 *   "access-log": Append one line per response to this file (time, client,
 *       method, target, status, bytes, origin bytes, HIT/MISS/PARTIAL/BYPASS,
 *       Cache-Status word, ms).
 *   "ca-file": PEM file of extra CA certificates trusted for https origins.
 *   "insecure": Do not verify https origins' certificates (logs a warning at
 *       every start).
 *   "header": A field added to every origin request (repeatable).
 *   "forward-header": A client request field sent on to the origin
 *       (repeatable).
 *   "allow-origin": An origin the proxy may fetch from, checked on every
 *       fetch and redirect hop; others get 403 (repeatable).
 *   "server-name": A public name reverse-proxy clients may send as Host;
 *       others than loopback names get 421 (repeatable).
 *   "max-connections-per-client": Most connections one client address may
 *       hold (default: half of --max-connections).
 *   "allow-lan-reverse-proxy": Allow --origin with a LAN --host: every LAN
 *       client then reaches the origin with the configured headers.
 *   "upstream-proxy": Send origin requests through this parent proxy
 *       (http://host:port): http in absolute form, https through CONNECT.
 *   "no-upstream-proxy-for": A host (and its subdomains) reached without
 *       --upstream-proxy (repeatable).
 *   "drain-timeout": Seconds SIGQUIT lets responses in flight finish before
 *       the proxy exits (default 30; httpcache serve only).
 *   "encryption-key-file": Encrypt the cache folder at rest with the key in
 *       FILE (32 bytes or 64 hex digits; keep it outside the folder).
 *   "download-parallel": Resources fetched at once over all downloads and
 *       preloads (default 4).
 *   "download-rate": Bytes per second all downloads and preloads may take
 *       from origins together, as a size (0: no cap, the default); players
 *       are never capped.
 *   "strip-cmcd": Drop players' CMCD (the CMCD query argument and CMCD-*
 *       fields) from origin requests; by default a miss forwards it.
 *   "cmcd-hints": Fetch the next object a player names in its CMCD (nor, nrr)
 *       into the cache in the background (default true).
 *   "prefetch": Media segments fetched ahead of what a player asks for, in
 *       the background (default 2; 0: off).
 * A configuration is used by one thread at a time (no internal locking). */
typedef struct hc_config hc_config;

/* A configuration with the defaults; NULL when out of memory. Free it with
 * hc_config_free. */
hc_config *hc_config_new(void);

/* Sets `option` to `value` (both copied). HC_EINVAL when the option is
 * unknown, the value malformed or out of range (an "encryption-key-file"
 * that is empty or cannot be read, say), or an argument is NULL; the option
 * is then unchanged.
 * A failed set makes the configuration unusable, as an error stays on an
 * sqlite handle: hc_open then returns the code of the FIRST failed set
 * (later successful sets do not clear it), logs its message at warning
 * level and creates nothing. So a host that ignored a result never gets a
 * cache running without what it asked for (a plaintext folder when it
 * asked for encryption). Start again from hc_config_new. */
int hc_config_set(hc_config *config, const char *option, const char *value);

/* The message of the first failed hc_config_set on `config` (which option,
 * what it takes, what it got), or NULL when none failed (or config is
 * NULL). Valid until hc_config_free. */
const char *hc_config_errmsg(const hc_config *config);

/* Log levels of hc_log_fn: 0 trace, 1 debug, 2 info, 3 notice, 4 warning,
 * 5 error, 6 critical. `message` is valid during the call only. The callback
 * may run on any library thread, concurrently with itself. */
typedef void (*hc_log_fn)(void *userdata, int level, const char *message);

/* Sends messages at `min_level` and above to `fn` (NULL restores the default:
 * warning and above to stderr). */
void hc_config_set_log(hc_config *config, int min_level, hc_log_fn fn, void *userdata);

/* Frees a configuration (NULL is fine). Caches opened from it are unaffected. */
void hc_config_free(hc_config *config);

/* ------------------------------------------------------------------- cache */

/* An open cache: the folder locked, the loops running, downloads possible.
 * No server listens until hc_serve. All hc_cache calls are thread-safe, except
 * hc_close, which frees the cache: no other call on it may run concurrently
 * with hc_close or follow it. */
typedef struct hc_cache hc_cache;

/* Opens the cache folder named by the configuration's "cache-dir" (created if
 * missing). Copies the configuration (log callback included): it may be freed
 * at once. Blocks while the folder is scanned. HC_EBUSY when the folder is
 * already open, by another process or by this one (under any spelling of its
 * path); HC_EIO when it cannot be created or read; HC_EINVAL without
 * "cache-dir" or with a NULL argument; the code of the first failed
 * hc_config_set when one failed (see hc_config_errmsg; the folder is then
 * not touched, not even created); HC_EKEY when "encryption-key-file"
 * does not fit the folder (a wrong key, none for an encrypted folder, one for
 * a folder made without: nothing in it changes). On failure *out is set to NULL and the
 * reason is logged at warning level. Any thread; free the cache with
 * hc_close. */
int hc_open(const hc_config *config, hc_cache **out);

/* Encryption at rest: re-encrypts the cache folder `cache_dir` in place from
 * the key in `old_key_file` to the key in `new_key_file` (each 32 bytes or 64
 * hex digits): every file under a new content key, so that the old key opens
 * nothing afterwards. The folder must not be open (HC_EBUSY); HC_EKEY for a
 * wrong old key, a folder without encryption or an unreadable key file
 * (nothing changes); HC_EINVAL for a NULL argument or a key file without a
 * key. Crash-safe: interrupted,
 * the folder refuses to open (HC_EKEY) until the same call finishes it.
 * Blocks for as long as it takes (every cached byte is rewritten); any
 * thread, no hc_cache needed. */
int hc_rekey(const char *cache_dir, const char *old_key_file, const char *new_key_file);

/* Cancels every reader and preload (their blocked calls return HC_ECLOSED,
 * preloads' done gets HC_ECLOSED), stops serving, ends downloads, flushes
 * metadata, unlocks the folder (it may be opened again at once) and frees the
 * cache. Blocks until that is done; no callback runs after it returns.
 * Frees no reader or preload handle: free those afterwards as usual. Must not
 * be called from a library callback, nor concurrently with another call on
 * the same cache. NULL is fine. */
void hc_close(hc_cache *cache);

/* Starts the HTTP proxy on the configuration's host and port and returns at
 * once (the listening socket is bound before it returns; requests are served
 * on a library thread). HC_EINVAL if already serving; HC_EADDRINUSE if
 * something else listens on the port; HC_EIO if the address cannot be bound
 * otherwise (the reason is logged at warning level). Thread-safe. */
int hc_serve(hc_cache *cache);

/* The port the proxy listens on (the real one when "port" was 0), or a
 * negative code (HC_EINVAL) before hc_serve. Thread-safe, no I/O. */
int hc_port(const hc_cache *cache);

/* Writes the proxy URL of `origin_url` into `buf` with the snprintf contract:
 * returns the length of the full URL excluding the NUL, writes at most `size`
 * bytes (always NUL-terminated when size > 0); buf NULL with size 0 asks for
 * the length. The URL is http://HOST:PORT/p/... with the configuration's host
 * and the listening port. Negative code before hc_serve (HC_EINVAL), for a
 * URL that is not absolute http(s) (HC_EINVAL) and for buf NULL with size > 0
 * (HC_EINVAL). Thread-safe, no I/O. */
int hc_proxy_url(const hc_cache *cache, const char *origin_url, char *buf, size_t size);

/* ------------------------------------------------------ in-process reader */

/* Reads a resource through the cache (as the proxy would serve it), e.g. from
 * an FFmpeg AVIOContext. One reader is used by one thread at a time, except
 * hc_reader_cancel, which any thread may call. */
typedef struct hc_reader hc_reader;

typedef struct hc_content_info {
    int64_t total_length;      /* length of the whole resource; -1 unknown */
    const char *content_type;  /* "" when the origin sent none; valid until
                                  hc_reader_close */
    int byte_ranges;           /* nonzero when the origin answered a range
                                  with 206 since the cache was opened; 0
                                  when it answered 200, or when everything
                                  came from the cache */
} hc_content_info;

/* Opens a reader of `length` bytes from `offset` (-1: to the end). Does no
 * I/O: a non-http(s) URL or a negative offset is HC_EINVAL here; origin
 * failures arrive from hc_reader_info or the first read. Free with
 * hc_reader_close. */
int hc_reader_open(hc_cache *cache, const char *url, int64_t offset, int64_t length, hc_reader **out);

/* Fills `info` once the origin's head (or the cached one) is known. Blocks up
 * to `timeout_ms` (< 0 forever, 0 polls): HC_ETIMEDOUT leaves the reader
 * usable. */
int hc_reader_info(hc_reader *reader, hc_content_info *info, int timeout_ms);

/* Reads up to `size` bytes at the current position; returns as soon as at
 * least one byte is available: the count (> 0), 0 at the end of the opened
 * range, or a negative code. `timeout_ms` as for hc_reader_info; HC_ETIMEDOUT
 * leaves the reader usable. After hc_reader_cancel: HC_ECANCELED; after
 * hc_close: HC_ECLOSED. */
int64_t hc_reader_read(hc_reader *reader, void *buf, size_t size, int timeout_ms);

/* Moves the position to `offset`, absolute within the opened range (0 is the
 * `offset` given to hc_reader_open). Seeking to the range's end makes the
 * next read return 0; beyond it, or before 0, is HC_ERANGE (while the
 * resource's length is not known yet, an offset past it fails the next read
 * with HC_ERANGE instead). No I/O. */
int hc_reader_seek(hc_reader *reader, int64_t offset);

/* Cancels the reader from any thread: a blocked read or info call returns
 * HC_ECANCELED, and so does every later one (cancel is sticky). The reader
 * must still be closed. */
void hc_reader_cancel(hc_reader *reader);

/* Frees the reader (cancelling it first). Not concurrently with another call
 * on the same reader. NULL is fine. */
void hc_reader_close(hc_reader *reader);

/* ---------------------------------------------------------------- preload */

/* Downloads a range into the cache without reading it. */
typedef struct hc_preload hc_preload;

/* `total` is -1 while unknown. Runs on a library thread. */
typedef void (*hc_progress_fn)(void *userdata, int64_t done, int64_t total);

/* `result` is HC_OK, HC_ECANCELED, HC_ECLOSED or another code. Called exactly
 * once, on a library thread; hc_preload_free may be called from inside it. */
typedef void (*hc_done_fn)(void *userdata, int result);

/* Starts preloading `length` bytes from `offset` (-1: to the end) of `url`;
 * all of an HLS playlist or DASH MPD (offset 0, length -1) walks on to every
 * variant or representation and its segments, as `httpcache preload` does.
 * `*out` is set before any callback runs. Progress comes as bytes arrive
 * (either callback may be NULL); a final progress(total, total) comes before
 * done(HC_OK). Thread-safe. */
int hc_preload_start(hc_cache *cache, const char *url, int64_t offset, int64_t length,
                     hc_progress_fn progress, hc_done_fn done, void *userdata, hc_preload **out);

/* Cancels a preload from any thread; done then reports HC_ECANCELED (unless
 * it had already been called). */
void hc_preload_cancel(hc_preload *preload);

/* Frees the handle; only after done was called (also from inside done). */
void hc_preload_free(hc_preload *preload);

/* -------------------------------------------------------- cache operations */

/* Bytes the cache keeps on disk, or a negative code (HC_EINVAL for NULL).
 * Thread-safe. */
int64_t hc_cache_size(hc_cache *cache);

/* Removes a resource from the cache (HC_ENOTFOUND if it is not cached); one
 * being read or downloaded goes once that ends. Thread-safe, blocks on file
 * I/O. */
int hc_cache_remove(hc_cache *cache, const char *url);

/* Removes every cached resource. Thread-safe, blocks on file I/O. */
int hc_cache_clear(hc_cache *cache);

/* Copies a complete cached resource to the file `path` (the origin's bytes:
 * ciphertext when decryption is set; plaintext in a folder encrypted at
 * rest), replacing any file there, mode 0600. Never a hard link: the copy is
 * independent of the cache. HC_ENOTFOUND if absent, HC_ERANGE if incomplete,
 * HC_EIO if `path` cannot be written. Thread-safe, blocks on file I/O. */
int hc_cache_export(hc_cache *cache, const char *url, const char *path);

/* Stores a copy of the file `path` as the complete resource `url` (no
 * content type), replacing a cached one; `path` stays independent of the
 * cache. HC_ENOTFOUND if `path` is not a readable file, HC_EBUSY while `url`
 * is being read or downloaded, HC_EIO on a write error. Thread-safe, blocks
 * on file I/O. */
int hc_cache_import(hc_cache *cache, const char *url, const char *path);

/* One cached resource; `total_length` is -1 when unknown, `complete` nonzero
 * when every byte is cached. `url` is valid during the call only. */
typedef void (*hc_list_fn)(void *userdata, const char *url, int64_t cached_bytes, int64_t total_length,
                           int complete);

/* Calls `fn` for every cached resource (a snapshot, most recently used first),
 * on the calling thread, before it returns. `fn` may call other hc_cache
 * functions on this cache, but not hc_close. HC_EINVAL when `fn` is NULL.
 * Thread-safe. */
int hc_cache_list(hc_cache *cache, hc_list_fn fn, void *userdata);

/* -------------------------------------------------------------- downloads */

/* Titles kept for offline use: a URL (a file, or an HLS presentation walked
 * as a preload walks it) and its selection, kept in the cache folder, run at
 * low priority ("download-parallel", "download-rate", players first), resumed
 * after a restart or crash, their resources pinned until removed. */
#define HC_DOWNLOAD_ID_SIZE 16
#define HC_DOWNLOAD_QUEUED 0
#define HC_DOWNLOAD_RUNNING 1
#define HC_DOWNLOAD_PAUSED 2
#define HC_DOWNLOAD_COMPLETED 3
#define HC_DOWNLOAD_FAILED 4
#define HC_DOWNLOAD_REMOVED 5

typedef struct hc_download_status {
    int state;             /* HC_DOWNLOAD_* */
    int error;             /* HC_FAILED's code (HC_ETOOLARGE, ...); else HC_OK */
    int64_t bytes_done;
    int64_t bytes_total;   /* -1 while unknown */
    int total_is_estimate; /* 1 while bytes_total is an estimate */
    int resources_done, resources_total, segments_done, segments_total;
} hc_download_status;

/* Called with a download's id and status at each change and progress report,
 * on a library thread (never after hc_close returns). */
typedef void (*hc_download_fn)(void *userdata, const char *id, const hc_download_status *status);

/* Adds a download of `url`; `name`, `variant` (all, highest, lowest or a
 * BANDWIDTH) and `range` ("START-END") may be NULL, `duration` (seconds of
 * media) 0 for all. Writes its id into `id_out` (HC_DOWNLOAD_ID_SIZE bytes).
 * Thread-safe. */
int hc_download_add(hc_cache *cache, const char *url, const char *name, const char *variant,
                    double duration, const char *range, char *id_out);

/* Pause, resume (a paused or failed one) and remove (deleting every resource
 * no other download holds); HC_ENOTFOUND for an unknown id. Thread-safe. */
int hc_download_pause(hc_cache *cache, const char *id);
int hc_download_resume(hc_cache *cache, const char *id);
int hc_download_remove(hc_cache *cache, const char *id);

/* The status of one download; HC_ENOTFOUND for an unknown id. */
int hc_download_get(hc_cache *cache, const char *id, hc_download_status *out);

/* Calls `fn` for every download, oldest first, on the calling thread. */
int hc_download_list(hc_cache *cache, hc_download_fn fn, void *userdata);

/* Sets the callback for download events (NULL: none). Thread-safe. */
int hc_download_set_callback(hc_cache *cache, hc_download_fn fn, void *userdata);

/* ------------------------------------------------------------- decryption */

#define HC_CIPHER_NONE 0
#define HC_CIPHER_AES128_CTR 1
#define HC_CIPHER_AES128_ECB 2

/* Chooses how a resource is decrypted: fills `key` (and `iv` for CTR) and
 * returns an HC_CIPHER_* value, or a negative code, which fails that
 * resource's reads and responses with HC_EINVAL and loses no cached byte.
 * `url` is the origin URL exactly as the host gave it. CTR: the counter is the
 * whole 16-byte block as one big-endian integer (as `openssl enc`). ECB: the
 * resource's length must be a multiple of 16. Runs on any library thread,
 * possibly more than once for a resource: give the same answer each time. */
typedef int (*hc_decrypt_fn)(void *userdata, const char *url, uint8_t key[16], uint8_t iv[16]);

/* Decrypts while reading and serving; the cache keeps the ciphertext.
 * Set it before hc_serve and before opening readers; fn NULL turns it off.
 * Thread-safe. */
int hc_set_decryption(hc_cache *cache, hc_decrypt_fn fn, void *userdata);

#ifdef __cplusplus
}
#endif

#endif /* HTTPCACHE_H */
