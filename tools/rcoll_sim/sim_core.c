/*
 * sim_core.c - the core's side of the collectives' contract (coll.h) for
 * rcoll_sim: what src/ gives the algorithms in librcoll, here given by the
 * simulation (sim_net.c).  Nothing moves: a send or receive becomes an
 * event, a reduction only costs time.  The composed (node-aware) and
 * shared-memory algorithms need more of the core (child tasks, shm
 * segments); here those calls fail with RCOLL_ERR_NOT_SUPPORTED, so such an
 * algorithm cannot appear to run: rcoll_sim leaves them out.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "sim_int.h"
#include "reduce.h"
#include "auth.h"
#include "fault_hook.h"

rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len)
{
    (void)buf;
    return sim_post(sim_of_task(task), peer, step, len, 1);
}

rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len)
{
    (void)buf;
    return sim_post(sim_of_task(task), peer, step, len, 0);
}

/* OK once every op is matched and this rank's clock has reached the last
 * completion; otherwise the event loop runs this rank again later. */
rcoll_status_t rcoll_task_test(rcoll_task_t *task)
{
    sim_t *s = sim_of_task(task);
    sim_rank_t *R = &s->ranks[s->cur];

    s->res->tests++;
    if (R->pending > 0)
        return RCOLL_INPROGRESS;
    if (R->tdone > R->clock) {
        R->clock = R->tdone;
        R->state = SIM_REQUEUE;
        return RCOLL_INPROGRESS;
    }
    return RCOLL_OK;
}

/* One scratch buffer serves every rank (its contents are never looked at);
 * a larger request gets a new one, the old ones stay valid till the end. */
void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    sim_t *s = sim_of_task(task);
    void **ns;
    size_t *nz;
    void *b;

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
    return r >= 0 && r < comm->size ? r / comm->ctx->sim->sp->ppn : -1;
}

rcoll_comm_t *rcoll_comm_world(rcoll_context_t *ctx)
{
    return &ctx->sim->comm;
}

/* ---- not simulated: the composed and shared-memory algorithms ---- */

rcoll_status_t rcoll_comm_node_subcomms(rcoll_comm_t *comm)
{
    (void)comm;
    return RCOLL_ERR_NOT_SUPPORTED;
}

rcoll_status_t rcoll_task_child_post(rcoll_task_t *parent, rcoll_comm_t *sub,
                                     const rcoll_coll_args_t *args, rcoll_task_t **child)
{
    (void)parent, (void)sub, (void)args;
    *child = NULL;
    return RCOLL_ERR_NOT_SUPPORTED;
}

rcoll_status_t rcoll_task_child_test(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    (void)parent, (void)child, (void)step;
    return RCOLL_ERR_NOT_SUPPORTED;
}

void rcoll_task_child_abort(rcoll_task_t *parent, rcoll_task_t **child, const char *step)
{
    (void)parent, (void)step;
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
