/*
 * liveness.h - learning that a rank has died (docs/reliability.md, "Dead
 * ranks").  Every source ends in rcoll_p2p_peer_error_cb (p2p.c), the one
 * place that marks a world rank failed:
 *
 *  - the launcher's PMIx events (process terminated, aborted, connection
 *    lost: bootstrap_pmix.c), which arrive on libpmix's thread and are
 *    handed over through a lock-free inbox that the waiting rank drains;
 *  - the processes of this node's ranks (their pids from the whereis table):
 *    a pidfd that turns readable, or kill(pid, 0) == ESRCH;
 *  - the transports' own peer errors (they call the callback directly),
 *    helped by a probe: a wait with no progress for RCOLL_PROBE_S asks the
 *    transport of every other member of its communicator to post something
 *    small that errors if that member is gone (probe_peer, transport.h; a
 *    Soft-RoCE receiver otherwise never learns that its sender died).
 *
 * RCOLL_LIVENESS=transport (a diagnostic) ignores the first two sources, as
 * for ranks of other nodes that neither can tell about.
 *
 * All of it runs off the per-collective path, from the deadline check
 * (rcoll_task_check_deadline: a wait that has polled idly 64 times, or
 * rcoll_test), which reads the clock anyway, and from rcoll_comm_shrink's
 * agreement loop (rcoll_liveness_poll); the node's processes are
 * looked at every RCOLL_LIVENESS_PERIOD_S at most.  A task whose
 * communicator has a failed member then ends with that member's status
 * (RCOLL_ERR_PEER_FAILED), naming it: every collective involves every
 * member of its communicator.  Private to src/.
 */
#ifndef RCOLL_LIVENESS_H
#define RCOLL_LIVENESS_H

#include "core.h"

#define RCOLL_LIVENESS_PERIOD_S 0.25

typedef struct rcoll_liveness rcoll_liveness_t;

/* The state of ctx (ctx->liveness); NULL if out of memory (then only the
 * transports report deaths). */
rcoll_liveness_t *rcoll_liveness_new(void);
/* After the bootstrap has stopped delivering events (its fini). */
void rcoll_liveness_free(rcoll_liveness_t *lv);

/* Any thread (libpmix's): world rank wrank has died (why: a short text,
 * copied).  Lock-free; allocates. */
void rcoll_liveness_report(rcoll_liveness_t *lv, int wrank, const char *why);

/* The deadline check's part, task not done, now from rcoll_time_now():
 * take the reported deaths, look at the node's processes if it is time,
 * and end task if its communicator has a failed member.  1 if it ended
 * the task now. */
int rcoll_liveness_check(rcoll_task_t *task, double now);

/* The context-wide part of rcoll_liveness_check, for waits that are not a
 * task's (rcoll_comm_shrink's agreement): take the reported deaths and look
 * at the node's processes if it is time; deaths found are marked
 * (rcoll_p2p_peer_error_cb, ctx->peer_failed). */
void rcoll_liveness_poll(rcoll_context_t *ctx, double now);

/* A task just posted on a context with failed ranks (ctx->nfailed): end it
 * at once, before it posts anything (a composed algorithm's children on
 * sub-communicators would take turns there that its peers' abandoned
 * collectives hold), if its communicator has a failed member.  1 if ended. */
int rcoll_liveness_at_post(rcoll_task_t *task);

/* Whether world rank wrank is known dead without marking anything (a read
 * from its memory in flight, p2p.c): reported by the launcher and not yet
 * taken, or its process on this node has ended (finalized or not).  Costs
 * a system call for a peer on this node; for error paths only. */
int rcoll_liveness_gone(rcoll_context_t *ctx, int wrank);

/* The status of task's first failed member (RCOLL_ERR_PEER_FAILED), else
 * st: a task on a communicator with a dead member that ends otherwise (a
 * peer withdrew, which a receiver sees as RCOLL_ERR_TIMEOUT) reports the
 * death, also one known but not yet marked (rcoll_liveness_gone: a system
 * call per member on this node).  For the error path only. */
rcoll_status_t rcoll_liveness_cause(const rcoll_task_t *task, rcoll_status_t st);

#endif
