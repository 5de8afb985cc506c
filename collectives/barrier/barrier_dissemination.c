/*
 * barrier_dissemination.c - dissemination barrier (Hensgen, Finkel, Manber):
 * ceil(log2 p) rounds of zero-byte messages, any p.
 */
#include "coll.h"
#include "barrier_ranks.h"
#include "selector_cost.h"

typedef struct {
    int  d;         /* distance of the current round */
    int  k;         /* round */
    char dummy;     /* a valid address for the zero-byte messages */
} barrier_diss_state_t;
RCOLL_ALG_STATE_CHECK(barrier_diss_state_t);

enum { PH_START = 0, PH_ROUNDS };

static rcoll_status_t barrier_diss_round(rcoll_task_t *task, barrier_diss_state_t *st)
{
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    rcoll_status_t s;

    s = rcoll_task_recv(task, rcoll_bar_recv_peer(j, st->d, p), (uint32_t)st->k, &st->dummy, 0);
    if (s != RCOLL_OK)
        return s;
    return rcoll_task_send(task, rcoll_bar_send_peer(j, st->d, p), (uint32_t)st->k, &st->dummy, 0);
}

static rcoll_status_t barrier_diss_progress(rcoll_task_t *task)
{
    barrier_diss_state_t *st = rcoll_task_state(task, barrier_diss_state_t);
    int p = rcoll_task_size(task);
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        st->d = 1;
        st->k = 0;
        if (st->d < p) {
            s = barrier_diss_round(task, st);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_ROUNDS;
        /* fall through */
    case PH_ROUNDS:
        while (st->d < p) {
            s = rcoll_task_test(task);
            if (s != RCOLL_OK)
                return s;
            st->d <<= 1;
            st->k++;
            if (st->d < p) {
                s = barrier_diss_round(task, st);
                if (s != RCOLL_OK)
                    return s;
            }
        }
        return RCOLL_OK;
    default:
        rcoll_error("barrier dissemination: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* ceil(log2 p) rounds of one empty message; round k sends 2^k ranks ahead. */
static double barrier_diss_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double t = 0;
    for (int d = 1; d < nranks; d <<= 1)
        t += rcoll_cost_msg(m, 0, nranks, ppn, rcoll_cost_cross_shift(d, ppn));
    return t;
}

const rcoll_alg_t rcoll_barrier_dissemination = {
    .name     = "dissemination",
    .coll     = RCOLL_COLL_BARRIER,
    .progress = barrier_diss_progress,
    .cost     = barrier_diss_cost,
};
