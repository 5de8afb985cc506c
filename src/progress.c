/*
 * progress.c - the progress engine: poll the transports, then advance every
 * collective in flight.  Waiting callers back off: spin RCOLL_SPIN_COUNT idle
 * polls (resolved in spin.c), then sched_yield() on every idle poll, so oversubscribed ranks (8 on
 * 2 cores) give their core to the rank that has work.
 */
#include <sched.h>
#include <time.h>
#include "core.h"

double rcoll_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int rcoll_context_progress(rcoll_context_t *ctx)
{
    int events = 0;
    /* Transports are polled on every call while a message of ours is in
     * flight; otherwise (e.g. a shared-memory collective waiting on a flag)
     * only every RCOLL_TL_POLL_IDLE-th call: anything arriving then is
     * unexpected anyway, and a poll costs hundreds of instructions (with
     * UCX's tcp transport in its set, a system call). */
    if (ctx->p2p_pending > 0 || !rcoll_list_empty(&ctx->zombies) ||
        ++ctx->polls % RCOLL_TL_POLL_IDLE == 0) {
        for (int i = 0; i < ctx->ntls; i++) {
            events += ctx->tls_ops[i]->progress(ctx->tls[i]);
        }
    }
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->active) {
        rcoll_task_t *task = rcoll_container_of(pos, rcoll_task_t, link);
        events += rcoll_task_progress(task);
    }
    return events;
}

void rcoll_context_backoff(rcoll_context_t *ctx, int events)
{
    if (events > 0) {
        ctx->idle_polls = 0;
    } else if (ctx->idle_polls >= ctx->spin_limit) {
        sched_yield();
    } else {
        ctx->idle_polls++;
    }
}
