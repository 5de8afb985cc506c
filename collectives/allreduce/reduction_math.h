/*
 * reduction_math.h - the rank and block arithmetic of the reduction
 * collectives (allreduce, reduce, reduce_scatter), as pure functions so that
 * the unit tests can check every schedule for many rank counts without a
 * network.
 *
 * Conventions
 *  - p is the number of ranks (>= 1), rank is in 0..p-1.
 *  - Blocks: a vector of count elements is cut into nblocks contiguous
 *    blocks; block i is [block_lo(i), block_lo(i+1)).  Sizes differ by at
 *    most one element and may be 0 when count < nblocks.
 *  - Fold (non-powers of two): p2 = largest power of two <= p, r = p - p2.
 *    Ranks 0..2r-1 form pairs (2i, 2i+1): the even rank is an "extra" that
 *    hands its data to the odd one (which plays newrank i) and gets the
 *    result back at the end.  Rank j >= 2r plays newrank j - r.  The ranks a
 *    newrank stands for are contiguous, which reduce_scatter needs.
 *  - Reductions are always applied as (lower ranks) op (higher ranks), so a
 *    value computed by several ranks is bitwise the same on all of them.
 */
#ifndef RCOLL_REDUCTION_MATH_H
#define RCOLL_REDUCTION_MATH_H

#include <stddef.h>
#include <stdint.h>
#include "coll.h"

/* Largest power of two <= p (p >= 1), and ceil(log2(p)) (0 for p = 1). */
int rcoll__pow2_floor(int p);
int rcoll__ceil_log2(int p);
int rcoll__log2_exact(int p2);          /* p2 a power of two */

/* ---- fold of p ranks onto a power of two ---- */
int rcoll__fold_newrank(int rank, int p);   /* -1 for an extra rank */
int rcoll__fold_rank(int newrank, int p);   /* the rank that plays newrank */
int rcoll__fold_partner(int rank, int p);   /* other rank of its pair, -1 if none */
/* First original rank a newrank stands for; newrank == p2 gives p. */
int rcoll__fold_first(int newrank, int p);

/* ---- balanced blocks ---- */
size_t rcoll__block_lo(size_t count, int nblocks, int i);   /* 0 <= i <= nblocks */
size_t rcoll__block_len(size_t count, int nblocks, int i);
size_t rcoll__block_max(size_t count, int nblocks);          /* largest block */

/* ---- recursive halving (reduce-scatter) among p2 newranks, block indices ----
 * Step k = 0..log2(p2)-1 splits the window of 2*mask blocks (mask = p2 >>
 * (k+1)) that holds newrank; newrank keeps its half, sends the other half to
 * peer = newrank ^ mask and receives peer's copy of its own half.  After the
 * last step newrank holds block newrank. */
typedef struct rcoll__rh_step {
    int peer;                 /* newrank */
    int keep_lo, keep_hi;     /* blocks kept (and received) */
    int send_lo, send_hi;     /* blocks sent */
    int lower;                /* 1: this rank is in the lower half */
} rcoll__rh_step_t;
void rcoll__rh_step(int newrank, int p2, int k, rcoll__rh_step_t *st);

/* ---- recursive doubling allgather of blocks among p2 newranks ----
 * Step k = 0..log2(p2)-1 (mask = 1 << k): newrank sends its window of mask
 * blocks and receives peer's window; afterwards it holds 2*mask blocks. */
typedef struct rcoll__rd_step {
    int peer;
    int send_lo, send_hi;
    int recv_lo, recv_hi;
} rcoll__rd_step_t;
void rcoll__rdag_step(int newrank, int p2, int k, rcoll__rd_step_t *st);

/* ---- binomial gather of blocks among p2 newranks to newrank target ----
 * Step k (mask = 1 << k): a rank that is still active either sends its
 * window of mask blocks to peer and stops, or receives peer's window. */
enum { RCOLL__GATHER_IDLE = 0, RCOLL__GATHER_SEND = 1, RCOLL__GATHER_RECV = 2 };
typedef struct rcoll__gather_step {
    int role;                 /* RCOLL__GATHER_* */
    int peer;
    int lo, hi;               /* blocks sent or received */
} rcoll__gather_step_t;
void rcoll__gather_step(int newrank, int target, int p2, int k, rcoll__gather_step_t *st);

/* ---- binomial tree over p ranks rooted at relative rank 0 ----
 * Step k (mask = 1 << k, k = 0..ceil_log2(p)-1): a rank with bit k set sends
 * to (reduce) / receives from (bcast) its parent vr - mask; a rank whose low
 * k+1 bits are clear has child vr + mask if that is < p. */
int rcoll__binomial_parent_step(int vr, int p);     /* k of the parent link, -1 for vr 0 */
int rcoll__binomial_child(int vr, int p, int k);    /* child at step k, or -1 */
static inline int rcoll__rel_rank(int rank, int root, int p) { return (rank - root + p) % p; }
static inline int rcoll__abs_rank(int vr, int root, int p)   { return (vr + root) % p; }

/* ---- ring ----
 * Reduce-scatter step s = 0..p-2: send block send, receive block recv (to
 * the right, from the left); after the last step rank holds block rank.
 * Allgather step s = 0..p-2: send block (rank - s), receive (rank - s - 1). */
void rcoll__ring_rs_blocks(int rank, int p, int s, int *send_block, int *recv_block);
void rcoll__ring_ag_blocks(int rank, int p, int s, int *send_block, int *recv_block);
static inline int rcoll__ring_right(int rank, int p) { return (rank + 1) % p; }
static inline int rcoll__ring_left(int rank, int p)  { return (rank - 1 + p) % p; }

/* ---- segments ----
 * Segment j of a block of len elements cut in segments of seg elements is
 * [j*seg, min((j+1)*seg, len)), possibly empty. */
size_t rcoll__seg_count(size_t maxlen, size_t seg);
void   rcoll__seg_range(size_t len, size_t seg, size_t j, size_t *lo, size_t *hi);
/* Segment length in elements for segment_bytes (0: no segmentation) such
 * that at most max_segs segments cover maxlen elements. */
size_t rcoll__seg_elems(size_t segment_bytes, size_t esize, size_t maxlen, size_t max_segs);

/* ---- cost model pieces (alpha-beta-gamma, collectives/selector_cost.h) ----
 * n: bytes of the whole vector; p ranks, ppn per node, p2 = pow2_floor(p). */
/* Fold of a non-power of two: extras send n bytes in (reduced: n gamma) and
 * get back_bytes out (0: nothing comes back).  0 when p is a power of two. */
double rcoll__cost_fold(const rcoll_model_t *m, double n, double back_bytes, int p, int ppn);
/* Recursive halving over p2 ranks: step k moves n / 2^(k+1) bytes at
 * distance p2 / 2^(k+1) and reduces them. */
double rcoll__cost_halving(const rcoll_model_t *m, double n, int p, int ppn);
/* Recursive doubling allgather (or binomial gather) of n bytes over p2
 * ranks: step k moves n 2^k / p2 bytes at distance 2^k. */
double rcoll__cost_doubling(const rcoll_model_t *m, double n, int p, int ppn);
/* ceil(log2 p) steps each moving n bytes at distance 2^k (binomial trees,
 * recursive doubling on the whole vector), msgs_per_step messages in a row
 * and reducing n bytes per step if reduce. */
double rcoll__cost_tree(const rcoll_model_t *m, double n, int steps, int msgs_per_step, int reduce,
                        int p, int ppn);

#endif
