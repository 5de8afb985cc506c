/*
 * coll_comm.h - what the collectives keep per communicator, in the
 * communicator's coll_state (coll.h): the selector's remembered choices and
 * the shared-memory algorithms' state.  The core only zeroes it when the
 * communicator is made and calls rcoll_coll_comm_fini when it goes.
 */
#ifndef RCOLL_COLL_COMM_H
#define RCOLL_COLL_COMM_H

#include "coll.h"

#define RCOLL_SEL_CACHE 16     /* selector choices remembered per communicator */

/* One remembered choice of rcoll_select. */
typedef struct {
    unsigned           gen;     /* config gen + 1 when valid, 0 empty */
    int                coll;
    size_t             bytes;
    const rcoll_alg_t *alg;
} rcoll_sel_entry_t;

struct rcoll__shm;

typedef struct {
    /* The selector's last choices by (collective, bytes): the choice is a
     * pure function of them and the configuration. */
    rcoll_sel_entry_t  sel_cache[RCOLL_SEL_CACHE];
    /* The shared-memory segment and its protocol state (shm/shm.h), made
     * by the first shm collective; NULL until then. */
    struct rcoll__shm *shm;
    /* The turns of the composed (node-aware) collectives on this
     * communicator (engines/compose.h): tickets drawn, turns ended, and
     * turns to pass over (bit i: turn compose_done + 1 + i failed before
     * it came). */
    uint32_t           compose_next, compose_done;
    uint64_t           compose_dead;
} rcoll_coll_comm_t;

_Static_assert(sizeof(rcoll_coll_comm_t) <= RCOLL_COMM_COLL_STATE_SIZE,
               "rcoll_coll_comm_t does not fit the communicator's coll_state");

static inline rcoll_coll_comm_t *rcoll_coll_comm(rcoll_comm_t *comm)
{
    return (rcoll_coll_comm_t *)(void *)comm->coll_state;
}

#endif
