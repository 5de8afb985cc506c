/*
 * fold.c - fold in / fold out of the extra ranks of a non-power of two
 * (fold.h).
 */
#include "fold.h"
#include "reduce.h"

void rcoll__fold_init(rcoll__fold_t *F, const rcoll_task_t *task)
{
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);

    F->p2 = rcoll__pow2_floor(p);
    F->newrank = rcoll__fold_newrank(rank, p);
    F->partner = rcoll__fold_partner(rank, p);
    F->posted = 0;
}

/* One message between the pair: post it once, then RCOLL_OK when it is done. */
static rcoll_status_t pair_move(rcoll_task_t *task, rcoll__fold_t *F, uint32_t tag, int sending,
                                void *buf, size_t len)
{
    rcoll_status_t st;

    if (!F->posted) {
        st = sending ? rcoll__send_nz(task, F->partner, tag, buf, len)
                     : rcoll__recv_nz(task, F->partner, tag, buf, len);
        if (st != RCOLL_OK) {
            return st;
        }
        F->posted = 1;
    }
    if ((st = rcoll_task_test(task)) != RCOLL_OK) {
        return st;
    }
    F->posted = 0;
    return RCOLL_OK;
}

rcoll_status_t rcoll__fold_in(rcoll_task_t *task, rcoll__fold_t *F, const void *src, size_t len,
                              void *tmp, void *dst)
{
    int extra = rcoll__fold_is_extra(F);
    rcoll_status_t st;

    if (F->partner < 0) {
        return RCOLL_OK;
    }
    st = pair_move(task, F, RCOLL__FOLD_TAG_IN, extra, extra ? (void *)src : tmp, len);
    if (st == RCOLL_OK && !extra && dst != NULL) {
        rcoll_reduce_local3(dst, tmp, src, len / rcoll__esize(task), task->args.dtype,
                            task->args.op);
    }
    return st;
}

rcoll_status_t rcoll__fold_out(rcoll_task_t *task, rcoll__fold_t *F, void *buf, size_t len)
{
    if (F->partner < 0) {
        return RCOLL_OK;
    }
    return pair_move(task, F, RCOLL__FOLD_TAG_OUT, !rcoll__fold_is_extra(F), buf, len);
}
