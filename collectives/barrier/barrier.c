/*
 * barrier.c - the barrier algorithm table.
 */
#include "coll.h"

extern const rcoll_alg_t rcoll_barrier_dissemination;

const rcoll_alg_t *const rcoll_barrier_algs[] = {
    &rcoll_barrier_dissemination,
    NULL
};
