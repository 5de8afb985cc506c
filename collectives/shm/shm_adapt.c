/*
 * shm_adapt.c - rank 0's run-time choice of the shm allgather's path (single
 * copy or two copies) per block-size class, and how every rank follows it
 * for the same collective.  The protocol is in shm_adapt.h; docs/shm.md,
 * "Adaptive single copy", has the measurements behind it.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shm_adapt.h"

/* Whether collective k is a try of the other path: the store choice tries
 * one call in 64 (rare: 1 in 512) by a hash of k, so every rank agrees
 * without a word and a loop that alternates collectives (k of one parity)
 * still tries.  The allgather and the bcast's stores try in bursts, all of
 * a group of RCOLL__SHM_ADAPT_BURST consecutive k (one group in 64, or 512): a lone
 * call on the other path is cold (its buffers and lines left the caches
 * since its last use) and took 2-3x its steady time (1 MiB blocks: 243-310
 * us against 97-102), so a lone try never found the faster path. */
int rcoll__shm_explore_k(uint64_t k, int rare)
{
    return ((k * 0x9E3779B97F4A7C15ull) >> (rare ? 55 : 58)) == 0;
}

#define RARE(b) RCOLL__SHM_RARE(b)

int rcoll__shm_size_class_from(size_t n, int log2_least)
{
    int b = 63 - __builtin_clzll((unsigned long long)n | 1) - log2_least;
    return b < 0 ? 0 : b >= RCOLL__SHM_ADAPT_NB ? RCOLL__SHM_ADAPT_NB - 1 : b;
}

int rcoll__shm_size_class(size_t n)
{
    return rcoll__shm_size_class_from(n, 13);
}

int rcoll__shm_timed_k(uint64_t k, int explore)
{
    return explore || ((k * 0xD1B54A32D192ED03ull) >> 61) == 0;
}

uint64_t rcoll__shm_per_least(uint64_t ns, size_t n, int log2_least)
{
    double x = (double)ns * (double)((size_t)1 << log2_least) / (double)(n ? n : 1);
    return x < 1.0 ? 1 : (uint64_t)x;
}

uint64_t rcoll__shm_adapt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rcoll__shm_adapt_offer(rcoll__shm_t *sh, int adapt, int bcast, int reduce, int random)
{
    uint64_t pid = (uint64_t)getpid();

    atomic_store_explicit(&rcoll__shm_adapt_line(sh)->min, adapt ? RCOLL__SHM_ADAPT_MIN : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&rcoll__shm_bpath_line(sh)->min, bcast ? RCOLL__SHM_BPATH_MIN : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&rcoll__shm_rpath_line(sh)->min, reduce ? RCOLL__SHM_RPATH_MIN : 0,
                          memory_order_relaxed);
    sh->adapt.chaos = random && adapt ? pid * 2654435761u | 1 : 0;
    sh->rpath.chaos = random && reduce ? pid * 0xD6E8FEB86659FD93ull | 1 : 0;
    sh->bpath.ad.chaos = random && bcast ? pid * 0x9E3779B97F4A7C15ull | 1 : 0;
}

static size_t offered_min(const rcoll__shm_adapt_line_t *L)
{
    uint64_t m = atomic_load_explicit(&L->min, memory_order_relaxed);
    return m != 0 ? (size_t)m : SIZE_MAX;
}

void rcoll__shm_adapt_ready(rcoll__shm_t *sh)
{
    sh->adapt.min = offered_min(rcoll__shm_adapt_line(sh));
    sh->bpath.ad.min = offered_min(rcoll__shm_bpath_line(sh));
    sh->rpath.min = offered_min(rcoll__shm_rpath_line(sh));
}

/* The first entry: the fixed sizes lo..hi (sh->cma_ag_* or cma_bc_*),
 * judged by the least size of each class (the power of two most callers
 * use). */
static uint32_t fixed_bits(size_t lo, size_t hi)
{
    uint32_t bits = 0;
    for (int b = 0; b < RCOLL__SHM_ADAPT_NB; b++) {
        size_t least = (size_t)1 << (13 + b);
        if (least >= lo && least <= hi) {
            bits |= 1u << b;
        }
    }
    return bits;
}

/* Rank 0: the oldest entry of the ring may be overwritten once no rank can
 * still need it: every rank is through the collective before the next
 * entry's eff (it takes that one or a later one from then on). */
static int may_overwrite(rcoll__shm_t *sh, const rcoll__shm_adapt_t *ad)
{
    uint64_t next_eff = ad->eff[(ad->nent + 1) % RCOLL__SHM_ADAPT_NENT];

    if (next_eff <= 1) {
        return 1;
    }
    for (int q = 1; q < sh->p; q++) {
        if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->done, &sh->fin[q], next_eff - 1)) {
            return 0;
        }
    }
    return 1;
}

#define NS_MAX ((1ull << RCOLL__SHM_BSTORE_NS_BITS) - 1)

static _Atomic uint64_t *time_word(const rcoll__shm_t *sh, int r, size_t off)
{
    return (_Atomic uint64_t *)(void *)((char *)rcoll__shm_ctl(sh, r) + off);
}

void rcoll__shm_times_publish(rcoll__shm_t *sh, size_t off, uint64_t k, uint64_t ns)
{
    atomic_store_explicit(time_word(sh, sh->me, off),
                          (k & RCOLL__SHM_K_MASK) << RCOLL__SHM_BSTORE_NS_BITS |
                          (ns < NS_MAX ? ns : NS_MAX), memory_order_relaxed);
}

int rcoll__shm_times_collect(const rcoll__shm_t *sh, size_t off, rcoll__shm_pending_t *pend,
                             uint64_t *sum, uint64_t *max)
{
    uint64_t pk = pend->k & RCOLL__SHM_K_MASK;

    *sum = *max = 0;
    if (pend->k == 0) {
        return 0;
    }
    for (int q = 0; q < sh->p; q++) {
        if (q == sh->me) {
            continue;
        }
        uint64_t w = atomic_load_explicit(time_word(sh, q, off), memory_order_relaxed);
        uint64_t wk = w >> RCOLL__SHM_BSTORE_NS_BITS;
        if (wk < pk) {
            if (++pend->asked >= 2) {
                pend->k = 0;     /* not through it yet: asked again once, no more */
            }
            return 0;
        }
        if (wk != pk) {
            pend->k = 0;         /* a later call's time: this one is lost */
            return 0;
        }
        *sum += w & NS_MAX;
        if ((w & NS_MAX) > *max) {
            *max = w & NS_MAX;
        }
    }
    pend->k = 0;
    return 1;
}

uint64_t rcoll__shm_chaos_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Rank 0, entering its adaptive collective k of n bytes: publish a changed
 * choice (it applies after the horizon), and keep the horizon ahead of k:
 * ad->ahead collectives, RCOLL__SHM_AHEAD_LARGE for a call of
 * RCOLL__SHM_STORE_TIME_ALL bytes and more, where the others' extra read
 * of the horizon's line costs nothing beside the call, and a switch there
 * (a try's start or end) that waited 8-16 collectives kept a 16 MiB
 * allgather on the slower path for 5-7 calls of an OSU size's 15-20. */
static void rank0_fix(rcoll__shm_t *sh, rcoll__shm_adapt_t *ad, rcoll__shm_adapt_line_t *L,
                      size_t lo, size_t hi, uint64_t k, size_t n)
{
    int changed = 0;
    unsigned ahead = n >= RCOLL__SHM_STORE_TIME_ALL && ad->ahead > RCOLL__SHM_AHEAD_LARGE
                   ? RCOLL__SHM_AHEAD_LARGE : ad->ahead;

    if (!ad->started) {
        ad->want = fixed_bits(lo, hi);
        ad->started = 1;
    }
    if (ad->chaos != 0) {
        uint64_t x = rcoll__shm_chaos_next(&ad->chaos);
        if ((x & 3) == 0) {
            ad->want = (uint32_t)(x >> 16) & ((1u << 2 * RCOLL__SHM_ADAPT_NB) - 1);
        }
    }
    uint64_t eff = ad->horizon_pub + 1;
    unsigned latest = (unsigned)((ad->nent + RCOLL__SHM_ADAPT_NENT - 1) % RCOLL__SHM_ADAPT_NENT);
    int replace = ad->nent > 0 && ad->eff[latest] == eff;
    if (ad->want != ad->bits && (replace || may_overwrite(sh, ad))) {
        /* A second change before the horizon moved has the same eff as the
         * first: it replaces that entry, which no rank can have taken yet
         * (its eff is beyond every horizon published).  Two entries of one
         * eff made the pick depend on their places in the ring: the older
         * won until it was overwritten, and a rank that had picked before
         * the overwrite took the other path than one that picked after
         * (2-rank reduces timed out, or returned wrong data). */
        unsigned i = replace ? latest : (unsigned)(ad->nent % RCOLL__SHM_ADAPT_NENT);
        atomic_store_explicit(&L->ent[i], (eff & RCOLL__SHM_K_MASK) | (uint64_t)ad->want << 40,
                              memory_order_relaxed);
        ad->eff[i] = eff;
        ad->nent += replace ? 0 : 1;
        ad->bits = ad->want;
        ad->changes++;
        changed = 1;
    }
    if (changed || ad->horizon_pub < k + ahead / 2) {
        if (ad->horizon_pub < k + ahead) {      /* never back: the others may be past it */
            ad->horizon_pub = k + ahead;
        }
        atomic_store_explicit(&L->horizon, ad->horizon_pub, memory_order_release);
    }
}

int rcoll__shm_chooser_pick(rcoll_task_t *task, rcoll__shm_op_t *op, rcoll__shm_adapt_t *ad,
                            rcoll__shm_adapt_line_t *L, size_t lo, size_t hi, size_t n, int *cma,
                            int *explore)
{
    rcoll__shm_t *sh = op->sh;
    uint64_t k = op->k;

    if (sh->me == 0) {
        rank0_fix(sh, ad, L, lo, hi, k, n);
    }
    if (ad->horizon < k) {
        ad->horizon = atomic_load_explicit(&L->horizon, memory_order_acquire);
        if (ad->horizon < k) {
            rcoll__shm_waiting(task, 0, RCOLL__SHM_STEP_ADAPT);
            return 0;
        }
    }
    /* the entry in force at k: the latest with eff <= k (an entry being
     * overwritten shows either its old eff, older than the one in force, or
     * its new one, beyond the horizon read) */
    uint64_t kk = k & RCOLL__SHM_K_MASK, best = 0;
    uint32_t bits = 0;
    int found = 0;
    for (int i = 0; i < RCOLL__SHM_ADAPT_NENT; i++) {
        uint64_t w = atomic_load_explicit(&L->ent[i], memory_order_relaxed);
        uint64_t eff = w & RCOLL__SHM_K_MASK;
        if (eff <= kk && (!found || eff > best)) {
            best = eff;
            bits = (uint32_t)(w >> 40);
            found = 1;
        }
    }
    int b = rcoll__shm_size_class(n);
    *explore = rcoll__shm_explore_k(k / RCOLL__SHM_ADAPT_BURST + ad->salt, (bits & RARE(b)) != 0);
    *cma = (int)((bits >> b) & 1) ^ *explore;
    return 1;
}

int rcoll__shm_adapt_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore)
{
    rcoll__shm_t *sh = op->sh;
    return rcoll__shm_chooser_pick(task, op, &sh->adapt, rcoll__shm_adapt_line(sh), sh->cma_ag_min,
                                   sh->cma_ag_max, n, cma, explore);
}

void rcoll__shm_chooser_sample(rcoll__shm_adapt_t *ad, size_t n, int cma, int explore,
                               uint64_t ns)
{
    int b = rcoll__shm_size_class(n);

    if (ad->chaos != 0) {
        return;
    }
    rcoll__shm_estimate_timed(ad->est, ad->nsamp, ad->last, ad->run, &ad->want, b, cma ? 1 : 0,
                              explore, rcoll__shm_per_least(ns, n, 13 + b));
}

void rcoll__shm_rspath_offer(rcoll__shm_t *sh, int on, int random)
{
    atomic_store_explicit(&rcoll__shm_rspath_line(sh)->min, on ? RCOLL__SHM_RSPATH_MIN : 0,
                          memory_order_relaxed);
    sh->rspath.chaos = random && on ? (uint64_t)getpid() * 0xBF58476D1CE4E5B9ull | 1 : 0;
}

void rcoll__shm_rspath_ready(rcoll__shm_t *sh)
{
    sh->rspath.min = offered_min(rcoll__shm_rspath_line(sh));
}

int rcoll__shm_rspath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *pipe,
                             int *explore)
{
    rcoll__shm_t *sh = op->sh;
    /* starts on the slots: no fixed pipeline sizes below the slot size */
    return rcoll__shm_chooser_pick(task, op, &sh->rspath, rcoll__shm_rspath_line(sh), SIZE_MAX, 0,
                                   n, pipe, explore);
}

int rcoll__shm_rpath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore)
{
    rcoll__shm_t *sh = op->sh;
    return rcoll__shm_chooser_pick(task, op, &sh->rpath, rcoll__shm_rpath_line(sh),
                                   sh->cma_red_min, sh->cma_red_max, n, cma, explore);
}

/* The estimate both choices keep per size class b and path (0, 1): a
 * moving average (1/4) for the path in use, a call over 1.25x the estimate
 * counting as 1.25x, from the least of its first RCOLL__SHM_ADAPT_FIRST
 * calls (the first of a size may fault pages in); for the other, the mean
 * of the latest try (`try`: the j-th timed call of it, 1 for a lone try;
 * 0: not a try).  *want's bit b
 * flips once the other is 15% faster; with `rare`, bit NB + b (RARE) is
 * set while the other was found 1.6x slower.  1 if bit b flipped. */
int rcoll__shm_estimate(double est[][2], uint32_t nsamp[][2], uint32_t *want, int b, int path,
                        uint32_t try, uint64_t ns, int rare)
{
    double x = (double)ns, *e = &est[b][path];
    uint32_t *c = &nsamp[b][path];
    int cur, other;

    if (*c == 0 || try == 1) {
        *e = x;           /* the first call, or a new try: it replaces the last try's word */
    } else if (try > 1) {
        *e += (x - *e) / try;
    } else if (*c < RCOLL__SHM_ADAPT_FIRST) {
        if (x < *e) {
            *e = x;       /* the first calls of a path: their least (one may fault pages in) */
        }
    } else {
        if (x > 1.25 * *e) {
            x = 1.25 * *e;   /* a preempted call moves the estimate by 6% at most */
        }
        *e += (x - *e) / 4;
    }
    if (*c < UINT32_MAX) {
        (*c)++;
    }
    cur = (int)((*want >> b) & 1);
    other = !cur;
    if (nsamp[b][cur] == 0 || nsamp[b][other] == 0) {
        return 0;
    }
    if (est[b][other] < RCOLL__SHM_ADAPT_SWITCH * est[b][cur]) {
        *want ^= 1u << b;
        *want &= ~RARE(b);
        return 1;
    }
    if (!rare) {
        return 0;
    }
    if (est[b][other] > 1.6 * est[b][cur]) {
        *want |= RARE(b);       /* trying it costs more than it is likely to find */
    } else if (est[b][other] < 1.4 * est[b][cur]) {
        *want &= ~RARE(b);
    }
    return 0;
}

int rcoll__shm_estimate_timed(double est[][2], uint32_t nsamp[][2], uint8_t last[],
                              uint32_t run[], uint32_t *want, int b, int path, int try,
                              uint64_t ns)
{
    int cur;

    if (last[b] != path + 1) {
        /* the first call of the class on a path since it took the other
         * one (a try starting or over, a switch): cold, so not timed */
        last[b] = (uint8_t)(path + 1);
        run[b] = 0;
        return 0;
    }
    if (try && run[b] < UINT32_MAX) {
        run[b]++;
    }
    if (rcoll__shm_estimate(est, nsamp, want, b, path, try ? run[b] : 0, ns, 1)) {
        return 1;
    }
    cur = (int)((*want >> b) & 1);
    if (nsamp[b][!cur] == 0 && nsamp[b][cur] >= RCOLL__SHM_ADAPT_FIRST) {
        /* the other path never timed: take it (a first try, however far the
         * next burst is); the estimates decide from there */
        *want ^= 1u << b;
        return 1;
    }
    return 0;
}

void rcoll__shm_adapt_sample(rcoll__shm_t *sh, size_t n, int cma, int explore, uint64_t ns)
{
    rcoll__shm_chooser_sample(&sh->adapt, n, cma, explore, ns);
}

void rcoll__shm_store_offer(rcoll__shm_t *sh, const char *mode, int oversubscribed)
{
    int off = strcmp(mode, "off") == 0 || oversubscribed, random = strcmp(mode, "random") == 0;
    uint64_t pid = (uint64_t)getpid();

    sh->store.min = off ? SIZE_MAX : RCOLL__SHM_STORE_MIN;
    sh->store.chaos = random ? pid * 0x9E3779B97F4A7C15ull | 1 : 0;
    sh->agstore.min = off ? SIZE_MAX : RCOLL__SHM_AGSTORE_MIN;
    sh->agstore.chaos = random ? pid * 0xD6E8FEB86659FD93ull | 1 : 0;
    sh->rstore.min = off ? SIZE_MAX : RCOLL__SHM_RSTORE_MIN;
    sh->rstore.chaos = random ? pid * 0x94D049BB133111EBull | 1 : 0;
    sh->rsstore.min = off ? SIZE_MAX : RCOLL__SHM_RSSTORE_MIN;
    sh->rsstore.chaos = random ? pid * 0xBF58476D1CE4E5B9ull | 1 : 0;
    sh->bstore.min = off ? SIZE_MAX : RCOLL__SHM_BSTORE_MIN;
    sh->bstore.chaos = random ? pid * 0xC2B2AE3D27D4EB4Full | 1 : 0;
    sh->over_stream_min = oversubscribed && strcmp(mode, "off") != 0 ? RCOLL__SHM_OVER_STREAM_MIN
                                                                    : SIZE_MAX;
}

/* Both store choices: rank 0 decides for class b and publishes in *word;
 * the others follow the word (plain until rank 0 has published). */
static int store_choose(rcoll__shm_t *sh, rcoll__shm_store_t *st, _Atomic uint64_t *word,
                        uint64_t k, int b, int *explore)
{
    uint32_t want;

    *explore = 0;
    if (st->chaos != 0) {
        return (int)(rcoll__shm_chaos_next(&st->chaos) >> 32 & 1);
    }
    if (sh->me == 0) {
        if (!st->published) {
            atomic_store_explicit(word, RCOLL__SHM_STORE_ON | st->want, memory_order_relaxed);
            st->published = 1;
        }
        want = st->want;
    } else {
        uint64_t w = atomic_load_explicit(word, memory_order_relaxed);
        if (!(w & RCOLL__SHM_STORE_ON)) {
            return 0;        /* rank 0 does not choose (yet): plain */
        }
        want = (uint32_t)w;
    }
    *explore = rcoll__shm_explore_k(k, (want & RARE(b)) != 0);
    return (int)((want >> b) & 1) ^ *explore;
}

/* Switch class b from kind cur to the other at once and measure that one
 * afresh (its estimate, if any, is from before a change). */
static void store_take_other(rcoll__shm_store_t *st, _Atomic uint64_t *word, int b, int cur)
{
    st->nsamp[b][!cur] = 0;
    st->jump[b] = 0;
    st->want = (st->want ^ (1u << b)) & ~RARE(b);
    st->changes++;
    atomic_store_explicit(word, RCOLL__SHM_STORE_ON | st->want, memory_order_relaxed);
}

/* rare_stream: a class on plain stores tries streaming 1 in 512 once it
 * found it 1.6x slower.  Plain is never tried rarely: a spell of slow calls
 * can switch a class to streaming in the fast phase, where it costs up to
 * 2x (256 KiB), and the next plain try must come soon to switch it back. */
static void store_sample(rcoll__shm_t *sh, rcoll__shm_store_t *st, _Atomic uint64_t *word,
                         int b, int log2_least, size_t n, int stream, int explore, uint64_t ns,
                         int rare_stream)
{
    uint32_t was = st->want;

    if (sh->me != 0 || st->chaos != 0) {
        return;
    }
    if (!(st->seen & (1u << b))) {
        /* a class's first call maps the buffers it touches (page faults:
         * 600 us for a first 128 KiB allgather on a VM against 5 steady),
         * and an estimate that starts there needs hundreds of calls to come
         * down, while the other kind's try looks 30x faster */
        st->seen |= 1u << b;
        return;
    }
    int path = stream ? 1 : 0, cur = (int)((was >> b) & 1);
    uint64_t x = rcoll__shm_per_least(ns, n, log2_least);
    int watched = n >= RCOLL__SHM_STORE_TIME_ALL;   /* every call timed */
    if (watched && !explore && path == cur) {
        if (st->nsamp[b][path] > 0 && (double)x >= RCOLL__SHM_STORE_JUMP * st->est[b][path]) {
            if (++st->jump[b] >= RCOLL__SHM_STORE_JUMP_RUN) {
                /* slow calls in a row: the machine changed (a VM's phase),
                 * not one preempted call, which the estimator caps.  Both
                 * estimates are from before the change: the other kind is
                 * taken at once (its tries would come too late: 1 call in
                 * 64 of a size that now runs ~20 calls), and this one is
                 * measured afresh after it, a first try (below), so that a
                 * spell too short to matter costs a few calls, not the
                 * wait for a try */
                st->nsamp[b][path] = 0;
                st->jumps++;
                store_take_other(st, word, b, cur);
                return;
            }
        } else {
            st->jump[b] = 0;
        }
    }
    int rare = rare_stream && !((was >> b) & 1);
    if (rcoll__shm_estimate(st->est, st->nsamp, &st->want, b, path, explore, x, rare)) {
        st->changes++;
    } else if (watched && st->nsamp[b][cur] >= RCOLL__SHM_ADAPT_FIRST && st->nsamp[b][!cur] == 0) {
        /* the other kind never measured: a first try, early, as the
         * path choosers' (a job that starts in a VM's slow phase has
         * plain stores at 10x from its first call, which no jump shows) */
        store_take_other(st, word, b, cur);
        return;
    }
    if (st->want != was) {
        atomic_store_explicit(word, RCOLL__SHM_STORE_ON | st->want, memory_order_relaxed);
    }
}

int rcoll__shm_store_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore)
{
    return store_choose(sh, &sh->store, &rcoll__shm_adapt_line(sh)->store, k,
                        rcoll__shm_size_class_from(n, 11), explore);
}

void rcoll__shm_store_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns)
{
    int b = rcoll__shm_size_class_from(n, 11);
    store_sample(sh, &sh->store, &rcoll__shm_adapt_line(sh)->store, b, 11 + b, n, stream,
                 explore, ns, 0);
}

int rcoll__shm_agstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore)
{
    return store_choose(sh, &sh->agstore, &rcoll__shm_adapt_line(sh)->agstore, k,
                        rcoll__shm_size_class_from(n, 11), explore);
}

void rcoll__shm_agstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns)
{
    int b = rcoll__shm_size_class_from(n, 11);
    store_sample(sh, &sh->agstore, &rcoll__shm_adapt_line(sh)->agstore, b, 11 + b, n, stream,
                 explore, ns, 1);
}

/* The reduce's and the reduce_scatter's: classes from 8 KiB, streaming
 * tried rarely once found slow (as the allgather's). */
static int red_choose(rcoll__shm_t *sh, rcoll__shm_store_t *st, _Atomic uint64_t *word,
                      uint64_t k, size_t n, int *explore)
{
    return store_choose(sh, st, word, k, rcoll__shm_size_class(n), explore);
}

static void red_sample(rcoll__shm_t *sh, rcoll__shm_store_t *st, _Atomic uint64_t *word, size_t n,
                       int stream, int explore, uint64_t ns)
{
    int b = rcoll__shm_size_class(n);
    store_sample(sh, st, word, b, 13 + b, n, stream, explore, ns, 1);
}

int rcoll__shm_rstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore)
{
    return red_choose(sh, &sh->rstore, &rcoll__shm_adapt_line(sh)->rstore, k, n, explore);
}

void rcoll__shm_rstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns)
{
    red_sample(sh, &sh->rstore, &rcoll__shm_adapt_line(sh)->rstore, n, stream, explore, ns);
}

int rcoll__shm_rsstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore)
{
    return red_choose(sh, &sh->rsstore, &rcoll__shm_adapt_line(sh)->rsstore, k, n, explore);
}

void rcoll__shm_rsstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns)
{
    red_sample(sh, &sh->rsstore, &rcoll__shm_adapt_line(sh)->rsstore, n, stream, explore, ns);
}

/* Per timed class: " 64 KiB: CHOICE[, other tried 1/512] (WAY0 us xN, WAY1
 * us xN);" into buf; its length. */
static size_t classes(char *buf, size_t size, const double est[][2], const uint32_t nsamp[][2],
                      uint32_t bits, const char *const choice[2], const char *const way[2],
                      int log2_least)
{
    size_t len = 0;

    for (int b = 0; b < RCOLL__SHM_ADAPT_NB && len < size - 112; b++) {
        if (nsamp[b][0] + nsamp[b][1] == 0) {
            continue;
        }
        len += (size_t)snprintf(buf + len, size - len, " %zu KiB: %s%s (%s %.2f us x%u, %s %.2f "
                                "us x%u);", ((size_t)1 << (log2_least + b)) / 1024, choice[(bits >> b) & 1],
                                bits & RARE(b) ? ", other tried 1/512" : "", way[0],
                                est[b][0] / 1000.0, nsamp[b][0], way[1], est[b][1] / 1000.0,
                                nsamp[b][1]);
    }
    return len;
}

void rcoll__shm_adapt_report(const rcoll_comm_t *comm, const rcoll__shm_t *sh)
{
    static const char *const path[2] = { "two", "single" }, *const path_way[2] = { "two copies", "single" };
    static const char *const store[2] = { "plain", "streaming" };
    const rcoll__shm_adapt_t *ad = &sh->adapt;
    const rcoll__shm_store_t *st = &sh->store;
    const rcoll__shm_bstore_t *bs = &sh->bstore;
    char buf[1024];

    if (rcoll__log.level < RCOLL_LOG_DEBUG) {
        return;
    }
    if (classes(buf, sizeof(buf), bs->est, bs->nsamp, bs->want, store, store, 11) > 0) {
        rcoll_debug("shm: communicator 0x%llx: small bcast stores as root chosen at run time, "
                    "%llu changes; last choice and estimate (own copy + slowest leaf's) per size "
                    "class from:%s", (unsigned long long)comm->id,
                    (unsigned long long)bs->changes, buf);
    }
    if (sh->me != 0) {
        return;
    }
    static const struct {
        size_t      off;       /* the chooser in rcoll__shm_t */
        int         least;     /* log2 of its smallest class */
        const char *what;
    } stores[] = {
        { offsetof(rcoll__shm_t, store), 11, "flat allreduce copy-in stores" },
        { offsetof(rcoll__shm_t, agstore), 11, "allgather stores into the segment" },
        { offsetof(rcoll__shm_t, rstore), 13, "reduce stores into the segment" },
        { offsetof(rcoll__shm_t, rsstore), 13, "reduce_scatter stores into the segment (classes "
                                               "of the whole input)" },
    };
    for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++) {
        st = (const rcoll__shm_store_t *)(const void *)((const char *)sh + stores[i].off);
        if (classes(buf, sizeof(buf), st->est, st->nsamp, st->want, store, store,
                    stores[i].least) > 0) {
            rcoll_debug("shm: communicator 0x%llx: %s chosen at run time, %llu changes (%llu "
                        "on a jump); last choice and estimate per size class from:%s",
                        (unsigned long long)comm->id, stores[i].what,
                        (unsigned long long)st->changes, (unsigned long long)st->jumps, buf);
        }
    }
    if (ad->started) {
        size_t len = classes(buf, sizeof(buf), ad->est, ad->nsamp, ad->bits, path, path_way, 13);
        rcoll_debug("shm: communicator 0x%llx: allgather path chosen at run time, %llu changes; "
                    "last choice and estimate per size class from:%s", (unsigned long long)comm->id,
                    (unsigned long long)ad->changes, len > 0 ? buf : " none timed");
    }
    ad = &sh->bpath.ad;
    if (ad->started) {
        size_t len = classes(buf, sizeof(buf), ad->est, ad->nsamp, ad->bits, path, path_way, 13);
        rcoll_debug("shm: communicator 0x%llx: bcast path chosen at run time, %llu changes; "
                    "last choice and estimate (the ranks' mean time) per size class from:%s",
                    (unsigned long long)comm->id, (unsigned long long)ad->changes,
                    len > 0 ? buf : " none timed");
    }
    ad = &sh->rspath;
    if (ad->started) {
        static const char *const rs[2] = { "slots", "pipeline" };
        size_t len = classes(buf, sizeof(buf), ad->est, ad->nsamp, ad->bits, rs, rs, 13);
        rcoll_debug("shm: communicator 0x%llx: reduce_scatter path chosen at run time, %llu "
                    "changes; last choice and estimate per size class (of the whole input) "
                    "from:%s", (unsigned long long)comm->id, (unsigned long long)ad->changes,
                    len > 0 ? buf : " none timed");
    }
    ad = &sh->rpath;
    if (ad->started) {
        size_t len = classes(buf, sizeof(buf), ad->est, ad->nsamp, ad->bits, path, path_way, 13);
        rcoll_debug("shm: communicator 0x%llx: reduce path chosen at run time, %llu changes; "
                    "last choice and estimate (rank 0's time as the root) per size class "
                    "from:%s", (unsigned long long)comm->id, (unsigned long long)ad->changes,
                    len > 0 ? buf : " none timed");
    }
}
