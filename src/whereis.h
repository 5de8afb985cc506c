/*
 * whereis.h - "where is everyone": each rank publishes, per communicator,
 * the last collective it has entered, so that a timeout can name the ranks
 * that have not entered the one it waited in, and say what they do instead
 * (docs/reliability.md).
 *
 * The ranks of a node share one small table in shared memory that never
 * has a name (whereis_table.c): each rank makes a candidate, an unlinked
 * memfd, before the address exchange and publishes where it is (its pid,
 * the descriptor's number and a random nonce) in its address blob; after
 * the exchange every rank of the node maps the candidate of the node's
 * lowest rank that offered one, through /proc/<pid>/fd/<fd>, and the others
 * close theirs.  So the table lives exactly as long as some rank of the
 * node holds it: no kill at any moment leaves anything in /dev/shm.  Each
 * rank owns one entry of it: its pid, whether it is waiting inside rcoll
 * now, when it last was (stamped by the deadline check, which reads the
 * clock anyway), and a slot per communicator: the communicator's id and the
 * (sequence, collective) last posted on it.  Publishing costs the
 * per-collective path one plain store when a collective is posted; "inside"
 * is set by a blocking wait once it has polled idly 64 times (with the
 * deadline check) and cleared when such a wait ends.
 *
 * Ranks on other nodes are not in this node's table: at a timeout the
 * report asks one reachable rank of each such node over the transport
 * (whereis_remote.c: WHERE_Q, answered from the progress loop with what
 * that node's table says, WHERE_A), bounded by RCOLL_WHERE_ASK_S.
 * Private to src/.
 */
#ifndef RCOLL_WHEREIS_H
#define RCOLL_WHEREIS_H

#include <stdatomic.h>
#include <stdint.h>
#include "core.h"
#include "wire.h"
#include "addr_blob.h"

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

struct rcoll_where_fetch;                /* whereis_remote.c: a query in flight */

/* ctx->whereis */
struct rcoll_whereis {
    void               *base;         /* the mapped table; NULL: none */
    size_t              len;
    int                *local_of;     /* world rank -> entry index on this node, -1: other node */
    rcoll_where_rank_t *ranks;
    struct rcoll_where_fetch *fetch;  /* the report's query to other nodes, while it waits */
    uint32_t            nonce;        /* numbers the queries */
    /* the table's set-up (whereis_table.c) */
    int                 fd;           /* this rank's candidate; kept by the owner until finalize; -1: none */
    uint64_t            fd_nonce;     /* in the candidate's header and in this rank's blob */
    int                 owner;        /* world rank whose candidate is the node's table; -1: none */
    addr_where_t        offer;        /* where the owner's candidate is (its blob: hostile input) */
};
/* The entry of world rank wr if it is on this node and visible (this
 * rank's own always is), else NULL. */
const rcoll_where_rank_t *rcoll__whereis_local(const rcoll_context_t *ctx, int wr);

/* Before the address exchange: make this rank's candidate table and say
 * where it is in *pub (all zero when it could not be made, or when alone
 * in the job).  Never fails the init. */
void rcoll_whereis_prepare(rcoll_context_t *ctx, addr_where_t *pub);

/* After the exchange: world rank r, the lowest of this node whose blob
 * offers a table (pub->pid > 0), is the node's owner. */
void rcoll_whereis_offer(rcoll_context_t *ctx, int r, const addr_where_t *pub);

/* Map the owner's table (local size and node_of known); this rank's entry
 * is ctx->where_me.  Never fails the init: without a table (one warning
 * when the owner's cannot be opened) the report says that the peers'
 * state on this node is not known. */
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

/* ---- other nodes (whereis_remote.c) ---- */

#define RCOLL_WHERE_ASK_S 1.0    /* how long a report waits for other nodes' answers, at most */

/* What the report learnt of the communicator's ranks on other nodes. */
typedef struct rcoll_where_remote rcoll_where_remote_t;

/* Ask the nodes other than this one that hold members of comm (bounded by
 * RCOLL_WHERE_ASK_S; progresses the transports only, answering others'
 * queries meanwhile).  NULL if comm has no member elsewhere (or no memory). */
rcoll_where_remote_t *rcoll__whereis_ask(rcoll_context_t *ctx, const rcoll_comm_t *comm,
                                         uint32_t seq);
/* Comm rank q's entry as its node answered it, rebuilt into *tmp (pid 1:
 * alive, 0: gone; seen_ns on this node's clock); NULL if no answer, with
 * why (e.g. "no answer from node 1 in 1 s") in why. */
const rcoll_where_rank_t *rcoll__whereis_remote(const rcoll_where_remote_t *rem, int q,
                                                rcoll_where_rank_t *tmp, char *why, size_t len);
void rcoll__whereis_remote_free(rcoll_where_remote_t *rem);

/* WHERE_Q and WHERE_A from the transport (p2p.c's dispatch): hostile input. */
void rcoll__whereis_on_msg(rcoll_context_t *ctx, int peer, const rcoll_wire_hdr_t *h,
                           const void *body, size_t body_len);

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
