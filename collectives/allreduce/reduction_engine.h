/*
 * reduction_engine.h - building blocks that the reduction algorithms
 * (allreduce, reduce, reduce_scatter) compose: a pipelined ring pass, a
 * binomial reduce and a binomial broadcast.  Each is a small nonblocking
 * state machine over a struct the algorithm embeds in its own task state;
 * its progress function returns RCOLL_INPROGRESS, RCOLL_OK when its part is
 * done, or an error.
 *
 * Zero-length messages are never posted: both sides compute the same
 * lengths from the same pure functions, so both skip them.
 */
#ifndef RCOLL_REDUCTION_ENGINE_H
#define RCOLL_REDUCTION_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "coll.h"
#include "reduction_math.h"

/* Post a send / receive of len bytes unless len is 0. */
rcoll_status_t rcoll__send_nz(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len);
rcoll_status_t rcoll__recv_nz(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len);

/* Scratch of size bytes (at least 1), logging which algorithm lacked memory. */
void *rcoll__scratch(rcoll_task_t *task, size_t size, const char *what);

/* Element size of the task's dtype. */
static inline size_t rcoll__esize(const rcoll_task_t *task)
{
    return rcoll_datatype_size(task->args.dtype);
}

/* ---- ring pass ----
 * A vector of count elements in p balanced blocks (rcoll__block_lo).  Every
 * block transfer of each ring step is cut into segments of seg elements;
 * item i = step * nseg + segment is one message to the right and one from
 * the left, tagged tag_base + i.  Up to `batch` items are in flight; in a
 * reduce-scatter pass the received segments of one batch are reduced while
 * the next batch is on the wire (the next sends depend only on segments
 * reduced earlier, which bounds batch to nseg / 2).
 *
 * Reduce-scatter (RCOLL__RING_RS): step 0 sends block rank-1 of src; the
 * block received at step s is reduced as (received) op (src block) into
 * work_ptr(s, block), or into out at the last step (rank's own block), and
 * sent on at step s+1.  With alternate = 0 work_ptr is work + block offset
 * (work is a full vector); with alternate = 1 work holds two block-sized
 * buffers used by even and odd steps.
 * Allgather (RCOLL__RING_AG): buf (= work) holds the full vector with this
 * rank's block in place; step s sends block rank-s and receives block
 * rank-s-1 straight into place. */
enum { RCOLL__RING_RS = 1, RCOLL__RING_AG = 2 };
#define RCOLL__RING_MAX_BATCH 32     /* 2 ops per item, RCOLL_TASK_MAX_OPS = 64 */

typedef struct rcoll__ring {
    const char *src;
    char       *work;
    char       *out;
    char       *tmp;          /* RS: 2 * batch slots of seg elements */
    size_t      count;        /* elements of the whole vector */
    size_t      esize;
    size_t      seg;          /* elements per segment */
    long        nseg;         /* segments per step */
    long        nitems;       /* (p - 1) * nseg */
    long        in_lo, in_hi; /* items in flight */
    long        rd_lo, rd_hi; /* items received, not yet reduced */
    uint32_t    tag_base;
    int         p, rank, mode, alternate, batch;
    rcoll_datatype_t dtype;
    rcoll_op_t  op;
} rcoll__ring_t;

/* Segment size (elements) for a ring over count elements on p ranks: from
 * RCOLL_SEGMENT_SIZE, enlarged so 2 passes' tags fit in 31 bits. */
size_t rcoll__ring_seg(const rcoll_task_t *task, size_t count, int p);
/* Scratch bytes an RS pass with this segment size needs for tmp. */
size_t rcoll__ring_tmp_bytes(size_t count, int p, size_t seg, size_t esize);
/* Set up a pass; tmp may be NULL for AG. */
void rcoll__ring_init(rcoll__ring_t *R, const rcoll_task_t *task, int mode, size_t count,
                      size_t seg, const void *src, void *work, int alternate, void *out,
                      void *tmp, uint32_t tag_base);
rcoll_status_t rcoll__ring_progress(rcoll_task_t *task, rcoll__ring_t *R);

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

/* ---- binomial broadcast of len bytes in buf from root; tags tag_base + k ---- */
typedef struct rcoll__binbc {
    char    *buf;
    size_t   len;
    uint32_t tag_base;
    int      p, vr, root, stage;
} rcoll__binbc_t;

void rcoll__binbc_init(rcoll__binbc_t *B, const rcoll_task_t *task, int root, void *buf,
                       size_t len, uint32_t tag_base);
rcoll_status_t rcoll__binbc_progress(rcoll_task_t *task, rcoll__binbc_t *B);

#endif
