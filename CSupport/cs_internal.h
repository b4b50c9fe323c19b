/*
 * cs_internal.h — private structures shared by the CSupport sources.
 *
 * Every libuv handle owned by a cs_ object has `data` pointing at that
 * object, whose first member is a cs_base. The loop's shutdown walk uses it
 * to close the owner (not just the raw handle) so that the owner's user
 * close callback runs exactly once.
 */
#ifndef CS_INTERNAL_H
#define CS_INTERNAL_H

#include <stdint.h>
#include <uv.h>

#include "csupport.h"

/* Size of the per-loop read buffer shared by all conns (reads never nest).
 * 256 KiB rather than 64: a download from a fast origin then costs a quarter
 * of the read and pwrite calls (cold loopback throughput 0.75 -> 1.05 GB/s). */
#define CS_READ_BUF_SIZE (256 * 1024)

typedef struct cs_base cs_base;
struct cs_base {
    /* Starts closing the owner because the loop is stopping. Idempotent. */
    void (*shutdown)(cs_base *self);
};

typedef struct cs_task cs_task;
struct cs_task {
    cs_task *next;
    cs_task_fn fn;
    void *ctx;
};

typedef struct cs_resolve_req cs_resolve_req;

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
};

/* ------------------------------------------------------------ connection */

/* One queued piece of output: copied bytes, or a range of a file. */
typedef struct cs_out_item cs_out_item;
struct cs_out_item {
    cs_out_item *next;
    int is_file;
    int fd;              /* file: source descriptor (not owned) */
    int64_t offset;      /* file: next byte to send */
    size_t len;          /* bytes still to send */
    size_t start;        /* memory: index of the first unsent byte in data */
    size_t cap;          /* memory: capacity of data */
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
/* Matches the poll's events to the conn's state; closes the conn on error. */
int cs__conn_update_poll(cs_conn *c);
/* The queue is sent: shut down writing and discard input until EOF or timeout. */
void cs__conn_begin_linger(cs_conn *c);

/* cs_conn_out.c */
/* Flushes the queue on a writable event; may call on_drain. */
void cs__out_on_writable(cs_conn *c);
/* Frees every queued item (close path). */
void cs__out_free_all(cs_conn *c);

/* cs_misc.c: cancels lookups still waiting for a thread-pool slot. */
void cs__resolve_cancel_all(cs_loop *loop);

#endif /* CS_INTERNAL_H */
