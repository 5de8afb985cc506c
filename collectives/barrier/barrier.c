/*
 * barrier.c - the barrier algorithm table.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_barrier_dissemination;
extern const rcoll_alg_t rcoll_barrier_shm;
extern const rcoll_alg_t rcoll_barrier_node_aware;

const rcoll_alg_t *const rcoll_barrier_algs[] = {
    &rcoll_barrier_dissemination,
    &rcoll_barrier_shm,
    &rcoll_barrier_node_aware,
    NULL
};
