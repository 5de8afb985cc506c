/*
 * bcast_ranks.h - rank arithmetic of the broadcast algorithms, as pure
 * functions (no rcoll state) so that unit tests can check them for every
 * rank count and root.
 *
 * All algorithms work on "virtual ranks": vr = (rank - root) mod p, so the
 * root is vr 0.  The buffer of n bytes is cut into p blocks for the scatter
 * part of scatter_allgather: block i has n/p bytes, plus one for i < n % p,
 * so blocks differ by at most one byte and any empty blocks are the last
 * ones (when n < p).
 */
#ifndef RCOLL_BCAST_RANKS_H
#define RCOLL_BCAST_RANKS_H

#include <stddef.h>

static inline int rcoll_bc_vrank(int rank, int root, int p)
{
    return (rank - root + p) % p;
}

static inline int rcoll_bc_rank(int vrank, int root, int p)
{
    return (vrank + root) % p;
}

/* Number of rounds of a binomial tree over p ranks: ceil(log2 p). */
static inline int rcoll_bc_ceil_log2(int p)
{
    int k = 0;
    while ((1L << k) < p)
        k++;
    return k;
}

/*
 * Binomial tree rooted at vr 0.  vr > 0 receives from vr - lowbit(vr) in the
 * round whose mask is lowbit(vr); it then sends to vr + m for every mask
 * m < lowbit(vr) with vr + m < p, largest first.  For vr 0 the "receive mask"
 * is the first power of two >= p, so it sends to every power of two < p.
 */
static inline int rcoll_bc_binomial_mask(int vr, int p)
{
    if (vr == 0) {
        int m = 1;
        while (m < p)
            m <<= 1;
        return m;
    }
    return vr & -vr;
}

/* Parent virtual rank, or -1 for the root. */
static inline int rcoll_bc_binomial_parent(int vr)
{
    return vr == 0 ? -1 : vr - (vr & -vr);
}

/* Number of children of vr. */
static inline int rcoll_bc_binomial_nchildren(int vr, int p)
{
    int n = 0;
    for (int m = rcoll_bc_binomial_mask(vr, p) >> 1; m > 0; m >>= 1)
        if (vr + m < p)
            n++;
    return n;
}

/* Round index (log2 of the mask) used as the message step between a parent
 * and its child vr. */
static inline unsigned rcoll_bc_binomial_round(int child_vr)
{
    unsigned k = 0;
    while (!((child_vr >> k) & 1))
        k++;
    return k;
}

/* Balanced blocks: offset and length of block i of n bytes over p blocks. */
static inline size_t rcoll_bc_block_off(size_t n, int p, int i)
{
    size_t q = n / (size_t)p, r = n % (size_t)p;
    return q * (size_t)i + ((size_t)i < r ? (size_t)i : r);
}

static inline size_t rcoll_bc_block_len(size_t n, int p, int i)
{
    return n / (size_t)p + ((size_t)i < n % (size_t)p ? 1 : 0);
}

/* Bytes of blocks [first, last) (clipped to p). */
static inline size_t rcoll_bc_blocks_len(size_t n, int p, int first, int last)
{
    if (last > p)
        last = p;
    if (first >= last)
        return 0;
    return rcoll_bc_block_off(n, p, last) - rcoll_bc_block_off(n, p, first);
}

/* Pipelined chain: number of segments of seg bytes in n bytes (seg > 0). */
static inline size_t rcoll_bc_nsegs(size_t n, size_t seg)
{
    return (n + seg - 1) / seg;
}

static inline size_t rcoll_bc_seg_len(size_t n, size_t seg, size_t k)
{
    size_t off = k * seg;
    return off >= n ? 0 : (n - off < seg ? n - off : seg);
}

#endif
