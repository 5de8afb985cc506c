/*
 * sim_int.h - the simulation's state, shared by the event loop (sim_net.c)
 * and the core's side of the collectives' contract (sim_core.c).
 */
#ifndef RCOLL_SIM_INT_H
#define RCOLL_SIM_INT_H

#include "sim.h"

/* What the collectives' code may cast a context to: the settings first
 * (rcoll_ctx_config is a cast), then the simulation. */
struct rcoll_context {
    rcoll_config_t cfg;
    void          *coll_slot;
    struct sim    *sim;
};

enum { SIM_RUN = 0, SIM_QUEUED, SIM_BLOCKED, SIM_DONE };

/* Children a rank may have in flight at once: two streams of
 * RCOLL_COMPOSE_WINDOW (engines/compose.h). */
#define SIM_MAX_LIVE 8

typedef struct sim_rank {
    double   clock;       /* s: this rank's time (where its last run ended) */
    double   due;         /* s: when it runs next (its key on the heap) */
    double   wake;        /* during a run: the earliest completion after clock that a
                           * test found (the rank runs again then); INFINITY if none */
    double   port;        /* its send port is free from */
    int      pending;     /* ops posted by any of its tasks, not yet matched */
    int      state;
    int      hpos;        /* its index on the heap while SIM_QUEUED */
    /* composed (node-aware) algorithms: the child tasks in flight, in the
     * order they were posted, children posted so far per sub-communicator
     * kind (their message channel) */
    int           composed, nlive;
    rcoll_task_t *live[SIM_MAX_LIVE];
    uint32_t      nchild[3];
} sim_rank_t;

#define SIM_COLL_STATE_WORDS (RCOLL_COMM_COLL_STATE_SIZE / 8)

/* A message end waiting for the other: a send (eager: already delivered
 * at t; rendezvous: posted at t) or a receive (posted at t).  key: the
 * task's channel (0 for the top-level task; a child's: its sub-communicator
 * kind and posting index) over the algorithm's step. */
typedef struct sim_msg {
    int           src, dst;
    uint64_t      key;
    int           kind;        /* SIM_MSG_EAGER, SIM_MSG_RNDV, SIM_MSG_RECV */
    size_t        len;
    double        t;
    long          seq;         /* a send's posting order */
    rcoll_task_t *task;        /* the task that posted this end */
    int           next;        /* chain in the bucket or the free list; -1 ends */
} sim_msg_t;

/* A rendezvous transfer whose two ends are posted: it takes the sender's
 * port and the links at t (the later end's posting + rndv_extra), in time
 * order and, at equal times, in the order the sends were posted. */
typedef struct sim_grant {
    double        t;
    long          seq;
    int           src, dst;
    size_t        len;
    rcoll_task_t *src_task, *dst_task;
} sim_grant_t;

enum { SIM_MSG_EAGER = 1, SIM_MSG_RNDV, SIM_MSG_RECV };

typedef struct sim {
    struct rcoll_context      ctx;
    rcoll_comm_t              comm;      /* one for all: rank set before each progress() */
    /* the node-aware algorithms' sub-communicators, one per node and one
     * per rail (local rank), shared by their members like comm: their rank
     * and comm's node_comm / rail_comm are set before each progress() */
    rcoll_comm_t             *node_comms, *rail_comms;
    /* a composed algorithm keeps per-communicator state in comm's
     * coll_state (its turn among the composed collectives, engines/
     * compose.c): each rank's own copy, swapped in around its runs */
    uint64_t                 *coll_states;
    const rcoll_sim_params_t *sp;
    rcoll_sim_result_t       *res;
    rcoll_task_t             *tasks;
    sim_rank_t               *ranks;
    double                   *link_out, *link_in;  /* per node: free from */
    int                       cur;       /* the rank in progress() */
    /* the messages waiting for their other end: chained hash */
    int                      *bucket;
    size_t                    nbucket;   /* a power of two */
    sim_msg_t                *msgs;
    int                       nmsgs, msgs_cap, free_msg;
    size_t                    inflight;
    /* the ready ranks: a binary min-heap on (clock, rank) */
    int                      *heap;
    int                       nheap;
    /* the rendezvous transfers to start: a binary min-heap on (t, seq) */
    sim_grant_t              *grants;
    int                       ngrants, grants_cap;
    long                      send_seq;
    /* one buffer of each kind for all ranks, and the scratch handed out
     * (kept until the end: earlier pointers stay valid) */
    void                     *sendbuf, *recvbuf;
    void                    **scratch;
    size_t                   *scratch_size;
    int                       nscratch;
    int                       failed;
} sim_t;

static inline sim_t *sim_of_task(const rcoll_task_t *task)
{
    return task->ctx->sim;
}

/* sim_net.c: a send or receive posted by task (of the rank running now)
 * to or from peer, a rank of task->comm. */
rcoll_status_t sim_post(sim_t *s, rcoll_task_t *task, int peer, uint32_t step, size_t len, int is_send);
/* The rank of the world (0 .. p-1) that is rank r of comm (the world or
 * one of the sub-communicators). */
int sim_global_rank(const sim_t *s, const rcoll_comm_t *comm, int r);
/* A task's ops: pending count and latest completion, in the core's fields
 * of the task (the algorithms never touch them). */
#define SIM_TASK_PENDING(t) ((t)->npending)
#define SIM_TASK_TDONE(t)   ((t)->last_progress)
/* The rank running now, for the calls that carry no task (reductions):
 * set by the event loop around each progress() call. */
sim_t *sim_current(void);
void sim_fail(sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
