/*
 * reduce.c - the reduce algorithm table.  The first entry is the latency
 * algorithm the selector falls back to.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_reduce_binomial;
extern const rcoll_alg_t rcoll_reduce_reduce_scatter_gather;
extern const rcoll_alg_t rcoll_reduce_shm;
extern const rcoll_alg_t rcoll_reduce_node_aware;
extern const rcoll_alg_t rcoll_reduce_node_leader;

const rcoll_alg_t *const rcoll_reduce_algs[] = {
    &rcoll_reduce_binomial,
    &rcoll_reduce_reduce_scatter_gather,
    &rcoll_reduce_shm,
    &rcoll_reduce_node_aware,
    &rcoll_reduce_node_leader,
    NULL
};
