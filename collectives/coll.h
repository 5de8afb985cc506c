/*
 * coll.h - how a collective algorithm plugs into rcoll.
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
 */
#ifndef RCOLL_COLL_H
#define RCOLL_COLL_H

#include "rcoll.h"
#include "status.h"

typedef struct rcoll_request rcoll_task_t;   /* a collective in flight */

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
} rcoll_model_t;

typedef struct rcoll_alg {
    const char        *name;     /* as given to RCOLL_<COLL>_ALGORITHM */
    rcoll_coll_type_t  coll;
    rcoll_status_t   (*progress)(rcoll_task_t *task);
    /* Predicted time in seconds for `bytes` of data per rank (allreduce,
     * bcast, reduce: the vector; allgather, reduce_scatter: one rank's block)
     * on `nranks` ranks with `ppn` ranks per node. */
    double           (*cost)(const rcoll_model_t *m, size_t bytes, int nranks, int ppn);
    /* Optional: called once when the task ends with an error (timeout, a
     * failed peer) before its state is dropped, so the algorithm can leave
     * shared state usable for the collectives that follow. */
    void             (*abort)(rcoll_task_t *task);
} rcoll_alg_t;

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

/*
 * The selector: choose the algorithm for a task (a forced one from
 * RCOLL_<COLL>_ALGORITHM if set).  Returns NULL with an error logged if a
 * forced name is unknown.
 */
const rcoll_alg_t *rcoll_select(rcoll_task_t *task);

#endif
