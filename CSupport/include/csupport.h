/*
 * csupport.h — the narrow C boundary of HTTPCache.
 *
 * CSupport runs one libuv loop on its own thread and owns its sockets, timers
 * and thread-pool requests. Swift never sees a libuv struct: it holds opaque
 * handles and gets plain callbacks with a `void *ctx` of its choosing.
 *
 * Threading: cs_loop_start, cs_loop_post and cs_loop_stop work from any thread
 * (cs_loop_stop not from the loop's own); every other function only on the loop
 * thread (in a callback or a posted task). Every callback runs on the loop thread.
 *
 * Lifetime: each handle (listener, conn, timer, signal) ends exactly once, with
 * its close callback; then the pointer is invalid and ctx may be released.
 * Closing is asynchronous (a close function only starts it) and idempotent;
 * cs_loop_stop closes whatever is still open.
 *
 * Client sockets are raw non-blocking sockets watched by a uv_poll_t (the fd's
 * only owner), so output can use writev/sendmsg and real sendfile(2).
 * cs_loop_start ignores SIGPIPE process-wide.
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

/** Creates a loop and starts its thread. NULL on failure, with a message in err (if not NULL). */
cs_loop *cs_loop_start(char *err, size_t errlen);

/** Runs fn(ctx) on the loop thread, in posting order. Thread-safe. Returns 0, or -ESHUTDOWN once
 * cs_loop_stop has begun (fn will not run; the caller still owns ctx). Accepted tasks always run. */
int cs_loop_post(cs_loop *loop, cs_task_fn fn, void *ctx);

/** 1 when called on the loop's thread, else 0. Thread-safe. */
int cs_loop_is_current(const cs_loop *loop);
/** The loop's cached monotonic clock in milliseconds (loop thread). */
uint64_t cs_loop_now_ms(cs_loop *loop);

/** Stops the loop: runs the tasks already posted, closes every handle (their close callbacks
 * run), waits for pool work, joins the thread, frees the loop. Any thread but the loop's own. */
void cs_loop_stop(cs_loop *loop);

/* -------------------------------------------------------------- listener */

typedef struct cs_listener_callbacks {
    /** A new connection. Bind it (cs_conn_bind) before returning, or close it. */
    void (*on_accept)(void *ctx, cs_conn *conn);
    /** The listener is closed; the last callback. */
    void (*on_close)(void *ctx);
} cs_listener_callbacks;

/** cs_listen flag: SO_REUSEPORT, so listeners on several loops share a port and the kernel
 * spreads connections over them. Every listener of the port must set it, the first included. */
#define CS_LISTEN_REUSEPORT 1
/** cs_listen flag, with CS_LISTEN_REUSEPORT: the port's first listener. Fails with -EADDRINUSE when
 * anything listens there already (another process with SO_REUSEPORT would otherwise share it). */
#define CS_LISTEN_FIRST 2

/** Listens on host:port (an IPv4 or IPv6 literal; port 0 picks a free one). flags: 0 or
 * CS_LISTEN_REUSEPORT [| CS_LISTEN_FIRST]. Returns 0 and sets *out, or -errno. Callbacks are copied. */
int cs_listen(cs_loop *loop, const char *host, int port, int backlog, int flags,
              const cs_listener_callbacks *cbs, void *ctx, cs_listener **out);

/** The port actually bound. */
int cs_listener_port(const cs_listener *listener);

/** Stops accepting until cs_listener_resume: new connections wait in the kernel's backlog (no
 * descriptor spent) instead of being accepted and refused. Pausing twice is pausing once. */
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

/** Opens a non-blocking TCP connection to addr (IPv4 or IPv6). Returns 0 and sets *out
 * (on_connect follows), or -errno (nothing was created). */
int cs_connect(cs_loop *loop, const struct sockaddr *addr, const cs_conn_callbacks *cbs,
               void *ctx, cs_conn **out);

/** Starts or stops delivering on_read/on_eof. Reading is off until started. */
int cs_conn_read_start(cs_conn *conn);
int cs_conn_read_stop(cs_conn *conn);

/** Queues bytes: written at once when nothing is queued before them, what the socket did not take
 * is copied. Returns 0, or -errno when the conn is broken or closing (it closes; on_close follows). */
int cs_conn_write(cs_conn *conn, const void *data, size_t len);

/* A response head and its (small) body from memory in one sendmsg: one packet, one system call,
 * no copy unless the socket is full (the rest is queued as by cs_conn_write). Returns as cs_conn_write. */
int cs_conn_write2(cs_conn *conn, const void *head, size_t head_len, const void *body, size_t body_len);

/** Queues len bytes of file fd from offset, sent with sendfile(2) (zero-copy; EAGAIN and partial
 * sends handled). fd must stay open until on_drain or on_close. Adjacent ranges of one fd merge in
 * the queue; bytes queued just before a file range go with MSG_MORE, so head and body can share a
 * packet. Returns as cs_conn_write. */
int cs_conn_sendfile(cs_conn *conn, int fd, int64_t offset, size_t len);

/** A response head, then len bytes of file fd from offset (cs_conn_write + cs_conn_sendfile). A small
 * body (CS_SHARED_PACKET_MAX, 32 KiB) shares the head's packet (MSG_MORE), so the client wakes once;
 * a larger one starts a packet of its own anyway. Returns as cs_conn_write. */
int cs_conn_send_head_file(cs_conn *conn, const void *head, size_t head_len, int fd, int64_t offset, size_t len);

/** A data file's AES-256-XTS key (cs_atrest.h). */
typedef struct cs_xts cs_xts;

/**
 * Queues len bytes from offset of a file encrypted at rest with xts (CS_XTS_UNIT units tweaked with
 * file_id; cs_atrest.h), sent as plaintext, like cs_conn_sendfile. Each piece (whole units, at most
 * 256 KiB) is read and decrypted only when the socket takes more, so no decrypted copy is queued
 * beyond the piece being sent and the one read ahead (on the thread pool, while the loop sends);
 * piece buffers are reused. Loop and pool decrypt with contexts of their own, so xts may belong to
 * another thread. fd and xts must stay valid until on_drain or on_close (a close waits for a
 * read-ahead in flight). Returns as cs_conn_write; -EIO, closing the conn, when the file ends
 * before the range.
 */
int cs_conn_send_xts(cs_conn *conn, int fd, const cs_xts *xts, uint64_t file_id, int64_t offset, size_t len);

/** A response head, then a range of an encrypted file (cs_conn_send_xts); with nothing queued,
 * head and first decrypted piece leave in one sendmsg. Returns as cs_conn_write. */
int cs_conn_send_head_xts(cs_conn *conn, const void *head, size_t head_len, int fd, const cs_xts *xts,
                          uint64_t file_id, int64_t offset, size_t len);

/** Bytes queued and not yet sent. */
size_t cs_conn_queued(const cs_conn *conn);
/** Total bytes sent on this conn so far (memory and file). */
uint64_t cs_conn_bytes_sent(const cs_conn *conn);

/** The peer's address (getpeername(2)) into *out, its size into *len; returns 0, or -errno (e.g.
 * -ENOTCONN before an outgoing conn is connected). Valid until on_close. */
int cs_conn_peer(const cs_conn *conn, struct sockaddr_storage *out, socklen_t *len);

/** Closes at once, dropping whatever is queued. */
void cs_conn_close(cs_conn *conn);

/** Takes the socket from its loop for another to adopt (cs_conn_adopt): stops watching it, closes
 * the conn but not the descriptor, and returns it (the caller owns it now); on_close follows with 0.
 * Only with nothing queued and not closing: else -EBUSY, the conn unchanged. */
int cs_conn_detach(cs_conn *conn);

/** Wraps a connected socket from another loop (cs_conn_detach) in a new conn of `loop`, reading off
 * until started. Returns 0 and sets *out, or -errno (the descriptor is then closed). Bind it first. */
int cs_conn_adopt(cs_loop *loop, int fd, cs_conn **out);

/** Closes once the queue is sent: shuts down the sending side, discards input for a short while so
 * the peer reads the whole response, then closes. */
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

/** Watches signum (libuv's process-wide handler; the callback runs on the loop thread), replacing
 * its default action until closed. It must not be blocked in every thread. NULL on failure. */
cs_signal *cs_signal_start(cs_loop *loop, int signum, const cs_signal_callbacks *cbs, void *ctx);

/** Stops watching and closes the watcher. */
void cs_signal_close(cs_signal *sig);

/* ------------------------------------------------------- DNS and workers */

/** Resolves host (name or literal) for TCP on the thread pool. The callback gets 0 and the
 * addresses (valid during the call), or -errno / a negative libuv code (cs_strerror) with count 0. */
typedef void (*cs_resolve_fn)(void *ctx, int status, const struct sockaddr_storage *addrs, size_t count);
int cs_resolve(cs_loop *loop, const char *host, int port, cs_resolve_fn cb, void *ctx);

/** Runs work(ctx) on the thread pool, then done(ctx) on the loop thread (blocking file work:
 * fsync, unlink, scans). Returns 0 or a negative error. */
int cs_work_submit(cs_loop *loop, cs_task_fn work, cs_task_fn done, void *ctx);

/** A message for a negative error code from this API. */
const char *cs_strerror(int error);

/* --------------------------------------------------------------- process */

/** Caps glibc's malloc arenas at count (mallopt M_ARENA_MAX): the loop thread does nearly all
 * allocation, and each arena a thread touches costs resident memory. Server binary only, never
 * called by the library on its host's behalf. Returns 1 on success, 0 otherwise. */
int cs_limit_malloc_arenas(int count);

/** Gives the heap's free pages back (malloc_trim(0)): for the idle server binary, so its resident
 * memory at rest is what it holds, not what a burst once needed. 1 when memory was released, else
 * 0. Any thread. */
int cs_trim_heap(void);

/** syncfs(2) of fd's file system (GNU; Swift's Glibc module lacks it): one sync for a batch of
 * small files instead of an fsync each. Blocking: pool threads only. Returns 0 or -errno. */
int cs_syncfs(int fd);

/** Extended attributes (sys/xattr.h, not in Swift's Glibc module): an entry's metadata in its data
 * file. cs_fsetxattr replaces the whole value (flags 0); cs_fgetxattr returns the value's length
 * (size 0: only asks it); cs_lremovexattr works on a path, never through a symlink. Blocking: pool
 * threads. They return what the system calls do (-1 with errno on failure). */
int cs_fsetxattr(int fd, const char *name, const void *value, size_t size);
long cs_fgetxattr(int fd, const char *name, void *value, size_t size);
int cs_lremovexattr(const char *path, const char *name);

/* ------------------------------------------------------------------ gzip */

/** Decodes a whole gzip body (RFC 1952; a playlist stored with Content-Encoding: gzip) into a new
 * buffer of at most cap bytes, freed with cs_free. Returns 0, -EBADMSG (malformed or truncated),
 * -EFBIG (past cap) or -ENOMEM. */
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

/* TLS for the upstream client: OpenSSL and its macro shims are in cs_tls.h, included below so
 * that `import CSupport` brings them to Swift. */

#ifdef __cplusplus
}
#endif

#include "cs_tls.h"
#include "cs_cipher.h"
#include "cs_atrest.h"

#endif /* CSUPPORT_H */
