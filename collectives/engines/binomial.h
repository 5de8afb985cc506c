/*
 * binomial.h - the binomial tree engine: reduce to a root, broadcast from
 * it, or scatter blocks from it (the tree arithmetic: rcoll__binomial_* in
 * allreduce/reduction_math.h).  Used by allreduce reduce_bcast, reduce
 * binomial, bcast binomial and bcast scatter_allgather.
 */
#ifndef RCOLL_BINOMIAL_H
#define RCOLL_BINOMIAL_H

#include "engine.h"

/* ---- binomial reduce of count elements to root ----
 * acc: where the partial result accumulates (root: its recvbuf); tmp: a
 * count-element receive buffer (unused by leaves).  Tags tag_base + k. */
typedef struct rcoll__binred {
    const char *cur;          /* the current partial result */
    char       *acc;
    char       *tmp;
    size_t      count, esize;
    uint32_t    tag_base;
    int         p, vr, root, k, nsteps, posted;
    rcoll_datatype_t dtype;
    rcoll_op_t  op;
} rcoll__binred_t;

void rcoll__binred_init(rcoll__binred_t *B, const rcoll_task_t *task, int root, size_t count,
                        const void *src, void *acc, void *tmp, uint32_t tag_base);
/* On RCOLL_OK at the root the result is in acc. */
rcoll_status_t rcoll__binred_progress(rcoll_task_t *task, rcoll__binred_t *B);

/* ---- binomial broadcast of len bytes in buf from root; tags tag_base + k ----
 * vr = rank - root receives from vr - 2^k at step k = lowbit index of vr,
 * then sends to its children vr + 2^j (j < k, vr + 2^j < p), largest
 * subtree first.  As a scatter (rcoll__binscatter_init) the buffer is cut
 * into p balanced blocks (rcoll__block_lo over bytes), block i belonging to
 * vr i, and each link carries only the blocks of the receiver's subtree
 * [vr, vr + 2^k), one contiguous range. */
typedef struct rcoll__binbc {
    char    *buf;
    size_t   len;
    uint32_t tag_base;
    int      p, vr, root, stage, scatter;
} rcoll__binbc_t;

void rcoll__binbc_init(rcoll__binbc_t *B, const rcoll_task_t *task, int root, void *buf,
                       size_t len, uint32_t tag_base);
void rcoll__binscatter_init(rcoll__binbc_t *B, const rcoll_task_t *task, int root, void *buf,
                            size_t len, uint32_t tag_base);
/* What goes over the link from vr's parent at step k: the whole buffer, or
 * when scattering the blocks of vr's subtree [vr, vr + 2^k), clipped to p. */
void rcoll__binbc_part(const rcoll__binbc_t *B, int vr, int k, size_t *off, size_t *len);
rcoll_status_t rcoll__binbc_progress(rcoll_task_t *task, rcoll__binbc_t *B);

#endif
