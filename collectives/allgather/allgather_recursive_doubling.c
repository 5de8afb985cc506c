/*
 * allgather_recursive_doubling.c - recursive doubling allgather, for small
 * blocks.
 *
 * With q = the largest power of two <= p and r = p - q: the extra ranks
 * q..p-1 first send their block to rank j - q and at the end receive the
 * whole result from it.  The q others run log2(q) rounds; in the round of
 * mask m, rank j and j ^ m swap everything they hold: the m blocks of their
 * group and the group's extra blocks (two contiguous ranges, see
 * allgather_ranks.h).  For p a power of two this is plain recursive
 * doubling with one message per round.
 */
#include <string.h>
#include "coll.h"
#include "allgather_ranks.h"
#include "selector_cost.h"

#define STEP_FOLD_IN    0u
#define STEP_MAIN(k)    (1u + 2u * (uint32_t)(k))
#define STEP_EXTRA(k)   (2u + 2u * (uint32_t)(k))
#define STEP_FOLD_OUT   1000u

typedef struct {
    int q;          /* power-of-two part */
    int m;          /* current mask */
    int k;          /* current round */
} ag_rd_state_t;
RCOLL_ALG_STATE_CHECK(ag_rd_state_t);

enum { PH_START = 0, PH_FOLD_IN, PH_ROUNDS, PH_FOLD_OUT, PH_EXTRA_WAIT_SEND,
       PH_EXTRA_WAIT_RESULT };

/* Exchange this round's groups with j ^ m. */
static rcoll_status_t ag_rd_round(rcoll_task_t *task, const ag_rd_state_t *st, size_t blk)
{
    int p = rcoll_task_size(task), j = rcoll_task_rank(task), m = st->m;
    int partner = j ^ m;
    int base = rcoll_ag_rd_group_base(j, m), pbase = rcoll_ag_rd_group_base(partner, m);
    int ne = rcoll_ag_rd_extra_count(base, m, p), pne = rcoll_ag_rd_extra_count(pbase, m, p);
    char *buf = task->args.recvbuf;
    rcoll_status_t s;

    s = rcoll_task_recv(task, partner, STEP_MAIN(st->k), buf + (size_t)pbase * blk, (size_t)m * blk);
    if (s == RCOLL_OK && pne > 0)
        s = rcoll_task_recv(task, partner, STEP_EXTRA(st->k),
                            buf + (size_t)rcoll_ag_rd_extra_first(pbase, p) * blk, (size_t)pne * blk);
    if (s == RCOLL_OK)
        s = rcoll_task_send(task, partner, STEP_MAIN(st->k), buf + (size_t)base * blk, (size_t)m * blk);
    if (s == RCOLL_OK && ne > 0)
        s = rcoll_task_send(task, partner, STEP_EXTRA(st->k),
                            buf + (size_t)rcoll_ag_rd_extra_first(base, p) * blk, (size_t)ne * blk);
    return s;
}

static rcoll_status_t ag_rd_progress(rcoll_task_t *task)
{
    ag_rd_state_t *st = rcoll_task_state(task, ag_rd_state_t);
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t blk = task->args.count * rcoll_datatype_size(task->args.dtype);
    char *buf = task->args.recvbuf;
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        if (task->args.sendbuf != buf + (size_t)j * blk && !task->args.in_place)
            memcpy(buf + (size_t)j * blk, task->args.sendbuf, blk);
        st->q = rcoll_ag_pow2_floor(p);
        st->m = 1;
        st->k = 0;
        if (j >= st->q) {
            s = rcoll_task_send(task, j - st->q, STEP_FOLD_IN, buf + (size_t)j * blk, blk);
            if (s != RCOLL_OK)
                return s;
            task->phase = PH_EXTRA_WAIT_SEND;
            return ag_rd_progress(task);
        }
        if (j < p - st->q) {
            s = rcoll_task_recv(task, j + st->q, STEP_FOLD_IN, buf + (size_t)(j + st->q) * blk, blk);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_FOLD_IN;
        /* fall through */
    case PH_FOLD_IN:
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        if (st->m < st->q) {
            s = ag_rd_round(task, st, blk);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_ROUNDS;
        /* fall through */
    case PH_ROUNDS:
        while (st->m < st->q) {
            s = rcoll_task_test(task);
            if (s != RCOLL_OK)
                return s;
            st->m <<= 1;
            st->k++;
            if (st->m < st->q) {
                s = ag_rd_round(task, st, blk);
                if (s != RCOLL_OK)
                    return s;
            }
        }
        if (j < p - st->q) {
            s = rcoll_task_send(task, j + st->q, STEP_FOLD_OUT, buf, (size_t)p * blk);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        return rcoll_task_test(task);

    case PH_EXTRA_WAIT_SEND:
        /* The result overwrites the whole buffer, our block included, so it
         * is received only once our block has left. */
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        s = rcoll_task_recv(task, j - st->q, STEP_FOLD_OUT, buf, (size_t)p * blk);
        if (s != RCOLL_OK)
            return s;
        task->phase = PH_EXTRA_WAIT_RESULT;
        /* fall through */
    case PH_EXTRA_WAIT_RESULT:
        return rcoll_task_test(task);
    default:
        rcoll_error("allgather recursive_doubling: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* Fold in (one block) and out (p blocks) when p is not a power of two; in
 * the round of mask m a message of m blocks, plus one of min(m, r) extra
 * blocks. */
static double ag_rd_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    int q = rcoll_ag_pow2_floor(nranks), r = nranks - q;
    double t = 0, b = (double)bytes;

    for (int d = 1; d < q; d <<= 1) {
        int cross = rcoll_cost_cross_xor(d, ppn);
        t += rcoll_cost_msg(m, b * d, nranks, ppn, cross);
        if (r > 0)
            t += rcoll_cost_msg(m, b * (d < r ? d : r), nranks, ppn, cross);
    }
    if (r > 0)
        t += rcoll_cost_msg(m, b, nranks, ppn, rcoll_cost_cross_shift(q, ppn)) +
             rcoll_cost_msg(m, b * nranks, nranks, ppn, rcoll_cost_cross_shift(q, ppn));
    return t;
}

const rcoll_alg_t rcoll_allgather_recursive_doubling = {
    .name     = "recursive_doubling",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_rd_progress,
    .cost     = ag_rd_cost,
};
