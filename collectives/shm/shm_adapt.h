/*
 * shm_adapt.h - the shm allgather's and bcast's run-time choice between
 * single copy (process_vm_readv, shm_cma.h) and two copies through the
 * segment, per size class, made by rank 0 of the segment from timings
 * and followed by every rank for the same collective.
 *
 * Why at run time: on the 2-vCPU VMs the two-copy path is 3-4x slower in
 * the slow phase a vCPU falls into whenever it idles, while the single
 * copy is steady but pays ~1.4 us per read before it moves a byte; which
 * one wins at a size changes with the phase, many times a second
 * (docs/shm.md, "Latency phases on a VM" and "Adaptive single copy").
 *
 * How the ranks agree: rank 0 publishes, in the segment's header page,
 * choices that each apply from a collective number on (entries {eff,
 * bits}: bit b set = size class b goes single copy) and a horizon h: every
 * entry that applies to a collective <= h is written.  A rank that needs
 * the path of collective k waits until h >= k (rank 0 raises it to its k +
 * ahead on entry to every adaptive collective, RCOLL__SHM_AHEAD_LARGE for a
 * large one, so this wait is one rank 0 is far behind), then takes the
 * entry with the largest eff <= k.  A new entry gets eff = h + 1, so it
 * never changes the path of a collective some rank may have chosen for
 * already; it overwrites the oldest of the ring
 * only once every rank is through the collectives that entry could apply
 * to.  The calls of one group of RCOLL__SHM_ADAPT_BURST consecutive k in
 * 64 (by a hash of k / BURST, the same everywhere; one in 512 where rank 0
 * found the other path 1.6x slower) take the other path, so rank 0 keeps
 * timing both; it does not time the first call of a class on a path after
 * calls on the other (cold), and once a class has RCOLL__SHM_ADAPT_FIRST
 * timed calls with the other path never timed it publishes a switch to the
 * other path, so the first try comes early and lasts (its estimates then
 * decide, as for any switch).
 */
#ifndef RCOLL_SHM_ADAPT_H
#define RCOLL_SHM_ADAPT_H

#include "shm.h"

#define RCOLL__SHM_ADAPT_MIN     (8 * 1024)   /* blocks from here adapt (the default) */
#define RCOLL__SHM_ADAPT_OFFSET  2048         /* the shared lines, in the header page */
#define RCOLL__SHM_ADAPT_SWITCH  0.85         /* the other path must be 15% faster */
#define RCOLL__SHM_ADAPT_BURST   8            /* a try: this many consecutive k */
#define RCOLL__SHM_ADAPT_FIRST   3            /* timed calls of a class before its first try */

/* In the segment's header page, written by rank 0 only. */
typedef struct {
    _Atomic uint64_t min;        /* at set-up: blocks from min bytes adapt; 0: none */
    char             pad0[RCOLL__SHM_LINE - sizeof(uint64_t)];
    _Atomic uint64_t horizon;    /* every entry for a collective <= horizon is written */
    char             pad1[RCOLL__SHM_LINE - sizeof(uint64_t)];
    _Atomic uint64_t ent[RCOLL__SHM_ADAPT_NENT];   /* eff (40 bits) | bits << 40 */
    char             pad2[RCOLL__SHM_LINE - RCOLL__SHM_ADAPT_NENT * sizeof(uint64_t)];
    _Atomic uint64_t store;      /* RCOLL__SHM_STORE_ON | the flat allreduce's store choice */
    _Atomic uint64_t agstore;    /* RCOLL__SHM_STORE_ON | the allgather's store choice */
    _Atomic uint64_t rstore;     /* RCOLL__SHM_STORE_ON | the reduce's store choice */
    _Atomic uint64_t rsstore;    /* RCOLL__SHM_STORE_ON | the reduce_scatter's store choice */
} rcoll__shm_adapt_line_t;
_Static_assert(RCOLL__SHM_ADAPT_OFFSET + sizeof(rcoll__shm_adapt_line_t) <= 4096, "header page");

/* The bcast's chooser (bpath below) has its own lines, after the allgather's. */
#define RCOLL__SHM_BPATH_OFFSET  (RCOLL__SHM_ADAPT_OFFSET + 512)
_Static_assert(RCOLL__SHM_ADAPT_OFFSET + sizeof(rcoll__shm_adapt_line_t) <= RCOLL__SHM_BPATH_OFFSET,
               "the two choosers' lines apart");
_Static_assert(RCOLL__SHM_BPATH_OFFSET + sizeof(rcoll__shm_adapt_line_t) <= 4096, "header page");

static inline rcoll__shm_adapt_line_t *rcoll__shm_adapt_line(const rcoll__shm_t *sh)
{
    return (rcoll__shm_adapt_line_t *)(void *)(sh->base + RCOLL__SHM_ADAPT_OFFSET);
}

static inline rcoll__shm_adapt_line_t *rcoll__shm_bpath_line(const rcoll__shm_t *sh)
{
    return (rcoll__shm_adapt_line_t *)(void *)(sh->base + RCOLL__SHM_BPATH_OFFSET);
}

/* The reduce's chooser (rpath below) has its own lines, after the bcast's. */
#define RCOLL__SHM_RPATH_OFFSET  (RCOLL__SHM_BPATH_OFFSET + 512)
_Static_assert(RCOLL__SHM_RPATH_OFFSET + sizeof(rcoll__shm_adapt_line_t) <= 4096, "header page");

static inline rcoll__shm_adapt_line_t *rcoll__shm_rpath_line(const rcoll__shm_t *sh)
{
    return (rcoll__shm_adapt_line_t *)(void *)(sh->base + RCOLL__SHM_RPATH_OFFSET);
}

/* The reduce_scatter's chooser (rspath below), after the reduce's. */
#define RCOLL__SHM_RSPATH_OFFSET (RCOLL__SHM_RPATH_OFFSET + 512)
_Static_assert(RCOLL__SHM_RSPATH_OFFSET + sizeof(rcoll__shm_adapt_line_t) <= 4096, "header page");

static inline rcoll__shm_adapt_line_t *rcoll__shm_rspath_line(const rcoll__shm_t *sh)
{
    return (rcoll__shm_adapt_line_t *)(void *)(sh->base + RCOLL__SHM_RSPATH_OFFSET);
}

/* 1 if allgathers of n-byte blocks choose their path at run time. */
static inline int rcoll__shm_adapt_covers(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->adapt.min;
}

/* Set-up, rank 0 (before it reports in): whether this segment's allgather
 * (adapt), bcast (bcast) and reduce (reduce) adapt (RCOLL_SHM_ADAPT,
 * starting from their single-copy sizes, the defaults' or a tune file's;
 * RCOLL_SHM_CMA=on or sizes rcoll_tune set keep them fixed); random: rank 0
 * switches at random (RCOLL_SHM_ADAPT=random, for tests). */
void rcoll__shm_adapt_offer(rcoll__shm_t *sh, int adapt, int bcast, int reduce, int random);

/* Set-up over, single-copy reads agreed: take rank 0's offer. */
void rcoll__shm_adapt_ready(rcoll__shm_t *sh);

/* The path of collective op->k, an allgather of n-byte blocks that
 * rcoll__shm_adapt_covers: 1 with *cma set (1: single copy), or 0 while
 * rank 0 has not fixed it yet (task->wait_peer 0, step
 * RCOLL__SHM_STEP_ADAPT).  *explore: this call takes the other path. */
int rcoll__shm_adapt_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore);

/* Rank 0: its covered call of n-byte blocks took ns nanoseconds on path
 * cma (explore: the call was part of a try of the other path). */
void rcoll__shm_adapt_sample(rcoll__shm_t *sh, size_t n, int cma, int explore, uint64_t ns);

/*
 * The bcast's path ("bpath"): single copy or two copies through the
 * segment, per size class from RCOLL__SHM_BPATH_MIN, chosen by rank 0 with
 * the allgather's protocol above (its own lines in the header page, its own
 * tries, which never fall on the group of k the root's store choice below
 * tries in).  Why: which path wins at a size differs between CPUs by more
 * than any one default can cover (2 ranks, 64 KiB: two copies 2.6 us
 * against 5.9 on the Zen 5 VM, whose process_vm_readv costs ~2 us before it
 * moves a byte; single copy 2x faster at 128 KiB on the Xeon VM) and, on a
 * VM, with the phase (docs/shm.md, "The bcast's path, chosen at run time").
 *
 * A two-copy root returns before its leaves copy, so rank 0's own time does
 * not measure the call: every rank times the timed calls from the path's
 * choice to its return and publishes {k, ns} in its control region
 * (bc_call); rank 0 takes the ranks' mean time of its last covered call at
 * its next one (or the one after, if some rank had not published that k
 * yet; a rank that shows a later k drops the sample).  The mean, not the
 * slowest: it is the time the ranks lose in the call (a two-copy root is
 * free to compute while its leaves copy), and what an OSU benchmark reports.
 */
/* How far ahead rank 0 fixes the paths when it enters a call of
 * RCOLL__SHM_STORE_TIME_ALL bytes or more (shm_adapt.c, rank0_fix): a switch
 * applies within a few calls there. */
#define RCOLL__SHM_AHEAD_LARGE 4
#define RCOLL__SHM_BPATH_MIN (8 * 1024)
/* 8 KiB (32 KiB until 2026-12-07): on the AMD VMs single copy was never
 * found faster at 16 KiB (1.4-2 us before it moves a byte, against 0.5-1
 * for two copies of 16 KiB), and the choice costs a little even untimed
 * (rank 0's horizon line every 8 calls, the rare try): 16 KiB 0.93-0.96 us
 * -> 0.99-1.05 on the Zen 5 VM.  On the Intel Xeon VM single copy wins from
 * 8 KiB, 2x at 16-24 KiB (2 ranks: 16 KiB 1.09-1.29 us against 2.24-2.26,
 * 24 KiB 1.51-1.73 against 3.27-3.34; docs/shm.md), the 1.6x Open MPI
 * ob1 that its bench/compare found at 16 KiB. */
static inline int rcoll__shm_bpath_covers(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->bpath.ad.min;
}

/* As rcoll__shm_adapt_choose, for bcast k = op->k of n bytes that
 * rcoll__shm_bpath_covers; rank 0 first collects its last call's sample. */
int rcoll__shm_bpath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore);

/* Whether every rank times covered bcast k of n bytes (a function of k, n
 * and the try, which all ranks agree on): one call in 8 by a hash of k,
 * every call of a try, and every call from RCOLL__SHM_STORE_TIME_ALL
 * bytes.  The others pay nothing: a timed call costs two clock reads and a
 * line that rank 0 reads back (2 ranks, 16 KiB: timing every call took
 * 0.53-0.55 us to 0.63-0.70 on the Zen 5 VM), nothing beside a call of
 * 512 KiB or more (25 us and up).  There one call in 8 left a class that
 * starts on single copy there for ~30 calls before its first try of two
 * copies (3 timed calls): a 16 MiB bcast after a 4 MiB one ran single copy
 * (1.6 ms a call against 0.75 for two copies on the Zen 4 VM) for most of
 * an OSU size's 60 ms (docs/shm.md, "The bcast's path, chosen at run
 * time"). */
int rcoll__shm_bpath_timed(const rcoll__shm_t *sh, uint64_t k, size_t n, int explore);

/* Every rank, its timed bcast k of n bytes done on path cma in ns. */
void rcoll__shm_bpath_called(rcoll__shm_t *sh, uint64_t k, size_t n, int cma, int explore,
                             uint64_t ns);

/*
 * The reduce's path ("rpath"): single copy (shm_reduce_cma.c: every rank
 * reads its slice of the others' vectors with process_vm_readv, and the
 * non-roots write their results into the root's buffer) or two copies
 * through the segment (shm_reduction.c), per size class from
 * RCOLL__SHM_RPATH_MIN, chosen by rank 0 with the allgather's protocol
 * above (its own lines in the header page, its own tries).  Why: which
 * wins differs between CPUs by 2x either way.  On the Xeon VM (2 ranks,
 * 2026-12-07, µs): 64 KiB single copy 4.3, two copies 8.2-8.9; 128 KiB 7.1
 * against 14-16; 2 MiB 199-203 against 178-183; an AMD EPYC VM's figures
 * kept single copy off by default (docs/shm.md, "The reduce's path,
 * chosen at run time").
 *
 * Rank 0 times the calls it is the root of, from the path's choice to its
 * return: a root's time is the reduce's (it returns once the result is
 * whole), while a leaf of the two-copy path returns once its vector is in
 * the segment.  Calls rooted elsewhere follow the choice untimed.
 */
#define RCOLL__SHM_RPATH_MIN (16 * 1024)
/* 16 KiB: below, single copy's set-up (a descriptor each way, ~1.4 us
 * before the first byte moves) lost to two copies on the Xeon VM (8 KiB:
 * 1.7 us against 1.2-1.4); on the AMD VMs it costs more. */
static inline int rcoll__shm_rpath_covers(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->rpath.min;
}

/* As rcoll__shm_adapt_choose, for reduce k = op->k of n bytes that
 * rcoll__shm_rpath_covers. */
int rcoll__shm_rpath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *cma,
                            int *explore);

/* (Rank 0, the root of its covered reduce: rcoll__shm_chooser_sample on
 * &sh->rpath with its time.) */

/*
 * The reduce_scatter's path ("rspath"): through the slots (each rank
 * copies its whole input in, then folds its block out of every slot) or
 * through the two-stage pipeline (copy-in and folds overlapped per
 * sub-block), for inputs from RCOLL__SHM_RSPATH_MIN up to the slot size
 * (above it only the pipeline), chosen by rank 0 with the allgather's
 * protocol above from its own call times (every rank waits for every
 * other), starting on the slots.  Why: on the Intel Xeon VM (2 ranks,
 * 2026-12-07) the pipeline was 1.4-1.6x faster at 48-64 KiB inputs (64
 * KiB 4.2-5.0 us against 6.9-7.3; 100000 B, past the slot, 5.8-6.2),
 * at 32 KiB about even (docs/shm.md, "The reduce_scatter's path").  Offered
 * where the segment's ranks do not outnumber its CPUs, whether or not they
 * can read each other's memory.
 */
#define RCOLL__SHM_RSPATH_MIN (32 * 1024)

/* Set-up, rank 0, before it reports in: whether the reduce_scatter's path
 * is chosen at run time (on), at random (random: tests). */
void rcoll__shm_rspath_offer(rcoll__shm_t *sh, int on, int random);

/* Set-up over (every rank, whatever the single-copy verdict): take rank
 * 0's offer. */
void rcoll__shm_rspath_ready(rcoll__shm_t *sh);

/* 1 if reduce_scatters of an n-byte input that fits a slot choose their
 * path at run time. */
static inline int rcoll__shm_rspath_covers(const rcoll__shm_t *sh, size_t n)
{
    return n >= sh->rspath.min;
}

/* As rcoll__shm_adapt_choose, for reduce_scatter k = op->k of an n-byte
 * input that rcoll__shm_rspath_covers: *pipe 1 for the pipeline. */
int rcoll__shm_rspath_choose(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *pipe,
                             int *explore);

/* (Rank 0: rcoll__shm_chooser_sample on &sh->rspath, path 1 the pipeline.) */

/*
 * The flat allreduce's copy of each rank's vector into its slot
 * (shm_reduction.c): plain or streaming stores (shm_copy.h), per size
 * class from RCOLL__SHM_STORE_MIN.  Why: the peers fold the slot's lines
 * out of this core's cache, one line transfer each, which the VMs' slow
 * phase makes 3x dearer; streamed lines come from memory at the same speed
 * in either phase (AMD EPYC VM, 2 ranks, 100000 B: plain 12.4-14.0 us in
 * the fast phase, 34-40 in the slow one; streaming 17.4-19.1; docs/shm.md
 * "Streaming copy-in, chosen at run time").
 *
 * A rank's store kind changes how fast the others fold, not the bytes, so
 * the ranks need no agreement for correctness, but a rank's own time
 * measures the others' choice: rank 0 decides for all with the estimator
 * above (per size class [2^(11+b), 2^(12+b)) from 2 KiB, 16 KiB until
 * 2026-12-06: the Zen 4 VM's slow phase made 2-12 KB 3-4x slower with plain
 * stores; every try and one call in 8 timed, as the allgather's, since two
 * clock reads are 1-3% of a 2-4 KiB call; the other kind tried one call in 64 by the hash
 * of k, the same on every rank, so all try together; never 1 in 512: a
 * wrong switch must be undone soon) and publishes its
 * choice in the header page's `store` word; the others read it at the
 * start of each call (a stale word costs speed for a call, nothing else).
 * A class's first timed call is not counted (page faults).
 */
#define RCOLL__SHM_STORE_MIN (2 * 1024)
/* RCOLL__SHM_STORE_JUMP_RUN calls in a row of the kind in use at
 * RCOLL__SHM_STORE_JUMP times its estimate or more, from
 * RCOLL__SHM_STORE_TIME_ALL bytes: the machine changed (shm_adapt.c,
 * store_sample). */
#define RCOLL__SHM_STORE_JUMP     2.0
#define RCOLL__SHM_STORE_JUMP_RUN 3
#define RCOLL__SHM_STORE_ON  (1ull << 63)   /* in `store`: rank 0 chooses (else: plain) */

/* Set-up, every rank: its own RCOLL_SHM_ADAPT for the store choices, this
 * one, the two-copy allgather's, the reduce's, the reduce_scatter's and the small bcast's below (off: plain
 * stores only; random: a random choice per call, for tests); none while
 * the node's ranks outnumber its CPUs (a timing there measures the
 * scheduler).  There, unless off, a bcast root streams its copy into the
 * segment from RCOLL__SHM_OVER_STREAM_MIN, slot and pipeline alike
 * (sh->over_stream_min): its plain stores took each line back from the
 * other CPU's caches at 5-7 GB/s, which set the call's time and its
 * launch-to-launch swing (4 ranks on 2 vCPUs, 64 KiB: 9-30 us plain,
 * 6.3-7.2 streaming; docs/shm.md, "Waiting when ranks outnumber the
 * CPUs").  So does the flat allreduce's copy into its slot (8 ranks, 16
 * KiB: 23-45 us plain, 24-26 streaming); not the pipelined allreduce's
 * copy-in, where streaming was slower from 64 KiB (1 MiB 240-447 us
 * against 198-758). */
#define RCOLL__SHM_OVER_STREAM_MIN (2 * 1024)
void rcoll__shm_store_offer(rcoll__shm_t *sh, const char *mode, int oversubscribed);

/* 1 if collective k's n-byte flat allreduce (n >= sh->store.min) copies in
 * with streaming stores; *explore: this is the 1-in-64 try. */
int rcoll__shm_store_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore);

/* Rank 0: its call's time, from its copy-in to its return, in ns. */
void rcoll__shm_store_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns);

/*
 * The two-copy allgather's copy of each rank's block into the segment
 * (shm_allgather.c, blocks from RCOLL__SHM_AGSTORE_MIN: into its slot, or
 * chunk by chunk into its pipeline buffers): plain or streaming stores,
 * per size class [2^(11+b), 2^(12+b)),
 * chosen as the flat allreduce's above: rank 0's call time, which includes
 * its wait for the others' blocks and its copies of them, so it measures
 * every rank's stores (one call in 8 timed, and every try); rank 0's
 * `agstore` word; the other kind tried 1 call in 64, but streaming only 1
 * in 512 while it was found 1.6x slower than plain (a fast phase: 2-3x
 * slower, so 1 in 64 cost 3-4% at 16-64 KiB).  Why: the same line
 * transfers as the allreduce's: every rank copies the others' blocks out
 * of their writers' caches, and each writer's next write takes the lines
 * back (AMD EPYC VM, 2 ranks, slow phase, medians: 4 KiB 1.12 us plain
 * only, 0.98 chosen at run time; 256 KiB 21.2 and 15.1; docs/shm.md "The
 * allgather's stores into the segment").  One try at a time: a call that
 * tries the two-copy path stores with the kind in use.
 */
#define RCOLL__SHM_AGSTORE_MIN 2048

/* 1 if collective k's two-copy allgather of n-byte blocks (n >=
 * sh->agstore.min) copies into the segment with streaming stores; *explore: this is a try of
 * the other kind. */
int rcoll__shm_agstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore);

/* Rank 0: its allgather's time, from its choice to its return, in ns. */
void rcoll__shm_agstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns);

/*
 * The reduce's copy of each non-root rank's vector into the segment
 * (shm_reduction.c, vectors from RCOLL__SHM_RSTORE_MIN: its slot piece by
 * piece, or chunk by chunk into its pipeline buffers): plain or streaming
 * stores, per size class [2^(13+b), 2^(14+b)), chosen as the allgather's
 * above (rank 0's call time: as the root, its wait for the others'
 * vectors and its folds of them; else its own copy; streaming tried 1 in
 * 512 while found 1.6x slower; the `rstore` word).  Why: the root folds
 * the slots' lines out of their writers' caches, and each writer's next
 * copy takes them back, a line transfer each way that some phases of a VM
 * make ruinous (AMD EPYC Zen 4 VM, 2 ranks, 2026-12-06: plain 64 KiB
 * 10.5-12.6 us, 34 in a slow phase, streaming 4.8-5.6 in both; 1 MiB
 * 44-46 plain, 480-640 slow, 46-50 streaming; 4 MiB 189-208 plain, ~1900
 * slow, 221-247 streaming; docs/shm.md "The reduce's stores into the
 * segment").  From RCOLL__SHM_STORE_TIME_ALL every call is timed, the
 * other kind tried early and a jump switches at once (store_sample).
 */
#define RCOLL__SHM_RSTORE_MIN (8 * 1024)

/* 1 if collective k's n-byte reduce (n >= sh->rstore.min) copies into the
 * segment with streaming stores; *explore: this is a try of the other kind. */
int rcoll__shm_rstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore);

/* Rank 0: its reduce's time, from its choice to its return, in ns. */
void rcoll__shm_rstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns);

/*
 * The reduce_scatter's copy of each rank's input into the segment
 * (shm_reduce_scatter.c, inputs of n = p blocks from RCOLL__SHM_RSSTORE_MIN
 * bytes: its slot, or its pipeline buffers): chosen as the reduce's above,
 * its own word `rsstore`, for the same reason: every rank folds the others'
 * lines out of their caches and each writer takes them back in its next
 * copy (AMD EPYC Zen 4 VM, 2 ranks, 2026-12-06, µs: 1 MiB input plain 46,
 * 266-269 in a slow phase, streaming 44-53; 16 MiB 1115-1161, 4652-4824
 * slow, 907-1502 streaming; docs/shm.md "The reduce's stores into the
 * segment").
 */
#define RCOLL__SHM_RSSTORE_MIN (8 * 1024)

/* 1 if collective k's reduce_scatter of an n-byte input (n >=
 * sh->rsstore.min) copies into the segment with streaming stores. */
int rcoll__shm_rsstore_choose(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore);

/* Rank 0: its reduce_scatter's time, from its choice to its return, in ns. */
void rcoll__shm_rsstore_sample(rcoll__shm_t *sh, size_t n, int stream, int explore, uint64_t ns);

/*
 * The small bcast root's copy into its slot (shm_bcast.c, blocks from
 * RCOLL__SHM_BSTORE_MIN up to the slot path's end): plain or streaming
 * stores, per size class [2^(11+b), 2^(12+b)).  Why: the leaves copy the
 * slot's lines out of the root's cache, and the root's next write must take
 * them back, line by line; the VMs' slow phase makes both 3-6x dearer (AMD
 * EPYC VM, 8 KiB, 2 ranks: plain 0.56 us in the fast phase, 1.9-2.4 in the
 * slow one; streaming 1.0-1.4 in both; docs/shm.md "Streaming copy-in,
 * chosen at run time").
 *
 * The root returns before the leaves copy, so its own time does not show
 * what its store kind costs them: a leaf times its copy-out on the calls
 * whose times count (a function of k alone: one in 8 by a hash, and every
 * call of a try burst) and publishes {k, ns} in its control region; the
 * root of such a call times its own copy and, at its next bcast of these
 * sizes (or the one after, if the leaves had not published that k yet;
 * one such call at a time), adds the slowest leaf's time for it (a leaf that
 * shows a later timed k drops the sample) and feeds the estimator above.  Each root decides for
 * its own writes (the kind changes no byte, so no agreement is needed):
 * tries in bursts of RCOLL__SHM_ADAPT_BURST consecutive k, one group in 64
 * (512 once 1.6x slower), the first call of a kind after the other
 * untimed, a first try after 3 timed calls.
 */
#define RCOLL__SHM_BSTORE_MIN 2048
#define RCOLL__SHM_BSTORE_NS_BITS 24             /* in a time word: k << 24 | ns */

/* The root of collective k, a bcast of n >= sh->bstore.min bytes through
 * its slot: 1 to write with streaming stores; *timed: time the write and
 * report it with rcoll__shm_bstore_wrote.  path_try: the call is the bcast
 * path chooser's try of two copies (every rank knows it), which is timed
 * whatever k: where single copy is in use, those tries are the only calls
 * through the slot, and the 1 in 32 of k alone left the store kind
 * unmeasured and its first kind (plain) in every try (docs/shm.md, "The
 * bcast's path, chosen at run time"). */
int rcoll__shm_bstore_root(rcoll__shm_t *sh, uint64_t k, size_t n, int path_try, int *timed);
void rcoll__shm_bstore_wrote(rcoll__shm_t *sh, uint64_t k, uint64_t ns);

/* A leaf of collective k (n >= sh->bstore.min): whether to time its
 * copy-out (path_try as for the root), and its time. */
int rcoll__shm_bstore_timed(const rcoll__shm_t *sh, uint64_t k, int path_try);
void rcoll__shm_bstore_copied(rcoll__shm_t *sh, uint64_t k, uint64_t ns);

/* Shared by the choices: a hash of k that picks one in 64 (rare: 512); the
 * estimator (est and nsamp per class and way, *want's bit b the way in
 * use, bit NB + b RCOLL__SHM_RARE with `rare`; try: the j-th timed call of
 * a try, 0 for the way in use); the tests' random sequence. */
#define RCOLL__SHM_RARE(b) (1u << (RCOLL__SHM_ADAPT_NB + (b)))
int rcoll__shm_explore_k(uint64_t k, int rare);
int rcoll__shm_size_class(size_t n);     /* [2^(13+b), 2^(14+b)) */
int rcoll__shm_size_class_from(size_t n, int log2_least);   /* [2^(least+b), ...) */
/* Whether the chooser's rank times collective k: every try, else one call
 * in 8 by a hash of k (the bcast's path, the allgather's stores: two clock
 * reads on every call cost ~0.03 us, 13% of a 2 KiB allgather in the fast
 * phase). */
int rcoll__shm_timed_k(uint64_t k, int explore);
int rcoll__shm_estimate(double est[][2], uint32_t nsamp[][2], uint32_t *want, int b, int path,
                        uint32_t try, uint64_t ns, int rare);
uint64_t rcoll__shm_chaos_next(uint64_t *x);

/* Timed calls whose time needs the other ranks' too (the small bcast's
 * store choice, the bcast's path): a rank publishes its time of call k in
 * a flag word of its control region (at byte `off`: bc_read, bc_call) as
 * k << RCOLL__SHM_BSTORE_NS_BITS | ns; the rank that times the call
 * collects the others' words for pend->k: 1 with their sum and maximum
 * (pend->k cleared), 0 if not yet (asked twice at most, then dropped: a
 * rank that never reports, e.g. its RCOLL_SHM_ADAPT=off, must not cost a
 * line read per call) or lost (some rank shows a later k: dropped). */
void rcoll__shm_times_publish(rcoll__shm_t *sh, size_t off, uint64_t k, uint64_t ns);
int rcoll__shm_times_collect(const rcoll__shm_t *sh, size_t off, rcoll__shm_pending_t *pend,
                             uint64_t *sum, uint64_t *max);

/* A chooser's path for collective op->k of n bytes (the protocol at the
 * top; lo..hi: its fixed single-copy sizes, rank 0's first entry). */
int rcoll__shm_chooser_pick(rcoll_task_t *task, rcoll__shm_op_t *op, rcoll__shm_adapt_t *ad,
                            rcoll__shm_adapt_line_t *L, size_t lo, size_t hi, size_t n, int *cma,
                            int *explore);

/* Rank 0: a path chooser's (ad: the allgather's, the reduce's, the
 * reduce_scatter's) timed call of n bytes took ns on `path` (explore: part
 * of a try); nothing while its choices are random (tests). */
void rcoll__shm_chooser_sample(rcoll__shm_adapt_t *ad, size_t n, int path, int explore,
                               uint64_t ns);

/* rcoll__shm_estimate for a timed call of class b on `path` (try: part of a
 * try of the other way), with the state of the choices that try in bursts
 * (last, run per class): the first call on a path after the other is cold
 * and not counted; once the class has RCOLL__SHM_ADAPT_FIRST timed calls and
 * the other way none, *want's bit b flips (a first try).  1 if it flipped. */
int rcoll__shm_estimate_timed(double est[][2], uint32_t nsamp[][2], uint8_t last[],
                              uint32_t run[], uint32_t *want, int b, int path, int try,
                              uint64_t ns);

/* A call's ns scaled to the least size of its class (2^log2_least bytes):
 * the sizes of one class differ up to 2x (the OSU list has 64 KiB and
 * 100000 B in one), and their times must not read as a change of path. */
uint64_t rcoll__shm_per_least(uint64_t ns, size_t n, int log2_least);

/* At the end, RCOLL_LOG_LEVEL=debug: rank 0's allgather, bcast and reduce
 * path choices and measurements, its store choices, and each rank's bcast root
 * store choices. */
void rcoll__shm_adapt_report(const rcoll_comm_t *comm, const rcoll__shm_t *sh);

/* Monotonic nanoseconds (rank 0's timing). */
uint64_t rcoll__shm_adapt_now(void);

/* One call's store kind under a rank-0 store chooser (the flat allreduce's,
 * the reduce's, the reduce_scatter's): chosen once, before the call's first
 * store; rank 0 times every try and one call in 8 else, from the choice to
 * the call's end (rcoll__shm_store_call_end). */
typedef struct {
    uint64_t t0;         /* rank 0: when it chose (0: not timed) */
    int      chosen;     /* the kind below is chosen */
    int      stream;     /* copy into the segment with streaming stores */
    int      explore;    /* that is a try of the other kind */
} rcoll__shm_store_call_t;

typedef int (*rcoll__shm_store_choose_fn)(rcoll__shm_t *sh, uint64_t k, size_t n, int *explore);
typedef void (*rcoll__shm_store_sample_fn)(rcoll__shm_t *sh, size_t n, int stream, int explore,
                                           uint64_t ns);

/* From here rank 0 times every call of a store chooser, not one in 8, and
 * watches for jumps (shm_adapt.c, store_sample): two clock reads are
 * nothing beside such a call (25 us or more), and a VM's slow phase makes a
 * 4 MiB reduce's plain stores 10x slower (~2 ms a call, ~20 calls in an OSU
 * size's 40 ms), so one timed call in 8 would leave the chooser two or
 * three samples to notice it by.  Not below: a 256 KiB call (~20 us) is
 * short enough for a timer tick or two in a row to look like a jump. */
#define RCOLL__SHM_STORE_TIME_ALL (512 * 1024)

static inline void rcoll__shm_store_call_begin(rcoll__shm_t *sh, rcoll__shm_store_call_t *c,
                                               uint64_t k, size_t n,
                                               rcoll__shm_store_choose_fn choose)
{
    c->stream = choose(sh, k, n, &c->explore);
    c->t0 = sh->me == 0 && (n >= RCOLL__SHM_STORE_TIME_ALL || rcoll__shm_timed_k(k, c->explore))
          ? rcoll__shm_adapt_now() : 0;
    c->chosen = 1;
}

static inline void rcoll__shm_store_call_end(rcoll__shm_t *sh, const rcoll__shm_store_call_t *c,
                                             size_t n, rcoll__shm_store_sample_fn sample)
{
    if (c->t0 != 0) {
        sample(sh, n, c->stream, c->explore, rcoll__shm_adapt_now() - c->t0);
    }
}

#endif
