/*
 * core.h - the objects of rcoll's core: the context, the point-to-point
 * operations that collective algorithms post, and the core's functions.
 * The communicator and the task (the public rcoll_request_t is a handle to
 * it) are shared with the collectives and defined in their contract, collectives/coll.h.
 * Private to src/ (docs/architecture.md).
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
#include "auth.h"
#include "fault.h"

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
    RCOLL_P2P_WAIT_DONE,      /* rndv-by-get send: RTS sent, waiting for the receiver's DONE */
    RCOLL_P2P_WAIT_RTS,       /* rndv-by-get recv: posted, waiting for the sender's RTS */
    RCOLL_P2P_GETTING,        /* rndv-by-get recv: get in flight */
    RCOLL_P2P_GETTING_VOID,   /* ... and the sender has withdrawn: the data will not count */
    RCOLL_P2P_WAIT_PULL,      /* eager send held for lack of credit: HOLD sent, waiting for PULL */
    RCOLL_P2P_PULLING,        /* eager recv: PULL sent for a held message, waiting for its data */
    RCOLL_P2P_WITHDRAWN,      /* rndv-by-get send that failed: WITHDRAW sent, its source stays
                                 readable until the receiver's DONE or DECLINE (p2p.c) */
    RCOLL_P2P_DONE
} rcoll_p2p_state_t;

/* The rendezvous protocols (p2p.c): the receiver's buffer advertised for
 * put, or the sender's for get (transports without revocable write keys). */
enum { RCOLL_P2P_RNDV_PUT = 1, RCOLL_P2P_RNDV_GET = 2 };

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
    int                   rndv;       /* 0: eager, RCOLL_P2P_RNDV_PUT or _GET */
    rcoll_status_t        status;
    rcoll_tl_mr_t        *mr;         /* rndv recv: the advertised region */
    uint64_t              raddr;      /* rndv send by put: the RTR's address, echoed in FIN */
    rcoll_tl_t           *tl;         /* transport used with this peer */
    const rcoll_tl_ops_t *tl_ops;
    rcoll_tl_completion_t put_comp;   /* rndv send's put, or rndv-by-get recv's get */
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
    void                 *selector;            /* the collectives' (rcoll_ctx_coll_slot): the selector's caches */
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
    int                   nfailed;             /* world ranks marked failed (rcoll_p2p_peer_error_cb) */
    unsigned char        *peer_exited;         /* world rank -> 1: its process is known to have died
                                                * (launcher event, this node's pid check), not
                                                * only that its transport went away */
    int                   finalizing;          /* in rcoll_finalize's barrier (liveness.c) */
    rcoll_fault_t         fault;               /* RCOLL_FAULT, parsed at init (fault.c) */
    struct rcoll_liveness *liveness;           /* dead ranks learnt off the transports (liveness.h) */
    /* matching */
    rcoll_list_t          posted_recvs;        /* eager recvs, rndv recvs awaiting FIN or RTS */
    rcoll_list_t          sends_wait_rtr;      /* rndv sends awaiting RTR or DONE */
    rcoll_list_t          unexpected;          /* messages that arrived before their op */
    size_t                unexpected_count;
    /* flow control of eager messages (p2p_flow.h) */
    struct rcoll__flow_peer *flow;             /* world rank -> credit state */
    size_t                flow_share;          /* each peer's credit: RCOLL_UNEXPECTED_MAX / (size - 1) */
    size_t                flow_return_at;      /* consumed bytes that send a CREDIT: half the share */
    size_t                unexpected_bytes;    /* charged bytes of the eager copies kept now */
    size_t                unexpected_peak;     /* ... at most, since init */
    size_t                unexpected_held;     /* HOLD headers kept now (not charged) */
    /* collectives in flight, oldest first */
    rcoll_list_t          active;
    rcoll_list_t          zombies;             /* failed tasks with transport work in flight */
    rcoll_comm_t         *world;
    int                   ncomms;
    uint32_t              comm_serial;         /* communicator ids allotted here (comm.c) */
    unsigned              idle_polls;
    unsigned              spin_limit;          /* RCOLL_SPIN_COUNT resolved (spin.c) */
    size_t                sleep_min;           /* RCOLL_WAIT_SLEEP_MIN resolved (spin.c):
                                                * SIZE_MAX never */
    unsigned              polls;               /* progress calls, for polling transports less */
    int                   p2p_pending;         /* point-to-point ops posted and not done */
    rcoll_list_t          free_tasks;          /* released tasks kept for reuse */
    int                   nfree_tasks;
    int                   ntasks_live;         /* allocated and not yet released (task.c) */
    /* where is everyone (whereis.h) */
    rcoll_auth_t          auth;                /* the job's secret (auth.h): rank 0 draws it */
    struct rcoll_whereis *whereis;             /* the node's table */
    struct rcoll_where_rank *where_me;         /* this rank's entry in it (never NULL after init) */
    /* failure handling (revoke.c): the communicators by id, revoke state,
     * shrink messages waiting for their agreement; NULL until needed */
    struct rcoll_ft      *ft;
};

/* rcoll_ctx_config (coll.h) reads the settings through a cast. */
_Static_assert(offsetof(struct rcoll_context, config) == 0, "config must come first");

/* What the core allocates for a task: the task (coll.h) and its op slots. */
typedef struct {
    rcoll_task_t   task;
    rcoll_p2p_op_t ops[RCOLL_TASK_MAX_OPS];
    /* Kept across reuse (task.c): the handle the user holds is the task's
     * address tagged with gen in its low bits, and gen moves on when the
     * task is released, so a handle used after its request completed is
     * recognised (rcoll__task_from_handle). */
    uint32_t       gen;
    uint32_t       magic;
} rcoll_task_block_t;

static inline rcoll_task_block_t *rcoll_task_block(rcoll_task_t *task)
{
    return (rcoll_task_block_t *)(void *)task;
}

static inline rcoll_p2p_op_t *rcoll_task_ops(rcoll_task_t *task)
{
    return ((rcoll_task_block_t *)(void *)task)->ops;
}

static inline const rcoll_p2p_op_t *rcoll_task_ops_const(const rcoll_task_t *task)
{
    return ((const rcoll_task_block_t *)(const void *)task)->ops;
}

/* ---- core internals ---- */
int    rcoll_context_progress(rcoll_context_t *ctx);      /* events handled */
void   rcoll_context_backoff(rcoll_context_t *ctx, int events);
/* RCOLL_SPIN_COUNT and RCOLL_WAIT_SLEEP_MIN ("auto" from the node's ranks
 * and CPUs) into ctx->spin_limit and ctx->sleep_min. */
void   rcoll__spin_resolve(rcoll_context_t *ctx);
rcoll_status_t rcoll_task_post(rcoll_comm_t *comm, const rcoll_coll_args_t *args, rcoll_task_t **out);
rcoll_status_t rcoll_task_wait(rcoll_task_t *task);
/* A blocking wait's idle step (spin.c): spin, yield, or where sleepy (a
 * bcast reader from ctx->sleep_min bytes) sleep 1 us; *slack holds the
 * thread's timer slack to restore (0: untouched) by rcoll__wait_idle_end. */
void   rcoll__wait_idle(rcoll_context_t *ctx, int events, int sleepy, unsigned long *slack);
void   rcoll__wait_idle_end(unsigned long slack);
int    rcoll_task_progress(rcoll_task_t *task);           /* 1 if it finished now */
int    rcoll_task_check_deadline(rcoll_task_t *task);    /* 1 if it timed out now */
void   rcoll_task_release(rcoll_task_t *task);
/* Tasks are RCOLL__TASK_ALIGN-aligned and never returned to malloc while
 * their context lives, so a handle (the address tagged with the task's
 * generation in the low bits) can be checked after the request is gone. */
#define RCOLL__TASK_ALIGN 4096u
static inline rcoll_request_t *rcoll__task_handle(rcoll_task_t *task)
{
    return (rcoll_request_t *)((uintptr_t)task | (rcoll_task_block(task)->gen & (RCOLL__TASK_ALIGN - 1)));
}
static inline rcoll_task_t *rcoll__task_of(rcoll_request_t *handle)
{
    return (rcoll_task_t *)((uintptr_t)handle & ~(uintptr_t)(RCOLL__TASK_ALIGN - 1));
}
/* The task of a live handle, or NULL for one whose request was already
 * completed by wait/test (or that is no request at all). */
rcoll_task_t *rcoll__task_from_handle(rcoll_request_t *handle);
void   rcoll_p2p_recv_cb(void *arg, int peer, const void *msg, size_t len);
void   rcoll_p2p_peer_error_cb(void *arg, int peer, rcoll_status_t status, const char *reason);
void   rcoll_p2p_cancel_task(rcoll_task_t *task);
const rcoll_p2p_op_t *rcoll_task_first_pending(const rcoll_task_t *task);
const char *rcoll_p2p_state_name(const rcoll_p2p_op_t *op);
void   rcoll_p2p_cleanup(rcoll_context_t *ctx);
rcoll_status_t rcoll__p2p_flow_init(rcoll_context_t *ctx);    /* p2p_flow.c: after peer arrays */
void   rcoll__p2p_flow_fini(rcoll_context_t *ctx);
rcoll_status_t rcoll_comm_create(rcoll_context_t *ctx, uint64_t id, int rank, int size,
                                 int *world_ranks, rcoll_comm_t **out);
void   rcoll_comm_destroy(rcoll_comm_t *comm);
/* A communicator of the API is made: agree on its shm segment (comm.c). */
rcoll_status_t rcoll__comm_shm_agree(rcoll_comm_t *comm);
/* Communicator ids (comm.c).  id_make: the id allotted by world rank wr with
 * its serial; id_next: a fresh one allotted here; id_valid: could be one;
 * group_key: the matching key of a creation's own messages. */
uint64_t rcoll__comm_id_make(int wr, uint32_t serial);
uint64_t rcoll__comm_id_next(rcoll_context_t *ctx);
int      rcoll__comm_id_valid(uint64_t id);
uint64_t rcoll__comm_group_key(uint64_t parent_id, int tag, const int *ranks, int n);
/* Post a task that runs alg, chosen by the caller rather than the selector
 * (the core's own protocols, e.g. agreeing on a communicator's id). */
/* End a running task with the error st (its ops cancelled, its abort hook
 * called); nothing if it is done. */
void   rcoll_task_fail(rcoll_task_t *task, rcoll_status_t st);
rcoll_status_t rcoll_task_post_alg(rcoll_comm_t *comm, const rcoll_coll_args_t *args,
                                   const rcoll_alg_t *alg, rcoll_task_t **out);

/* ---- failure handling (revoke.c, comm_shrink.c; docs/reliability.md) ---- */
struct rcoll_wire_hdr;                                   /* wire.h */
/* Know comm by its id (rcoll_comm_create / rcoll_comm_destroy); free all at finalize. */
rcoll_status_t rcoll__ft_comm_add(rcoll_comm_t *comm);
void   rcoll__ft_comm_del(rcoll_comm_t *comm);
void   rcoll__ft_fini(rcoll_context_t *ctx);
/* task failed with st: revoke its communicator if st says a peer died or
 * did not answer (off the per-collective path: task.c calls it on errors). */
void   rcoll__revoke_on_failure(rcoll_task_t *task, rcoll_status_t st);
/* Revoke comm locally with st and tell its reachable members; no-op if revoked. */
void   rcoll__revoke(rcoll_comm_t *comm, rcoll_status_t st, int failed_wrank);
/* End every running collective on the revoked comm with its error. */
void   rcoll__revoke_fail_tasks(rcoll_comm_t *comm);
/* The messages (p2p.c dispatches them; validated as hostile input). */
void   rcoll__revoke_recv(rcoll_context_t *ctx, int wpeer, const struct rcoll_wire_hdr *h);
void   rcoll__shrink_recv(rcoll_context_t *ctx, int wpeer, const struct rcoll_wire_hdr *h,
                          const void *body, size_t body_len);
/* 1 if comm rank r of comm is known to have failed (ctx->peer_failed, or named in a revoke). */
int    rcoll__comm_rank_failed(const rcoll_comm_t *comm, int r);

#endif
