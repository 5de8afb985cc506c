/*
 * compose.h - the engine of the node-aware algorithms: collectives posted as
 * child tasks on the communicator's sub-communicators (node_comm, rail_comm;
 * coll.h), driven without blocking, in a fixed order.
 *
 * Ordering.  A child takes its sub-communicator's next sequence number when
 * it is posted (and a shm child the next turn on the node's segment), so
 * every member of a sub-communicator must post its children in the same
 * order.  Within one composed collective the algorithm's schedule fixes the
 * order.  Between two composed collectives on the same communicator (e.g.
 * two rcoll_iallreduce in flight) it would depend on timing, so they take
 * turns: each draws a ticket when posted (its first progress call, in the
 * order the program posts them, the same on every rank) and posts its first
 * child only once the one before has ended here (rcoll_compose_enter).
 *
 * Streams.  A stream is a sequence of children posted in order, at most
 * RCOLL_COMPOSE_WINDOW in flight, ended in order (a child that ends before
 * an older one waits for it to be counted).  An algorithm has one or two.
 *
 * Errors.  A child's error is recorded (the first one wins) and no child is
 * posted after it; the algorithm returns it only once its children in
 * flight have ended, so that a failing parent never releases a child that
 * the progress loop may be about to visit.  A parent that fails otherwise
 * (its RCOLL_TIMEOUT, outside the progress loop) ends its children in its
 * abort hook (rcoll_compose_abort).
 */
#ifndef RCOLL_COMPOSE_H
#define RCOLL_COMPOSE_H

#include "coll.h"

#define RCOLL_COMPOSE_WINDOW 4

typedef struct {
    rcoll_task_t *child[RCOLL_COMPOSE_WINDOW];   /* child j at j % WINDOW */
    int           posted, ended;
    const char   *step;                          /* for messages */
} rcoll_compose_stream_t;

typedef struct {
    uint32_t       ticket;     /* this collective's turn on the communicator, from 1 */
    int            entered, left;
    rcoll_status_t error;      /* the first child's error */
} rcoll_compose_t;

/* RCOLL_INPROGRESS until it is this collective's turn; then RCOLL_OK (the
 * sub-communicators are made) or an error. */
rcoll_status_t rcoll_compose_enter(rcoll_task_t *task, rcoll_compose_t *c);

/* The collective has ended here (success or not): the next may start. */
void rcoll_compose_leave(rcoll_task_t *task, rcoll_compose_t *c);

static inline void rcoll_compose_stream_init(rcoll_compose_stream_t *s, const char *step)
{
    s->posted = s->ended = 0;
    s->step = step;
}

/* 1 if another child may be posted on s now. */
static inline int rcoll_compose_room(const rcoll_compose_t *c, const rcoll_compose_stream_t *s)
{
    return c->error == RCOLL_OK && s->posted - s->ended < RCOLL_COMPOSE_WINDOW;
}

/* Post the next child of s (the caller checked rcoll_compose_room). */
void rcoll_compose_post(rcoll_task_t *task, rcoll_compose_t *c, rcoll_compose_stream_t *s,
                        rcoll_comm_t *sub, const rcoll_coll_args_t *args);

/* Count the children of s that have ended, in order: returns how many have
 * (s->ended); errors go to c->error. */
int rcoll_compose_reap(rcoll_task_t *task, rcoll_compose_t *c, rcoll_compose_stream_t *s);

/* The parent's abort hook: end every child of s still in flight. */
void rcoll_compose_abort(rcoll_task_t *task, rcoll_compose_stream_t *s);

/* Pure: the bounds of slice k of n elements cut into s slices (the first
 * n % s slices one element longer). */
static inline void rcoll_compose_slice(size_t n, int s, int k, size_t *off, size_t *len)
{
    size_t q = n / (size_t)s, r = n % (size_t)s, uk = (size_t)k;
    *off = uk * q + (uk < r ? uk : r);
    *len = q + (uk < r);
}

#endif
