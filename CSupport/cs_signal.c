/* cs_signal.c — process signals delivered on the loop thread (uv_signal_t): libuv's handler only
 * writes to a pipe the loop reads, whichever thread the kernel interrupted. */
#include <stdlib.h>

#include "cs_internal.h"

struct cs_signal {
    cs_base base;
    uv_signal_t uv;
    int closing;
    cs_signal_callbacks cbs;
    void *ctx;
};

static void signal_closed(uv_handle_t *h)
{
    cs_signal *s = h->data;
    if (s->cbs.on_close != NULL)
        s->cbs.on_close(s->ctx);
    free(s);
}

static void signal_begin_close(cs_signal *s)
{
    if (s->closing)
        return;
    s->closing = 1;
    uv_close((uv_handle_t *)&s->uv, signal_closed); /* also stops it */
}

static void signal_shutdown(cs_base *self)
{
    signal_begin_close((cs_signal *)self);
}

static void signal_received(uv_signal_t *uv, int signum)
{
    cs_signal *s = uv->data;
    if (!s->closing && s->cbs.on_signal != NULL)
        s->cbs.on_signal(s->ctx, signum);
}

cs_signal *cs_signal_start(cs_loop *loop, int signum, const cs_signal_callbacks *cbs, void *ctx)
{
    if (loop->closing)
        return NULL;
    cs_signal *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->base.shutdown = signal_shutdown;
    if (cbs != NULL)
        s->cbs = *cbs;
    s->ctx = ctx;
    if (uv_signal_init(&loop->uv, &s->uv) < 0) {
        free(s);
        return NULL;
    }
    s->uv.data = s;
    if (uv_signal_start(&s->uv, signal_received, signum) < 0) {
        /* The handle exists and must be closed; the caller sees NULL only. */
        s->cbs.on_close = NULL;
        signal_begin_close(s);
        return NULL;
    }
    return s;
}

void cs_signal_close(cs_signal *sig)
{
    if (sig != NULL)
        signal_begin_close(sig);
}
