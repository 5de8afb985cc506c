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
    int16_t           split;      /* single copy: the root's slice + 1 (0: not known yet) */
} rcoll__shm_red_t;

/* Allreduce (root < 0) or reduce to root, once rcoll__shm_enter said OK. */
rcoll_status_t rcoll__shm_reduce_progress(rcoll_task_t *task, rcoll__shm_red_t *S, int root);

/* Reduce through single-copy reads (shm_reduce_cma.c), once rcoll__shm_enter
 * said OK and rcoll__shm_cma_reduce(n). */
rcoll_status_t rcoll__shm_reduce_cma(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n);

/* Single copy: rank r's slice [*off, *off + *len) of an n-byte vector of
 * dsize-byte elements among p ranks, the root's split/RCOLL__SHM_SPLIT_ONE
 * of it (rounded to whole groups of elements), the others even shares. */
void rcoll__shm_reduce_slice(size_t n, size_t dsize, int p, int root, unsigned split, int r,
                             size_t *off, size_t *len);
/* The split this rank uses as the root of an n-byte single-copy reduce,
 * and what it learns from the call: whether it waited for another rank
 * once its own slice was done. */
unsigned rcoll__shm_split_choose(rcoll__shm_t *sh, size_t n);
void rcoll__shm_split_learn(rcoll__shm_t *sh, size_t n, unsigned split, int waited);
/* Set-up: RCOLL_SHM_ADAPT's mode (0 off, 1 on, 2 random). */
void rcoll__shm_split_offer(rcoll__shm_t *sh, int mode);
/* At communicator free, debug: the splits this rank chose as a root. */
void rcoll__shm_split_report(const rcoll_comm_t *comm, const rcoll__shm_t *sh);

#endif
