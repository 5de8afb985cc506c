/*
 * liveness.c - dead ranks found from outside the transports (liveness.h):
 * the reports handed over from libpmix's thread, and the processes of the
 * ranks on this node.
 *
 * The inbox is a lock-free stack: any thread pushes with a compare-and-swap,
 * the one consumer (the context's waiting thread) takes the whole stack with
 * one exchange, so there is no ABA.  Its hot-path cost is nil: it is read
 * only from the deadline check.
 *
 * The node's ranks are watched through pidfds (one poll() over all of them
 * per look), falling back to kill(pid, 0) where pidfd_open is refused.
 * Under `rcollrun --nodes` each virtual node has its own PID namespace; the
 * ranks of one node share it, and only they are watched.  A process that
 * ended after its rcoll_finalize (its table entry's pid is 0 again) is not
 * a failure: it is dropped from the watch.  A zombie counts as dead: its
 * pidfd is readable from the moment it exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "liveness.h"
#include "whereis.h"

typedef struct death {
    struct death *next;
    int           wrank;
    char          why[120];
} death_t;

enum { PEER_UNKNOWN = 0, PEER_WATCHED, PEER_GONE };

typedef struct {
    int     wrank;
    int     state;          /* PEER_* */
    int64_t pid;
    int     fd;             /* pidfd, -1: kill(pid, 0) */
} watched_t;

struct rcoll_liveness {
    _Atomic(death_t *) inbox;
    double     next_look;    /* when to look at the node's processes again */
    double     next_probe;   /* when the peers of a silent wait may be probed again */
    int        nwatch;       /* -1 until the first look */
    watched_t *watch;
    struct pollfd *pfd;
};

rcoll_liveness_t *rcoll_liveness_new(void)
{
    rcoll_liveness_t *lv = calloc(1, sizeof(*lv));
    if (lv != NULL) {
        atomic_init(&lv->inbox, NULL);
        lv->nwatch = -1;
    }
    return lv;
}

void rcoll_liveness_free(rcoll_liveness_t *lv)
{
    if (lv == NULL) {
        return;
    }
    death_t *d = atomic_exchange(&lv->inbox, NULL);
    while (d != NULL) {
        death_t *next = d->next;
        free(d);
        d = next;
    }
    for (int i = 0; i < lv->nwatch; i++) {
        if (lv->watch[i].fd >= 0) {
            close(lv->watch[i].fd);
        }
    }
    free(lv->watch);
    free(lv->pfd);
    free(lv);
}

void rcoll_liveness_report(rcoll_liveness_t *lv, int wrank, const char *why)
{
    death_t *d = malloc(sizeof(*d));
    if (d == NULL) {
        return;              /* the node's processes or the transports will tell */
    }
    d->wrank = wrank;
    snprintf(d->why, sizeof(d->why), "%s", why);
    death_t *head = atomic_load_explicit(&lv->inbox, memory_order_relaxed);
    do {
        d->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&lv->inbox, &head, d, memory_order_release,
                                                    memory_order_relaxed));
}

static void take_reports(rcoll_context_t *ctx, rcoll_liveness_t *lv)
{
    death_t *d = atomic_exchange_explicit(&lv->inbox, NULL, memory_order_acquire);
    while (d != NULL) {
        death_t *next = d->next;
        if (d->wrank >= 0 && d->wrank < ctx->size && d->wrank != ctx->rank) {
            ctx->peer_exited[d->wrank] = 1;
            rcoll_p2p_peer_error_cb(ctx, d->wrank, RCOLL_ERR_PEER_FAILED, d->why);
        }
        free(d);
        d = next;
    }
}

/* The ranks on this node, other than this one. */
static void watch_setup(rcoll_context_t *ctx, rcoll_liveness_t *lv)
{
    lv->nwatch = 0;
    if (ctx->node_of == NULL || ctx->local_size < 2) {
        return;
    }
    lv->watch = calloc((size_t)ctx->local_size, sizeof(*lv->watch));
    lv->pfd = calloc((size_t)ctx->local_size, sizeof(*lv->pfd));
    if (lv->watch == NULL || lv->pfd == NULL) {
        return;
    }
    for (int r = 0; r < ctx->size && lv->nwatch < ctx->local_size; r++) {
        if (r != ctx->rank && ctx->node_of[r] == ctx->node_of[ctx->rank]) {
            lv->watch[lv->nwatch++] = (watched_t){ .wrank = r, .state = PEER_UNKNOWN, .fd = -1 };
        }
    }
}

/* A process that is gone: dead, unless it finalized first. */
static void gone(rcoll_context_t *ctx, watched_t *w, const char *how)
{
    int64_t now_pid = rcoll_whereis_pid(ctx, w->wrank);
    w->state = PEER_GONE;
    if (now_pid != w->pid) {
        return;                  /* finalized (pid 0) */
    }
    ctx->peer_exited[w->wrank] = 1;
    if (ctx->peer_failed[w->wrank] != RCOLL_OK) {
        return;                  /* known already */
    }
    char why[120];
    snprintf(why, sizeof(why), "its process %lld on this node %s", (long long)w->pid, how);
    rcoll_p2p_peer_error_cb(ctx, w->wrank, RCOLL_ERR_PEER_FAILED, why);
}

/* Start watching w once its pid is in the table. */
static void watch_start(rcoll_context_t *ctx, watched_t *w)
{
    int64_t pid = rcoll_whereis_pid(ctx, w->wrank);
    if (pid <= 0) {
        w->state = pid < 0 ? PEER_GONE : PEER_UNKNOWN;   /* not visible: not watched */
        return;
    }
    w->pid = pid;
    w->fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    w->state = PEER_WATCHED;
}

static void look(rcoll_context_t *ctx, rcoll_liveness_t *lv)
{
    if (lv->nwatch < 0) {
        watch_setup(ctx, lv);
    }
    int np = 0;
    for (int i = 0; i < lv->nwatch; i++) {
        watched_t *w = &lv->watch[i];
        if (w->state == PEER_UNKNOWN) {
            watch_start(ctx, w);
        }
        if (w->state != PEER_WATCHED) {
            continue;
        }
        if (w->fd < 0) {
            if (kill((pid_t)w->pid, 0) != 0 && errno == ESRCH) {
                gone(ctx, w, "no longer exists");
            }
            continue;
        }
        lv->pfd[np].fd = w->fd;
        lv->pfd[np].events = POLLIN;
        lv->pfd[np].revents = 0;
        np++;
    }
    if (np > 0 && poll(lv->pfd, (nfds_t)np, 0) > 0) {
        for (int i = 0, k = 0; i < lv->nwatch && k < np; i++) {
            watched_t *w = &lv->watch[i];
            if (w->state != PEER_WATCHED || w->fd < 0) {
                continue;
            }
            if (lv->pfd[k++].revents != 0) {
                gone(ctx, w, "has exited");
                close(w->fd);
                w->fd = -1;
            }
        }
    }
}

/* End task: world rank wr of its communicator (comm rank q) has failed. */
static void fail_task(rcoll_task_t *task, int q, int wr)
{
    rcoll_context_t *ctx = task->ctx;
    const rcoll_p2p_op_t *op = rcoll_task_first_pending(task);
    char at[160];
    if (op != NULL) {
        snprintf(at, sizeof(at), "at step %u, waiting for rank %d (world rank %d)", op->step,
                 op->peer, op->wpeer);
    } else if (task->wait_peer >= 0) {
        snprintf(at, sizeof(at), "at step %u, waiting for rank %d (world rank %d) in shared memory",
                 task->wait_step, task->wait_peer, task->comm->world_ranks[task->wait_peer]);
    } else {
        snprintf(at, sizeof(at), "in phase %d", task->phase);
    }
    rcoll_error("rcoll_%s failed: rank %d (world rank %d) of communicator 0x%llx (%d ranks) "
                "has failed; algorithm %s, sequence %u, %s", rcoll_coll_name(task->args.type), q,
                wr, (unsigned long long)task->comm->id, task->comm->size,
                task->alg != NULL ? task->alg->name : "?", task->seq, at);
    rcoll_task_fail(task, ctx->peer_failed[wr]);
}

/* RCOLL_LIVENESS=transport: the launcher's events and the node's processes
 * are ignored, as for ranks that neither can tell about (a diagnostic). */
static int transport_only(const rcoll_context_t *ctx)
{
    return ctx->config.liveness[0] == 't';
}

/* A wait that has seen no progress for RCOLL_PROBE_S: ask the transport of
 * each other live member of its communicator to probe it (transport.h,
 * probe_peer), at most once per RCOLL_PROBE_S per context.  Every member,
 * not only the one waited for: a rank waiting on a live neighbour that
 * itself waits on the dead one must learn of the death too. */
static void probe_silent(rcoll_task_t *task, rcoll_liveness_t *lv, double now)
{
    rcoll_context_t *ctx = task->ctx;
    double every = ctx->config.probe_s;
    if (every <= 0 || task->last_progress == 0 || now - task->last_progress < every ||
        now < lv->next_probe) {
        return;
    }
    lv->next_probe = now + every;
    const rcoll_comm_t *comm = task->comm;
    for (int q = 0; q < comm->size; q++) {
        int wr = comm->world_ranks[q];
        if (wr == ctx->rank || ctx->peer_failed[wr] != RCOLL_OK || ctx->peer_ops[wr] == NULL ||
            ctx->peer_ops[wr]->probe_peer == NULL || ctx->peer_tl[wr] == NULL) {
            continue;
        }
        ctx->peer_ops[wr]->probe_peer(ctx->peer_tl[wr], wr);
    }
}

int rcoll_liveness_gone(rcoll_context_t *ctx, int wrank)
{
    rcoll_liveness_t *lv = ctx->liveness;
    if (lv == NULL || transport_only(ctx)) {
        return 0;
    }
    /* Only this thread frees the inbox's entries: walking it is safe. */
    for (death_t *d = atomic_load_explicit(&lv->inbox, memory_order_acquire); d != NULL; d = d->next) {
        if (d->wrank == wrank) {
            return 1;
        }
    }
    /* Also before the first look (a collective that failed before any
     * deadline check: a neighbour withdrew because this peer died). */
    if (lv->nwatch < 0) {
        watch_setup(ctx, lv);
    }
    for (int i = 0; i < lv->nwatch; i++) {
        watched_t *w = &lv->watch[i];
        if (w->wrank != wrank) {
            continue;
        }
        if (w->state == PEER_UNKNOWN) {
            watch_start(ctx, w);
        }
        if (w->state == PEER_GONE) {
            return w->pid > 0;
        }
        if (w->state != PEER_WATCHED) {
            return 0;
        }
        if (w->fd < 0) {
            return kill((pid_t)w->pid, 0) != 0 && errno == ESRCH;
        }
        struct pollfd p = { .fd = w->fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
    }
    return 0;
}

/* Whether world rank wr's failure ends every collective of its
 * communicators: always, except in rcoll_finalize's barrier, where a peer
 * that left first has closed its transports (see rcoll_finalize). */
static int fails_comm(const rcoll_context_t *ctx, int wr)
{
    return ctx->peer_failed[wr] != RCOLL_OK && (!ctx->finalizing || ctx->peer_exited[wr]);
}

int rcoll_liveness_at_post(rcoll_task_t *task)
{
    const rcoll_comm_t *comm = task->comm;
    for (int q = 0; q < comm->size; q++) {
        int wr = comm->world_ranks[q];
        if (fails_comm(task->ctx, wr)) {
            fail_task(task, q, wr);
            return 1;
        }
    }
    return 0;
}

rcoll_status_t rcoll_liveness_cause(const rcoll_task_t *task, rcoll_status_t st)
{
    const rcoll_comm_t *comm = task->comm;
    const int *failed = task->ctx->peer_failed;
    for (int q = 0; q < comm->size; q++) {
        if (failed[comm->world_ranks[q]] != RCOLL_OK) {
            rcoll_error("rcoll_%s: a peer gave up because rank %d (world rank %d) of "
                        "communicator 0x%llx has failed", rcoll_coll_name(task->args.type), q,
                        comm->world_ranks[q], (unsigned long long)comm->id);
            return failed[comm->world_ranks[q]];
        }
    }
    /* Known dead but not yet marked (the next check marks and logs it). */
    for (int q = 0; q < comm->size; q++) {
        if (comm->world_ranks[q] != task->ctx->rank &&
            rcoll_liveness_gone(task->ctx, comm->world_ranks[q])) {
            rcoll_error("rcoll_%s: a peer gave up because rank %d (world rank %d) of "
                        "communicator 0x%llx has exited", rcoll_coll_name(task->args.type), q,
                        comm->world_ranks[q], (unsigned long long)comm->id);
            return RCOLL_ERR_PEER_FAILED;
        }
    }
    return st;
}

void rcoll_liveness_poll(rcoll_context_t *ctx, double now)
{
    rcoll_liveness_t *lv = ctx->liveness;
    if (lv == NULL || ctx->size < 2 || transport_only(ctx)) {
        return;
    }
    if (atomic_load_explicit(&lv->inbox, memory_order_relaxed) != NULL) {
        take_reports(ctx, lv);
    }
    if (now >= lv->next_look) {
        lv->next_look = now + RCOLL_LIVENESS_PERIOD_S;
        look(ctx, lv);
    }
}

int rcoll_liveness_check(rcoll_task_t *task, double now)
{
    rcoll_context_t *ctx = task->ctx;
    rcoll_liveness_t *lv = ctx->liveness;
    if (lv == NULL || ctx->size < 2) {
        return 0;
    }
    rcoll_liveness_poll(ctx, now);
    if (ctx->nfailed == 0 || task->done) {     /* also what the transports reported */
        probe_silent(task, lv, now);
        return 0;
    }
    const rcoll_comm_t *comm = task->comm;
    for (int q = 0; q < comm->size; q++) {
        int wr = comm->world_ranks[q];
        if (fails_comm(ctx, wr)) {
            fail_task(task, q, wr);
            return 1;
        }
    }
    return 0;
}
