/* cs_internal.h — private structures shared by the CSupport sources. A libuv handle owned by a cs_
 * object has `data` pointing at it, its first member a cs_base: the shutdown walk closes the owner,
 * not just the handle, so the user's close callback runs once. */
#ifndef CS_INTERNAL_H
#define CS_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "csupport.h"

/* The per-loop read buffer shared by all conns (reads never nest). 256 KiB, not 64: a fast
 * download costs a quarter of the reads and pwrites (cold loopback 0.75 -> 1.05 GB/s). */
#define CS_READ_BUF_SIZE (256 * 1024)

typedef struct cs_base cs_base;
struct cs_base {
    /* Starts closing the owner because the loop is stopping. Idempotent. */
    void (*shutdown)(cs_base *self);
};

/* The head of a cs_ object owning one libuv handle (a timer, a signal watcher), cs_loop.c. Its first
 * close closes the handle (which stops it); on_close follows, then the object is freed. */
typedef struct cs_watch cs_watch;
struct cs_watch {
    cs_base base;
    uv_handle_t *handle; /* initialised; its data points here */
    int closing;
    void (*on_close)(void *ctx);
    void *ctx;
};
/* w is the first member of a calloc'ed object: the close frees it as w. */
void cs__watch_init(cs_watch *w, uv_handle_t *handle, void (*on_close)(void *ctx), void *ctx);
void cs__watch_close(cs_watch *w);
/* A handle that failed to start: closed without on_close. Returns NULL for the caller to return. */
void *cs__watch_abandon(cs_watch *w);

typedef struct cs_task cs_task;
struct cs_task {
    cs_task *next;
    cs_task_fn fn;
    void *ctx;
};

typedef struct cs_resolve_req cs_resolve_req;

/* Plaintext bytes one read of an encrypted range decrypts (whole units): a pool read-ahead fills
 * a piece, a loop read (a range's first) at most CS_XTS_LOOP_READ, so a loop turn stays short. A
 * pool hand-off costs 15-48 us of CPU (2-core VM; more than decrypting 64 KiB): large pieces mean
 * few per MiB, at two pieces of memory per streaming connection. Spare pieces a loop keeps for
 * reuse (a fresh one would cost its page faults each time). */
#define CS_XTS_PIECE (512 * 1024)
#define CS_XTS_LOOP_READ (256 * 1024)
#define CS_XTS_SPARE_PIECES 4

struct cs_loop {
    uv_loop_t uv;
    uv_thread_t thread;
    uv_thread_t tid;        /* set by the loop thread itself, for cs_loop_is_current */
    uv_sem_t started;
    uv_async_t wake;        /* data == NULL: not owned by a cs_ object */

    /* Post queue; `mutex` also orders uv_async_send against the close of `wake`. */
    uv_mutex_t mutex;
    cs_task *head, *tail;
    int stopping;           /* under mutex: cs_loop_stop has begun */

    /* Loop thread only. */
    int closing;            /* shutdown walk done: no new handles or lookups */
    cs_resolve_req *resolves; /* pending lookups, cancelled on shutdown */
    uint8_t read_buf[CS_READ_BUF_SIZE];
    cs_xts_dec *xts_dec;    /* decrypts encrypted file ranges; made on first use */
    uint8_t *xts_spare[CS_XTS_SPARE_PIECES];
    int xts_spares;
};

/* ------------------------------------------------------------ connection */

enum cs_out_kind {
    CS_OUT_MEMORY, /* copied bytes */
    CS_OUT_FILE,   /* a file range, sent with sendfile */
    CS_OUT_XTS,    /* a range of an encrypted file: read, decrypted and sent a piece at a time */
};

/* One queued piece of output. */
typedef struct cs_out_item cs_out_item;
/* A read-ahead of an encrypted range's next piece on the thread pool (cs_conn_out.c). */
typedef struct cs_xts_job cs_xts_job;
struct cs_out_item {
    cs_out_item *next;
    int kind;            /* enum cs_out_kind */
    int fd;              /* file, xts: source descriptor (not owned) */
    int64_t offset;      /* file, xts: next byte to send */
    size_t len;          /* bytes still to send */
    size_t start;        /* memory: index of the first unsent byte in data; xts: in piece */
    size_t cap;          /* memory: capacity of data */
    const cs_xts *xts;   /* xts: the file's key (not owned) */
    uint64_t file_id;    /* xts: the file's tweak id */
    uint8_t *piece;      /* xts: decrypted bytes (a loop's piece buffer), or NULL */
    size_t piece_len;    /* xts: bytes of piece from start not sent yet */
    cs_xts_job *job;     /* xts: the read-ahead in flight, or NULL */
    uint8_t *ahead;      /* xts: the next piece, decrypted by a finished read-ahead, or NULL */
    size_t ahead_start, ahead_len;
    int ahead_error;     /* xts: -errno of a failed read-ahead, 0 */
    uint8_t data[];      /* memory: the bytes */
};

struct cs_conn {
    cs_base base;
    cs_loop *loop;
    uv_poll_t poll;      /* sole owner of fd */
    uv_timer_t linger;   /* close_after_drain deadline */
    int fd;
    int events;          /* events the poll is started with; 0 = stopped */
    int close_error;
    int pending_closes;  /* handles whose close callback has not run */
    unsigned connecting : 1;
    unsigned reading : 1;      /* owner wants on_read */
    unsigned eof : 1;          /* read returned 0 */
    unsigned closing : 1;
    unsigned drain_close : 1;  /* close_after_drain was called */
    unsigned lingering : 1;    /* SHUT_WR done, discarding input */
    unsigned drain_pending : 1; /* queue was non-empty: on_drain owed */
    unsigned detached : 1;     /* fd handed to another loop: not closed here */
    unsigned out_waiting : 1;  /* the head item waits for its read-ahead: no writable events wanted */
    unsigned close_waits : 1;  /* closed but for a read-ahead in flight: its end finishes the close */
    int xts_jobs;              /* read-aheads in flight (cs_conn_out.c) */
    cs_out_item *head, *tail;
    size_t queued;
    uint64_t sent;
    cs_conn_callbacks cbs;
    void *ctx;
};

/* cs_conn.c */
/* Wraps a connected socket (takes ownership of fd, closed on failure). */
cs_conn *cs__conn_new(cs_loop *loop, int fd, int *err);
/* Starts closing; on_close follows from the uv_close callback. Idempotent. */
void cs__conn_begin_close(cs_conn *c, int error);
/* Frees queue and conn, calling on_close, once its handles closed and no read-ahead is in flight. */
void cs__conn_finish_close(cs_conn *c);
/* Matches the poll's events to the conn's state; closes the conn on error. */
int cs__conn_update_poll(cs_conn *c);
/* The queue is sent: shut down writing and discard input until EOF or timeout. */
void cs__conn_begin_linger(cs_conn *c);

/* cs_conn_out.c */
/* Flushes the queue on a writable event; may call on_drain. */
void cs__out_on_writable(cs_conn *c);
/* Frees every queued item (close path). */
void cs__out_free_all(cs_conn *c);
/* Frees the loop's decryption context and spare pieces (loop teardown). */
void cs__out_free_loop(cs_loop *loop);

/* cs_misc.c: cancels lookups still waiting for a thread-pool slot. */
void cs__resolve_cancel_all(cs_loop *loop);

#endif /* CS_INTERNAL_H */
