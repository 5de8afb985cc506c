/*
 * ring.h - the ring engine: a pass of p-1 steps around the ranks, each
 * block transfer cut into segments and pipelined (reduce-scatter with the
 * reduction of one batch overlapping the next batch on the wire, or
 * allgather).  Used by allreduce ring, reduce_scatter ring, allgather ring
 * and bcast scatter_allgather.  The step arithmetic is rcoll__ring_*_blocks
 * in allreduce/reduction_math.h.
 */
#ifndef RCOLL_RING_H
#define RCOLL_RING_H

#include "engine.h"

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
 * rank-s-1 straight into place.
 *
 * rcoll__ring_init_ag sets up an allgather pass over virtual ranks
 * vr = rank - root (mod p), in which "rank" above reads vr; open = 1 leaves
 * out the link from vr p-1 to vr 0 (the root of a broadcast has every block
 * already), so the pass runs down a chain. */
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
    int         p, rank, mode, alternate, batch;   /* rank: the virtual rank */
    int         root, open;
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
void rcoll__ring_init_ag(rcoll__ring_t *R, const rcoll_task_t *task, int root, int open,
                         void *buf, size_t count, size_t esize, size_t seg, uint32_t tag_base);
rcoll_status_t rcoll__ring_progress(rcoll_task_t *task, rcoll__ring_t *R);

#endif
