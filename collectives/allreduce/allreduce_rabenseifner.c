/*
 * allreduce_rabenseifner.c - bandwidth-optimal allreduce in 2 log2(p) steps:
 * recursive-halving reduce-scatter, then recursive-doubling allgather, over
 * p2 balanced blocks of the vector (reduction_math.h).  Each block's final
 * value is computed by one rank and copied to the others, so all ranks end
 * with bitwise the same result.  Non-powers of two fold as in
 * recursive_doubling (whole vector in, whole result out).
 *
 * Tags: 0 fold-in, 1 + k halving step k, 32 + k doubling step k, 64 fold-out.
 * Cost: 2 log2(p2)·alpha + 2 (p2-1)/p2·n·beta + (p2-1)/p2·n·gamma, plus
 * 2(alpha + n·beta) + n·gamma for the fold.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "reduction_engine.h"

enum { TAG_FOLD = 0, TAG_RH = 1, TAG_AG = 32, TAG_UNFOLD = 64 };

enum {
    PH_START = 0,
    PH_EXTRA_SENT,
    PH_EXTRA_RECV,
    PH_FOLD,
    PH_RH_POST,
    PH_RH_WAIT,
    PH_AG_POST,
    PH_AG_WAIT,
    PH_UNFOLD
};

typedef struct {
    const char *cur;
    char       *tmp;
    int         newrank, p2, partner, k, nsteps;
} ar_rab_state_t;
RCOLL_ALG_STATE_CHECK(ar_rab_state_t);

/* Byte offset and length of blocks [lo, hi) of the p2-block layout. */
static void blocks(const rcoll_task_t *task, int p2, int lo, int hi, size_t *off, size_t *len)
{
    size_t es = rcoll__esize(task), c = task->args.count;

    *off = rcoll__block_lo(c, p2, lo) * es;
    *len = rcoll__block_lo(c, p2, hi) * es - *off;
}

static rcoll_status_t post_rh(rcoll_task_t *task, ar_rab_state_t *S)
{
    rcoll__rh_step_t rh;
    size_t soff, slen, koff, klen;
    int peer;
    rcoll_status_t st;

    rcoll__rh_step(S->newrank, S->p2, S->k, &rh);
    blocks(task, S->p2, rh.send_lo, rh.send_hi, &soff, &slen);
    blocks(task, S->p2, rh.keep_lo, rh.keep_hi, &koff, &klen);
    peer = rcoll__fold_rank(rh.peer, rcoll_task_size(task));
    st = rcoll__recv_nz(task, peer, TAG_RH + (uint32_t)S->k, S->tmp, klen);
    if (st == RCOLL_OK) {
        st = rcoll__send_nz(task, peer, TAG_RH + (uint32_t)S->k, S->cur + soff, slen);
    }
    return st;
}

static void reduce_rh(rcoll_task_t *task, ar_rab_state_t *S)
{
    rcoll_coll_args_t *a = &task->args;
    rcoll__rh_step_t rh;
    size_t koff, klen, n;
    char *dst;

    rcoll__rh_step(S->newrank, S->p2, S->k, &rh);
    blocks(task, S->p2, rh.keep_lo, rh.keep_hi, &koff, &klen);
    n = klen / rcoll__esize(task);
    dst = (char *)a->recvbuf + koff;
    if (rh.lower) {
        rcoll_reduce_local3(dst, S->cur + koff, S->tmp, n, a->dtype, a->op);
    } else {
        rcoll_reduce_local3(dst, S->tmp, S->cur + koff, n, a->dtype, a->op);
    }
}

static rcoll_status_t post_ag(rcoll_task_t *task, ar_rab_state_t *S)
{
    char *buf = task->args.recvbuf;
    rcoll__rd_step_t rd;
    size_t soff, slen, roff, rlen;
    int peer;
    rcoll_status_t st;

    rcoll__rdag_step(S->newrank, S->p2, S->k, &rd);
    blocks(task, S->p2, rd.send_lo, rd.send_hi, &soff, &slen);
    blocks(task, S->p2, rd.recv_lo, rd.recv_hi, &roff, &rlen);
    peer = rcoll__fold_rank(rd.peer, rcoll_task_size(task));
    st = rcoll__recv_nz(task, peer, TAG_AG + (uint32_t)S->k, buf + roff, rlen);
    if (st == RCOLL_OK) {
        st = rcoll__send_nz(task, peer, TAG_AG + (uint32_t)S->k, buf + soff, slen);
    }
    return st;
}

static rcoll_status_t ar_rab_progress(rcoll_task_t *task)
{
    ar_rab_state_t *S = rcoll_task_state(task, ar_rab_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t es = rcoll__esize(task), n = a->count * es, half, tmplen;
    rcoll_status_t st;

    for (;;) {
        switch (task->phase) {
        case PH_START:
            if (p == 1) {
                if (a->sendbuf != a->recvbuf) {
                    memcpy(a->recvbuf, a->sendbuf, n);
                }
                return RCOLL_OK;
            }
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
                break;
            }
            /* the larger half of the first halving step (lower blocks are the larger) */
            half = rcoll__block_lo(a->count, S->p2, S->p2 / 2) * es;
            tmplen = (S->partner >= 0) ? n : half;
            S->tmp = rcoll__scratch(task, tmplen, "allreduce rabenseifner");
            if (S->tmp == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
            if (S->partner >= 0) {
                if ((st = rcoll_task_recv(task, S->partner, TAG_FOLD, S->tmp, n)) != RCOLL_OK) {
                    return st;
                }
                task->phase = PH_FOLD;
            } else {
                task->phase = PH_RH_POST;
            }
            break;
        case PH_EXTRA_SENT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            if ((st = rcoll_task_recv(task, S->partner, TAG_UNFOLD, a->recvbuf, n)) != RCOLL_OK) {
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
            rcoll_reduce_local3(a->recvbuf, S->tmp, a->sendbuf, a->count, a->dtype, a->op);
            S->cur = a->recvbuf;
            task->phase = PH_RH_POST;
            break;
        case PH_RH_POST:
            if (S->k == S->nsteps) {
                S->k = 0;
                task->phase = PH_AG_POST;
                break;
            }
            if ((st = post_rh(task, S)) != RCOLL_OK) {
                return st;
            }
            task->phase = PH_RH_WAIT;
            break;
        case PH_RH_WAIT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            reduce_rh(task, S);
            S->cur = a->recvbuf;
            S->k++;
            task->phase = PH_RH_POST;
            break;
        case PH_AG_POST:
            if (S->k == S->nsteps) {
                if (S->partner < 0) {
                    return RCOLL_OK;
                }
                if ((st = rcoll_task_send(task, S->partner, TAG_UNFOLD, a->recvbuf, n)) != RCOLL_OK) {
                    return st;
                }
                task->phase = PH_UNFOLD;
                break;
            }
            if ((st = post_ag(task, S)) != RCOLL_OK) {
                return st;
            }
            task->phase = PH_AG_WAIT;
            break;
        case PH_AG_WAIT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            S->k++;
            task->phase = PH_AG_POST;
            break;
        default:
            rcoll_error("allreduce rabenseifner: bad phase %d", task->phase);
            return RCOLL_ERR_INTERNAL;
        }
    }
}

static double ar_rab_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;

    return rcoll__cost_fold(m, n, n, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn) +
           rcoll__cost_doubling(m, n, nranks, ppn);
}

const rcoll_alg_t rcoll_allreduce_rabenseifner = {
    .name     = "rabenseifner",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_rab_progress,
    .cost     = ar_rab_cost,
};
