/*
 * shm_barrier.c - barrier through the communicator's shared-memory segment
 * (every rank on one node), fan-in / fan-out through rank 0:
 *
 *   rank q != 0  raises the word of its slot of parity k & 1 to k (arrived),
 *                then waits for rank 0's word to say k (released);
 *   rank 0       waits until every other rank's word says k, then raises
 *                its own to k.
 *
 * Rank 0 reads p - 1 lines and every other rank one, so a barrier moves
 * about 2 (p - 1) cache lines between cores instead of the p (p - 1) of a
 * flat barrier in which every rank reads every word: the difference
 * between a few dozen and a few thousand line transfers on the 64-128
 * ranks of a large node.  It also releases rank 0 first, by one line
 * transfer, where a flat barrier releases the last to arrive first.
 *
 * Two ranks, barrier after barrier: rank 0 raises its word as it arrives,
 * before waiting for the other's, which makes the pair a flat barrier (one
 * line transfer per barrier instead of two).  Release order matters for
 * what follows a barrier: an OSU-style loop times a bcast from rank 0 right
 * after one, and a bcast root released first has its data on the way
 * before the leaf looks (docs/shm.md).  A barrier that follows a barrier is
 * followed by nothing rooted yet.  Only rank 0 changes what it does, and on
 * its own knowledge (its previous collective here was a barrier), so the
 * ranks need not agree on it; with more ranks, rank 0's word must mean
 * that all arrived, so they always fan in and out.
 *
 * The release proves that every rank arrived at k, i.e. finished k - 1;
 * every rank records that (sh->fin), so the next collective's check that
 * its slot is free (rcoll__shm_slots_free) reads no shared line.
 *
 * The words carry the call's signature (op->word, shm.h): a rank that finds
 * k in a peer's word with another signature knows the peer called another
 * collective and fails with RCOLL_ERR_PROTOCOL; rank 0 then writes its word
 * of k with the signature inverted, so the ranks waiting for its release
 * fail alike instead of waiting out their deadline.
 *
 * Waits: step 1 a slot still being read, step 2 a rank not yet arrived
 * (rank 0), step 3 the release (the others, waiting for rank 0).
 */
#include "shm.h"
#include "engines/shm_pipe.h"     /* rcoll__shm_slot_mismatch */

typedef struct {
    rcoll__shm_op_t op;
    int             next;
} bar_shm_state_t;
RCOLL_ALG_STATE_CHECK(bar_shm_state_t);

#define STEP_RELEASE 3u

/* Rank q's word is not (yet) op->word: 0 while it is not at k, else (another
 * call at k) -1 with op->error set (logged). */
static int other_call(rcoll_task_t *task, rcoll__shm_op_t *op, int q, uint64_t w)
{
    if ((w & RCOLL__SHM_K_MASK) != (op->k & RCOLL__SHM_K_MASK)) {
        return 0;
    }
    rcoll__shm_slot_mismatch(task, op, q, w);
    return -1;
}

/* Every rank arrived at k: each finished k - 1. */
static void all_finished(rcoll__shm_t *sh, uint64_t k)
{
    for (int q = 0; q < sh->p; q++) {
        if (sh->fin[q] < k - 1) {
            sh->fin[q] = k - 1;
        }
    }
}

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
        if (sh->me != 0 || (sh->p == 2 && sh->bar_last + 1 == k)) {
            atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, k), S->op.word, memory_order_release);
        }
        sh->bar_last = k;
        S->next = 1;            /* rank 0: the first rank to wait for */
        task->phase = 1;
    }
    if (sh->me == 0) {
        for (; S->next < sh->p; S->next++) {
            uint64_t w = atomic_load_explicit(rcoll__shm_slot_seq(sh, S->next, k), memory_order_acquire);
            if (w != S->op.word) {
                if (other_call(task, &S->op, S->next, w) < 0) {
                    /* release the others into the same error */
                    atomic_store_explicit(rcoll__shm_slot_seq(sh, 0, k),
                                          S->op.word ^ (0xffffffull << RCOLL__SHM_K_BITS),
                                          memory_order_release);
                    return S->op.error;
                }
                rcoll__shm_waiting(task, S->next, RCOLL__SHM_STEP_ARRIVE);
                return RCOLL_INPROGRESS;
            }
        }
        atomic_store_explicit(rcoll__shm_slot_seq(sh, 0, k), S->op.word, memory_order_release);
    } else {
        uint64_t w = atomic_load_explicit(rcoll__shm_slot_seq(sh, 0, k), memory_order_acquire);
        if (w != S->op.word) {
            if (other_call(task, &S->op, 0, w) < 0) {
                return S->op.error;
            }
            rcoll__shm_waiting(task, 0, STEP_RELEASE);
            return RCOLL_INPROGRESS;
        }
    }
    all_finished(sh, k);
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
