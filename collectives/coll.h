/*
 * coll.h - the contract between rcoll's core (src/) and its collectives
 * (collectives/): everything an algorithm may know of the core, and the
 * hooks the core calls in the collectives.  An algorithm file includes this
 * header, the leaf headers of common/ and collectives' own headers, nothing
 * of src/ or transports/ (docs/architecture.md; test/check-includes).
 *
 * Every algorithm is a nonblocking state machine: one progress() function, a
 * switch on task->phase (which starts at 0), keeping whatever else it needs in
 * its own small struct inside task->alg_state.  progress() never blocks: it
 * posts point-to-point operations with rcoll_task_send()/rcoll_task_recv(),
 * returns RCOLL_INPROGRESS, and is called again by the progress engine; once
 * rcoll_task_test() says the posted operations are done it moves on.  It
 * returns RCOLL_OK when the collective is complete on this rank, or an error.
 *
 * The rank arithmetic (peers of step k, block bounds) lives in pure functions
 * in the algorithm's file so unit tests can call them directly.
 *
 * Arguments reach the algorithm already validated, with count > 0 and
 * task->args.sendbuf resolved: for in-place calls sendbuf == recvbuf.
 *
 * Precondition: an algorithm runs only on a communicator of p >= 2 ranks
 * and with count > 0 (a barrier: any count).  rcoll_task_post (src/task.c)
 * completes a collective on one rank, or of zero elements, by itself (a
 * local copy) and never selects an algorithm for it, so algorithms and the
 * engines they compose (collectives/engines/) have no p == 1 case.
 *
 * The two objects the core and the algorithms share, the communicator and
 * the task, are defined here with their fields in the open, so that the
 * per-collective path reads them without a call; the context is the core's
 * and opaque here: what collectives need of it comes through the functions
 * at the end of this header.
 */
#ifndef RCOLL_COLL_H
#define RCOLL_COLL_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"
#include "status.h"
#include "config.h"
#include "list.h"
#include "log.h"

/* A collective in flight: the task.  What a user holds is not the task but
 * a handle to it, rcoll_request_t (rcoll.h), an incomplete type never
 * dereferenced: the task's address tagged with its generation (src/core.h,
 * rcoll__task_handle / rcoll__task_from_handle; docs/architecture.md, "Names"). */
typedef struct rcoll_task rcoll_task_t;

typedef enum {
    RCOLL_COLL_ALLREDUCE,
    RCOLL_COLL_BCAST,
    RCOLL_COLL_BARRIER,
    RCOLL_COLL_REDUCE,
    RCOLL_COLL_ALLGATHER,
    RCOLL_COLL_REDUCE_SCATTER,
    RCOLL_COLL_LAST
} rcoll_coll_type_t;

typedef struct rcoll_coll_args {
    rcoll_coll_type_t type;
    const void       *sendbuf;   /* == recvbuf when in place */
    void             *recvbuf;   /* bcast: the buffer */
    size_t            count;     /* allgather / reduce_scatter: per rank */
    rcoll_datatype_t  dtype;
    rcoll_op_t        op;
    int               root;
    int               in_place;
} rcoll_coll_args_t;

/*
 * Parameters of the alpha-beta-gamma cost model the selector uses
 * (collectives/selector.c fills them from calibration or defaults).
 */
typedef struct rcoll_model {
    double alpha;          /* seconds per message, eager, same node */
    double alpha_inter;    /* seconds per message between nodes */
    double beta;           /* seconds per byte moved, same node */
    double beta_inter;     /* seconds per byte moved between nodes */
    double gamma;          /* seconds per byte reduced */
    double rndv_extra;     /* extra seconds per rendezvous message (RTR + FIN) */
    size_t eager_limit;    /* bytes; larger messages go rendezvous */
    size_t segment_size;   /* pipelining unit (RCOLL_SEGMENT_SIZE); 0 = the
                            * algorithm's own default */
    int    shm;            /* 1: the shared-memory algorithms may be chosen
                            * (RCOLL_SHM); 0: their cost is infinite */
    int    shm_node;       /* 1: RCOLL_SHM=1, so the node-local steps of a
                            * node-aware algorithm may use shm (its cost
                            * model prices them so) */
} rcoll_model_t;

typedef struct rcoll_alg {
    const char        *name;     /* as given to RCOLL_<COLL>_ALGORITHM */
    rcoll_coll_type_t  coll;
    rcoll_status_t   (*progress)(rcoll_task_t *task);
    /* Predicted time in seconds for `bytes` of data per rank (allreduce,
     * bcast, reduce: the vector; allgather, reduce_scatter: one rank's block)
     * on `nranks` ranks with `ppn` ranks per node. */
    double           (*cost)(const rcoll_model_t *m, size_t bytes, int nranks, int ppn);
    /* Optional: on one node (point to point), how long one call keeps a
     * rank's send port busy, averaged over the ranks: what limits calls
     * that overlap, as a node-aware algorithm's children do
     * (engines/compose_cost.h).  Absent: the whole cost(), no overlap. */
    double           (*port)(const rcoll_model_t *m, size_t bytes, int nranks);
    /* Optional: called once when the task ends with an error (timeout, a
     * failed peer) before its state is dropped, so the algorithm can leave
     * shared state usable for the collectives that follow. */
    void             (*abort)(rcoll_task_t *task);
    /* RCOLL_ALG_COMPOSED: the algorithm posts collectives on the
     * communicator's sub-communicators (node-aware).  The selector never
     * gives such an algorithm to a sub-communicator, even when forced. */
    unsigned           flags;
} rcoll_alg_t;

#define RCOLL_ALG_COMPOSED 1u

/* comm->sub_kind */
#define RCOLL_SUB_NODE 1
#define RCOLL_SUB_RAIL 2

/* Each collective's algorithm table, ended by NULL; defined in
 * collectives/<coll>/<coll>.c next to the algorithms. */
extern const rcoll_alg_t *const rcoll_allreduce_algs[];
extern const rcoll_alg_t *const rcoll_bcast_algs[];
extern const rcoll_alg_t *const rcoll_barrier_algs[];
extern const rcoll_alg_t *const rcoll_reduce_algs[];
extern const rcoll_alg_t *const rcoll_allgather_algs[];
extern const rcoll_alg_t *const rcoll_reduce_scatter_algs[];

const char *rcoll_coll_name(rcoll_coll_type_t coll);       /* "allreduce" */
const rcoll_alg_t *const *rcoll_coll_algs(rcoll_coll_type_t coll);
const rcoll_alg_t *rcoll_alg_find(rcoll_coll_type_t coll, const char *name);

/* ---- the shared objects ---- */

#define RCOLL_TASK_MAX_OPS          64    /* ops an algorithm may post between successful tests */
#define RCOLL_ALG_STATE_SIZE        256
#define RCOLL_COMM_COLL_STATE_SIZE  512

/* A communicator.  Algorithms read ctx (to pass on), id, rank, size,
 * local_size, shm_usable; coll_state is the collectives' (coll_comm.h):
 * zeroed when the communicator is made, released by rcoll_coll_comm_fini.
 * The other fields are the core's. */
struct rcoll_comm {
    rcoll_context_t *ctx;
    uint64_t         id;
    int              rank, size;
    int             *world_ranks;      /* comm rank -> world rank */
    uint32_t         next_seq;         /* sequence number of the next collective */
    /* Creations by rcoll_comm_create_group with this parent, counted per
     * (tag, group) key (src/comm_group.c): the same on every member. */
    struct rcoll_group_seq *group_seqs;
    uint32_t         ngroup_seqs, group_seqs_cap;
    int              nactive;          /* requests not yet completed */
    int              is_world;
    /* The core's (src/revoke.c): RCOLL_OK, or the error that revoked this
     * communicator; every collective posted on it then fails at once. */
    rcoll_status_t   revoked;
    /* The core's: this rank's published "last collective entered here"
     * (src/whereis.h), and a slot of its own when the table has none free. */
    void            *where;
    uint64_t         where_private[2];
    /* Properties fixed when the communicator is created (rcoll_comm_create)
     * and never changed: every member derives them from data all members
     * hold identically (the node of every world rank, exchanged at init, and
     * RCOLL_SHM, an init-only setting that must be equal on all ranks), so
     * all reach the same values without communicating.  The selector reads
     * them; no algorithm is ever swapped for another mid-flight.
     * shm_usable: every member is on one node, RCOLL_SHM=1, and (for the
     * world and the communicators of rcoll_comm_dup and _split) the members
     * agreed at creation that the shared-memory segment is set up
     * (rcoll__comm_shm_agree: a set-up with messages, so a too-small
     * /dev/shm gives one warning and point-to-point algorithms on every
     * member alike); so the selector may choose the shm algorithms here (a
     * forced shm needs only the one node).  The communicators of
     * rcoll_comm_create_group (whose creations may interleave differently
     * on different members, so a blocking set-up could deadlock) and the
     * node sub-communicators (made without messages) set their segment up
     * lazily, by the first shm collective; if that fails, that collective
     * and every later shm one on it return the error (docs/shm.md). */
    int              local_size;       /* members on this rank's node */
    int              shm_usable;
    /* The node layout, fixed at creation in the same way (src/comm.c):
     * node_count: the nodes with members; node_min: the fewest members any
     * of them has; local_rank: this rank's index among the members on its
     * node, in comm order; sub_kind: 0 for a communicator of the API,
     * else this is an internal sub-communicator (RCOLL_SUB_NODE / _RAIL). */
    int              node_count, node_min, local_rank;
    int              sub_kind;
    /* The node-aware algorithms' sub-communicators, made by every member
     * alone, without a message, the first time one needs them
     * (rcoll_comm_node_subcomms) and freed with this communicator:
     * node_comm: the members on this rank's node, in comm order;
     * rail_comm: the members whose local_rank equals this rank's, one per
     * node, in comm order -- only where local_rank < node_min, else NULL
     * (so every rail spans every node: rail 0 is the node leaders). */
    rcoll_comm_t    *node_comm, *rail_comm;
    int              subcomms_made;
    /* The collectives' per-communicator state (the selector's remembered
     * choices, the shared-memory segment), in place: no indirection on the
     * per-collective path. */
    uint64_t         coll_state[RCOLL_COMM_COLL_STATE_SIZE / 8];
};

/* A collective in flight.  The first group of fields is the algorithm's to
 * read (and phase, alg_state, wait_peer, wait_step, progress_count to
 * write); the second is the core's bookkeeping, here so that the core's
 * per-collective path needs no indirection: algorithms never touch it.
 * The op slots follow the task in the core's allocation (src/core.h). */
struct rcoll_task {
    rcoll_list_t       link;           /* the core's: ctx->active or ctx->zombies; first, so
                                        * that finding the task from it costs nothing */
    /* the algorithm's */
    rcoll_coll_args_t  args;
    rcoll_comm_t      *comm;
    rcoll_context_t   *ctx;
    const rcoll_alg_t *alg;
    uint32_t           seq;
    int                phase;          /* the algorithm's state; 0 at start */
    uint32_t           sig;            /* signature of the call (task.c); 0: the core's own */
    int                wait_peer;      /* for diagnostics when no op is pending: the comm rank */
    uint32_t           wait_step;      /* an algorithm waits for (e.g. a shared-memory flag); -1 = none */
    /* RCOLL_TIMEOUT: progress_count grows whenever the collective moves (an
     * op completes, a shm stage passes); the deadline check, run only when
     * a wait finds nothing to do, notes the time it last saw it change, so
     * the hot path reads no clock. */
    unsigned           progress_count;
    /* the core's (in this order: no padding, the struct is cleared per post) */
    rcoll_status_t     status;         /* RCOLL_INPROGRESS until done */
    double             last_progress;  /* when the check last saw progress; 0: not yet */
    int                done;
    unsigned           progress_seen;
    rcoll_status_t     op_error;       /* first failed op's status */
    int                zombie;         /* failed; freed when the transport lets go */
    int                nops;           /* ops posted since the last completed test */
    int                npending;       /* of those, not done */
    int                inflight_tl;    /* puts the transport still holds */
    void              *scratch;        /* freed when the task ends */
    size_t             scratch_size;
    /* the algorithm's private state (rcoll_task_state) */
    uint64_t           alg_state[RCOLL_ALG_STATE_SIZE / 8];
};

/* ---- what the core does for algorithms (src/p2p.c, src/task.c) ---- */

/* Post a send / receive of len bytes to / from comm rank peer, tagged step.
 * (peer, step) must identify one message within the collective in each
 * direction.  Returns RCOLL_OK or an error (the op slot table is full, the
 * peer failed, a transport error). */
rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len);
rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len);

/* RCOLL_OK once every op posted since the last RCOLL_OK is done (the slots
 * are then reused), RCOLL_INPROGRESS while some are pending, or the first
 * error of a failed op. */
rcoll_status_t rcoll_task_test(rcoll_task_t *task);

/* A scratch buffer of at least size bytes owned by the task (64-byte
 * aligned, kept across calls, freed at the end); NULL if out of memory. */
void *rcoll_task_scratch(rcoll_task_t *task, size_t size);

/* The algorithm's private state (RCOLL_ALG_STATE_SIZE bytes, zeroed at start). */
#define rcoll_task_state(_task, _type) \
    ((_type *)(void *)(_task)->alg_state)
#define RCOLL_ALG_STATE_CHECK(_type) \
    _Static_assert(sizeof(_type) <= RCOLL_ALG_STATE_SIZE, #_type " too large")

static inline int rcoll_task_rank(const rcoll_task_t *t) { return t->comm->rank; }
static inline int rcoll_task_size(const rcoll_task_t *t) { return t->comm->size; }

/* The context's settings.  The settings are the first member of the core's
 * struct rcoll_context (src/core.h asserts it), so this is a cast, not a
 * call.  config->gen changes whenever rcoll_config_set changes a setting. */
static inline const rcoll_config_t *rcoll_ctx_config(const rcoll_context_t *ctx)
{
    return (const rcoll_config_t *)(const void *)ctx;
}

static inline const rcoll_config_t *rcoll_task_config(const rcoll_task_t *t)
{
    return rcoll_ctx_config(t->ctx);
}

/* Mark what was derived from the settings stale (config->gen++): the
 * selector does when it re-reads the tune file. */
static inline void rcoll_ctx_config_touch(rcoll_context_t *ctx)
{
    ((rcoll_config_t *)(void *)ctx)->gen++;
}

/* Off the per-collective path (src/coll_support.c, src/progress.c): */
/* Seconds from an arbitrary start (CLOCK_MONOTONIC). */
double rcoll_time_now(void);
/* The eager limit all ranks agreed on (0 before they have). */
size_t rcoll_ctx_eager_limit(const rcoll_context_t *ctx);
/* This process's host name, for messages. */
const char *rcoll_ctx_hostname(const rcoll_context_t *ctx);
/* The number of nodes of the job, and the node (0 .. nnodes - 1) of comm
 * rank r; -1 when unknown. */
int rcoll_comm_nnodes(const rcoll_comm_t *comm);
int rcoll_comm_node(const rcoll_comm_t *comm, int r);
/* A pointer the collectives own per context (the selector's caches): NULL
 * when the context is made, never read by the core; rcoll_selector_fini
 * releases what it points to before the context goes. */
void **rcoll_ctx_coll_slot(rcoll_context_t *ctx);

/* ---- composing collectives (the node-aware algorithms) ---- */

/* Make comm->node_comm and comm->rail_comm if not yet made: local work
 * only (membership and ids follow from data every member holds), so it
 * may run inside progress().  RCOLL_ERR_NO_MEMORY, or RCOLL_OK. */
rcoll_status_t rcoll_comm_node_subcomms(rcoll_comm_t *comm);

/* Post a child collective (args) on sub, chosen by the selector for sub,
 * on behalf of parent: it is progressed by the context like any task.
 * Every member of sub must post the same children in the same order. */
rcoll_status_t rcoll_task_child_post(rcoll_task_t *parent, rcoll_comm_t *sub,
                                     const rcoll_coll_args_t *args, rcoll_task_t **child);

/* RCOLL_INPROGRESS while *child runs (its progress counts as the parent's,
 * for RCOLL_TIMEOUT); once it ended, release it, set *child = NULL and
 * return its status (an error logged with the parent's step name). */
rcoll_status_t rcoll_task_child_test(rcoll_task_t *parent, rcoll_task_t **child,
                                     const char *step);

/* The parent is failing (its abort hook): end *child if it still runs,
 * logging where it was waiting, release it and set *child = NULL. */
void rcoll_task_child_abort(rcoll_task_t *parent, rcoll_task_t **child, const char *step);

/* ---- what the collectives do for the core ---- */

/* The algorithm tables and their lookup, above; and: */

/*
 * The selector: choose the algorithm for a task (a forced one from
 * RCOLL_<COLL>_ALGORITHM if set).  Returns NULL with an error logged if a
 * forced name is unknown.
 */
const rcoll_alg_t *rcoll_select(rcoll_task_t *task);

/* Parse the context's RCOLL_TUNE_FILE now (else it is parsed on the first
 * collective), so that a bad file fails init with its file:line reason;
 * and release what the selector keeps for the context. */
rcoll_status_t rcoll_selector_init(rcoll_context_t *ctx);
void           rcoll_selector_fini(rcoll_context_t *ctx);

/* The communicator is being destroyed: release comm->coll_state. */
void rcoll_coll_comm_fini(rcoll_comm_t *comm);

/* The shared-memory segment's set-up at creation (collectives/shm,
 * docs/shm.md): an internal algorithm that rcoll__comm_shm_agree (src/comm.c)
 * posts and waits for on a new communicator with shm_usable 1, and its
 * outcome, the same on every member: 1 if the segment is ready, else 0 (one
 * warning logged). */
extern const rcoll_alg_t rcoll__shm_agree_alg;
int rcoll__shm_agreed(rcoll_comm_t *comm);

#endif
