/*
 * barrier_dissemination.c - dissemination barrier (Hensgen, Finkel, Manber):
 * ceil(log2 p) rounds of zero-byte messages, any p.
 */
#include "coll.h"
#include "barrier_ranks.h"
#include "engines/dissemination.h"
#include "selector_cost.h"

typedef struct {
    rcoll__dissem_t rounds;
    char            dummy;     /* a valid address for the zero-byte messages */
} barrier_diss_state_t;
RCOLL_ALG_STATE_CHECK(barrier_diss_state_t);

static rcoll_status_t barrier_diss_round(rcoll_task_t *task, int d, int k, void *dummy)
{
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    rcoll_status_t s;

    s = rcoll_task_recv(task, rcoll_bar_recv_peer(j, d, p), (uint32_t)k, dummy, 0);
    if (s != RCOLL_OK)
        return s;
    return rcoll_task_send(task, rcoll_bar_send_peer(j, d, p), (uint32_t)k, dummy, 0);
}

static rcoll_status_t barrier_diss_progress(rcoll_task_t *task)
{
    barrier_diss_state_t *st = rcoll_task_state(task, barrier_diss_state_t);

    if (task->phase == 0) {
        rcoll__dissem_init(&st->rounds);
        task->phase = 1;
    }
    return rcoll__dissem_progress(task, &st->rounds, barrier_diss_round, &st->dummy);
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
