/*
 * csupport.h — the narrow C boundary of HTTPCache.
 *
 * CSupport runs one libuv loop on its own thread and owns every socket, timer
 * and thread-pool request of it. Swift never sees a libuv struct: it holds
 * opaque handles and receives plain callbacks with a `void *ctx` it chose.
 *
 * Threading rules
 *  - cs_loop_start, cs_loop_post and cs_loop_stop may be called from any
 *    thread (cs_loop_stop not from the loop thread itself).
 *  - Every other function must be called on the loop thread, i.e. from inside
 *    a callback or a task posted with cs_loop_post.
 *  - Every callback runs on the loop thread.
 *
 * Lifetime rules
 *  - Each handle (listener, conn, timer, signal) reports its end exactly once through
 *    its close callback; after it the handle pointer is invalid and the ctx
 *    may be released. Closing is asynchronous: calling a close function only
 *    starts it. cs_loop_stop closes whatever is still open.
 *  - Calling a close function twice is harmless.
 *
 * Client sockets are raw non-blocking sockets watched by a uv_poll_t (the only
 * owner of the fd), so the output path can use writev/sendmsg and real
 * sendfile(2). SIGPIPE is ignored process-wide by cs_loop_start.
 */
#ifndef CSUPPORT_H
#define CSUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cs_loop cs_loop;
typedef struct cs_listener cs_listener;
typedef struct cs_conn cs_conn;
typedef struct cs_timer cs_timer;
typedef struct cs_signal cs_signal;

/** A unit of work with the caller's context. */
typedef void (*cs_task_fn)(void *ctx);

/* ------------------------------------------------------------------ loop */

/**
 * Creates a loop and starts its thread. Returns NULL on failure and writes a
 * message into err (if err is not NULL).
 */
cs_loop *cs_loop_start(char *err, size_t errlen);

/**
 * Runs fn(ctx) on the loop thread, in posting order. Thread-safe.
 * Returns 0, or -ESHUTDOWN once cs_loop_stop has begun (fn will not run; the
 * caller still owns ctx). Tasks accepted before stop always run.
 */
int cs_loop_post(cs_loop *loop, cs_task_fn fn, void *ctx);

/** 1 when called on the loop's thread, else 0. Thread-safe. */
int cs_loop_is_current(const cs_loop *loop);

/** The loop's cached monotonic clock in milliseconds (loop thread). */
uint64_t cs_loop_now_ms(cs_loop *loop);

/**
 * Stops the loop: runs the tasks already posted, closes every handle (their
 * close callbacks run), waits for thread-pool work to finish, joins the
 * thread and frees the loop. Call from any thread but the loop's own.
 */
void cs_loop_stop(cs_loop *loop);

/* -------------------------------------------------------------- listener */

typedef struct cs_listener_callbacks {
    /** A new connection. Bind it (cs_conn_bind) before returning, or close it. */
    void (*on_accept)(void *ctx, cs_conn *conn);
    /** The listener is closed; the last callback. */
    void (*on_close)(void *ctx);
} cs_listener_callbacks;

/** cs_listen flag: SO_REUSEPORT, so listeners on several loops share one
 * port and the kernel spreads new connections over them. Every listener of
 * the port must set it, the first one included. */
#define CS_LISTEN_REUSEPORT 1
/** cs_listen flag, with CS_LISTEN_REUSEPORT: the first listener of the
 * shared port. It fails with -EADDRINUSE when anything listens on the port
 * already (another process that set SO_REUSEPORT would otherwise share it). */
#define CS_LISTEN_FIRST 2

/**
 * Listens on host:port (port 0 picks a free port; host is an IPv4 or IPv6
 * literal). flags: 0, CS_LISTEN_REUSEPORT [| CS_LISTEN_FIRST]. Returns 0 and sets *out, or
 * -errno. Callbacks are copied.
 */
int cs_listen(cs_loop *loop, const char *host, int port, int backlog, int flags,
              const cs_listener_callbacks *cbs, void *ctx, cs_listener **out);

/** The port actually bound. */
int cs_listener_port(const cs_listener *listener);

/** Stops accepting until cs_listener_resume: new connections wait in the
 * kernel's backlog (no descriptor is spent on them) instead of being accepted
 * and refused. Pausing twice is pausing once. */
void cs_listener_pause(cs_listener *listener);

/** Accepts again after cs_listener_pause (no-op when not paused). */
void cs_listener_resume(cs_listener *listener);

/** Stops accepting and closes the listener. */
void cs_listener_close(cs_listener *listener);

/* ------------------------------------------------------------ connection */

typedef struct cs_conn_callbacks {
    /** Bytes arrived; data is valid only during the call. */
    void (*on_read)(void *ctx, const uint8_t *data, size_t len);
    /** The peer closed its sending side (read returned 0). */
    void (*on_eof)(void *ctx);
    /** The output queue became empty. */
    void (*on_drain)(void *ctx);
    /** Outgoing connections only: 0 when connected, or -errno (the conn then closes itself). */
    void (*on_connect)(void *ctx, int status);
    /** The socket is closed; the last callback. error is 0 after cs_conn_close, else the -errno that ended it. */
    void (*on_close)(void *ctx, int error);
} cs_conn_callbacks;

/** Sets the callbacks and context of a conn (copied). Needed once for accepted conns. */
void cs_conn_bind(cs_conn *conn, const cs_conn_callbacks *cbs, void *ctx);

/**
 * Opens a non-blocking TCP connection to addr (IPv4 or IPv6). Returns 0 and
 * sets *out (on_connect follows), or -errno (nothing was created).
 */
int cs_connect(cs_loop *loop, const struct sockaddr *addr, const cs_conn_callbacks *cbs,
               void *ctx, cs_conn **out);

/** Starts or stops delivering on_read/on_eof. Reading is off until started. */
int cs_conn_read_start(cs_conn *conn);
int cs_conn_read_stop(cs_conn *conn);

/**
 * Queues bytes for sending; writes at once when nothing is queued before them,
 * copies what the socket did not take. Returns 0, or -errno when the conn is
 * broken or closing (it then closes; on_close follows).
 */
int cs_conn_write(cs_conn *conn, const void *data, size_t len);

/*
 * A response head and its (small) body from memory in one sendmsg: one
 * packet, one system call, no copy of either unless the socket is full
 * (then the rest is queued as cs_conn_write would). Returns 0 or -errno as
 * cs_conn_write.
 */
int cs_conn_write2(cs_conn *conn, const void *head, size_t head_len, const void *body, size_t body_len);

/**
 * Queues len bytes of file fd from offset, sent with sendfile(2) (zero-copy;
 * EAGAIN and partial sends handled). The fd must stay open until on_drain or
 * on_close. Adjacent ranges of the same fd are merged in the queue. Bytes
 * queued just before a file range go out with MSG_MORE so head and body can
 * share a packet. Returns 0 or -errno as cs_conn_write.
 */
int cs_conn_sendfile(cs_conn *conn, int fd, int64_t offset, size_t len);

/**
 * Sends a response head and then len bytes of file fd from offset, as
 * cs_conn_write followed by cs_conn_sendfile. When the body is small
 * (CS_SHARED_PACKET_MAX, 32 KiB) the head goes with MSG_MORE, so head and
 * body leave in one packet and the client wakes once instead of twice; a
 * larger body starts with a packet of its own anyway. Returns 0 or -errno as
 * cs_conn_write.
 */
int cs_conn_send_head_file(cs_conn *conn, const void *head, size_t head_len, int fd, int64_t offset, size_t len);

/** A data file's AES-256-XTS key (cs_atrest.h). */
typedef struct cs_xts cs_xts;

/**
 * Queues len bytes from offset of a file encrypted at rest with xts (units
 * of CS_XTS_UNIT bytes, tweaked with file_id; see cs_atrest.h), sent as
 * plaintext: as cs_conn_sendfile, but each piece (whole units, at most
 * 256 KiB) is read, decrypted and sent only when the socket takes more, so
 * the queue holds no decrypted copy beyond the piece being sent and the one
 * read ahead (a range of several pieces has its next one read and decrypted
 * on the thread pool while the loop sends the current one), and piece
 * buffers are reused rather than allocated. The loop and the pool decrypt
 * with contexts of their own, so xts may belong to another thread. fd and
 * xts must stay valid until on_drain or on_close (a close waits for a
 * read-ahead in flight before on_close). Returns 0 or -errno
 * as cs_conn_write (-EIO, closing the conn, when the file ends before the range).
 */
int cs_conn_send_xts(cs_conn *conn, int fd, const cs_xts *xts, uint64_t file_id, int64_t offset, size_t len);

/**
 * A response head, then a range of an encrypted file (cs_conn_send_xts).
 * With nothing queued, the head and the first decrypted piece leave in one
 * sendmsg. Returns 0 or -errno as cs_conn_write.
 */
int cs_conn_send_head_xts(cs_conn *conn, const void *head, size_t head_len, int fd, const cs_xts *xts,
                          uint64_t file_id, int64_t offset, size_t len);

/** Bytes queued and not yet sent. */
size_t cs_conn_queued(const cs_conn *conn);

/** Total bytes sent on this conn so far (memory and file). */
uint64_t cs_conn_bytes_sent(const cs_conn *conn);

/**
 * The peer's address (getpeername(2)): copies it into *out, sets *len to its
 * size and returns 0, or returns -errno (e.g. -ENOTCONN before an outgoing
 * conn is connected). Valid until on_close.
 */
int cs_conn_peer(const cs_conn *conn, struct sockaddr_storage *out, socklen_t *len);

/** Closes at once, dropping whatever is queued. */
void cs_conn_close(cs_conn *conn);

/**
 * Takes the socket away from its loop so another loop can adopt it
 * (cs_conn_adopt): stops watching it and closes the conn without closing
 * the descriptor, which is returned. Only with nothing queued and not
 * closing (-EBUSY otherwise, the conn unchanged). on_close follows with 0, as
 * after cs_conn_close; the caller owns the descriptor from now on.
 */
int cs_conn_detach(cs_conn *conn);

/**
 * Wraps a connected socket taken from another loop (cs_conn_detach) in a new
 * conn of `loop`; reading is off until started. Returns 0 and sets *out, or
 * -errno (the descriptor is then closed). Bind it before anything else.
 */
int cs_conn_adopt(cs_loop *loop, int fd, cs_conn **out);

/**
 * Closes once the queue is sent: shuts down the sending side, discards input
 * for a short while so the peer reads the whole response, then closes.
 */
void cs_conn_close_after_drain(cs_conn *conn);

/* ---------------------------------------------------------------- timers */

typedef struct cs_timer_callbacks {
    void (*on_fire)(void *ctx);
    /** The timer is closed; the last callback. */
    void (*on_close)(void *ctx);
} cs_timer_callbacks;

/** Fires after timeout_ms, then every repeat_ms if repeat_ms > 0. Returns NULL on failure. */
cs_timer *cs_timer_start(cs_loop *loop, uint64_t timeout_ms, uint64_t repeat_ms,
                         const cs_timer_callbacks *cbs, void *ctx);

/** Restarts the countdown with a new timeout (keeps repeat). */
void cs_timer_reset(cs_timer *timer, uint64_t timeout_ms);

/** Stops and closes the timer. */
void cs_timer_close(cs_timer *timer);

/* --------------------------------------------------------------- signals */

typedef struct cs_signal_callbacks {
    /** signum arrived (several deliveries before the loop looks may count once). */
    void (*on_signal)(void *ctx, int signum);
    /** The watcher is closed; the last callback. */
    void (*on_close)(void *ctx);
} cs_signal_callbacks;

/**
 * Watches signum (libuv's process-wide handler; the callback runs on the loop
 * thread). The signal must not be blocked in every thread. Returns NULL on
 * failure. Watching replaces the signal's default action until closed.
 */
cs_signal *cs_signal_start(cs_loop *loop, int signum, const cs_signal_callbacks *cbs, void *ctx);

/** Stops watching and closes the watcher. */
void cs_signal_close(cs_signal *sig);

/* ------------------------------------------------------- DNS and workers */

/**
 * Resolves host (name or literal) for TCP on the thread pool. The callback
 * receives 0 and the addresses (valid during the call), or -errno /
 * a negative libuv error code with count 0; cs_strerror explains it.
 */
typedef void (*cs_resolve_fn)(void *ctx, int status, const struct sockaddr_storage *addrs, size_t count);
int cs_resolve(cs_loop *loop, const char *host, int port, cs_resolve_fn cb, void *ctx);

/**
 * Runs work(ctx) on the thread pool, then done(ctx) on the loop thread — for
 * blocking file work (fsync, unlink, scans). Returns 0 or a negative error.
 */
int cs_work_submit(cs_loop *loop, cs_task_fn work, cs_task_fn done, void *ctx);

/** A message for a negative error code from this API. */
const char *cs_strerror(int error);

/* --------------------------------------------------------------- process */

/**
 * Caps glibc's malloc arenas at count (mallopt M_ARENA_MAX): a server whose
 * loop thread does nearly all allocation needs few, and each arena a thread
 * touches costs resident memory. For the server binary only, never called by
 * the library on its host's behalf. Returns 1 on success, 0 otherwise.
 */
int cs_limit_malloc_arenas(int count);

/**
 * Gives the heap's free pages back to the system (malloc_trim(0)): for the
 * server binary once it is idle, so its resident memory at rest is what it
 * holds, not what a burst of traffic once needed. Returns 1 when memory was
 * released, 0 otherwise. Any thread.
 */
int cs_trim_heap(void);

/**
 * syncfs(2) of the file system holding fd (a GNU extension Swift's Glibc
 * module does not show): one sync for a batch of small files instead of one
 * fsync each. Blocking: pool threads only. Returns 0 or a negative errno.
 */
int cs_syncfs(int fd);

/**
 * Extended attributes of an open file (sys/xattr.h, which Swift's Glibc
 * module does not show): an entry's metadata kept in its data file.
 * cs_fsetxattr replaces the whole value (flags 0); cs_fgetxattr returns the
 * value's length (size 0: only asks it); cs_removexattr works on a path,
 * never through a symlink. Blocking: pool threads. They return what the
 * system calls return (-1 with errno set on failure).
 */
int cs_fsetxattr(int fd, const char *name, const void *value, size_t size);
long cs_fgetxattr(int fd, const char *name, void *value, size_t size);
int cs_lremovexattr(const char *path, const char *name);

/* ------------------------------------------------------------------ gzip */

/**
 * Decodes a whole gzip body (RFC 1952; a playlist stored with
 * Content-Encoding: gzip) into a new buffer of at most cap bytes, freed with
 * cs_free. Returns 0, -EBADMSG for a malformed or truncated body, -EFBIG past
 * cap, -ENOMEM.
 */
int cs_gunzip(const uint8_t *in, size_t len, size_t cap, uint8_t **out, size_t *out_len);

/** Encodes a whole body as gzip into a new buffer, freed with cs_free. Returns 0 or -errno. */
int cs_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

/** Frees a buffer this API allocated. */
void cs_free(void *pointer);

/* ---------------------------------------------------------------- crypto */

/** SHA-256 of data into out (32 bytes); plain C, no libcrypto (see cs_misc.c). */
void cs_sha256(const void *data, size_t len, uint8_t out[32]);

/** HMAC-SHA256 of data under key into out (32 bytes). Returns 0, or -1 (out zeroed). */
int cs_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[32]);

/** len bytes from OpenSSL's CSPRNG. Returns 0, or -1 when it cannot supply them. */
int cs_random_bytes(uint8_t *out, size_t len);

/* TLS for the upstream client: OpenSSL itself and its macro shims are in
 * cs_tls.h, included below so that `import CSupport` brings them to Swift. */

#ifdef __cplusplus
}
#endif

#include "cs_tls.h"
#include "cs_cipher.h"
#include "cs_atrest.h"

#endif /* CSUPPORT_H */
