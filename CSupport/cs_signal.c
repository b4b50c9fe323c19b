/* cs_signal.c — process signals delivered on the loop thread (uv_signal_t): libuv's handler only
 * writes to a pipe the loop reads, whichever thread the kernel interrupted. */
#include <stdlib.h>

#include "cs_internal.h"

struct cs_signal {
    cs_watch w;
    uv_signal_t uv;
    void (*on_signal)(void *ctx, int signum);
};

static void signal_received(uv_signal_t *uv, int signum)
{
    cs_signal *s = uv->data;
    if (!s->w.closing && s->on_signal != NULL)
        s->on_signal(s->w.ctx, signum);
}

cs_signal *cs_signal_start(cs_loop *loop, int signum, const cs_signal_callbacks *cbs, void *ctx)
{
    if (loop->closing)
        return NULL;
    cs_signal *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (uv_signal_init(&loop->uv, &s->uv) < 0) {
        free(s);
        return NULL;
    }
    cs__watch_init(&s->w, (uv_handle_t *)&s->uv, cbs != NULL ? cbs->on_close : NULL, ctx);
    s->on_signal = cbs != NULL ? cbs->on_signal : NULL;
    if (uv_signal_start(&s->uv, signal_received, signum) < 0)
        return cs__watch_abandon(&s->w);
    return s;
}

void cs_signal_close(cs_signal *sig)
{
    if (sig != NULL)
        cs__watch_close(&sig->w);
}
