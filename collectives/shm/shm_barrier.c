/*
 * shm_barrier.c - barrier through the communicator's shared-memory segment
 * (every rank on one node): each rank raises the sequence word of its slot
 * of parity k & 1 to k, then waits until every rank's says k.  No data, no
 * messages; every rank reads p cache lines (flat, meant for the few to few
 * dozen ranks of one node).
 *
 * Waits: step 1 a slot still being read, step 2 a rank not yet arrived.
 */
#include "shm.h"

typedef struct {
    rcoll__shm_op_t op;
    int             next;
} bar_shm_state_t;
RCOLL_ALG_STATE_CHECK(bar_shm_state_t);

static rcoll_status_t bar_shm_progress(rcoll_task_t *task)
{
    bar_shm_state_t *S = rcoll_task_state(task, bar_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll__shm_t *sh = S->op.sh;
    uint64_t k = S->op.k;

    if (task->phase == 0) {
        if (!rcoll__shm_slots_free(task, sh, k)) {
            return RCOLL_INPROGRESS;
        }
        atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, k), k, memory_order_release);
        task->phase = 1;
    }
    for (; S->next < sh->p; S->next++) {
        int q = S->next;
        if (atomic_load_explicit(rcoll__shm_slot_seq(sh, q, k), memory_order_acquire) != k) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_ARRIVE);
            return RCOLL_INPROGRESS;
        }
        if (sh->fin[q] < k - 1) {
            sh->fin[q] = k - 1;
        }
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

static double bar_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    (void)bytes;
    return rcoll__shm_cost(m, nranks, ppn, 0);
}

const rcoll_alg_t rcoll_barrier_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_BARRIER,
    .progress = bar_shm_progress,
    .cost     = bar_shm_cost,
    .abort    = rcoll__shm_abort,
};
