/*
 * whereis.h - "where is everyone": each rank publishes, per communicator,
 * the last collective it has entered, so that a timeout can name the ranks
 * that have not entered the one it waited in, and say what they do instead
 * (docs/reliability.md).
 *
 * The ranks of a node share one small table in POSIX shared memory (made at
 * init, unlinked once every rank of the node has mapped it); each rank owns
 * one entry of it: its pid, whether it is waiting inside rcoll now, when it
 * last was (stamped by the deadline check, which reads the clock anyway),
 * and a slot per communicator: the communicator's id and the (sequence,
 * collective) last posted on it.  Publishing costs the per-collective path
 * one plain store when a collective is posted; "inside" is set by a blocking
 * wait once it has polled idly 64 times (with the deadline check) and
 * cleared when such a wait ends.  Ranks on other nodes are not visible in it (the report says so).
 * Private to src/.
 */
#ifndef RCOLL_WHEREIS_H
#define RCOLL_WHEREIS_H

#include <stdatomic.h>
#include <stdint.h>
#include "core.h"

#define RCOLL_WHERE_NCOMM 60     /* communicators per rank whose state is published */

typedef struct {
    _Atomic uint64_t comm_id;    /* 0: free */
    _Atomic uint64_t entered;    /* (seq + 1) << 8 | collective type of the last one posted; 0: none */
} rcoll_where_comm_t;

/* One rank's entry (1 KiB). */
typedef struct rcoll_where_rank {
    _Atomic int64_t    pid;          /* 0 until the rank has mapped the table */
    _Atomic int64_t    world_rank;
    _Atomic uint64_t   inside;       /* 1 while in a blocking wait that has polled idly 64 times */
    _Atomic uint64_t   seen_ns;      /* when last seen waiting in rcoll (CLOCK_MONOTONIC ns); 0: never */
    uint64_t           pad[4];
    rcoll_where_comm_t comms[RCOLL_WHERE_NCOMM];
} rcoll_where_rank_t;

_Static_assert(sizeof(rcoll_where_rank_t) == 1024, "an entry is 1 KiB");

/* Map (or, alone on the node, allocate) the table; this rank's entry is
 * ctx->where_me.  Never fails the init: without a table the report says
 * that the peers' state is not known. */
void rcoll_whereis_init(rcoll_context_t *ctx);
void rcoll_whereis_fini(rcoll_context_t *ctx);

/* A communicator is made / freed: take / give back its slot (comm->where). */
void rcoll_whereis_comm_attach(rcoll_comm_t *comm);
void rcoll_whereis_comm_detach(rcoll_comm_t *comm);

/* The deadline check saw this rank waiting in rcoll at now (seconds). */
void rcoll_whereis_seen(rcoll_context_t *ctx, double now);

/* World rank wrank's pid as its entry in the node's table says: > 0 once
 * it has mapped the table, 0 before that and after its finalize; -1 when
 * it is not visible here (another node, or no table). */
int64_t rcoll_whereis_pid(const rcoll_context_t *ctx, int wrank);

/* Describe who of task's communicator has not entered task (one line, for
 * the timeout's error) into buf. */
void rcoll_whereis_report(const rcoll_task_t *task, char *buf, size_t len);

/* The per-collective path: plain stores. */
static inline void rcoll_whereis_entered(const rcoll_task_t *task)
{
    rcoll_where_comm_t *w = task->comm->where;
    atomic_store_explicit(&w->entered, ((uint64_t)task->seq + 1) << 8 | (uint64_t)task->args.type,
                          memory_order_relaxed);
}

static inline void rcoll_whereis_inside(rcoll_context_t *ctx, uint64_t inside)
{
    atomic_store_explicit(&ctx->where_me->inside, inside, memory_order_relaxed);
}

#endif
