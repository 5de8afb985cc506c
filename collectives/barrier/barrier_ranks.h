/*
 * barrier_ranks.h - rank arithmetic of the dissemination barrier.
 * In round k (d = 2^k, d < p) rank j signals j + d and waits for j - d
 * (mod p); after ceil(log2 p) rounds every rank has heard, directly or
 * through others, from every other rank.
 */
#ifndef RCOLL_BARRIER_RANKS_H
#define RCOLL_BARRIER_RANKS_H

static inline int rcoll_bar_send_peer(int rank, int d, int p)
{
    return (rank + d) % p;
}

static inline int rcoll_bar_recv_peer(int rank, int d, int p)
{
    return ((rank - d) % p + p) % p;
}

#endif
