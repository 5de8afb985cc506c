/*
 * shm_bcast_path.c - the shm bcast's run-time choice between single copy
 * and two copies through the segment (shm_adapt.h, "bpath"; docs/shm.md,
 * "The bcast's path, chosen at run time"): the allgather's chooser, fed
 * with the ranks' mean time in each call.
 */
#include "shm_adapt.h"

#define NS_BITS RCOLL__SHM_BSTORE_NS_BITS           /* the same word as bc_read's */
#define NS_MAX  ((1ull << NS_BITS) - 1)

/* Rank 0: the pending call's sample, if every other rank has published
 * its time for that k. */
static void collect(rcoll__shm_t *sh)
{
    rcoll__shm_bpath_t *bp = &sh->bpath;
    rcoll__shm_adapt_t *ad = &bp->ad;
    uint64_t sum = bp->pend_ns, pk = bp->pend_k & RCOLL__SHM_K_MASK;

    if (bp->pend_k == 0) {
        return;
    }
    for (int q = 1; q < sh->p; q++) {
        uint64_t w = atomic_load_explicit(&rcoll__shm_ctl(sh, q)->bc_call.v, memory_order_relaxed);
        uint64_t wk = w >> NS_BITS;
        if (wk < pk) {
            /* not through it yet: ask again at the next call, only once (a
             * rank far behind must not cost a line read per call) */
            if (++bp->pend_asked >= 2) {
                bp->pend_k = 0;
            }
            return;
        }
        if (wk != pk) {
            bp->pend_k = 0;          /* a later call's time: this one is lost */
            return;
        }
        sum += w & NS_MAX;
    }
    bp->pend_k = 0;
    int b = rcoll__shm_size_class(bp->pend_n);
    rcoll__shm_estimate_timed(ad->est, ad->nsamp, ad->last, ad->run, &ad->want, b, bp->pend_cma,
                              bp->pend_try, rcoll__shm_per_least(sum / (uint64_t)sh->p, bp->pend_n, 13 + b));
}

int rcoll__shm_bpath_timed(const rcoll__shm_t *sh, uint64_t k, int explore)
{
    return sh->bpath.ad.chaos == 0 && (explore || ((k * 0xD1B54A32D192ED03ull) >> 61) == 0);
}

int rcoll__shm_bpath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore)
{
    rcoll__shm_t *sh = op->sh;

    if (sh->me == 0 && sh->bpath.ad.chaos == 0) {
        collect(sh);        /* before the choice: a switch it makes applies after the horizon */
    }
    return rcoll__shm_chooser_pick(task, op, &sh->bpath.ad, rcoll__shm_bpath_line(sh),
                                   sh->cma_bc_min, sh->cma_bc_max, n, cma, explore);
}

void rcoll__shm_bpath_called(rcoll__shm_t *sh, uint64_t k, size_t n, int cma, int explore,
                             uint64_t ns)
{
    rcoll__shm_bpath_t *bp = &sh->bpath;

    if (bp->ad.chaos != 0) {
        return;
    }
    if (sh->me != 0) {
        atomic_store_explicit(&rcoll__shm_ctl(sh, sh->me)->bc_call.v,
                              (k & RCOLL__SHM_K_MASK) << NS_BITS | (ns < NS_MAX ? ns : NS_MAX),
                              memory_order_relaxed);
        return;
    }
    bp->pend_k = k;
    bp->pend_ns = ns;
    bp->pend_n = n;
    bp->pend_cma = cma ? 1 : 0;
    bp->pend_try = explore;
    bp->pend_asked = 0;
}
