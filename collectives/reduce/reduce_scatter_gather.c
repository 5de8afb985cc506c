/*
 * reduce_scatter_gather.c - reduce for large vectors (Rabenseifner's
 * reduce): a recursive-halving reduce-scatter over p2 balanced blocks, then
 * a binomial gather of the blocks to the root's newrank.  Non-powers of two
 * fold as in allreduce rabenseifner; when the root is an extra rank, its
 * partner gathers the result and hands it over at the end.
 *
 * Tags: 0 fold-in, 1 + k halving step k, 32 + k gather step k, 64 result
 * to an extra root.
 * Cost: 2 log2(p2)·alpha + 2 (p2-1)/p2·n·beta + (p2-1)/p2·n·gamma, plus
 * alpha + n·beta + n·gamma for the fold.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "allreduce/reduction_engine.h"

enum { TAG_FOLD = 0, TAG_RH = 1, TAG_GATHER = 32, TAG_UNFOLD = 64 };

enum {
    PH_START = 0,
    PH_EXTRA_SENT,
    PH_EXTRA_RECV,
    PH_FOLD,
    PH_RH_POST,
    PH_RH_WAIT,
    PH_G_POST,
    PH_G_RECV_WAIT,
    PH_LAST_WAIT        /* a gather send, or the result to an extra root */
};

typedef struct {
    const char *cur;
    char       *acc;       /* the vector being reduced: root's recvbuf or scratch */
    char       *tmp;
    int         newrank, p2, partner, target, k, nsteps;
} red_rsg_state_t;
RCOLL_ALG_STATE_CHECK(red_rsg_state_t);

static void blocks(const rcoll_task_t *task, int p2, int lo, int hi, size_t *off, size_t *len)
{
    size_t es = rcoll__esize(task), c = task->args.count;

    *off = rcoll__block_lo(c, p2, lo) * es;
    *len = rcoll__block_lo(c, p2, hi) * es - *off;
}

static rcoll_status_t start(rcoll_task_t *task, red_rsg_state_t *S)
{
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t es = rcoll__esize(task), n = a->count * es, tmplen, need;
    int root_nr = rcoll__fold_newrank(a->root, p);
    char *mem;
    rcoll_status_t st;

    S->p2 = rcoll__pow2_floor(p);
    S->nsteps = rcoll__log2_exact(S->p2);
    S->newrank = rcoll__fold_newrank(rank, p);
    S->partner = rcoll__fold_partner(rank, p);
    S->target = root_nr >= 0 ? root_nr : rcoll__fold_newrank(rcoll__fold_partner(a->root, p), p);
    S->cur = a->sendbuf;
    if (S->newrank < 0) {
        if ((st = rcoll_task_send(task, S->partner, TAG_FOLD, a->sendbuf, n)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_EXTRA_SENT;
        return RCOLL_OK;
    }
    tmplen = (S->partner >= 0) ? n : rcoll__block_lo(a->count, S->p2, S->p2 / 2) * es;
    need = tmplen + (rank == a->root ? 0 : n);
    mem = rcoll__scratch(task, need, "reduce reduce_scatter_gather");
    if (mem == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    S->tmp = mem;
    S->acc = (rank == a->root) ? (char *)a->recvbuf : mem + tmplen;
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

static rcoll_status_t post_rh(rcoll_task_t *task, red_rsg_state_t *S)
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

static void reduce_rh(rcoll_task_t *task, red_rsg_state_t *S)
{
    rcoll_coll_args_t *a = &task->args;
    rcoll__rh_step_t rh;
    size_t koff, klen, n;

    rcoll__rh_step(S->newrank, S->p2, S->k, &rh);
    blocks(task, S->p2, rh.keep_lo, rh.keep_hi, &koff, &klen);
    n = klen / rcoll__esize(task);
    if (rh.lower) {
        rcoll_reduce_local3(S->acc + koff, S->cur + koff, S->tmp, n, a->dtype, a->op);
    } else {
        rcoll_reduce_local3(S->acc + koff, S->tmp, S->cur + koff, n, a->dtype, a->op);
    }
}

/* Post gather step k; sets the next phase. */
static rcoll_status_t post_gather(rcoll_task_t *task, red_rsg_state_t *S)
{
    int p = rcoll_task_size(task);
    rcoll__gather_step_t g;
    size_t off, len;
    rcoll_status_t st = RCOLL_OK;

    rcoll__gather_step(S->newrank, S->target, S->p2, S->k, &g);
    blocks(task, S->p2, g.lo, g.hi, &off, &len);
    if (g.role == RCOLL__GATHER_SEND) {
        st = rcoll__send_nz(task, rcoll__fold_rank(g.peer, p), TAG_GATHER + (uint32_t)S->k,
                            S->acc + off, len);
        task->phase = PH_LAST_WAIT;
    } else if (g.role == RCOLL__GATHER_RECV) {
        st = rcoll__recv_nz(task, rcoll__fold_rank(g.peer, p), TAG_GATHER + (uint32_t)S->k,
                            S->acc + off, len);
        task->phase = PH_G_RECV_WAIT;
    } else {
        S->k++;
    }
    return st;
}

static rcoll_status_t red_rsg_progress(rcoll_task_t *task)
{
    red_rsg_state_t *S = rcoll_task_state(task, red_rsg_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    rcoll_status_t st;

    for (;;) {
        switch (task->phase) {
        case PH_START:
            if (p == 1) {
                if (a->sendbuf != a->recvbuf) {
                    memcpy(a->recvbuf, a->sendbuf, a->count * rcoll__esize(task));
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
            if (rank != a->root) {
                return RCOLL_OK;
            }
            st = rcoll_task_recv(task, S->partner, TAG_UNFOLD, a->recvbuf,
                                 a->count * rcoll__esize(task));
            if (st != RCOLL_OK) {
                return st;
            }
            task->phase = PH_EXTRA_RECV;
            break;
        case PH_EXTRA_RECV:
        case PH_LAST_WAIT:
            return rcoll_task_test(task);
        case PH_FOLD:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            rcoll_reduce_local3(S->acc, S->tmp, a->sendbuf, a->count, a->dtype, a->op);
            S->cur = S->acc;
            task->phase = PH_RH_POST;
            break;
        case PH_RH_POST:
            if (S->k == S->nsteps) {
                S->k = 0;
                task->phase = PH_G_POST;
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
            S->cur = S->acc;
            S->k++;
            task->phase = PH_RH_POST;
            break;
        case PH_G_POST:
            if (S->k < S->nsteps) {
                if ((st = post_gather(task, S)) != RCOLL_OK) {
                    return st;
                }
                break;
            }
            /* this rank is the target: every block is in acc */
            if (rank == a->root) {
                return RCOLL_OK;
            }
            st = rcoll_task_send(task, a->root, TAG_UNFOLD, S->acc, a->count * rcoll__esize(task));
            if (st != RCOLL_OK) {
                return st;
            }
            task->phase = PH_LAST_WAIT;
            break;
        case PH_G_RECV_WAIT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            S->k++;
            task->phase = PH_G_POST;
            break;
        default:
            rcoll_error("reduce reduce_scatter_gather: bad phase %d", task->phase);
            return RCOLL_ERR_INTERNAL;
        }
    }
}

static double red_rsg_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;

    return rcoll__cost_fold(m, n, 0, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn) +
           rcoll__cost_doubling(m, n, nranks, ppn);
}

const rcoll_alg_t rcoll_reduce_reduce_scatter_gather = {
    .name     = "reduce_scatter_gather",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_rsg_progress,
    .cost     = red_rsg_cost,
};
