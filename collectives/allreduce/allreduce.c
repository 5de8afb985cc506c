/*
 * allreduce.c - the allreduce algorithm table.  The first entry is the
 * latency algorithm the selector falls back to.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_allreduce_recursive_doubling;
extern const rcoll_alg_t rcoll_allreduce_ring;
extern const rcoll_alg_t rcoll_allreduce_rabenseifner;
extern const rcoll_alg_t rcoll_allreduce_reduce_bcast;
extern const rcoll_alg_t rcoll_allreduce_shm;
extern const rcoll_alg_t rcoll_allreduce_node_aware;
extern const rcoll_alg_t rcoll_allreduce_node_leader;

const rcoll_alg_t *const rcoll_allreduce_algs[] = {
    &rcoll_allreduce_recursive_doubling,
    &rcoll_allreduce_ring,
    &rcoll_allreduce_rabenseifner,
    &rcoll_allreduce_reduce_bcast,
    &rcoll_allreduce_shm,
    &rcoll_allreduce_node_aware,
    &rcoll_allreduce_node_leader,
    NULL
};
