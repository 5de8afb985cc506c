/*
 * allgather_ranks.h - rank arithmetic of the allgather algorithms, as pure
 * functions that unit tests check for every rank count.
 *
 * Blocks are numbered by rank: block j (count elements of rank j) sits at
 * offset j * blocksize in the receive buffer.  Recursive doubling and ring
 * are engines (collectives/engines/recursive.h, ring.h); Bruck's rounds are
 * here.
 */
#ifndef RCOLL_ALLGATHER_RANKS_H
#define RCOLL_ALLGATHER_RANKS_H

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

#endif
