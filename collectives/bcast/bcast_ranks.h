/*
 * bcast_ranks.h - rank arithmetic of the broadcast algorithms, as pure
 * functions (no rcoll state) so that unit tests can check them for every
 * rank count and root.
 *
 * All algorithms work on "virtual ranks": vr = (rank - root) mod p, so the
 * root is vr 0.  The binomial tree and the ring of binomial and
 * scatter_allgather are engines (collectives/engines/binomial.h, ring.h);
 * what is left here is the chain's.
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
