/*
 * core.h - the objects of rcoll's core: context, communicator, task
 * (= public rcoll_request_t), and the point-to-point operations that
 * collective algorithms post.
 */
#ifndef RCOLL_CORE_H
#define RCOLL_CORE_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"
#include "status.h"
#include "config.h"
#include "list.h"
#include "log.h"
#include "coll.h"
#include "transport.h"

#define RCOLL_TASK_MAX_OPS     64
#define RCOLL_ALG_STATE_SIZE   256
#define RCOLL_SEL_CACHE        16     /* selector choices remembered per communicator */
#define RCOLL_TL_POLL_IDLE     16     /* with no message pending, poll transports every Nth time */

typedef enum {
    RCOLL_P2P_SEND = 1,
    RCOLL_P2P_RECV = 2
} rcoll_p2p_kind_t;

typedef enum {
    RCOLL_P2P_POSTED = 0,     /* eager recv waiting for its message */
    RCOLL_P2P_WAIT_RTR,       /* rndv send waiting for the receiver's RTR */
    RCOLL_P2P_PUTTING,        /* rndv send: put in flight */
    RCOLL_P2P_WAIT_FIN,       /* rndv recv: RTR sent, waiting for FIN */
    RCOLL_P2P_DONE
} rcoll_p2p_state_t;

/* One point-to-point message of a collective; lives in its task. */
typedef struct rcoll_p2p_op {
    rcoll_list_t          link;       /* in a context matching list while pending */
    rcoll_task_t         *task;
    rcoll_p2p_kind_t      kind;
    rcoll_p2p_state_t     state;
    int                   peer;       /* rank in the task's communicator */
    int                   wpeer;      /* world rank */
    uint32_t              step;
    void                 *buf;
    size_t                len;
    int                   rndv;       /* 1: rendezvous, 0: eager */
    rcoll_status_t        status;
    rcoll_tl_mr_t        *mr;         /* rndv recv: the advertised region */
    rcoll_tl_t           *tl;         /* transport used with this peer */
    const rcoll_tl_ops_t *tl_ops;
    rcoll_tl_completion_t put_comp;   /* rndv send */
} rcoll_p2p_op_t;

typedef struct rcoll_bootstrap_ops rcoll_bootstrap_ops_t;   /* bootstrap.h */

struct rcoll_context {
    rcoll_config_t        config;
    int                   rank, size;          /* world */
    int                   local_rank, local_size;
    int                  *node_of;             /* node index of each world rank */
    int                   nnodes;
    char                  hostname[64];
    int                   singleton;
    char                 *node_name;           /* ranks with equal names share a node */
    const rcoll_bootstrap_ops_t *boot_ops;     /* PMIx or the caller's all-gather */
    void                 *boot;                /* the bootstrap's state */
    rcoll_log_state_t     log;                 /* level and rank of this context's log lines */
    void                 *selector;            /* the selector's caches (selector.c) */
    char                 *config_value;        /* storage of rcoll_config_get's answer */
    /* transports */
    int                   ntls;                /* transport instances opened */
    const rcoll_tl_ops_t *tls_ops[4];
    rcoll_tl_t           *tls[4];
    int                   tl_prefer_remote[4]; /* use for peers on other nodes */
    rcoll_tl_t          **peer_tl;             /* transport instance used for each peer */
    const rcoll_tl_ops_t **peer_ops;
    size_t                eager_limit;         /* agreed by all ranks */
    int                  *peer_failed;         /* world rank -> status, 0 if alive */
    /* matching */
    rcoll_list_t          posted_recvs;        /* eager recvs and rndv recvs awaiting FIN */
    rcoll_list_t          sends_wait_rtr;      /* rndv sends without their RTR yet */
    rcoll_list_t          unexpected;          /* messages that arrived before their op */
    size_t                unexpected_count;
    /* collectives in flight, oldest first */
    rcoll_list_t          active;
    rcoll_list_t          zombies;             /* failed tasks with transport work in flight */
    rcoll_comm_t         *world;
    int                   ncomms;
    uint32_t              comm_serial;         /* communicator ids allotted here (comm.c) */
    unsigned              idle_polls;
    unsigned              polls;               /* progress calls, for polling transports less */
    int                   p2p_pending;         /* point-to-point ops posted and not done */
    unsigned              config_gen;          /* bumped by rcoll_config_set: selections redone */
    rcoll_list_t          free_tasks;          /* released tasks kept for reuse */
    int                   nfree_tasks;
};

/* One remembered choice of rcoll_select. */
typedef struct {
    unsigned           gen;     /* ctx->config_gen + 1 when valid, 0 empty */
    int                coll;
    size_t             bytes;
    const rcoll_alg_t *alg;
} rcoll_sel_entry_t;

struct rcoll_comm {
    rcoll_context_t *ctx;
    uint64_t         id;
    int              rank, size;
    int             *world_ranks;      /* comm rank -> world rank */
    uint32_t         next_seq;         /* sequence number of the next collective */
    /* Creations by rcoll_comm_create_group with this parent, counted per
     * (tag, group) key (comm_group.c): the same on every member. */
    struct rcoll_group_seq *group_seqs;
    uint32_t         ngroup_seqs, group_seqs_cap;
    int              nactive;          /* requests not yet completed */
    int              is_world;
    /* Properties fixed when the communicator is created (rcoll_comm_create)
     * and never changed: every member derives them from data all members
     * hold identically (the node of every world rank, exchanged at init, and
     * RCOLL_SHM, an init-only setting that must be equal on all ranks), so
     * all reach the same values without communicating.  The selector reads
     * them; no algorithm is ever swapped for another mid-flight.
     * shm_usable: every member is on one node and RCOLL_SHM=1, so the
     * selector may choose the shm algorithms here (a forced shm needs only
     * the one node).  The segment behind them is still set up lazily, by
     * the first shm collective; if that fails, that collective and every
     * later shm one on the communicator return the error (docs/shm.md). */
    int              local_size;       /* members on this rank's node */
    int              shm_usable;
    /* State of an algorithm family kept for the communicator's lifetime
     * (e.g. the shared-memory segment); freed through shm_free. */
    void            *shm;
    void           (*shm_free)(rcoll_comm_t *comm);
    /* The selector's last choices by (collective, bytes): the choice is a
     * pure function of them and the configuration. */
    rcoll_sel_entry_t sel_cache[RCOLL_SEL_CACHE];
};

struct rcoll_request {
    rcoll_list_t       link;           /* ctx->active or ctx->zombies */
    rcoll_context_t   *ctx;
    rcoll_comm_t      *comm;
    rcoll_coll_args_t  args;
    const rcoll_alg_t *alg;
    uint32_t           seq;
    int                phase;          /* the algorithm's state */
    rcoll_status_t     status;         /* RCOLL_INPROGRESS until done */
    int                done;
    /* RCOLL_TIMEOUT: progress_count grows whenever the collective moves (an
     * op completes, a shm stage passes); the deadline check, run only when
     * a wait finds nothing to do, notes the time it last saw it change, so
     * the hot path reads no clock. */
    unsigned           progress_count;
    unsigned           progress_seen;
    double             last_progress;  /* when the check last saw progress; 0: not yet */
    rcoll_status_t     op_error;       /* first failed op's status */
    int                zombie;         /* failed; freed when the transport lets go */
    int                wait_peer;      /* for diagnostics when no op is pending: the comm rank */
    uint32_t           wait_step;      /* an algorithm waits for (e.g. a shared-memory flag); -1 = none */
    int                nops;           /* ops posted since the last completed test */
    int                npending;       /* of those, not done */
    int                inflight_tl;    /* puts the transport still holds */
    void              *scratch;        /* freed when the task ends */
    size_t             scratch_size;
    uint64_t           alg_state[RCOLL_ALG_STATE_SIZE / 8];
    rcoll_p2p_op_t     ops[RCOLL_TASK_MAX_OPS];
};

/* ---- for algorithms ---- */

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

/* ---- core internals ---- */
double rcoll_time_now(void);
int    rcoll_context_progress(rcoll_context_t *ctx);      /* events handled */
void   rcoll_context_backoff(rcoll_context_t *ctx, int events);
rcoll_status_t rcoll_task_post(rcoll_comm_t *comm, const rcoll_coll_args_t *args, rcoll_task_t **out);
rcoll_status_t rcoll_task_wait(rcoll_task_t *task);
int    rcoll_task_progress(rcoll_task_t *task);           /* 1 if it finished now */
int    rcoll_task_check_deadline(rcoll_task_t *task);    /* 1 if it timed out now */
void   rcoll_task_release(rcoll_task_t *task);
void   rcoll_p2p_recv_cb(void *arg, int peer, const void *msg, size_t len);
void   rcoll_p2p_peer_error_cb(void *arg, int peer, rcoll_status_t status, const char *reason);
void   rcoll_p2p_cancel_task(rcoll_task_t *task);
const rcoll_p2p_op_t *rcoll_task_first_pending(const rcoll_task_t *task);
const char *rcoll_p2p_state_name(const rcoll_p2p_op_t *op);
void   rcoll_p2p_cleanup(rcoll_context_t *ctx);
rcoll_status_t rcoll_comm_create(rcoll_context_t *ctx, uint64_t id, int rank, int size,
                                 int *world_ranks, rcoll_comm_t **out);
void   rcoll_comm_destroy(rcoll_comm_t *comm);
/* Communicator ids (comm.c).  id_make: the id allotted by world rank wr with
 * its serial; id_next: a fresh one allotted here; id_valid: could be one;
 * group_key: the matching key of a creation's own messages. */
uint64_t rcoll__comm_id_make(int wr, uint32_t serial);
uint64_t rcoll__comm_id_next(rcoll_context_t *ctx);
int      rcoll__comm_id_valid(uint64_t id);
uint64_t rcoll__comm_group_key(uint64_t parent_id, int tag, const int *ranks, int n);
/* Post a task that runs alg, chosen by the caller rather than the selector
 * (the core's own protocols, e.g. agreeing on a communicator's id). */
rcoll_status_t rcoll_task_post_alg(rcoll_comm_t *comm, const rcoll_coll_args_t *args,
                                   const rcoll_alg_t *alg, rcoll_task_t **out);

#endif
