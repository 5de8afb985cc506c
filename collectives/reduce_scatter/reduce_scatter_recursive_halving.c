/*
 * reduce_scatter_recursive_halving.c - reduce_scatter in log2(p2) steps:
 * at step k each newrank keeps half of its window of super-blocks, sends
 * the other half to newrank ^ mask and reduces (lower ranks) op (upper
 * ranks) into its half.  Any p: with the even/odd fold (reduction_math.h)
 * newrank j stands for original ranks fold_first(j) .. fold_first(j+1)-1,
 * whose output blocks are contiguous, so super-block j is exactly their
 * blocks; at the end a newrank that stands for an extra rank sends it its
 * block.  Input: size·recvcount elements; output: recvcount elements.
 *
 * Tags: 0 fold-in, 1 + k halving step k, 64 block to the extra.
 * Cost (n = p·b bytes in, b per rank): log2(p2)·alpha + (p2-1)/p2·n·beta +
 * (p2-1)/p2·n·gamma, plus 2 alpha + (n + b)·beta + n·gamma for the fold.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "allreduce/reduction_engine.h"

enum { TAG_FOLD = 0, TAG_RH = 1, TAG_UNFOLD = 64 };

enum {
    PH_START = 0,
    PH_EXTRA_SENT,
    PH_EXTRA_RECV,
    PH_FOLD,
    PH_RH_POST,
    PH_RH_WAIT,
    PH_UNFOLD
};

typedef struct {
    const char *cur;
    char       *acc;       /* p·recvcount elements of scratch */
    char       *tmp;
    int         newrank, p2, partner, k, nsteps;
} rs_rh_state_t;
RCOLL_ALG_STATE_CHECK(rs_rh_state_t);

/* Byte offset and length of super-blocks [lo, hi). */
static void sblocks(const rcoll_task_t *task, int lo, int hi, size_t *off, size_t *len)
{
    int p = rcoll_task_size(task);
    size_t b = task->args.count * rcoll__esize(task);

    *off = (size_t)rcoll__fold_first(lo, p) * b;
    *len = (size_t)rcoll__fold_first(hi, p) * b - *off;
}

static rcoll_status_t start(rcoll_task_t *task, rs_rh_state_t *S)
{
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t n = (size_t)p * a->count * rcoll__esize(task), off, tmplen;
    char *mem;
    rcoll_status_t st;

    S->p2 = rcoll__pow2_floor(p);
    S->nsteps = rcoll__log2_exact(S->p2);
    S->newrank = rcoll__fold_newrank(rank, p);
    S->partner = rcoll__fold_partner(rank, p);
    S->cur = a->sendbuf;
    if (S->newrank < 0) {
        if ((st = rcoll_task_send(task, S->partner, TAG_FOLD, a->sendbuf, n)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_EXTRA_SENT;
        return RCOLL_OK;
    }
    if (S->partner >= 0) {
        tmplen = n;
    } else {      /* the larger half of the first step */
        size_t lo_len, hi_len;
        sblocks(task, 0, S->p2 / 2, &off, &lo_len);
        sblocks(task, S->p2 / 2, S->p2, &off, &hi_len);
        tmplen = lo_len > hi_len ? lo_len : hi_len;
    }
    mem = rcoll__scratch(task, n + tmplen, "reduce_scatter recursive_halving");
    if (mem == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    S->acc = mem;
    S->tmp = mem + n;
    if (S->partner >= 0) {
        if ((st = rcoll_task_recv(task, S->partner, TAG_FOLD, S->tmp, n)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_FOLD;
    } else {
        task->phase = PH_RH_POST;
    }
    return RCOLL_OK;
}

static rcoll_status_t post_rh(rcoll_task_t *task, rs_rh_state_t *S)
{
    rcoll__rh_step_t rh;
    size_t soff, slen, koff, klen;
    int peer;
    rcoll_status_t st;

    rcoll__rh_step(S->newrank, S->p2, S->k, &rh);
    sblocks(task, rh.send_lo, rh.send_hi, &soff, &slen);
    sblocks(task, rh.keep_lo, rh.keep_hi, &koff, &klen);
    peer = rcoll__fold_rank(rh.peer, rcoll_task_size(task));
    st = rcoll__recv_nz(task, peer, TAG_RH + (uint32_t)S->k, S->tmp, klen);
    if (st == RCOLL_OK) {
        st = rcoll__send_nz(task, peer, TAG_RH + (uint32_t)S->k, S->cur + soff, slen);
    }
    return st;
}

static void reduce_rh(rcoll_task_t *task, rs_rh_state_t *S)
{
    rcoll_coll_args_t *a = &task->args;
    rcoll__rh_step_t rh;
    size_t koff, klen, n;

    rcoll__rh_step(S->newrank, S->p2, S->k, &rh);
    sblocks(task, rh.keep_lo, rh.keep_hi, &koff, &klen);
    n = klen / rcoll__esize(task);
    if (rh.lower) {
        rcoll_reduce_local3(S->acc + koff, S->cur + koff, S->tmp, n, a->dtype, a->op);
    } else {
        rcoll_reduce_local3(S->acc + koff, S->tmp, S->cur + koff, n, a->dtype, a->op);
    }
}

static rcoll_status_t rs_rh_progress(rcoll_task_t *task)
{
    rs_rh_state_t *S = rcoll_task_state(task, rs_rh_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t b = a->count * rcoll__esize(task);
    rcoll_status_t st;

    for (;;) {
        switch (task->phase) {
        case PH_START:
            if (p == 1) {
                if (a->sendbuf != a->recvbuf) {
                    memcpy(a->recvbuf, a->sendbuf, b);
                }
                return RCOLL_OK;
            }
            if ((st = start(task, S)) != RCOLL_OK) {
                return st;
            }
            break;
        case PH_EXTRA_SENT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            if ((st = rcoll_task_recv(task, S->partner, TAG_UNFOLD, a->recvbuf, b)) != RCOLL_OK) {
                return st;
            }
            task->phase = PH_EXTRA_RECV;
            break;
        case PH_EXTRA_RECV:
        case PH_UNFOLD:
            return rcoll_task_test(task);
        case PH_FOLD:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            rcoll_reduce_local3(S->acc, S->tmp, a->sendbuf, (size_t)p * a->count, a->dtype, a->op);
            S->cur = S->acc;
            task->phase = PH_RH_POST;
            break;
        case PH_RH_POST:
            if (S->k < S->nsteps) {
                if ((st = post_rh(task, S)) != RCOLL_OK) {
                    return st;
                }
                task->phase = PH_RH_WAIT;
                break;
            }
            /* acc holds the blocks of the ranks this newrank stands for */
            memcpy(a->recvbuf, S->acc + (size_t)rank * b, b);
            if (S->partner < 0) {
                return RCOLL_OK;
            }
            st = rcoll_task_send(task, S->partner, TAG_UNFOLD, S->acc + (size_t)S->partner * b, b);
            if (st != RCOLL_OK) {
                return st;
            }
            task->phase = PH_UNFOLD;
            break;
        case PH_RH_WAIT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            reduce_rh(task, S);
            S->cur = S->acc;
            S->k++;
            task->phase = PH_RH_POST;
            break;
        default:
            rcoll_error("reduce_scatter recursive_halving: bad phase %d", task->phase);
            return RCOLL_ERR_INTERNAL;
        }
    }
}

static double rs_rh_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double b = (double)bytes, n = b * nranks;

    return rcoll__cost_fold(m, n, b, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn);
}

const rcoll_alg_t rcoll_reduce_scatter_recursive_halving = {
    .name     = "recursive_halving",
    .coll     = RCOLL_COLL_REDUCE_SCATTER,
    .progress = rs_rh_progress,
    .cost     = rs_rh_cost,
};
