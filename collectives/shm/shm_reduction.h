/*
 * shm_reduction.h - the reduction engine of the shm allreduce and reduce
 * (shm_reduction.c): flat through the slots for small vectors, a
 * three-stage chunk pipeline (engines/shm_pipe.h) for larger ones.
 */
#ifndef RCOLL_SHM_REDUCTION_H
#define RCOLL_SHM_REDUCTION_H

#include "shm.h"
#include "shm_adapt.h"
#include "engines/shm_pipe.h"

typedef struct {
    rcoll__shm_op_t   op;
    int               next;       /* flat: next rank to fold in */
    int               cs;         /* pipelined: next slice to copy out of chunk done[2] */
    int               root;       /* -1: allreduce */
    rcoll__shm_pipe_t pipe;       /* stages: copy in, reduce, copy out */
    rcoll__shm_store_call_t store;   /* the copy-in's store kind: a flat allreduce's, a reduce's */
    int8_t            path;       /* a reduce's: 0 not chosen yet, 1 two copies, 2 single copy */
    int8_t            explore;    /* that path is a try (shm_adapt.h, rpath) */
    uint64_t          t0;         /* rank 0, the root: when it chose the path (0: not timed) */
} rcoll__shm_red_t;

/* Allreduce (root < 0) or reduce to root, once rcoll__shm_enter said OK. */
rcoll_status_t rcoll__shm_reduce_progress(rcoll_task_t *task, rcoll__shm_red_t *S, int root);

/* Reduce through single-copy reads (shm_reduce_cma.c), once rcoll__shm_enter
 * said OK and rcoll__shm_cma_reduce(n). */
rcoll_status_t rcoll__shm_reduce_cma(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n);

#endif
