/*
 * engine.h - what every engine (collectives/engines/) and the algorithms
 * composed from them share: posting a message unless it is empty, scratch
 * with a logged failure, the element size.
 *
 * An engine is a small nonblocking state machine over a struct that the
 * algorithm embeds in its own task state (RCOLL_ALG_STATE_SIZE bytes): an
 * init function fills it, a progress function returns RCOLL_INPROGRESS,
 * RCOLL_OK once its part of the collective is done on this rank, or an
 * error.  The rank arithmetic behind each engine is pure functions in
 * allreduce/reduction_math.h, checked by test/unit/test_coll_engines.c and
 * test_coll_reduction_math.c.
 *
 * The engines:
 *   fold.h       non-powers of two: extra ranks hand their data in and get
 *                the result back
 *   recursive.h  recursive halving, recursive doubling and the binomial
 *                gather over the p2 ranks that remain after the fold
 *   ring.h       ring reduce-scatter / allgather passes, segmented
 *   binomial.h   binomial reduce, broadcast and scatter
 *   shm/shm_pipe.h  the shared-memory chunk pipeline driver
 *
 * Zero-length messages are never posted: both sides compute the same
 * lengths from the same pure functions, so both skip them.
 */
#ifndef RCOLL_ENGINE_H
#define RCOLL_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "coll.h"
#include "allreduce/reduction_math.h"

/* Post a send / receive of len bytes unless len is 0. */
static inline rcoll_status_t rcoll__send_nz(rcoll_task_t *task, int peer, uint32_t step,
                                            const void *buf, size_t len)
{
    return len ? rcoll_task_send(task, peer, step, buf, len) : RCOLL_OK;
}

static inline rcoll_status_t rcoll__recv_nz(rcoll_task_t *task, int peer, uint32_t step,
                                            void *buf, size_t len)
{
    return len ? rcoll_task_recv(task, peer, step, buf, len) : RCOLL_OK;
}

/* Scratch of size bytes (at least 1), logging which algorithm lacked memory. */
void *rcoll__scratch(rcoll_task_t *task, size_t size, const char *what);

/* Element size of the task's dtype. */
static inline size_t rcoll__esize(const rcoll_task_t *task)
{
    return rcoll_datatype_size(task->args.dtype);
}

#endif
