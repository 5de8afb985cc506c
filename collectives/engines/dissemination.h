/*
 * dissemination.h - rounds at distance d = 1, 2, 4, ... < p, any p: the
 * schedule of the dissemination barrier and of Bruck's allgather.
 *
 * Round k (d = 2^k) posts its messages through the algorithm's round
 * function, then waits for them before the next round.  Inline, so the round
 * function of each algorithm is called directly.
 */
#ifndef RCOLL_ENGINE_DISSEMINATION_H
#define RCOLL_ENGINE_DISSEMINATION_H

#include "coll.h"

typedef struct {
    int d;          /* distance of the current round */
    int k;          /* round */
    int posted;     /* round k's messages are posted */
} rcoll__dissem_t;

typedef rcoll_status_t (*rcoll__dissem_round_fn)(rcoll_task_t *task, int d, int k, void *arg);

static inline void rcoll__dissem_init(rcoll__dissem_t *s)
{
    s->d = 1;
    s->k = 0;
    s->posted = 0;
}

/* RCOLL_OK once every round is done, RCOLL_INPROGRESS while one is pending,
 * or the first error. */
static inline rcoll_status_t rcoll__dissem_progress(rcoll_task_t *task, rcoll__dissem_t *s,
                                                    rcoll__dissem_round_fn round, void *arg)
{
    int p = rcoll_task_size(task);
    rcoll_status_t st;

    while (s->d < p) {
        if (!s->posted) {
            if ((st = round(task, s->d, s->k, arg)) != RCOLL_OK)
                return st;
            s->posted = 1;
        }
        if ((st = rcoll_task_test(task)) != RCOLL_OK)
            return st;
        s->posted = 0;
        s->d <<= 1;
        s->k++;
    }
    return RCOLL_OK;
}

#endif
