/*
 * spin.c - how a waiting rank passes the time: it spins RCOLL_SPIN_COUNT
 * idle polls, then yields, or sleeps (RCOLL_WAIT_SLEEP_MIN).
 *
 * "auto" spins 1000 idle polls, unless this node's ranks outnumber its online
 * CPUs: then a spinning rank holds the core that the rank it waits for needs,
 * and every idle poll yields at once.  rcollrun passes RCOLL_SPIN_COUNT=0 in
 * that case already; this makes the same choice under any launcher (Slurm,
 * mpirun, a user's own runtime through rcoll_init_oob).
 *
 * Yielding is not always enough there: a yielding rank stays runnable, and
 * the scheduler may hand it its CPU back while the rank it waits for, on the
 * same CPU, has had more than its share (docs/shm.md, "Waiting when ranks
 * outnumber the CPUs").  A large bcast's readers therefore sleep 1 us at a
 * time, with the thread's timer slack (50 us by default) at 1 ns for the
 * wait.  Only they: they wait for one rank that rarely waits itself, so
 * their CPUs never idle.  Where every rank may sleep, CPUs do, and waking
 * an idle vCPU is slow: a 4-rank 1 MiB allreduce took 6 ms instead of 0.2
 * with every rank sleeping (docs/shm.md).
 */
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "core.h"

#define SPIN_DEFAULT 1000u
#define SLEEP_MIN_OVERSUBSCRIBED ((size_t)256 << 10)
#define SLEEP_NS 1000L

void rcoll__spin_resolve(rcoll_context_t *ctx)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int over = cpus > 0 && ctx->local_size > cpus;
    size_t smin = ctx->config.wait_sleep_min;
    if (smin == RCOLL_CONFIG_SIZE_AUTO) {
        smin = over ? SLEEP_MIN_OVERSUBSCRIBED : SIZE_MAX;
    } else if (smin == RCOLL_CONFIG_SIZE_OFF) {
        smin = SIZE_MAX;
    }
    ctx->sleep_min = smin;
    if (ctx->config.spin_count != RCOLL_CONFIG_UINT_AUTO) {
        ctx->spin_limit = ctx->config.spin_count;
        return;
    }
    unsigned limit = over ? 0 : SPIN_DEFAULT;
    int changed = limit != ctx->spin_limit;
    ctx->spin_limit = limit;
    if (over && changed) {
        char sleeps[96] = "";           /* only where RCOLL_WAIT_SLEEP_MIN is not off */
        if (ctx->sleep_min != SIZE_MAX) {
            snprintf(sleeps, sizeof(sleeps), ", and a bcast's readers sleep from %zu bytes "
                     "(RCOLL_WAIT_SLEEP_MIN)", ctx->sleep_min);
        }
        rcoll_info("%d ranks on this node share %ld online CPUs: waiting ranks yield at once "
                   "(RCOLL_SPIN_COUNT=auto chose 0)%s; set them to override", ctx->local_size,
                   cpus, sleeps);
    }
}

void rcoll__wait_idle(rcoll_context_t *ctx, int events, int sleepy, unsigned long *slack)
{
    if (!sleepy || events > 0 || ctx->idle_polls < ctx->spin_limit) {
        rcoll_context_backoff(ctx, events);
        return;
    }
    if (*slack == 0) {
        int cur = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        *slack = cur > 0 ? (unsigned long)cur : 1;
        if (*slack != 1) {
            (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        }
    }
    struct timespec ts = { 0, SLEEP_NS };
    (void)nanosleep(&ts, NULL);
}

void rcoll__wait_idle_end(unsigned long slack)
{
    if (slack > 1) {
        (void)prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    }
}
