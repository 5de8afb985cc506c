/*
 * fold.h - the fold of a non-power-of-two number of ranks onto a power of
 * two, as an engine (the rank arithmetic: rcoll__fold_* in
 * allreduce/reduction_math.h).
 *
 * p2 = largest power of two <= p, r = p - p2.  Ranks 0..2r-1 pair up as
 * (2i, 2i+1): the even rank is an "extra" that hands its data in to the odd
 * one (which plays newrank i in the power-of-two schedule) and gets its
 * result back at the end; rank j >= 2r plays newrank j - r alone.  The
 * ranks newrank j stands for are contiguous, fold_first(j) ..
 * fold_first(j+1) - 1.
 *
 *   fold in    extra: send `len` bytes of src to the partner
 *              partner: receive them into tmp, then (if dst is not NULL)
 *              dst = tmp op src over len / esize elements: the extra is the
 *              lower rank, so the order is (lower) op (higher)
 *   fold out   extra: receive `len` bytes into buf; partner: send `len`
 *              bytes of buf.  len may be 0 on both sides (nothing moves).
 *
 * A rank outside a pair is done at once in both.  The extra's fold out is
 * posted only once its fold-in send has completed, so buf may overlap src.
 * Tags: RCOLL__FOLD_TAG_IN and RCOLL__FOLD_TAG_OUT; the power-of-two
 * schedule between them uses tags in 1..63.
 */
#ifndef RCOLL_FOLD_H
#define RCOLL_FOLD_H

#include "engine.h"

#define RCOLL__FOLD_TAG_IN   0u
#define RCOLL__FOLD_TAG_OUT 64u

typedef struct rcoll__fold {
    int p2;          /* largest power of two <= p */
    int newrank;     /* -1 for an extra rank */
    int partner;     /* the other rank of the pair, -1 if none */
    int posted;      /* the current fold's message is posted */
} rcoll__fold_t;

void rcoll__fold_init(rcoll__fold_t *F, const rcoll_task_t *task);

static inline int rcoll__fold_is_extra(const rcoll__fold_t *F)
{
    return F->newrank < 0;
}

rcoll_status_t rcoll__fold_in(rcoll_task_t *task, rcoll__fold_t *F, const void *src, size_t len,
                              void *tmp, void *dst);
rcoll_status_t rcoll__fold_out(rcoll_task_t *task, rcoll__fold_t *F, void *buf, size_t len);

#endif
