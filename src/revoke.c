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
 * so a REVOKE or SHRINK message finds its communicator.  One from a
 * non-member, naming a rank outside it or carrying no error is dropped with
 * one log line; so is one whose id cannot be a communicator's.  One for a
 * communicator not made here yet (a member may finish creating it later
 * than another revokes it) is kept, up to RCOLL_FT_MAX_EARLY, and applied
 * when it is made.
 */
#include <stdlib.h>
#include <string.h>
#include "ft.h"
#include "liveness.h"
#include "whereis.h"

#define NO_RANK UINT32_MAX

static void apply_revoke(rcoll_comm_t *comm, int wpeer, uint32_t err, uint32_t failed);

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
    for (int i = 0; i < ft->nearly; i++) {
        if (ft->early[i].comm_id == comm->id) {
            apply_revoke(comm, ft->early[i].wpeer, ft->early[i].err, ft->early[i].failed);
            ft->early[i--] = ft->early[--ft->nearly];
        }
    }
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

/* The world rank of comm's first member known to have failed: marked so
 * (ctx->peer_failed), else known dead but not yet marked (the launcher's
 * report not yet taken, or its process on this node gone:
 * rcoll_liveness_gone, a system call per member on this node).  -1 if none.
 * A collective can fail with PEER_FAILED before this rank marks the dead
 * one: a neighbour that learnt first gave up on the exchange it shared with
 * us.  Naming the dead rank then is what lets every member say who died,
 * rather than only who revoked (CI: dead_check, 8 ranks over UCX sm).
 * For the failure path only. */
static int failed_member(rcoll_comm_t *comm)
{
    rcoll_context_t *ctx = comm->ctx;
    for (int r = 0; r < comm->size; r++) {
        if (ctx->peer_failed[comm->world_ranks[r]] != RCOLL_OK) {
            return comm->world_ranks[r];
        }
    }
    for (int r = 0; r < comm->size; r++) {
        int wr = comm->world_ranks[r];
        if (wr != ctx->rank && rcoll_liveness_gone(ctx, wr)) {
            return wr;
        }
    }
    return -1;
}

void rcoll__revoke_on_failure(rcoll_task_t *task, rcoll_status_t st)
{
    if (st != RCOLL_ERR_PEER_FAILED && st != RCOLL_ERR_TRANSPORT &&
        (st != RCOLL_ERR_TIMEOUT || !task->ctx->config.revoke_on_timeout)) {
        return;
    }
    rcoll__revoke(task->comm, st, failed_member(task->comm));
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
            const rcoll_ft_comm_t *fc = ft_of(comm);
            if (fc != NULL && fc->revoke_err == RCOLL_ERR_TIMEOUT && t->alg != NULL) {
                /* Another member timed out: this rank, told early, still says
                 * who had not entered (docs/reliability.md, where is everyone). */
                char where[1024];
                rcoll_whereis_report(t, where, sizeof(where));
                rcoll_error("%s", where);
            }
            rcoll_task_fail(t, comm->revoked);
            goto again;
        }
    }
}

/* A REVOKE of comm from world rank wpeer (err, failed world rank or NO_RANK):
 * checked as hostile input, then applied. */
static void apply_revoke(rcoll_comm_t *comm, int wpeer, uint32_t err, uint32_t failed)
{
    int fr = -1;
    const char *bad = NULL;
    if (!revocable(comm)) {
        bad = "not a communicator of the API";
    } else if (rcoll__ft_comm_rank(comm, wpeer) < 0) {
        bad = "the sender is not a member";
    } else if (failed != NO_RANK && (failed > INT32_MAX ||
               (fr = rcoll__ft_comm_rank(comm, (int)failed)) < 0)) {
        bad = "it names a failed rank that is not a member";
    } else if (err == RCOLL_OK || err >= RCOLL_STATUS_LAST) {
        bad = "it carries no error";
    }
    if (bad != NULL) {
        rcoll_warn("dropping a REVOKE from rank %d for communicator 0x%llx: %s", wpeer,
                   (unsigned long long)comm->id, bad);
        return;
    }
    const char *seen = "";
    if (fr < 0 && (err == RCOLL_ERR_PEER_FAILED || err == RCOLL_ERR_TRANSPORT) &&
        comm->revoked == RCOLL_OK) {
        /* The sender did not know who failed; this rank may (failed_member). */
        int wr = failed_member(comm);
        if (wr >= 0 && wr != wpeer) {
            failed = (uint32_t)wr;
            fr = rcoll__ft_comm_rank(comm, wr);
            seen = ", as seen here";
        }
    }
    if (fr >= 0) {
        note_failed(comm, fr);
    }
    if (comm->revoked != RCOLL_OK) {
        return;
    }
    comm->revoked = RCOLL_ERR_PEER_FAILED;
    rcoll_ft_comm_t *fc = ft_of(comm);
    if (fc != NULL) {
        fc->revoke_err = err;
    }
    if (fr >= 0) {
        rcoll_warn("communicator 0x%llx revoked by world rank %d (%s; world rank %d failed%s)",
                   (unsigned long long)comm->id, wpeer, rcoll_strerror((rcoll_status_t)err),
                   (int)failed, seen);
    } else {
        rcoll_warn("communicator 0x%llx revoked by world rank %d (%s)",
                   (unsigned long long)comm->id, wpeer, rcoll_strerror((rcoll_status_t)err));
    }
}

void rcoll__revoke_recv(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_ft_comm_t *fc = rcoll__ft_find(ctx, h->comm_id);
    if (fc != NULL) {
        apply_revoke(fc->comm, wpeer, h->seq, h->step);
        return;
    }
    struct rcoll_ft *ft = ft_get(ctx);
    if (h->comm_id != 1 && !rcoll__comm_id_valid(h->comm_id)) {
        rcoll_warn("dropping a REVOKE from rank %d for communicator 0x%llx: no such "
                   "communicator here", wpeer, (unsigned long long)h->comm_id);
    } else if (ft == NULL || ft->nearly == RCOLL_FT_MAX_EARLY) {
        rcoll_warn("dropping a REVOKE from rank %d for communicator 0x%llx: not made here, and "
                   "%d such revokes are kept already", wpeer, (unsigned long long)h->comm_id,
                   RCOLL_FT_MAX_EARLY);
    } else {
        rcoll_debug("keeping a REVOKE from rank %d for communicator 0x%llx, not made here yet",
                    wpeer, (unsigned long long)h->comm_id);
        int i = ft->nearly++;
        ft->early[i].comm_id = h->comm_id;
        ft->early[i].wpeer = wpeer;
        ft->early[i].err = h->seq;
        ft->early[i].failed = h->step;
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
