/*
 * compose_cost.h - pricing a stream of node-local children (compose.h), for
 * the cost() of the node-aware algorithms that pipeline slices through one.
 *
 * A stream's children overlap, so s of them do not take s times one: what
 * matters is how soon after one child the next one can end (its spacing).
 *   - On shared memory the children take turns on the node's segment: one
 *     after another, the spacing is a whole child.
 *   - Point to point (RCOLL_SHM=0, and what rcoll_sim runs), up to
 *     RCOLL_COMPOSE_WINDOW children are in flight at once, so a child ends
 *     every t/WINDOW at best; but every rank has one send port, and
 *     the children take turns on it: a child keeps each port busy for its
 *     algorithm's port() (coll.h; a binomial tree's p - 1 messages among p
 *     ranks, or a scatter-based algorithm's blocks), or its whole cost where
 *     it has none.  The spacing is the larger of the two.
 * rcoll_sim (tools/rcoll_sim) checks the prices built on it against the
 * schedules they describe; docs/scaling.md, "Simulated schedules".
 */
#ifndef RCOLL_COMPOSE_COST_H
#define RCOLL_COMPOSE_COST_H

#include "coll.h"
#include "engines/compose.h"

/* Spacing of a stream of children that each take t_child alone and keep
 * each send port busy for `port` (rcoll_select_best_cost_port), under the node's
 * model (node->shm: the children are shm collectives). */
static inline double rcoll_compose_cost_spacing(const rcoll_model_t *node, double t_child,
                                                double port)
{
    if (node->shm) {
        return t_child;
    }
    double window = t_child / RCOLL_COMPOSE_WINDOW;
    return port > window ? port : window;
}

/*
 * The pipeline of the node-aware reduce and allreduce: upstream child k of
 * s ends at t_up + k c_up, then its slice's rail runs for t_rail, and
 * downstream child k starts once rail k is back and c_down after
 * downstream child k-1.  When the last downstream child starts: rail k is
 * back at t_up + t_rail + k c_up, and (s-1-k) c_down after that is linear
 * in k, so the latest is at k = 0 or k = s-1.
 */
static inline double rcoll_compose_cost_last_start(double t_up, double c_up, double t_rail,
                                                   double c_down, int s)
{
    return t_up + t_rail + (s - 1) * (c_up > c_down ? c_up : c_down);
}

#endif
