/*
 * whereis.c - the entries of the node's "where am I" table and the timeout
 * report built from it (whereis.h, docs/reliability.md).  The table itself
 * is made and mapped at init by whereis_table.c; ranks on other nodes are
 * asked by whereis_remote.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "whereis.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rcoll_whereis_comm_attach(rcoll_comm_t *comm)
{
    rcoll_where_rank_t *me = comm->ctx->where_me;
    for (int i = 0; i < RCOLL_WHERE_NCOMM; i++) {
        if (atomic_load(&me->comms[i].comm_id) == 0) {
            atomic_store(&me->comms[i].entered, 0);
            atomic_store(&me->comms[i].comm_id, comm->id);
            comm->where = &me->comms[i];
            return;
        }
    }
    /* all slots taken: publish into a slot of its own that nobody reads */
    comm->where = (void *)comm->where_private;
}

void rcoll_whereis_comm_detach(rcoll_comm_t *comm)
{
    if (comm->where != NULL && comm->where != (void *)comm->where_private) {
        atomic_store(&((rcoll_where_comm_t *)comm->where)->comm_id, 0);
    }
    comm->where = NULL;
}

void rcoll_whereis_seen(rcoll_context_t *ctx, double now)
{
    atomic_store_explicit(&ctx->where_me->seen_ns, (uint64_t)(now * 1e9), memory_order_relaxed);
}

const rcoll_where_rank_t *rcoll__whereis_local(const rcoll_context_t *ctx, int wr)
{
    const struct rcoll_whereis *w = ctx->whereis;
    if (wr == ctx->rank) {
        return ctx->where_me;
    }
    if (w == NULL || w->local_of == NULL || wr < 0 || wr >= ctx->size || w->local_of[wr] < 0) {
        return NULL;
    }
    return &w->ranks[w->local_of[wr]];
}

int64_t rcoll_whereis_pid(const rcoll_context_t *ctx, int wrank)
{
    const struct rcoll_whereis *w = ctx->whereis;
    if (w == NULL || w->local_of == NULL || wrank < 0 || wrank >= ctx->size || w->local_of[wrank] < 0) {
        return -1;
    }
    return atomic_load_explicit(&w->ranks[w->local_of[wrank]].pid, memory_order_relaxed);
}

static uint64_t slot_of(const rcoll_where_rank_t *r, uint64_t comm_id)
{
    for (int i = 0; i < RCOLL_WHERE_NCOMM; i++) {
        if (atomic_load_explicit(&r->comms[i].comm_id, memory_order_relaxed) == comm_id) {
            return atomic_load_explicit(&r->comms[i].entered, memory_order_relaxed);
        }
    }
    return 0;
}

/* What rank entry r, which has not entered the collective, does instead. */
static void doing(const rcoll_context_t *ctx, const rcoll_where_rank_t *r, uint64_t comm_id,
                  char *out, size_t len)
{
    if (atomic_load(&r->pid) == 0) {
        snprintf(out, len, "gone from rcoll (finalized, never initialised, or without this node's table)");
        return;
    }
    if (!atomic_load(&r->inside)) {
        uint64_t seen = atomic_load(&r->seen_ns);
        if (seen == 0) {
            snprintf(out, len, "not in rcoll (never seen waiting in it)");
        } else {
            snprintf(out, len, "not in rcoll (last seen waiting in it %.1f s ago)",
                     (double)(now_ns() - seen) / 1e9);
        }
        return;
    }
    /* In rcoll: a collective on another communicator that this rank has
     * not entered is what it waits in. */
    for (int i = 0; i < RCOLL_WHERE_NCOMM; i++) {
        uint64_t id = atomic_load(&r->comms[i].comm_id), e = atomic_load(&r->comms[i].entered);
        if (id == 0 || id == comm_id || e == 0 || slot_of(ctx->where_me, id) >= e) {
            continue;
        }
        snprintf(out, len, "in rcoll_%s sequence %llu on communicator 0x%llx",
                 rcoll_coll_name((rcoll_coll_type_t)(e & 0xff)), (unsigned long long)((e >> 8) - 1),
                 (unsigned long long)id);
        return;
    }
    snprintf(out, len, "waiting in rcoll on another collective");
}

void rcoll_whereis_report(const rcoll_task_t *task, char *buf, size_t len)
{
    const rcoll_comm_t *comm = task->comm;
    const rcoll_context_t *ctx = task->ctx;
    const char *coll = rcoll_coll_name(task->args.type);
    size_t off = 0;
    int missing = 0, entered = 1, other = 0, unknown = 0;
    const int list_max = 8;

#define ADD(...) do { if (off < len) off += (size_t)snprintf(buf + off, len - off, __VA_ARGS__); } while (0)
    ADD("where is everyone for rcoll_%s sequence %u on communicator 0x%llx:", coll, task->seq,
        (unsigned long long)comm->id);
    rcoll_where_remote_t *rem = rcoll__whereis_ask(task->ctx, comm, task->seq);
    char why[96] = "", why_q[96];
    for (int q = 0; q < comm->size; q++) {
        int wq = comm->world_ranks[q];
        if (q == comm->rank) {
            continue;
        }
        rcoll_where_rank_t tmp;
        const rcoll_where_rank_t *r;
        if (ctx->node_of[wq] == ctx->node_of[ctx->rank]) {
            r = rcoll__whereis_local(ctx, wq);
            unknown += r == NULL;
        } else {
            r = rcoll__whereis_remote(rem, q, &tmp, why_q, sizeof(why_q));
            if (r == NULL && other++ == 0) {
                memcpy(why, why_q, sizeof(why));
            }
        }
        if (r == NULL) {
            continue;
        }
        uint64_t e = slot_of(r, comm->id);
        uint32_t eseq = e ? (uint32_t)((e >> 8) - 1) : 0;
        int32_t ahead = (int32_t)(eseq - task->seq);    /* sequence numbers wrap */
        char what[160];
        if (e != 0 && ahead > 0) {
            entered++;
            continue;
        }
        if (e != 0 && ahead == 0) {
            if ((e & 0xff) == (uint64_t)task->args.type) {
                entered++;
                continue;
            }
            snprintf(what, sizeof(what), "called rcoll_%s as sequence %u where this rank called "
                     "rcoll_%s", rcoll_coll_name((rcoll_coll_type_t)(e & 0xff)), eseq, coll);
        } else {
            char last[64] = "none";
            if (e != 0) {
                snprintf(last, sizeof(last), "rcoll_%s sequence %u",
                         rcoll_coll_name((rcoll_coll_type_t)(e & 0xff)), eseq);
            }
            char now[128];
            doing(ctx, r, comm->id, now, sizeof(now));
            snprintf(what, sizeof(what), "not entered: %s; its last here: %s", now, last);
        }
        if (missing++ < list_max) {
            ADD(" rank %d (world rank %d) %s;", q, wq, what);
        }
    }
    if (missing > list_max) {
        ADD(" and %d more;", missing - list_max);
    }
    if (missing == 0 && other == 0 && unknown == 0) {
        ADD(" every rank has entered it;");
    }
    ADD(" %d of %d seen in it", entered, comm->size);
    if (other > 0) {
        ADD("; %d rank(s) on other nodes not visible (%s)", other, why);
    }
    if (unknown > 0) {
        ADD("; %d rank(s) not known (no shared table on this node)", unknown);
    }
#undef ADD
    rcoll__whereis_remote_free(rem);
}
