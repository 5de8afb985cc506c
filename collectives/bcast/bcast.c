/*
 * bcast.c - the broadcast algorithm table.  The first entry is the default
 * for small messages; the selector scores all of them.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_bcast_binomial;
extern const rcoll_alg_t rcoll_bcast_scatter_allgather;
extern const rcoll_alg_t rcoll_bcast_chain;
extern const rcoll_alg_t rcoll_bcast_shm;
extern const rcoll_alg_t rcoll_bcast_node_aware;

const rcoll_alg_t *const rcoll_bcast_algs[] = {
    &rcoll_bcast_binomial,
    &rcoll_bcast_scatter_allgather,
    &rcoll_bcast_chain,
    &rcoll_bcast_shm,
    &rcoll_bcast_node_aware,
    NULL
};
