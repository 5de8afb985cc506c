/*
 * shm_cma.h - single-copy reads for the shm bcast, allgather and reduce: a
 * rank publishes where its buffer is (the descriptor in its slot of k), the
 * others read it with process_vm_readv straight into their own buffers,
 * raise cma_read to k, and the owner returns only once every reader has
 * (its buffer must stay valid while they read).  The reduce's ranks also
 * write their result slices into the root's receive buffer with
 * process_vm_writev (shm_reduce_cma.c).  See shm_cma.c and docs/shm.md,
 * "Single copy".
 */
#ifndef RCOLL_SHM_CMA_H
#define RCOLL_SHM_CMA_H

#include "shm.h"

/* 1 if an n-byte bcast goes the single-copy way (the same answer on every
 * rank: the sizes were agreed at set-up and n comes from the matched
 * call).  Only up to cma_bc_max: above, the two-copy pipeline overlaps the
 * root's copy with the readers' and wins (docs/shm.md, "Single copy"). */
static inline int rcoll__shm_cma_bcast(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->cma_bc_min && n <= sh->cma_bc_max;
}

/* The same for an allgather of n-byte blocks. */
static inline int rcoll__shm_cma_allgather(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->cma_ag_min && n <= sh->cma_ag_max;
}

/* The same for an n-byte reduce (shm_reduce_cma.c). */
static inline int rcoll__shm_cma_reduce(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->cma_red_min && n <= sh->cma_red_max;
}

/* Publish this rank's n-byte buffer buf for collective op->k (its slot
 * word, once every rank is through k - 2).  0 while some rank is not. */
int rcoll__shm_cma_post(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, size_t n);

/* A reduce root: publish its n-byte send buffer buf (read as above) and
 * its n-byte receive buffer dst, the only place the others write to
 * (rcoll__shm_cma_push_part).  0 while some rank is not through k - 2. */
int rcoll__shm_cma_post_rw(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, void *dst,
                           size_t n);

/* The same for a single-copy reduce, with the root's slice (split, in
 * RCOLL__SHM_SPLIT_ONE parts of the vector; shm_reduce_cma.c). */
int rcoll__shm_cma_post_split(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, void *dst,
                              size_t n, unsigned split);

/* The split rank q (a reduce root) published for op->k with n bytes:
 * RCOLL_OK with *split, RCOLL_INPROGRESS while q has not published
 * (task->wait_peer set), or an error naming q (logged): different
 * lengths, a split over RCOLL__SHM_SPLIT_ONE. */
rcoll_status_t rcoll__shm_cma_split_of(rcoll_task_t *task, rcoll__shm_op_t *op, int q, size_t n,
                                       unsigned *split);

/* Whether every other rank has raised cma_read for k yet (a look, no wait). */
int rcoll__shm_cma_all_read(const rcoll__shm_t *sh, uint64_t k);

/* Read bytes [from, from + len) of rank q's n-byte buffer of collective
 * op->k into dst (n: this call's length, never the descriptor's).  RCOLL_OK
 * once read, RCOLL_INPROGRESS while q has not published it
 * (task->wait_peer set), or an error naming q (logged): a different call,
 * a failed read (q died: ESRCH). */
rcoll_status_t rcoll__shm_cma_pull_part(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                        void *dst, size_t n, size_t from, size_t len);

/* All of rank q's n bytes into dst. */
static inline rcoll_status_t rcoll__shm_cma_pull(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                                 void *dst, size_t n)
{
    return rcoll__shm_cma_pull_part(task, op, q, dst, n, 0, n);
}

/* Write len bytes from src to bytes [to, to + len) of the receive buffer
 * rank q published with rcoll__shm_cma_post_rw for op->k (n: this call's
 * length; both of q's lengths must equal it).  RCOLL_OK once written,
 * RCOLL_INPROGRESS while q has not published (task->wait_peer set), or an
 * error naming q (logged): a different call, a failed write (q died:
 * ESRCH). */
rcoll_status_t rcoll__shm_cma_push_part(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                        const void *src, size_t n, size_t to, size_t len);

/* A rank that publishes nothing in op->k (a bcast leaf, a reduce root)
 * still writes its slot word (no data), so that a peer in another call
 * sees the mismatch at once.  0 while some rank is not through k - 2. */
int rcoll__shm_cma_announce(rcoll_task_t *task, rcoll__shm_op_t *op);

/* This rank's reads of op->k are over: raise cma_read. */
void rcoll__shm_cma_read_done(rcoll__shm_t *sh, uint64_t k);

/* 1 once rank q's reads of op->k are over (cma_read, or done: it left or
 * abandoned k); else 0 with task->wait_peer set, or op->error set if q is
 * in another call. */
int rcoll__shm_cma_reader_gone(rcoll_task_t *task, rcoll__shm_op_t *op, int q);

/* 1 once every other rank's reads of op->k are over (cma_read, or done:
 * it left or abandoned k), from rank *next on; else 0 with
 * task->wait_peer set, or op->error set if that rank is in another call. */
int rcoll__shm_cma_readers_gone(rcoll_task_t *task, rcoll__shm_op_t *op, int *next);

/* rcoll__shm_cma_reader_gone for a rank q that writes into this rank's
 * buffer: 1 once q raised cma_read to op->k (its reads and writes are
 * over); 0 while it has not (task->wait_peer set), or with op->error set
 * (logged) if q is in another call or left op->k without raising it. */
int rcoll__shm_cma_wrote(rcoll_task_t *task, rcoll__shm_op_t *op, int q);

#endif
