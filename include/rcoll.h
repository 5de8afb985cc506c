/*
 * rcoll.h - the whole public API of librcoll.
 *
 * rcoll is an MPI-style collective communication runtime over RDMA.  A process
 * started by a PMIx launcher (rcollrun, srun --mpi=pmix, prterun, Open MPI's
 * mpirun) calls rcoll_init() once, runs collectives on communicators, and calls
 * rcoll_finalize().  A process started without a launcher is a singleton
 * (size 1).  A program with its own runtime (an MPI program, a test harness,
 * a framework with its own key-value store) calls rcoll_init_oob() instead and
 * lends rcoll its all-gather for the start-up exchange.
 *
 * Conventions
 *  - Every function returning rcoll_status_t returns RCOLL_OK (0) on success.
 *    On error the first place that detects it logs the reason (see
 *    RCOLL_LOG_LEVEL); rcoll_strerror() turns the code into text.
 *  - Output arguments are written only on success.
 *  - Collectives follow MPI semantics: every rank of a communicator calls the
 *    same collectives in the same order with matching count, dtype, op and
 *    root.  Buffers are the user's until the call (or the request) completes.
 *  - Blocking calls are the nonblocking ones followed by rcoll_wait(): one code
 *    path.  Every wait has a deadline (RCOLL_TIMEOUT); on expiry the call
 *    returns RCOLL_ERR_TIMEOUT and logs the collective, its sequence number,
 *    the algorithm step and the peer it was waiting for.
 *  - The library is not thread safe: call it from one thread per context.
 *    Contexts are independent: several (rcoll_init_oob) may live in one
 *    process, each driven by its own thread.
 */
#ifndef RCOLL_H
#define RCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RCOLL_VERSION_MAJOR 0
#define RCOLL_VERSION_MINOR 1
#define RCOLL_VERSION_PATCH 0

typedef struct rcoll_context rcoll_context_t;   /* opaque: one per process or per rcoll_init_oob */
typedef struct rcoll_comm    rcoll_comm_t;      /* opaque: an ordered group of ranks */
typedef struct rcoll_request rcoll_request_t;   /* opaque: a posted nonblocking collective */

/* Status codes.  The values of the first nine are fixed; more may follow. */
typedef enum {
    RCOLL_OK = 0,
    RCOLL_ERR_INVALID_ARG,     /* a bad argument; nothing was done */
    RCOLL_ERR_NO_MEMORY,       /* an allocation or a memory registration failed */
    RCOLL_ERR_NOT_SUPPORTED,   /* valid, but not supported by this build or device */
    RCOLL_ERR_BOOTSTRAP,       /* PMIx / oob set-up or address exchange failed */
    RCOLL_ERR_TRANSPORT,       /* the network transport reported an error */
    RCOLL_ERR_TIMEOUT,         /* a wait passed its deadline (RCOLL_TIMEOUT) */
    RCOLL_ERR_PEER_FAILED,     /* a peer died or became unreachable */
    RCOLL_ERR_INTERNAL,        /* a bug in rcoll: please report it */
    RCOLL_ERR_TRUNCATED,       /* a peer sent more data than the collective expected */
    RCOLL_ERR_PROTOCOL,        /* a malformed or unexpected wire message */
    RCOLL_ERR_NOT_FINALIZED,   /* finalize with requests or communicators still active */
    RCOLL_STATUS_LAST          /* number of codes; not a status */
} rcoll_status_t;

typedef enum {
    RCOLL_INT8, RCOLL_UINT8, RCOLL_INT16, RCOLL_UINT16, RCOLL_INT32, RCOLL_UINT32,
    RCOLL_INT64, RCOLL_UINT64, RCOLL_FLOAT16, RCOLL_BFLOAT16, RCOLL_FLOAT32,
    RCOLL_FLOAT64,
    RCOLL_DATATYPE_LAST        /* number of datatypes; not a datatype */
} rcoll_datatype_t;

/* Reduction operations.  Bitwise ops (BAND, BOR, BXOR) are for integer types
 * only.  float16/bfloat16 are reduced in float and rounded to nearest even. */
typedef enum {
    RCOLL_SUM, RCOLL_PROD, RCOLL_MIN, RCOLL_MAX, RCOLL_BAND, RCOLL_BOR,
    RCOLL_BXOR,
    RCOLL_OP_LAST              /* number of ops; not an op */
} rcoll_op_t;

/* Pass as sendbuf to take the input from recvbuf (allreduce, reduce at the
 * root, reduce_scatter: the full input in recvbuf; allgather: this rank's
 * block already in place in recvbuf).  Never a receive buffer or bcast's
 * buffer: that is RCOLL_ERR_INVALID_ARG. */
#define RCOLL_IN_PLACE ((const void *)1)

/* A short English text for a status code (never NULL). */
const char *rcoll_strerror(rcoll_status_t status);

/* Size in bytes of one element of dtype, or 0 for an unknown dtype. */
size_t rcoll_datatype_size(rcoll_datatype_t dtype);

/* Name of a datatype / op ("float32", "sum"), or "unknown". */
const char *rcoll_datatype_name(rcoll_datatype_t dtype);
const char *rcoll_op_name(rcoll_op_t op);

/*
 * Initialise rcoll: read the configuration, bootstrap through PMIx, open the
 * transport and connect to every peer (above 256 ranks, RCOLL_UCX_LAZY_EPS=auto,
 * UCX only learns every peer's address and connects on first use).
 *
 * config: NULL, or an array of "KEY=VALUE" strings ended by NULL.  KEY is an
 *         RCOLL_* variable name (the "RCOLL_" prefix may be omitted); a value
 *         given here overrides the environment.  An unknown key or a bad value
 *         fails with RCOLL_ERR_INVALID_ARG.
 * ctx:    receives the new context.
 *
 * Without a PMIx server the process runs as a singleton (size 1), unless the
 * environment shows a multi-process launch (SLURM_NTASKS, OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE > 1): then init fails with RCOLL_ERR_BOOTSTRAP and says how to
 * launch with PMIx.
 */
rcoll_status_t rcoll_init(const char *const *config, rcoll_context_t **ctx);

/*
 * The out-of-band bootstrap: who this process is and a collective to
 * exchange start-up data, supplied by a program that already has a runtime.
 * New fields, if ever needed, go at the end.
 */
typedef struct {
    int    rank;               /* this process, 0..size-1 */
    int    size;               /* number of processes */
    /* Collective over all size processes: gather len bytes from each into out
     * (size * len bytes, in rank order).  Returns 0 on success. */
    int  (*allgather)(const void *in, void *out, size_t len, void *arg);
    void  *arg;
    const char *node;          /* optional: ranks with equal strings share a node;
                                  NULL: the host name */
} rcoll_oob_t;

/*
 * Initialise rcoll like rcoll_init, but bootstrap through oob instead of
 * PMIx: every one of oob->size processes (or threads: each context is
 * independent) calls it with its own rank and the same size.  allgather is
 * called (a few times, every rank with the same len) only inside this call,
 * never after it returns; rcoll copies what it needs from oob.  Ranks whose
 * node strings are equal are treated as sharing a node (shared memory is
 * used between them), so they must really share one.  config is as for
 * rcoll_init.
 *
 * Errors: RCOLL_ERR_INVALID_ARG for a NULL oob or ctx, size < 1, a rank
 * outside 0..size-1 or a NULL allgather; RCOLL_ERR_BOOTSTRAP when allgather
 * returns non-zero or does not put this rank's data at index rank (the
 * reason is logged).  rcoll cannot bound how long allgather takes.
 */
rcoll_status_t rcoll_init_oob(const rcoll_oob_t *oob, const char *const *config,
                              rcoll_context_t **ctx);

/* Release everything init created.  Collective over all ranks only in the
 * sense that peers may still be sending: finalize runs a barrier on the world
 * communicator first (bounded by RCOLL_TIMEOUT).  ctx may be NULL.  With a
 * request not yet completed by rcoll_wait / rcoll_test it returns
 * RCOLL_ERR_NOT_FINALIZED and changes nothing: complete them and call again. */
rcoll_status_t rcoll_finalize(rcoll_context_t *ctx);

/* The communicator of all ranks of the job.  Owned by the context. */
rcoll_comm_t  *rcoll_comm_world(rcoll_context_t *ctx);

/* This process's rank in comm (0..size-1) and the number of ranks;
 * -1 if comm is NULL. */
int            rcoll_comm_rank(const rcoll_comm_t *comm);
int            rcoll_comm_size(const rcoll_comm_t *comm);

/*
 * Blocking collectives.  count is in elements of dtype.  count 0 is legal and
 * returns at once.  Bad arguments (NULL buffers with count > 0, root out of
 * range, a bitwise op on a float type, unknown dtype or op, a NULL comm)
 * return RCOLL_ERR_INVALID_ARG, log the reason and leave the buffers
 * untouched.
 */

/* recvbuf[i] = op over all ranks of sendbuf[i], on every rank. */
rcoll_status_t rcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm);

/* buf on every rank = buf on root. */
rcoll_status_t rcoll_bcast(void *buf, size_t count, rcoll_datatype_t dtype, int root, rcoll_comm_t *comm);

/* Returns once every rank of comm has entered the barrier. */
rcoll_status_t rcoll_barrier(rcoll_comm_t *comm);

/* recvbuf (significant at root only) = op over all ranks of sendbuf. */
rcoll_status_t rcoll_reduce(const void *sendbuf, void *recvbuf, size_t count, rcoll_datatype_t dtype,
                            rcoll_op_t op, int root, rcoll_comm_t *comm);

/* recvbuf (size * count elements) = the concatenation of every rank's
 * sendbuf (count elements each), in rank order. */
rcoll_status_t rcoll_allgather(const void *sendbuf, void *recvbuf, size_t count /* per rank */,
                               rcoll_datatype_t dtype, rcoll_comm_t *comm);

/* sendbuf holds size * recvcount elements; rank r receives block r of the
 * elementwise reduction over all ranks. */
rcoll_status_t rcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount /* per rank */,
                                    rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm);

/*
 * Nonblocking collectives.  *req receives a request to pass to rcoll_test()
 * or rcoll_wait().  Several may be outstanding on one or several
 * communicators; they may be completed in any order.
 */
rcoll_status_t rcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count, rcoll_datatype_t dtype,
                                rcoll_op_t op, rcoll_comm_t *comm, rcoll_request_t **req);
rcoll_status_t rcoll_ibcast(void *buf, size_t count, rcoll_datatype_t dtype, int root,
                            rcoll_comm_t *comm, rcoll_request_t **req);
rcoll_status_t rcoll_ibarrier(rcoll_comm_t *comm, rcoll_request_t **req);
rcoll_status_t rcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count, rcoll_datatype_t dtype,
                             rcoll_op_t op, int root, rcoll_comm_t *comm, rcoll_request_t **req);
rcoll_status_t rcoll_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                rcoll_datatype_t dtype, rcoll_comm_t *comm, rcoll_request_t **req);
rcoll_status_t rcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                     rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm,
                                     rcoll_request_t **req);

/* Progress all outstanding work once; *done = 1 when req has completed, in
 * which case req is freed and the collective's status is returned.  A
 * request already completed (waited, or tested done) gives
 * RCOLL_ERR_INVALID_ARG, here and in rcoll_wait.  Ranks whose calls differ
 * (collective, count, datatype, op or root) get RCOLL_ERR_PROTOCOL or
 * RCOLL_ERR_TRUNCATED where the mismatch reaches them (others may time
 * out), never success with wrong data. */
rcoll_status_t rcoll_test(rcoll_request_t *req, int *done);   /* progresses; frees req when done */

/* Wait for req to complete (bounded by RCOLL_TIMEOUT), free it, and return
 * the collective's status. */
rcoll_status_t rcoll_wait(rcoll_request_t *req);               /* frees req */

/* Drive communication once without waiting for anything; useful while
 * computing with requests outstanding. */
rcoll_status_t rcoll_progress(rcoll_context_t *ctx);

/*
 * Communicators.  split and dup are collective over comm.  Ranks passing the
 * same color form one new communicator, ordered by key, then by rank in comm.
 * color < 0 gives *newcomm = NULL (like MPI_UNDEFINED).  A communicator made
 * here is released with rcoll_comm_free() (collective over it, no pending
 * requests).  The world communicator is never freed by the user.
 *
 * rcoll_comm_create_group waits only for a message from the first listed
 * rank, which waits for nobody, so creations over overlapping groups may run
 * in different orders on different ranks as long as their first listed ranks
 * do not wait on each other in a cycle.  ranks must hold 1..size distinct
 * ranks of parent including the caller's; otherwise (or with a NULL pointer)
 * it returns RCOLL_ERR_INVALID_ARG, logs why and creates nothing.  Ranks that
 * list different groups never match each other: they fail by RCOLL_TIMEOUT.
 * Every communicator gets an id unique in the job, however creations on
 * different parents and groups interleave.
 */
rcoll_status_t rcoll_comm_split(rcoll_comm_t *comm, int color, int key, rcoll_comm_t **newcomm);
rcoll_status_t rcoll_comm_dup(rcoll_comm_t *comm, rcoll_comm_t **newcomm);

/* Collective over the n listed ranks of parent only (each lists the same ranks in the same
 * order; ranks of parent not listed do not call): a communicator of exactly those ranks, in
 * that order.  tag tells apart concurrent creations over overlapping groups. */
rcoll_status_t rcoll_comm_create_group(rcoll_comm_t *parent, const int *ranks, int n,
                                       int tag, rcoll_comm_t **newcomm);
rcoll_status_t rcoll_comm_free(rcoll_comm_t *comm);

/*
 * Failures (docs/reliability.md, "Revoke and shrink").  A collective whose
 * peer died or did not answer returns RCOLL_ERR_PEER_FAILED (a transport or
 * a revoke reported it), RCOLL_ERR_TIMEOUT (no progress for RCOLL_TIMEOUT)
 * or RCOLL_ERR_TRANSPORT.  The rank that saw it revokes the communicator:
 * it tells every reachable member, and from then on every pending and later
 * collective on that communicator (and split, dup, create_group over it)
 * returns at once, never a new wait: with that rank's first error on that
 * rank, with RCOLL_ERR_PEER_FAILED on the others.  Communicators without
 * the failed rank keep working.  A revoked communicator is only good for
 * rcoll_comm_failed, rcoll_comm_shrink and rcoll_comm_free (rcoll_finalize
 * returns RCOLL_ERR_PEER_FAILED when the world is revoked, and still ends
 * the context).
 *
 * rcoll_comm_shrink is an agreement among the survivors: the failed set is
 * the union of what each of them knows, plus every member that does not
 * answer within RCOLL_TIMEOUT (0: no deadline, only dead peers the
 * transports report are excluded); further failures during it, including
 * of the rank coordinating it, are tolerated.  A rank declared failed is
 * never readmitted: if it is alive (e.g. it was stopped) its own
 * rcoll_comm_shrink returns RCOLL_ERR_PEER_FAILED with *newcomm unset.  The
 * new communicator has a new id and is released with rcoll_comm_free();
 * the old one stays revoked.
 */
/* Number of ranks of comm known to have failed; fills ranks[0 .. min(count, max) - 1]
 * (ranks in comm). */
int rcoll_comm_failed(const rcoll_comm_t *comm, int *ranks, int max);
/* Collective over the surviving ranks of comm (also when comm is revoked): a new
 * communicator of the survivors, in the same order. */
rcoll_status_t rcoll_comm_shrink(rcoll_comm_t *comm, rcoll_comm_t **newcomm);

/* Nodes are as the launcher reports them (PMIx: the process's PMIX_HOSTNAME,
 * else PMIX_NODEID, else the host name; rcoll_init_oob: its `node` field).
 * The node communicator is released with rcoll_comm_free(). */
/* Collective over comm: the ranks of comm on this rank's node, ordered as in comm. */
rcoll_status_t rcoll_comm_split_node(rcoll_comm_t *comm, rcoll_comm_t **nodecomm);

/* Rank of this process in the world communicator of ctx, the job size, and
 * the number of ranks sharing this node. */
int            rcoll_context_rank(const rcoll_context_t *ctx);
int            rcoll_context_size(const rcoll_context_t *ctx);
int            rcoll_context_local_size(const rcoll_context_t *ctx);

/* Current value of a configuration variable as the context resolved it
 * ("RCOLL_EAGER_LIMIT" or "EAGER_LIMIT"), or NULL for an unknown name. */
const char    *rcoll_config_get(const rcoll_context_t *ctx, const char *name);

/*
 * Change a setting at run time, e.g. ("RCOLL_ALLREDUCE_ALGORITHM", "ring").
 * Only settings that are safe to change between collectives can be changed
 * (algorithm choices, segment size, timeout, log level); others return
 * RCOLL_ERR_NOT_SUPPORTED.  Every rank must make the same change between the
 * same two collectives.  An empty value ("") for an algorithm returns the
 * choice to the selector.
 */
rcoll_status_t rcoll_config_set(rcoll_context_t *ctx, const char *name, const char *value);

/*
 * The algorithms of a collective ("allreduce", "bcast", "barrier", "reduce",
 * "allgather", "reduce_scatter"): fills names[0..max-1] and returns how many
 * there are (-1 for an unknown collective).
 */
int            rcoll_algorithms(const char *collective, const char **names, int max);

#ifdef __cplusplus
}
#endif

#endif /* RCOLL_H */
