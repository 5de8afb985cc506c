/*
 * task.c - a collective in flight (the public rcoll_request_t is a handle to
 * it): post it, advance its algorithm, wait for it with a deadline, release it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "whereis.h"
#include "liveness.h"
#include "reduce.h"

#define RCOLL_TASK_MAGIC 0x7a5c0de5u

/*
 * Released tasks go back to ctx->free_tasks and are freed only with the
 * context (so there are at most as many as requests were ever outstanding
 * at once): a handle kept after its request completed then still points at
 * a task, whose generation tells that the handle is stale.
 */
static rcoll_task_t *task_alloc(rcoll_context_t *ctx)
{
    rcoll_task_t *task;
    if (!rcoll_list_empty(&ctx->free_tasks)) {
        rcoll_list_t *e = ctx->free_tasks.next;
        rcoll_list_del(e);
        ctx->nfree_tasks--;
        task = rcoll_container_of(e, rcoll_task_t, link);
    } else if (posix_memalign((void **)&task, RCOLL__TASK_ALIGN, sizeof(rcoll_task_block_t)) != 0) {
        return NULL;
    } else {
        rcoll_task_block(task)->gen = 0;
        rcoll_task_block(task)->magic = RCOLL_TASK_MAGIC;
    }
    /* The task, not its op slots: they are set as ops are posted. */
    memset(task, 0, sizeof(*task));
    rcoll_list_init(&task->link);
    ctx->ntasks_live++;
    return task;
}

static void task_free(rcoll_task_t *task)
{
    rcoll_context_t *ctx = task->ctx;
    free(task->scratch);
    task->scratch = NULL;
    rcoll_list_add_tail(&ctx->free_tasks, &task->link);
    ctx->nfree_tasks++;
}

rcoll_task_t *rcoll__task_from_handle(rcoll_request_t *handle)
{
    rcoll_task_t *task = rcoll__task_of(handle);
    uintptr_t tag = (uintptr_t)handle & (RCOLL__TASK_ALIGN - 1);
    if (task == NULL || rcoll_task_block(task)->magic != RCOLL_TASK_MAGIC ||
        (rcoll_task_block(task)->gen & (RCOLL__TASK_ALIGN - 1)) != tag) {
        return NULL;
    }
    return task;
}

void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    if (task->scratch_size >= size && task->scratch != NULL) {
        return task->scratch;
    }
    void *p;
    if (posix_memalign(&p, 64, size ? size : 64) != 0) {
        rcoll_error("%s: cannot allocate %zu bytes of scratch", rcoll_coll_name(task->args.type), size);
        return NULL;
    }
    free(task->scratch);
    task->scratch = p;
    task->scratch_size = size;
    return p;
}

rcoll_status_t rcoll_task_test(rcoll_task_t *task)
{
    if (task->op_error != RCOLL_OK) {
        return task->op_error;
    }
    if (task->npending > 0) {
        return RCOLL_INPROGRESS;
    }
    task->nops = 0;
    return RCOLL_OK;
}

static void task_finish(rcoll_task_t *task, rcoll_status_t st)
{
    if (st == RCOLL_OK && task->npending != 0) {
        rcoll_error("%s (algorithm %s) finished with %d operations pending: a bug in rcoll",
                    rcoll_coll_name(task->args.type), task->alg->name, task->npending);
        st = RCOLL_ERR_INTERNAL;
    }
    if (st != RCOLL_OK) {
        /* A failure, not a timeout: tell the others (revoke.c) before the
         * cancel below deregisters this task's receive buffers.  A member
         * whose RDMA WRITE then meets a deregistered buffer breaks its
         * connection with us (verbs: remote access error), and a REVOKE
         * still queued behind it would be flushed: it would see only that
         * we gave up, never who died. */
        int told = st == RCOLL_ERR_PEER_FAILED || st == RCOLL_ERR_TRANSPORT;
        if (told) {
            rcoll__revoke_on_failure(task, st);
        }
        rcoll_p2p_cancel_task(task);
        if (task->alg->abort != NULL) {
            task->alg->abort(task);
        }
        if (st == RCOLL_ERR_TIMEOUT) {
            st = rcoll_liveness_cause(task, st);   /* a peer gave up because a member died */
        }
        if (st == RCOLL_ERR_TIMEOUT && task->comm->revoked == RCOLL_ERR_PEER_FAILED) {
            st = RCOLL_ERR_PEER_FAILED;            /* ... or a revoke said one did */
        }
        if (!told) {
            rcoll__revoke_on_failure(task, st);
        }
    }
    /* One finishing after its communicator was revoked fails too (revoke.c):
     * the others have given up on it. */
    task->status = st != RCOLL_OK ? st : task->comm->revoked;
    task->done = 1;
    rcoll_list_del(&task->link);
}

int rcoll_task_progress(rcoll_task_t *task)
{
    if (task->done) {
        return 0;
    }
    rcoll_status_t st = task->alg->progress(task);
    if (st == RCOLL_INPROGRESS) {
        return 0;
    }
    task_finish(task, st);
    return 1;
}

/* A communicator of one rank: the result is the input. */
static void local_copy(const rcoll_coll_args_t *a)
{
    size_t bytes = a->count * rcoll_datatype_size(a->dtype);
    switch (a->type) {
    case RCOLL_COLL_ALLREDUCE:
    case RCOLL_COLL_REDUCE:
    case RCOLL_COLL_ALLGATHER:
    case RCOLL_COLL_REDUCE_SCATTER:
        if (!a->in_place && bytes) {
            memcpy(a->recvbuf, a->sendbuf, bytes);
        }
        break;
    default:
        break;
    }
}

/* A 32-bit signature of what the caller asked for (collective, count,
 * datatype, op, root), never 0: it travels in every message (wire.h) and
 * shm slot word (shm.h), so ranks whose calls differ notice instead of
 * exchanging the wrong bytes. */
static inline uint32_t call_sig(const rcoll_coll_args_t *a)
{
    uint64_t what = (uint64_t)a->type | (uint64_t)a->dtype << 8 | (uint64_t)a->op << 16 |
                    (uint64_t)(uint32_t)a->root << 24;
    uint64_t x = a->count * 0x9e3779b97f4a7c15ull + what * 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(x >> 32) | 1;
}

rcoll_status_t rcoll_task_post(rcoll_comm_t *comm, const rcoll_coll_args_t *args, rcoll_task_t **out)
{
    rcoll_context_t *ctx = comm->ctx;
    if (comm->revoked != RCOLL_OK) {
        rcoll_debug("%s on revoked communicator 0x%llx: %s", rcoll_coll_name(args->type),
                    (unsigned long long)comm->id, rcoll_strerror(comm->revoked));
        return comm->revoked;
    }
    rcoll_task_t *task = task_alloc(ctx);
    if (task == NULL) {
        rcoll_error("%s: out of memory for a request", rcoll_coll_name(args->type));
        return RCOLL_ERR_NO_MEMORY;
    }
    task->ctx = ctx;
    task->comm = comm;
    task->args = *args;
    task->status = RCOLL_INPROGRESS;
    task->wait_peer = -1;
    comm->nactive++;

    int trivial = comm->size == 1 || (args->count == 0 && args->type != RCOLL_COLL_BARRIER);
    if (trivial) {
        if (args->count != 0) {
            local_copy(args);
        }
        task->status = RCOLL_OK;
        task->done = 1;
        *out = task;
        return RCOLL_OK;
    }
    task->seq = comm->next_seq++;
    task->sig = call_sig(args);
    rcoll_whereis_entered(task);
    task->alg = rcoll_select(task);
    if (task->alg == NULL) {
        comm->nactive--;
        ctx->ntasks_live--;
        task_free(task);
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_trace("post %s seq %u on comm 0x%llx: algorithm %s, count %zu",
                rcoll_coll_name(args->type), task->seq, (unsigned long long)comm->id,
                task->alg->name, args->count);
    rcoll_list_add_tail(&ctx->active, &task->link);
    *out = task;
    if (__builtin_expect(ctx->nfailed != 0, 0) && rcoll_liveness_at_post(task)) {
        return RCOLL_OK;            /* a member is dead: ended before it posts anything */
    }
    rcoll_task_progress(task);      /* post the first messages now */
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_post_alg(rcoll_comm_t *comm, const rcoll_coll_args_t *args,
                                   const rcoll_alg_t *alg, rcoll_task_t **out)
{
    rcoll_context_t *ctx = comm->ctx;
    rcoll_task_t *task = task_alloc(ctx);
    if (task == NULL) {
        rcoll_error("%s: out of memory for a request", alg->name);
        return RCOLL_ERR_NO_MEMORY;
    }
    task->ctx = ctx;
    task->comm = comm;
    task->args = *args;
    task->status = RCOLL_INPROGRESS;
    task->wait_peer = -1;
    task->seq = comm->next_seq++;
    rcoll_whereis_entered(task);
    task->alg = alg;
    comm->nactive++;
    rcoll_list_add_tail(&ctx->active, &task->link);
    rcoll_task_progress(task);
    *out = task;
    return RCOLL_OK;
}

/*
 * RCOLL_TIMEOUT measures how long the communicator's queue up to a task has
 * not moved, not how long the task has existed: a collective queued behind
 * another on the same communicator (a shm collective waits for the one ahead
 * of it to finish here) must not expire while the one ahead progresses.  So
 * what the check watches is a signature of every collective in flight on the
 * task's communicator posted up to it (ctx->active is in post order): their
 * progress counts and how many they are (one ahead finishing changes it).
 * Computed only here, off the per-collective path.
 */
static unsigned queue_signature(const rcoll_task_t *task)
{
    unsigned sig = 0;
    rcoll_list_t *pos;
    for (pos = task->ctx->active.next; pos != &task->ctx->active; pos = pos->next) {
        const rcoll_task_t *t = rcoll_container_of(pos, rcoll_task_t, link);
        if (t->comm == task->comm) {
            sig += t->progress_count + 0x9e3779b9u;
        }
        if (t == task) {
            break;
        }
    }
    return sig;
}

/* Log why task timed out (idle: seconds without progress) and end it. */
static void timed_out(rcoll_task_t *task, double idle, const rcoll_task_t *ahead)
{
    const rcoll_p2p_op_t *op = rcoll_task_first_pending(task);
    char waiting[320];
    if (op != NULL) {
        snprintf(waiting, sizeof(waiting), "at step %u, waiting for rank %d (world rank %d): %s %zu "
                 "bytes (%s)", op->step, op->peer, op->wpeer,
                 op->kind == RCOLL_P2P_SEND ? "send of" : "receive of", op->len,
                 rcoll_p2p_state_name(op));
    } else if (task->wait_peer >= 0) {
        snprintf(waiting, sizeof(waiting), "at step %u, waiting for rank %d (world rank %d) in "
                 "shared memory", task->wait_step, task->wait_peer,
                 task->comm->world_ranks[task->wait_peer]);
    } else if (ahead != NULL) {
        snprintf(waiting, sizeof(waiting), "queued behind rcoll_%s sequence %u (algorithm %s) "
                 "on the same communicator, which made no progress either",
                 rcoll_coll_name(ahead->args.type), ahead->seq, ahead->alg->name);
    } else {
        snprintf(waiting, sizeof(waiting), "in phase %d with no message pending", task->phase);
    }
    rcoll_error("rcoll_%s timed out: no progress for %.1f s (RCOLL_TIMEOUT) in algorithm %s, "
                "communicator 0x%llx of %d ranks, sequence %u, %s",
                rcoll_coll_name(task->args.type), idle, task->alg->name,
                (unsigned long long)task->comm->id, task->comm->size, task->seq, waiting);
    char where[1024];
    rcoll_whereis_report(task, where, sizeof(where));
    rcoll_error("%s", where);
    task_finish(task, RCOLL_ERR_TIMEOUT);
}

int rcoll_task_check_deadline(rcoll_task_t *task)
{
    double timeout = task->ctx->config.timeout;
    if (task->comm->revoked != RCOLL_OK && !task->done) {
        rcoll__revoke_fail_tasks(task->comm);    /* revoke.c: at the backoff rate, not per spin */
        return 1;
    }
    if (task->done) {
        return 0;
    }
    double now = rcoll_time_now();
    /* A dead member ends it first (liveness.h), also without a timeout. */
    if (rcoll_liveness_check(task, now) || timeout <= 0) {
        return task->done;
    }
    rcoll_whereis_seen(task->ctx, now);
    unsigned sig = queue_signature(task);
    if (task->last_progress == 0 || task->progress_seen != sig) {
        task->progress_seen = sig;
        task->last_progress = now;
        return 0;
    }
    double idle = now - task->last_progress;
    if (idle < timeout) {
        return 0;
    }
    /* Nothing on the queue up to here moved: the collectives ahead of it on
     * this communicator expire first (they are the cause, and their abort
     * passes their turn on), each naming what it waits for; then this one. */
    const rcoll_task_t *ahead = NULL;
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &task->ctx->active) {
        rcoll_task_t *t = rcoll_container_of(pos, rcoll_task_t, link);
        if (t == task) {
            break;
        }
        if (t->comm == task->comm) {
            if (ahead == NULL) {
                ahead = t;      /* reported by seq/alg below; t's fields stay readable */
            }
            timed_out(t, idle, NULL);
        }
    }
    timed_out(task, idle, ahead);
    return 1;
}

rcoll_status_t rcoll_task_wait(rcoll_task_t *task)
{
    rcoll_context_t *ctx = task->ctx;
    unsigned polls = 0;
    unsigned long slack = 0;        /* rcoll__wait_idle's */
    /* a bcast's reader sleeps rather than yields from ctx->sleep_min (spin.c) */
    int sleepy = task->args.type == RCOLL_COLL_BCAST && task->comm->rank != task->args.root &&
                 task->args.count * rcoll_datatype_size(task->args.dtype) >= ctx->sleep_min;
    while (!task->done) {
        int events = rcoll_context_progress(ctx);
        if (events == 0 && (++polls & 63) == 0) {
            /* off the fast path: a wait that goes on says so (whereis.h) */
            rcoll_whereis_inside(ctx, 1);
            rcoll_task_check_deadline(task);
        }
        rcoll__wait_idle(ctx, events, sleepy, &slack);
    }
    rcoll__wait_idle_end(slack);
    if (polls >= 64) {
        rcoll_whereis_inside(ctx, 0);
    }
    rcoll_status_t st = task->status;
    rcoll_task_release(task);
    return st;
}

void rcoll_task_release(rcoll_task_t *task)
{
    if (!task->zombie) {
        rcoll_task_block(task)->gen++;    /* the handle the user held is stale from now on */
        task->ctx->ntasks_live--;
        task->comm->nactive--;
        if (task->inflight_tl > 0) {
            /* The transport still holds a completion inside this task. */
            task->zombie = 1;
            rcoll_list_add_tail(&task->ctx->zombies, &task->link);
            return;
        }
    } else {
        if (task->inflight_tl > 0) {
            return;
        }
        rcoll_list_del(&task->link);
    }
    task_free(task);
}

/* End a task that is still running with st, as a failed op or a deadline
 * would (task_child.c: a composed algorithm abandoning its children). */
void rcoll_task_fail(rcoll_task_t *task, rcoll_status_t st)
{
    if (!task->done) {
        task_finish(task, st);
    }
}
