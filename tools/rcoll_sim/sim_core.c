/*
 * sim_core.c - the core's side of the collectives' contract (coll.h) for
 * rcoll_sim: what src/ gives the algorithms in librcoll, here given by the
 * simulation (sim_net.c).  Nothing moves: a send or receive becomes an
 * event, a reduction only costs time.  The composed (node-aware)
 * algorithms' children run on the node's and the rail's sub-communicators
 * (sim_net.c runs them beside their parent), each with the point-to-point
 * algorithm the selector picks for it from the model without shared memory
 * (what RCOLL_SHM=0 runs).  The shared-memory algorithms are not simulated:
 * no segment is ever made, and rcoll_sim leaves them out.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_int.h"
#include "reduce.h"
#include "auth.h"
#include "fault_hook.h"
#include "selector.h"

rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len)
{
    (void)buf;
    return sim_post(sim_of_task(task), task, peer, step, len, 1);
}

rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len)
{
    (void)buf;
    return sim_post(sim_of_task(task), task, peer, step, len, 0);
}

/* OK once every op of the task is matched and this rank's clock has
 * reached the task's last completion; otherwise the event loop runs this
 * rank again later (at that completion, if every op is matched). */
rcoll_status_t rcoll_task_test(rcoll_task_t *task)
{
    sim_t *s = sim_of_task(task);
    sim_rank_t *R = &s->ranks[s->cur];

    s->res->tests++;
    if (SIM_TASK_PENDING(task) > 0)
        return RCOLL_INPROGRESS;
    if (SIM_TASK_TDONE(task) > R->clock) {
        if (SIM_TASK_TDONE(task) < R->wake)
            R->wake = SIM_TASK_TDONE(task);
        return RCOLL_INPROGRESS;
    }
    return RCOLL_OK;
}

/* One scratch buffer serves every rank (its contents are never looked at);
 * a larger request gets a new one, the old ones stay valid till the end.
 * A child task gets one of its own, freed with it: its buffers may be its
 * parent's scratch, and a copy between the two must not overlap. */
void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    sim_t *s = sim_of_task(task);
    void **ns;
    size_t *nz;
    void *b;

    if (task->comm->sub_kind != 0) {
        if (task->scratch == NULL || task->scratch_size < size) {
            free(task->scratch);
            task->scratch = aligned_alloc(64, (size + 63) & ~(size_t)63);
            task->scratch_size = task->scratch != NULL ? size : 0;
        }
        return task->scratch;
    }
    if (s->nscratch > 0 && s->scratch_size[s->nscratch - 1] >= size)
        return s->scratch[s->nscratch - 1];
    ns = realloc(s->scratch, (size_t)(s->nscratch + 1) * sizeof(*ns));
    if (ns != NULL)
        s->scratch = ns;
    nz = realloc(s->scratch_size, (size_t)(s->nscratch + 1) * sizeof(*nz));
    if (nz != NULL)
        s->scratch_size = nz;
    b = aligned_alloc(64, (size + 63) & ~(size_t)63);
    if (ns == NULL || nz == NULL || b == NULL) {
        free(b);
        return NULL;
    }
    s->scratch[s->nscratch] = b;
    s->scratch_size[s->nscratch++] = size;
    return b;
}

/* A reduction costs the reducing rank gamma per byte; no data is touched. */
static void charge_reduce(size_t count, rcoll_datatype_t dtype)
{
    sim_t *s = sim_current();

    if (s != NULL)
        s->ranks[s->cur].clock += (double)(count * rcoll_datatype_size(dtype)) * s->sp->model->gamma;
}

void rcoll_reduce_local(void *inout, const void *in, size_t count, rcoll_datatype_t dtype, rcoll_op_t op)
{
    (void)inout, (void)in, (void)op;
    charge_reduce(count, dtype);
}

void rcoll_reduce_local3(void *dst, const void *a, const void *b, size_t count, rcoll_datatype_t dtype,
                         rcoll_op_t op)
{
    (void)dst, (void)a, (void)b, (void)op;
    charge_reduce(count, dtype);
}

void rcoll_reduce_local3_copy(void *dst, const void *a, const void *b, void *copy, size_t count,
                              rcoll_datatype_t dtype, rcoll_op_t op, int stream)
{
    (void)dst, (void)a, (void)b, (void)copy, (void)op, (void)stream;
    charge_reduce(count, dtype);
}

double rcoll_time_now(void)
{
    sim_t *s = sim_current();

    return s != NULL ? s->ranks[s->cur].clock : 0;
}

size_t rcoll_ctx_eager_limit(const rcoll_context_t *ctx)
{
    return ctx->sim->sp->model->eager_limit;
}

const char *rcoll_ctx_hostname(const rcoll_context_t *ctx)
{
    (void)ctx;
    return "rcoll_sim";
}

void **rcoll_ctx_coll_slot(rcoll_context_t *ctx)
{
    return &ctx->coll_slot;
}

int rcoll_comm_nnodes(const rcoll_comm_t *comm)
{
    return comm->ctx->sim->sp->nodes;
}

int rcoll_comm_node(const rcoll_comm_t *comm, int r)
{
    const sim_t *s = comm->ctx->sim;

    return r >= 0 && r < comm->size ? sim_global_rank(s, comm, r) / s->sp->ppn : -1;
}

rcoll_comm_t *rcoll_comm_world(rcoll_context_t *ctx)
{
    return &ctx->sim->comm;
}

/* ---- the composed algorithms' children ---- */

/* Made in sim_net.c (node_comms, rail_comms) and pointed to before each
 * progress() call. */
rcoll_status_t rcoll_comm_node_subcomms(rcoll_comm_t *comm)
{
    (void)comm;
    return RCOLL_OK;
}

/* A child of one rank or of no data is complete at once, as rcoll_task_post
 * makes it: no algorithm runs. */
static int child_trivial(const rcoll_comm_t *sub, const rcoll_coll_args_t *a)
{
    return sub->size < 2 || (a->count == 0 && a->type != RCOLL_COLL_BARRIER);
}

/* The child's algorithm: the cheapest under the simulation's model (no
 * shared memory) for the sub-communicator, as rcoll_select picks when
 * nothing is forced and no tune file is read. */
static const rcoll_alg_t *child_alg(const rcoll_comm_t *sub, const rcoll_coll_args_t *a,
                                    const rcoll_model_t *m)
{
    size_t bytes = a->count * rcoll_datatype_size(a->dtype);

    return rcoll_select_by_cost(a->type, m, bytes, sub->size,
                                sub->sub_kind == RCOLL_SUB_NODE ? sub->size : 1);
}

rcoll_status_t rcoll_task_child_post(rcoll_task_t *parent, rcoll_comm_t *sub,
                                     const rcoll_coll_args_t *args, rcoll_task_t **child)
{
    sim_t *s = sim_of_task(parent);
    sim_rank_t *R = &s->ranks[s->cur];
    int kind = sub->sub_kind, trivial = child_trivial(sub, args);
    const rcoll_alg_t *alg = NULL;
    rcoll_task_t *c;

    *child = NULL;
    if (kind != RCOLL_SUB_NODE && kind != RCOLL_SUB_RAIL) {
        sim_fail(s, "rank %d: %s posts a child on a communicator that is not a sub-communicator",
                 s->cur, parent->alg->name);
        return RCOLL_ERR_INTERNAL;
    }
    if (R->nlive == SIM_MAX_LIVE) {
        sim_fail(s, "rank %d: %s has more than %d children in flight", s->cur, parent->alg->name,
                 SIM_MAX_LIVE);
        return RCOLL_ERR_INTERNAL;
    }
    if (!trivial && (alg = child_alg(sub, args, s->sp->model)) == NULL) {
        sim_fail(s, "rank %d: no point-to-point %s for a sub-communicator of %d ranks", s->cur,
                 rcoll_coll_name(args->type), sub->size);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        sim_fail(s, "out of memory for a child task");
        return RCOLL_ERR_NO_MEMORY;
    }
    c->args = *args;
    c->comm = sub;
    c->ctx = parent->ctx;
    c->alg = alg;
    c->seq = (uint32_t)kind << 24 | ++R->nchild[kind];     /* its message channel, never 0 */
    c->wait_peer = -1;
    c->wait_step = (uint32_t)-1;
    c->status = RCOLL_INPROGRESS;
    if (trivial) {
        c->status = RCOLL_OK;
        c->done = 1;
    }
    R->live[R->nlive++] = c;
    R->composed = 1;
    parent->progress_count++;
    *child = c;
    return RCOLL_OK;
}

static void child_release(sim_t *s, rcoll_task_t *c)
{
    sim_rank_t *R = &s->ranks[s->cur];

    for (int i = 0; i < R->nlive; i++) {
        if (R->live[i] == c) {
            memmove(&R->live[i], &R->live[i + 1], (size_t)(R->nlive - i - 1) * sizeof(R->live[0]));
            R->nlive--;
            break;
        }
    }
    free(c->scratch);
    free(c);
}

rcoll_status_t rcoll_task_child_test(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    sim_t *s = sim_of_task(parent);
    rcoll_task_t *c = *child;
    rcoll_status_t st;

    if (c == NULL)
        return RCOLL_OK;
    if (!c->done)
        return RCOLL_INPROGRESS;
    st = c->status;
    if (st != RCOLL_OK)
        sim_fail(s, "rank %d: %s failed at step '%s': its %s (%s) on a sub-communicator of %d ranks "
                 "returned %s", s->cur, parent->alg->name, step, rcoll_coll_name(c->args.type),
                 c->alg != NULL ? c->alg->name : "-", c->comm->size, rcoll_strerror(st));
    child_release(s, c);
    *child = NULL;
    parent->progress_count++;
    return st;
}

void rcoll_task_child_abort(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    (void)step;
    if (*child != NULL)
        child_release(sim_of_task(parent), *child);
    *child = NULL;
}

/* The shm segment's name and its check: no segment is ever made here. */
uint64_t rcoll__auth_token(const rcoll_context_t *ctx, const char *label, uint64_t id)
{
    (void)ctx, (void)label;
    return id;
}

int rcoll__auth_equal64(uint64_t a, uint64_t b)
{
    return a == b;
}

/* No faults are injected into a simulation. */
void rcoll__fault_hit(struct rcoll_context *ctx, rcoll_fault_point_t point, unsigned long count)
{
    (void)ctx, (void)point, (void)count;
}
