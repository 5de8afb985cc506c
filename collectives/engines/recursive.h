/*
 * recursive.h - recursive halving, recursive doubling and the binomial
 * gather among the p2 newranks a fold leaves (fold.h), as one engine: each
 * is a sequence of steps k = 0..log2(p2)-1 in which newrank exchanges with
 * newrank ^ mask (the step arithmetic: rcoll__rh_step, rcoll__rdag_step,
 * rcoll__gather_step in allreduce/reduction_math.h); only what a step sends,
 * receives and reduces differs.
 *
 *   halving     reduce-scatter of blocks: mask = p2 >> (k+1); send the half
 *               of the window this newrank gives up (from cur), receive the
 *               peer's copy of the half it keeps (into tmp) and reduce
 *               (lower) op (upper) into acc.  Afterwards acc holds block
 *               newrank reduced over all ranks.
 *   doubling    allgather of blocks in acc: mask = 1 << k; send this
 *               newrank's window of mask blocks, receive the peer's window
 *               in place.  Afterwards acc holds every block.
 *   reduce_all  recursive-doubling allreduce of the whole vector (len
 *               bytes): exchange cur with the peer (into tmp) and reduce
 *               (lower) op (upper) into acc.
 *   gather      binomial gather of blocks in acc to newrank target: a
 *               newrank sends its window to the peer and is done, or
 *               receives the peer's window in place.
 *
 * cur starts as the caller's input and becomes acc after the first
 * reducing step.  Blocks (rcoll__blocks_t) are either count elements in p2
 * balanced blocks, or per-rank blocks of count elements grouped by the
 * fold (block j: the ranks newrank j stands for).
 * Peers are mapped back to ranks with rcoll__fold_rank; tags tag_base + k.
 * An extra rank (newrank -1) has no steps: its progress is RCOLL_OK at once.
 */
#ifndef RCOLL_RECURSIVE_H
#define RCOLL_RECURSIVE_H

#include "engine.h"

enum {
    RCOLL__RECURSIVE_HALVING = 1,
    RCOLL__RECURSIVE_DOUBLING,
    RCOLL__RECURSIVE_REDUCE_ALL,
    RCOLL__RECURSIVE_GATHER
};

/* The block layout: offset of block i (0..p2) in bytes. */
typedef struct rcoll__blocks {
    size_t count;     /* balanced: elements of the vector; folded: per rank */
    size_t esize;
    int    p, p2;
    int    folded;
} rcoll__blocks_t;

static inline size_t rcoll__blocks_off(const rcoll__blocks_t *b, int i)
{
    if (b->folded) {
        return (size_t)rcoll__fold_first(i, b->p) * b->count * b->esize;
    }
    return rcoll__block_lo(b->count, b->p2, i) * b->esize;
}

/* Balanced blocks of count elements over p2, or fold-grouped per-rank blocks. */
void rcoll__blocks_balanced(rcoll__blocks_t *b, const rcoll_task_t *task, size_t count);
void rcoll__blocks_folded(rcoll__blocks_t *b, const rcoll_task_t *task, size_t count);

/* Bytes the halving's tmp must hold: the larger half of the first step. */
size_t rcoll__halving_tmp_bytes(const rcoll__blocks_t *b);

/* One step, in bytes, as the progress function posts it. */
typedef struct rcoll__recursive_step {
    int    peer;                  /* newrank; -1: nothing this step */
    size_t send_off, send_len;    /* from cur (reducing) or acc */
    size_t recv_off, recv_len;    /* into tmp (reducing) or acc + recv_off */
    int    reduce;                /* reduce acc + recv_off from cur and tmp */
    int    lower;                 /* this newrank is the lower of the pair */
    int    last;                  /* gather: this rank is done after it */
} rcoll__recursive_step_t;

typedef struct rcoll__recursive {
    const char      *cur;
    char            *acc, *tmp;
    rcoll__blocks_t  blocks;
    size_t           len;         /* reduce_all: bytes of the vector */
    uint32_t         tag_base;
    int              kind, newrank, target, k, nsteps, posted;
    rcoll_datatype_t dtype;
    rcoll_op_t       op;
} rcoll__recursive_t;

void rcoll__halving_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                         const rcoll__blocks_t *b, const void *src, void *acc, void *tmp,
                         uint32_t tag_base);
void rcoll__doubling_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                          const rcoll__blocks_t *b, void *buf, uint32_t tag_base);
void rcoll__reduce_all_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                            size_t len, const void *src, void *acc, void *tmp, uint32_t tag_base);
void rcoll__gather_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank, int target,
                        const rcoll__blocks_t *b, void *buf, uint32_t tag_base);

/* Step k of R (pure: for the tests and the progress function). */
void rcoll__recursive_step(const rcoll__recursive_t *R, int k, rcoll__recursive_step_t *s);

rcoll_status_t rcoll__recursive_progress(rcoll_task_t *task, rcoll__recursive_t *R);

#endif
