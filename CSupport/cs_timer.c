/* cs_timer.c — one-shot and repeating timers over uv_timer_t. */
#include <stdlib.h>

#include "cs_internal.h"

struct cs_timer {
    cs_watch w;
    uv_timer_t uv;
    uint64_t repeat_ms;
    void (*on_fire)(void *ctx);
};

static void timer_fired(uv_timer_t *uv)
{
    cs_timer *t = uv->data;
    /* Valid until closed: closing from inside on_fire is safe. */
    if (!t->w.closing && t->on_fire != NULL)
        t->on_fire(t->w.ctx);
}

cs_timer *cs_timer_start(cs_loop *loop, uint64_t timeout_ms, uint64_t repeat_ms,
                         const cs_timer_callbacks *cbs, void *ctx)
{
    if (loop->closing)
        return NULL;
    cs_timer *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    uv_timer_init(&loop->uv, &t->uv); /* cannot fail on unix */
    cs__watch_init(&t->w, (uv_handle_t *)&t->uv, cbs != NULL ? cbs->on_close : NULL, ctx);
    t->on_fire = cbs != NULL ? cbs->on_fire : NULL;
    t->repeat_ms = repeat_ms;
    if (uv_timer_start(&t->uv, timer_fired, timeout_ms, repeat_ms) < 0)
        return cs__watch_abandon(&t->w);
    return t;
}

void cs_timer_reset(cs_timer *timer, uint64_t timeout_ms)
{
    if (timer == NULL || timer->w.closing)
        return;
    /* uv_timer_start on an active timer restarts it. */
    uv_timer_start(&timer->uv, timer_fired, timeout_ms, timer->repeat_ms);
}

void cs_timer_close(cs_timer *timer)
{
    if (timer != NULL)
        cs__watch_close(&timer->w);
}
