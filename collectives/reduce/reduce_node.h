/*
 * reduce_node.h - the node-aware reduce schedule that reduce_node_aware.c
 * (one slice per rank of the smallest node) and reduce_node_leader.c (one
 * slice: the node leaders) share.
 */
#ifndef RCOLL_REDUCE_NODE_H
#define RCOLL_REDUCE_NODE_H

#include "coll.h"

/* progress() of the schedule with at most max_slices slices (0: as many
 * as the smallest node has ranks). */
rcoll_status_t rcoll__reduce_node_progress(rcoll_task_t *task, int max_slices);
void rcoll__reduce_node_abort(rcoll_task_t *task);
/* cost() of the schedule with `slices` slices (0: ppn). */
double rcoll__reduce_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn,
                               int slices);

#endif
