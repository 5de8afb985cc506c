/*
 * allgather.c - the allgather algorithm table.  The first entry is the
 * default for small blocks; the selector scores all of them.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_allgather_recursive_doubling;
extern const rcoll_alg_t rcoll_allgather_bruck;
extern const rcoll_alg_t rcoll_allgather_ring;
extern const rcoll_alg_t rcoll_allgather_shm;
extern const rcoll_alg_t rcoll_allgather_node_aware;

const rcoll_alg_t *const rcoll_allgather_algs[] = {
    &rcoll_allgather_recursive_doubling,
    &rcoll_allgather_bruck,
    &rcoll_allgather_ring,
    &rcoll_allgather_shm,
    &rcoll_allgather_node_aware,
    NULL
};
