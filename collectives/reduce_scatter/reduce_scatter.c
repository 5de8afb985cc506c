/*
 * reduce_scatter.c - the reduce_scatter algorithm table.  The first entry
 * is the latency algorithm the selector falls back to.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_reduce_scatter_recursive_halving;
extern const rcoll_alg_t rcoll_reduce_scatter_ring;
extern const rcoll_alg_t rcoll_reduce_scatter_shm;

const rcoll_alg_t *const rcoll_reduce_scatter_algs[] = {
    &rcoll_reduce_scatter_recursive_halving,
    &rcoll_reduce_scatter_ring,
    &rcoll_reduce_scatter_shm,
    NULL
};
