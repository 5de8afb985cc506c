/*
 * shm_bcast_path.c - the shm bcast's run-time choice between single copy
 * and two copies through the segment (shm_adapt.h, "bpath"; docs/shm.md,
 * "The bcast's path, chosen at run time"): the allgather's chooser, fed
 * with the ranks' mean time in each call.
 */
#include <stddef.h>
#include "shm_adapt.h"

#define CALL_WORD offsetof(rcoll__shm_ctl_t, bc_call)

/* Rank 0: the pending call's sample, if every other rank has published
 * its time for that k: the ranks' mean. */
static void collect(rcoll__shm_t *sh)
{
    rcoll__shm_bpath_t *bp = &sh->bpath;
    rcoll__shm_adapt_t *ad = &bp->ad;
    uint64_t sum, slowest;

    if (!rcoll__shm_times_collect(sh, CALL_WORD, &bp->pend, &sum, &slowest)) {
        return;
    }
    int b = rcoll__shm_size_class(bp->pend.n);
    rcoll__shm_estimate_timed(ad->est, ad->nsamp, ad->last, ad->run, &ad->want, b, bp->pend.path,
                              bp->pend.try, rcoll__shm_per_least((bp->pend.ns + sum) /
                                                                 (uint64_t)sh->p,
                                                                 bp->pend.n, 13 + b));
}

int rcoll__shm_bpath_timed(const rcoll__shm_t *sh, uint64_t k, size_t n, int explore)
{
    return sh->bpath.ad.chaos == 0 &&
           (n >= RCOLL__SHM_STORE_TIME_ALL || rcoll__shm_timed_k(k, explore));
}

int rcoll__shm_bpath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore)
{
    rcoll__shm_t *sh = op->sh;

    if (sh->me == 0) {
        collect(sh);        /* before the choice: a switch it makes applies after the horizon */
    }
    return rcoll__shm_chooser_pick(task, op, &sh->bpath.ad, rcoll__shm_bpath_line(sh),
                                   sh->cma_bc_min, sh->cma_bc_max, n, cma, explore);
}

void rcoll__shm_bpath_called(rcoll__shm_t *sh, uint64_t k, size_t n, int cma, int explore,
                             uint64_t ns)
{
    rcoll__shm_pending_t *pend = &sh->bpath.pend;

    if (sh->me != 0) {
        rcoll__shm_times_publish(sh, CALL_WORD, k, ns);
        return;
    }
    pend->k = k;
    pend->ns = ns;
    pend->n = n;
    pend->path = cma ? 1 : 0;
    pend->try = explore;
    pend->asked = 0;
}
