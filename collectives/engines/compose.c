/* compose.c - child collectives on sub-communicators, in order (compose.h). */
#include "compose.h"
#include "coll_comm.h"

rcoll_status_t rcoll_compose_enter(rcoll_task_t *task, rcoll_compose_t *c)
{
    rcoll_coll_comm_t *cc = rcoll_coll_comm(task->comm);
    if (c->ticket == 0) {
        c->ticket = ++cc->compose_next;
    }
    if (!c->entered) {
        if (cc->compose_done + 1 != c->ticket) {
            return RCOLL_INPROGRESS;       /* an earlier composed collective here runs */
        }
        c->entered = 1;
        rcoll_status_t st = rcoll_comm_node_subcomms(task->comm);
        if (st != RCOLL_OK) {
            rcoll_compose_leave(task, c);
            return st;
        }
    }
    return RCOLL_OK;
}

void rcoll_compose_leave(rcoll_task_t *task, rcoll_compose_t *c)
{
    rcoll_coll_comm_t *cc = rcoll_coll_comm(task->comm);
    if (c->ticket == 0 || c->left) {
        return;
    }
    c->left = 1;
    if (!c->entered && c->ticket != cc->compose_done + 1) {
        /* failed before its turn (its deadline, while an earlier one ran):
         * the later ones must not wait for it, so it is passed over when
         * its turn comes (compose_dead: bit i = turn compose_done + 2 + i;
         * beyond 64 turns ahead the later ones are left to their deadline) */
        uint32_t i = c->ticket - cc->compose_done - 2;
        if (i < 64) {
            cc->compose_dead |= 1ULL << i;
        }
        return;
    }
    cc->compose_done++;
    while (cc->compose_dead & 1) {          /* bit 0 is now turn compose_done + 1 */
        cc->compose_done++;
        cc->compose_dead >>= 1;
    }
    cc->compose_dead >>= 1;
}

void rcoll_compose_post(rcoll_task_t *task, rcoll_compose_t *c, rcoll_compose_stream_t *s,
                        rcoll_comm_t *sub, const rcoll_coll_args_t *args)
{
    rcoll_task_t **slot = &s->child[s->posted % RCOLL_COMPOSE_WINDOW];
    rcoll_status_t st = rcoll_task_child_post(task, sub, args, slot);
    if (st != RCOLL_OK) {
        c->error = c->error != RCOLL_OK ? c->error : st;
        return;
    }
    s->posted++;
}

int rcoll_compose_reap(rcoll_task_t *task, rcoll_compose_t *c, rcoll_compose_stream_t *s)
{
    while (s->ended < s->posted) {
        rcoll_task_t **slot = &s->child[s->ended % RCOLL_COMPOSE_WINDOW];
        rcoll_status_t st = rcoll_task_child_test(task, slot, s->step);
        if (st == RCOLL_INPROGRESS) {
            break;
        }
        if (st != RCOLL_OK && c->error == RCOLL_OK) {
            c->error = st;
        }
        s->ended++;
    }
    return s->ended;
}

void rcoll_compose_abort(rcoll_task_t *task, rcoll_compose_stream_t *s)
{
    for (; s->ended < s->posted; s->ended++) {
        rcoll_task_child_abort(task, &s->child[s->ended % RCOLL_COMPOSE_WINDOW], s->step);
    }
}
