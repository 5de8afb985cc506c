/*
 * shm_bcast_store.c - each small shm bcast root's run-time choice of plain
 * or streaming stores for its copy into its slot, from its own copy time
 * and its leaves' copy-out times (shm_adapt.h, "bstore"; docs/shm.md,
 * "Streaming copy-in, chosen at run time").
 */
#include "shm_adapt.h"

#define NS_MAX ((1ull << RCOLL__SHM_BSTORE_NS_BITS) - 1)

/* [2^(11+b), 2^(12+b)): 2 KiB, 4 KiB, ... */
static int bclass(size_t n)
{
    int b = 63 - __builtin_clzll((unsigned long long)n | 1) - 11;
    return b < 0 ? 0 : b >= RCOLL__SHM_ADAPT_NB ? RCOLL__SHM_ADAPT_NB - 1 : b;
}

/* The calls whose times count, from k alone (the leaves must know them):
 * one in 32 by a hash, and every call of a group that may be a try. */
static int timed_k(uint64_t k)
{
    return ((k * 0xD6E8FEB86659FD93ull) >> 59) == 0 ||
           rcoll__shm_explore_k(k / RCOLL__SHM_ADAPT_BURST, 0);
}

/* The pending sample, if every leaf has published its time for that k. */
static void collect(rcoll__shm_t *sh)
{
    rcoll__shm_bstore_t *bs = &sh->bstore;
    uint64_t slowest = 0;
    int b = bclass(bs->pend_n);

    if (bs->pend_k == 0) {
        return;
    }
    for (int q = 0; q < sh->p; q++) {
        if (q == sh->me) {
            continue;
        }
        uint64_t w = atomic_load_explicit(&rcoll__shm_ctl(sh, q)->bc_read.v, memory_order_relaxed);
        uint64_t wk = w >> RCOLL__SHM_BSTORE_NS_BITS, pk = bs->pend_k & RCOLL__SHM_K_MASK;
        if (wk < pk) {
            /* not copied yet: ask again at the next call, but only once (a
             * leaf that never reports, e.g. its RCOLL_SHM_ADAPT=off, must
             * not cost the root a line read on every call) */
            if (++bs->pend_asked >= 2) {
                bs->pend_k = 0;
            }
            return;
        }
        if (wk != pk) {
            bs->pend_k = 0;          /* a later timed call's time: this one is lost */
            return;
        }
        if ((w & NS_MAX) > slowest) {
            slowest = w & NS_MAX;
        }
    }
    bs->pend_k = 0;
    bs->changes += (uint64_t)rcoll__shm_estimate_timed(
        bs->est, bs->nsamp, bs->last, bs->run, &bs->want, b, bs->pend_kind, bs->pend_try,
        rcoll__shm_per_least(bs->pend_ns + slowest, bs->pend_n, 11 + b));
}

int rcoll__shm_bstore_root(rcoll__shm_t *sh, uint64_t k, size_t n, int *timed)
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
    if (timed_k(k) && bs->pend_k == 0) {
        *timed = 1;
        bs->pend_n = n;
        bs->pend_kind = kind;
        bs->pend_try = explore;
    }
    return kind;
}

void rcoll__shm_bstore_wrote(rcoll__shm_t *sh, uint64_t k, uint64_t ns)
{
    /* pend_k only here: a root whose slot was not free yet calls
     * rcoll__shm_bstore_root again, and nothing was written */
    sh->bstore.pend_k = k;
    sh->bstore.pend_ns = ns;
    sh->bstore.pend_asked = 0;
}

int rcoll__shm_bstore_timed(const rcoll__shm_t *sh, uint64_t k)
{
    return sh->bstore.chaos == 0 && timed_k(k);
}

void rcoll__shm_bstore_copied(rcoll__shm_t *sh, uint64_t k, uint64_t ns)
{
    atomic_store_explicit(&rcoll__shm_ctl(sh, sh->me)->bc_read.v,
                          (k & RCOLL__SHM_K_MASK) << RCOLL__SHM_BSTORE_NS_BITS |
                          (ns < NS_MAX ? ns : NS_MAX), memory_order_relaxed);
}
