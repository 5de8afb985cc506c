/*
 * shm_bcast_store.c - each small shm bcast root's run-time choice of plain
 * or streaming stores for its copy into its slot, from its own copy time
 * and its leaves' copy-out times (shm_adapt.h, "bstore"; docs/shm.md,
 * "Streaming copy-in, chosen at run time").
 */
#include <stddef.h>
#include "shm_adapt.h"

/* [2^(11+b), 2^(12+b)): 2 KiB, 4 KiB, ... */
static int bclass(size_t n)
{
    return rcoll__shm_size_class_from(n, 11);
}

/* The calls whose times count, from k alone (the leaves must know them):
 * one in 32 by a hash, and every call of a group that may be a try. */
static int timed_k(uint64_t k)
{
    return ((k * 0xD6E8FEB86659FD93ull) >> 59) == 0 ||
           rcoll__shm_explore_k(k / RCOLL__SHM_ADAPT_BURST, 0);
}

/* The pending sample, if every leaf has published its time for that k:
 * the root's own copy plus the slowest leaf's. */
static void collect(rcoll__shm_t *sh)
{
    rcoll__shm_bstore_t *bs = &sh->bstore;
    uint64_t sum, slowest;

    if (!rcoll__shm_times_collect(sh, offsetof(rcoll__shm_ctl_t, bc_read), &bs->pend, &sum,
                                  &slowest)) {
        return;
    }
    int b = bclass(bs->pend.n);
    bs->changes += (uint64_t)rcoll__shm_estimate_timed(
        bs->est, bs->nsamp, bs->last, bs->run, &bs->want, b, bs->pend.path, bs->pend.try,
        rcoll__shm_per_least(bs->pend.ns + slowest, bs->pend.n, 11 + b));
}

int rcoll__shm_bstore_root(rcoll__shm_t *sh, uint64_t k, size_t n, int path_try, int *timed)
{
    rcoll__shm_bstore_t *bs = &sh->bstore;
    int b = bclass(n), explore, kind;

    *timed = 0;
    if (bs->chaos != 0) {
        return (int)(rcoll__shm_chaos_next(&bs->chaos) >> 32 & 1);
    }
    collect(sh);
    explore = rcoll__shm_explore_k(k / RCOLL__SHM_ADAPT_BURST, (bs->want & RCOLL__SHM_RARE(b)) != 0);
    kind = (int)((bs->want >> b) & 1) ^ explore;
    if ((timed_k(k) || path_try) && bs->pend.k == 0) {
        *timed = 1;
        bs->pend.n = n;
        bs->pend.path = kind;
        bs->pend.try = explore;
    }
    return kind;
}

void rcoll__shm_bstore_wrote(rcoll__shm_t *sh, uint64_t k, uint64_t ns)
{
    /* pend.k only here: a root whose slot was not free yet calls
     * rcoll__shm_bstore_root again, and nothing was written */
    sh->bstore.pend.k = k;
    sh->bstore.pend.ns = ns;
    sh->bstore.pend.asked = 0;
}

int rcoll__shm_bstore_timed(const rcoll__shm_t *sh, uint64_t k, int path_try)
{
    return sh->bstore.chaos == 0 && (timed_k(k) || path_try);
}

void rcoll__shm_bstore_copied(rcoll__shm_t *sh, uint64_t k, uint64_t ns)
{
    rcoll__shm_times_publish(sh, offsetof(rcoll__shm_ctl_t, bc_read), k, ns);
}
