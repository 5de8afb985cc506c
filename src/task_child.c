/*
 * task_child.c - collectives that a composed (node-aware) algorithm posts on
 * its communicator's sub-communicators (coll.h, "composing collectives").
 *
 * A child is an ordinary task: posted with the selector's choice for its
 * sub-communicator, put on the context's active list and advanced by every
 * progress call like the collectives the user posted.  Its parent only
 * looks at it: the parent's progress() tests it, counts its progress as its
 * own (so RCOLL_TIMEOUT, which watches the task the caller waits for, sees
 * the parent move while a child does) and releases it when it ends.  The
 * parent is never waited for by a child, so no progress() call blocks.
 */
#include <stdio.h>
#include "core.h"

rcoll_status_t rcoll_task_child_post(rcoll_task_t *parent, rcoll_comm_t *sub,
                                     const rcoll_coll_args_t *args, rcoll_task_t **child)
{
    rcoll_status_t st = rcoll_task_post(sub, args, child);
    if (st != RCOLL_OK) {
        rcoll_error("%s (algorithm %s, sequence %u): could not post its %s on sub-communicator "
                    "0x%llx: %s", rcoll_coll_name(parent->args.type), parent->alg->name,
                    parent->seq, rcoll_coll_name(args->type), (unsigned long long)sub->id,
                    rcoll_strerror(st));
        *child = NULL;
        return st;
    }
    parent->progress_count++;
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_child_test(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    rcoll_task_t *c = *child;
    if (c == NULL) {
        return RCOLL_OK;
    }
    if (!c->done) {
        /* a child's own deadline check never runs (nobody waits for it), so
         * progress_seen is free to mean "what the parent saw" */
        if (c->progress_count != c->progress_seen) {
            c->progress_seen = c->progress_count;
            parent->progress_count++;
        }
        return RCOLL_INPROGRESS;
    }
    rcoll_status_t st = c->status;
    if (st != RCOLL_OK) {
        rcoll_error("%s (algorithm %s, communicator 0x%llx, sequence %u) failed at step '%s': "
                    "its %s (algorithm %s) on sub-communicator 0x%llx of %d ranks returned %s",
                    rcoll_coll_name(parent->args.type), parent->alg->name,
                    (unsigned long long)parent->comm->id, parent->seq, step,
                    rcoll_coll_name(c->args.type), c->alg ? c->alg->name : "-",
                    (unsigned long long)c->comm->id, c->comm->size, rcoll_strerror(st));
    }
    rcoll_task_release(c);
    *child = NULL;
    parent->progress_count++;
    return st;
}

void rcoll_task_child_abort(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    rcoll_task_t *c = *child;
    if (c == NULL) {
        return;
    }
    if (!c->done) {
        const rcoll_p2p_op_t *op = rcoll_task_first_pending(c);
        char waiting[200];
        if (op != NULL) {
            snprintf(waiting, sizeof(waiting), "at step %u, waiting for rank %d (world rank %d): "
                     "%s %zu bytes (%s)", op->step, op->peer, op->wpeer,
                     op->kind == RCOLL_P2P_SEND ? "send of" : "receive of", op->len,
                     rcoll_p2p_state_name(op));
        } else if (c->wait_peer >= 0) {
            snprintf(waiting, sizeof(waiting), "at step %u, waiting for rank %d (world rank %d) "
                     "in shared memory", c->wait_step, c->wait_peer,
                     c->comm->world_ranks[c->wait_peer]);
        } else {
            snprintf(waiting, sizeof(waiting), "in phase %d with no message pending", c->phase);
        }
        rcoll_error("%s (algorithm %s, communicator 0x%llx, sequence %u) abandoned at step '%s': "
                    "its %s (algorithm %s) on sub-communicator 0x%llx of %d ranks, sequence %u, "
                    "was %s", rcoll_coll_name(parent->args.type), parent->alg->name,
                    (unsigned long long)parent->comm->id, parent->seq, step,
                    rcoll_coll_name(c->args.type), c->alg->name, (unsigned long long)c->comm->id,
                    c->comm->size, c->seq, waiting);
        rcoll_task_fail(c, RCOLL_ERR_TIMEOUT);
    }
    rcoll_task_release(c);
    *child = NULL;
}
