/*
 * revoke.c - revoking a communicator after a failure, and what each rank
 * knows of its failed members (docs/reliability.md, "Revoke and shrink").
 *
 * When a collective on comm fails because a peer died or did not answer
 * (PEER_FAILED, TIMEOUT, TRANSPORT), task.c calls rcoll__revoke_on_failure:
 * the communicator is marked revoked with that error and every member not
 * known dead gets a REVOKE message (header only: the error, and the failed
 * world rank if one is known).  A receiver marks the communicator revoked
 * with RCOLL_ERR_PEER_FAILED and notes the named rank in the communicator's
 * failed set.  A revoked communicator's collectives end at once: a new one
 * fails when posted (task.c tests comm->revoked, one flag), a running one
 * when its wait next checks its deadline (every 64 idle polls: also while
 * it waits on shared memory), never in a message callback.  Communicators
 * without the failed rank are not touched.  Nothing is forwarded: a member
 * that misses the originator's REVOKE still learns of the failure itself
 * (transport, deadline) or from another member's REVOKE.
 *
 * The communicators are kept by id here (rcoll_comm_create registers each),
 * so a REVOKE or SHRINK message finds its communicator; one for an unknown
 * communicator, from a non-member, or naming a rank outside it is dropped
 * with one log line.
 */
#include <stdlib.h>
#include <string.h>
#include "ft.h"

#define NO_RANK UINT32_MAX

static struct rcoll_ft *ft_get(rcoll_context_t *ctx)
{
    if (ctx->ft == NULL) {
        ctx->ft = calloc(1, sizeof(*ctx->ft));
        if (ctx->ft != NULL) {
            rcoll_list_init(&ctx->ft->msgs);
        }
    }
    return ctx->ft;
}

rcoll_status_t rcoll__ft_comm_add(rcoll_comm_t *comm)
{
    struct rcoll_ft *ft = ft_get(comm->ctx);
    if (ft == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (ft->ncomms == ft->cap) {
        int cap = ft->cap ? 2 * ft->cap : 16;
        rcoll_ft_comm_t *c = realloc(ft->comms, sizeof(*c) * (size_t)cap);
        if (c == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        ft->comms = c;
        ft->cap = cap;
    }
    ft->comms[ft->ncomms++] = (rcoll_ft_comm_t){ .comm = comm };
    return RCOLL_OK;
}

void rcoll__ft_comm_del(rcoll_comm_t *comm)
{
    struct rcoll_ft *ft = comm->ctx->ft;
    for (int i = 0; ft != NULL && i < ft->ncomms; i++) {
        if (ft->comms[i].comm == comm) {
            free(ft->comms[i].named);
            ft->comms[i] = ft->comms[--ft->ncomms];
            return;
        }
    }
}

void rcoll__ft_msg_drop(rcoll_context_t *ctx, rcoll_ft_msg_t *m)
{
    rcoll_list_del(&m->link);
    ctx->ft->nmsgs--;
    free(m);
}

void rcoll__ft_fini(rcoll_context_t *ctx)
{
    struct rcoll_ft *ft = ctx->ft;
    if (ft == NULL) {
        return;
    }
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ft->msgs) {
        rcoll__ft_msg_drop(ctx, rcoll_container_of(pos, rcoll_ft_msg_t, link));
    }
    for (int i = 0; i < ft->ncomms; i++) {
        free(ft->comms[i].named);
    }
    free(ft->comms);
    free(ft);
    ctx->ft = NULL;
}

static rcoll_ft_comm_t *ft_of(const rcoll_comm_t *comm)
{
    struct rcoll_ft *ft = comm->ctx->ft;
    for (int i = 0; ft != NULL && i < ft->ncomms; i++) {
        if (ft->comms[i].comm == comm) {
            return &ft->comms[i];
        }
    }
    return NULL;
}

rcoll_ft_comm_t *rcoll__ft_find(rcoll_context_t *ctx, uint64_t comm_id)
{
    struct rcoll_ft *ft = ctx->ft;
    for (int i = 0; ft != NULL && i < ft->ncomms; i++) {
        if (ft->comms[i].comm->id == comm_id) {
            return &ft->comms[i];
        }
    }
    return NULL;
}

int rcoll__ft_comm_rank(const rcoll_comm_t *comm, int wr)
{
    for (int r = 0; r < comm->size; r++) {
        if (comm->world_ranks[r] == wr) {
            return r;
        }
    }
    return -1;
}

rcoll_status_t rcoll__ft_send(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                              const void *body, size_t body_len)
{
    uint8_t hdr[RCOLL_WIRE_HDR_SIZE];
    if (wpeer == ctx->rank || ctx->peer_failed[wpeer] != RCOLL_OK) {
        return RCOLL_ERR_PEER_FAILED;
    }
    rcoll_wire_encode(h, hdr);
    return ctx->peer_ops[wpeer]->send(ctx->peer_tl[wpeer], wpeer, hdr, sizeof(hdr), body, body_len);
}

int rcoll__comm_rank_failed(const rcoll_comm_t *comm, int r)
{
    if (comm->ctx->peer_failed[comm->world_ranks[r]] != RCOLL_OK) {
        return 1;
    }
    const rcoll_ft_comm_t *fc = ft_of(comm);
    return fc != NULL && fc->named != NULL && fc->named[r];
}

static void note_failed(rcoll_comm_t *comm, int r)
{
    rcoll_ft_comm_t *fc = ft_of(comm);
    if (fc == NULL || r < 0 || r >= comm->size) {
        return;
    }
    if (fc->named == NULL && (fc->named = calloc((size_t)comm->size, 1)) == NULL) {
        rcoll_error("communicator 0x%llx: out of memory noting rank %d failed",
                    (unsigned long long)comm->id, r);
        return;
    }
    fc->named[r] = 1;
}

/* Hashed ids (top bit: node/rail sub-communicators, creation links) are the
 * core's own; their parent is revoked instead. */
static int revocable(const rcoll_comm_t *comm)
{
    return !(comm->id >> 63);
}

void rcoll__revoke(rcoll_comm_t *comm, rcoll_status_t st, int failed_wrank)
{
    rcoll_context_t *ctx = comm->ctx;
    int fr = failed_wrank >= 0 ? rcoll__ft_comm_rank(comm, failed_wrank) : -1;
    if (fr >= 0) {
        note_failed(comm, fr);
    }
    if (comm->revoked != RCOLL_OK || !revocable(comm)) {
        return;
    }
    comm->revoked = st;
    rcoll_warn("communicator 0x%llx of %d ranks revoked: %s%s; telling its members",
               (unsigned long long)comm->id, comm->size, rcoll_strerror(st),
               fr >= 0 ? " (a member failed)" : "");
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_REVOKE, .version = RCOLL_WIRE_VERSION,
                           .seq = (uint32_t)st, .comm_id = comm->id,
                           .step = fr >= 0 ? (uint32_t)failed_wrank : NO_RANK,
                           .src = (uint32_t)comm->rank };
    for (int r = 0; r < comm->size; r++) {
        if (r != comm->rank) {
            (void)rcoll__ft_send(ctx, comm->world_ranks[r], &h, NULL, 0);   /* best effort */
        }
    }
}

void rcoll__revoke_on_failure(rcoll_task_t *task, rcoll_status_t st)
{
    if (st != RCOLL_ERR_PEER_FAILED && st != RCOLL_ERR_TIMEOUT && st != RCOLL_ERR_TRANSPORT) {
        return;
    }
    rcoll_comm_t *comm = task->comm;
    int failed = -1;
    for (int r = 0; r < comm->size && failed < 0; r++) {
        if (comm->ctx->peer_failed[comm->world_ranks[r]] != RCOLL_OK) {
            failed = comm->world_ranks[r];
        }
    }
    rcoll__revoke(comm, st, failed);
}

void rcoll__revoke_fail_tasks(rcoll_comm_t *comm)
{
    rcoll_context_t *ctx = comm->ctx;
    rcoll_list_t *pos;
again:
    /* Ending a task may end others (a composed one's children): rescan. */
    for (pos = ctx->active.next; pos != &ctx->active; pos = pos->next) {
        rcoll_task_t *t = rcoll_container_of(pos, rcoll_task_t, link);
        if (t->comm == comm && !t->done) {
            rcoll_debug("rcoll_%s sequence %u on communicator 0x%llx ends: the communicator "
                        "is revoked", rcoll_coll_name(t->args.type), t->seq,
                        (unsigned long long)comm->id);
            rcoll_task_fail(t, comm->revoked);
            goto again;
        }
    }
}

void rcoll__revoke_recv(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_ft_comm_t *fc = rcoll__ft_find(ctx, h->comm_id);
    rcoll_comm_t *comm = fc != NULL ? fc->comm : NULL;
    int fr = -1;
    const char *bad = NULL;
    if (comm == NULL || !revocable(comm)) {
        bad = "no such communicator here";
    } else if (rcoll__ft_comm_rank(comm, wpeer) < 0) {
        bad = "the sender is not a member";
    } else if (h->step != NO_RANK && (h->step > INT32_MAX ||
               (fr = rcoll__ft_comm_rank(comm, (int)h->step)) < 0)) {
        bad = "it names a failed rank that is not a member";
    } else if (h->seq == RCOLL_OK || h->seq >= RCOLL_STATUS_LAST) {
        bad = "it carries no error";
    }
    if (bad != NULL) {
        rcoll_warn("dropping a REVOKE from rank %d for communicator 0x%llx: %s", wpeer,
                   (unsigned long long)h->comm_id, bad);
        return;
    }
    if (fr >= 0) {
        note_failed(comm, fr);
    }
    if (comm->revoked != RCOLL_OK) {
        return;
    }
    comm->revoked = RCOLL_ERR_PEER_FAILED;
    if (fr >= 0) {
        rcoll_warn("communicator 0x%llx revoked by world rank %d (%s; world rank %d failed)",
                   (unsigned long long)comm->id, wpeer, rcoll_strerror((rcoll_status_t)h->seq),
                   (int)h->step);
    } else {
        rcoll_warn("communicator 0x%llx revoked by world rank %d (%s)",
                   (unsigned long long)comm->id, wpeer, rcoll_strerror((rcoll_status_t)h->seq));
    }
}

RCOLL_API int rcoll_comm_failed(const rcoll_comm_t *comm, int *ranks, int max)
{
    if (comm == NULL) {
        return 0;
    }
    int count = 0;
    for (int r = 0; r < comm->size; r++) {
        if (rcoll__comm_rank_failed(comm, r)) {
            if (ranks != NULL && count < max) {
                ranks[count] = r;
            }
            count++;
        }
    }
    return count;
}
