/* cs_loop.c — the loop thread, the cross-thread post queue and shutdown. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cs_internal.h"

static void set_err(char *err, size_t errlen, const char *what, int code)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: %s", what, code ? cs_strerror(code) : "failed");
}

/* Closes one handle during shutdown, through its owner when it has one. */
static void shutdown_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (uv_is_closing(h))
        return;
    cs_base *owner = h->data;
    if (owner != NULL)
        owner->shutdown(owner);
    else
        uv_close(h, NULL);
}

static void watch_closed(uv_handle_t *h)
{
    cs_watch *w = h->data;
    if (w->on_close != NULL)
        w->on_close(w->ctx);
    free(w);
}

void cs__watch_close(cs_watch *w)
{
    if (w->closing)
        return;
    w->closing = 1;
    uv_close(w->handle, watch_closed);
}

static void watch_shutdown(cs_base *self)
{
    cs__watch_close((cs_watch *)self);
}

void cs__watch_init(cs_watch *w, uv_handle_t *handle, void (*on_close)(void *ctx), void *ctx)
{
    w->base.shutdown = watch_shutdown;
    w->handle = handle;
    handle->data = w;
    w->on_close = on_close;
    w->ctx = ctx;
}

void *cs__watch_abandon(cs_watch *w)
{
    w->on_close = NULL;
    cs__watch_close(w);
    return NULL;
}

static void begin_shutdown(cs_loop *loop)
{
    loop->closing = 1;
    cs__resolve_cancel_all(loop);
    uv_walk(&loop->uv, shutdown_walk_cb, NULL);
}

/* Runs queued tasks in order (tasks they post run in the same wakeup). `stopping` seen with an
 * empty queue under the mutex: no task can be accepted any more, so shutdown starts. */
static void wake_cb(uv_async_t *async)
{
    cs_loop *loop = async->loop->data;
    for (;;) {
        uv_mutex_lock(&loop->mutex);
        cs_task *list = loop->head;
        loop->head = loop->tail = NULL;
        int stopping = loop->stopping;
        uv_mutex_unlock(&loop->mutex);

        if (list == NULL) {
            if (stopping && !loop->closing)
                begin_shutdown(loop);
            return;
        }
        while (list != NULL) {
            cs_task *t = list;
            list = t->next;
            t->fn(t->ctx);
            free(t);
        }
    }
}

static void loop_thread(void *arg)
{
    cs_loop *loop = arg;
    loop->tid = uv_thread_self();
    uv_sem_post(&loop->started);

    /* Returns 0 only when every handle is closed and all requests are done. */
    uv_run(&loop->uv, UV_RUN_DEFAULT);

    /* Defensive: anything left behind is closed and the loop run again. */
    while (uv_loop_close(&loop->uv) == UV_EBUSY) {
        uv_walk(&loop->uv, shutdown_walk_cb, NULL);
        uv_run(&loop->uv, UV_RUN_DEFAULT);
    }
}

cs_loop *cs_loop_start(char *err, size_t errlen)
{
    /* Writes to closed sockets must fail with EPIPE, not kill the process. */
    signal(SIGPIPE, SIG_IGN);

    cs_loop *loop = calloc(1, sizeof *loop);
    int r = loop == NULL ? UV_ENOMEM : uv_loop_init(&loop->uv);
    if (r < 0) {
        set_err(err, errlen, loop == NULL ? "cs_loop_start" : "uv_loop_init", r);
        free(loop);
        return NULL;
    }
    loop->uv.data = loop;
    if ((r = uv_mutex_init(&loop->mutex)) < 0) {
        set_err(err, errlen, "uv_mutex_init", r);
        uv_loop_close(&loop->uv);
        free(loop);
        return NULL;
    }
    if ((r = uv_sem_init(&loop->started, 0)) < 0)
        goto fail_mutex;
    if ((r = uv_async_init(&loop->uv, &loop->wake, wake_cb)) < 0)
        goto fail_sem;
    loop->wake.data = NULL;
    if ((r = uv_thread_create(&loop->thread, loop_thread, loop)) < 0)
        goto fail_async;

    uv_sem_wait(&loop->started);
    return loop;

fail_async:
    /* The thread never ran: close the async handle on this thread. */
    uv_close((uv_handle_t *)&loop->wake, NULL);
    uv_run(&loop->uv, UV_RUN_DEFAULT);
fail_sem:
    uv_sem_destroy(&loop->started);
fail_mutex:
    set_err(err, errlen, "cs_loop_start", r);
    uv_mutex_destroy(&loop->mutex);
    uv_loop_close(&loop->uv);
    free(loop);
    return NULL;
}

int cs_loop_post(cs_loop *loop, cs_task_fn fn, void *ctx)
{
    cs_task *t = malloc(sizeof *t);
    if (t == NULL)
        return -ENOMEM;
    t->next = NULL;
    t->fn = fn;
    t->ctx = ctx;

    uv_mutex_lock(&loop->mutex);
    if (loop->stopping) {
        uv_mutex_unlock(&loop->mutex);
        free(t);
        return -ESHUTDOWN;
    }
    if (loop->tail != NULL)
        loop->tail->next = t;
    else
        loop->head = t;
    loop->tail = t;
    /* Under the mutex: the loop closes `wake` only after seeing `stopping` under it, so it is alive. */
    uv_async_send(&loop->wake);
    uv_mutex_unlock(&loop->mutex);
    return 0;
}

int cs_loop_is_current(const cs_loop *loop)
{
    uv_thread_t self = uv_thread_self();
    return uv_thread_equal(&self, &loop->tid) ? 1 : 0;
}

uint64_t cs_loop_now_ms(cs_loop *loop)
{
    return uv_now(&loop->uv);
}

void cs_loop_stop(cs_loop *loop)
{
    if (loop == NULL)
        return;
    uv_mutex_lock(&loop->mutex);
    loop->stopping = 1;
    uv_async_send(&loop->wake);
    uv_mutex_unlock(&loop->mutex);

    uv_thread_join(&loop->thread);
    /* Only now: the thread may still be in uv_sem_post when cs_loop_start returns. */
    uv_sem_destroy(&loop->started);

    /* Nothing is queued after `stopping` and the thread drained the queue; freed defensively. */
    while (loop->head != NULL) {
        cs_task *t = loop->head;
        loop->head = t->next;
        free(t);
    }
    uv_mutex_destroy(&loop->mutex);
    cs__out_free_loop(loop);
    free(loop);
}
