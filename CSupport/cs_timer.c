/* cs_timer.c — one-shot and repeating timers over uv_timer_t. */
#include <stdlib.h>

#include "cs_internal.h"

struct cs_timer {
    cs_base base;
    uv_timer_t uv;
    uint64_t repeat_ms;
    int closing;
    cs_timer_callbacks cbs;
    void *ctx;
};

static void timer_closed(uv_handle_t *h)
{
    cs_timer *t = h->data;
    if (t->cbs.on_close != NULL)
        t->cbs.on_close(t->ctx);
    free(t);
}

static void timer_begin_close(cs_timer *t)
{
    if (t->closing)
        return;
    t->closing = 1;
    uv_close((uv_handle_t *)&t->uv, timer_closed); /* also stops it */
}

static void timer_shutdown(cs_base *self)
{
    timer_begin_close((cs_timer *)self);
}

static void timer_fired(uv_timer_t *uv)
{
    cs_timer *t = uv->data;
    /* Valid until timer_closed: closing from inside on_fire is safe. */
    if (!t->closing && t->cbs.on_fire != NULL)
        t->cbs.on_fire(t->ctx);
}

cs_timer *cs_timer_start(cs_loop *loop, uint64_t timeout_ms, uint64_t repeat_ms,
                         const cs_timer_callbacks *cbs, void *ctx)
{
    if (loop->closing)
        return NULL;
    cs_timer *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->base.shutdown = timer_shutdown;
    t->repeat_ms = repeat_ms;
    if (cbs != NULL)
        t->cbs = *cbs;
    t->ctx = ctx;
    uv_timer_init(&loop->uv, &t->uv); /* cannot fail on unix */
    t->uv.data = t;
    if (uv_timer_start(&t->uv, timer_fired, timeout_ms, repeat_ms) < 0) {
        /* The handle exists and must be closed; the caller sees NULL only. */
        t->cbs.on_close = NULL;
        timer_begin_close(t);
        return NULL;
    }
    return t;
}

void cs_timer_reset(cs_timer *timer, uint64_t timeout_ms)
{
    if (timer == NULL || timer->closing)
        return;
    /* uv_timer_start on an active timer restarts it. */
    uv_timer_start(&timer->uv, timer_fired, timeout_ms, timer->repeat_ms);
}

void cs_timer_close(cs_timer *timer)
{
    if (timer != NULL)
        timer_begin_close(timer);
}
