/*
 * allgather_ranks.h - rank arithmetic of the allgather algorithms, as pure
 * functions that unit tests check for every rank count.
 *
 * Blocks are numbered by rank: block j (count elements of rank j) sits at
 * offset j * blocksize in the receive buffer.
 */
#ifndef RCOLL_ALLGATHER_RANKS_H
#define RCOLL_ALLGATHER_RANKS_H

static inline int rcoll_ag_ceil_log2(int p)
{
    int k = 0;
    while ((1L << k) < p)
        k++;
    return k;
}

/* Largest power of two <= p (p >= 1). */
static inline int rcoll_ag_pow2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p && q * 2 > 0)
        q *= 2;
    return q;
}

/*
 * Recursive doubling over q = pow2_floor(p) ranks.  The r = p - q extra
 * ranks q..p-1 first hand their block to rank (j - q) ("fold in") and get
 * the full result back at the end ("fold out"); rank i < r thus also owns
 * block q + i.  In the round of mask m, rank j < q exchanges with j ^ m the
 * blocks of its group [base, base + m), base = j & ~(m - 1), and that group's
 * extra blocks [q + base, q + min(base + m, r)).
 */
static inline int rcoll_ag_rd_group_base(int j, int m)
{
    return j & ~(m - 1);
}

/* First extra block and number of extra blocks of the group starting at
 * base with m members, over p ranks. */
static inline int rcoll_ag_rd_extra_first(int base, int p)
{
    return rcoll_ag_pow2_floor(p) + base;
}

static inline int rcoll_ag_rd_extra_count(int base, int m, int p)
{
    int q = rcoll_ag_pow2_floor(p), r = p - q;
    int end = base + m < r ? base + m : r;
    return end > base ? end - base : 0;
}

/* Fold partner: for j >= q the rank it folds into, for j < r its extra rank,
 * else -1. */
static inline int rcoll_ag_rd_fold_partner(int j, int p)
{
    int q = rcoll_ag_pow2_floor(p), r = p - q;
    if (j >= q)
        return j - q;
    if (j < r)
        return j + q;
    return -1;
}

/*
 * Bruck: a rank keeps a rotated copy where position i holds block
 * (rank + i) mod p.  In round k (d = 2^k) it sends positions [0, nblk) to
 * rank - d and receives positions [d, d + nblk) from rank + d, with
 * nblk = min(d, p - d).
 */
static inline int rcoll_ag_bruck_nblk(int d, int p)
{
    return d < p - d ? d : p - d;
}

static inline int rcoll_ag_bruck_send_peer(int rank, int d, int p)
{
    return ((rank - d) % p + p) % p;
}

static inline int rcoll_ag_bruck_recv_peer(int rank, int d, int p)
{
    return (rank + d) % p;
}

/* Ring: in step s (0 <= s < p-1) rank sends block rank-s to rank+1 and
 * receives block rank-s-1 from rank-1. */
static inline int rcoll_ag_ring_send_block(int rank, int s, int p)
{
    return ((rank - s) % p + p) % p;
}

static inline int rcoll_ag_ring_recv_block(int rank, int s, int p)
{
    return ((rank - s - 1) % p + p) % p;
}

#endif
