/*
 * shm_allgather.c - allgather through the communicator's shared-memory
 * segment (every rank on one node), no messages.
 *
 * Small blocks (<= the slot size): each rank copies its block into its slot
 * of parity k & 1 and raises the slot's sequence word to k; every rank
 * copies every other rank's block out.  Large blocks: a pipeline over
 * chunks of each rank's block through its input buffers (in_ready), every
 * rank copying out chunk c of all blocks before raising out_done, which
 * lets the owners reuse the buffer nbuf chunks later.  Every rank is a
 * bcast root at once.
 *
 * Waits: step 1 a slot still being read, step 2 a rank's block, step
 * 16 + c chunk c (task->wait_peer names the rank).
 */
#include <string.h>
#include "shm.h"

typedef struct {
    rcoll__shm_op_t op;
    int             next;       /* next rank to copy out (of chunk co) */
    uint64_t        g0;
    size_t          chunk, nchunks, ci, co;
} ag_shm_state_t;
RCOLL_ALG_STATE_CHECK(ag_shm_state_t);

static void copy_own(rcoll_task_t *task, size_t n)
{
    char *mine = (char *)task->args.recvbuf + (size_t)task->comm->rank * n;
    if (task->args.sendbuf != mine) {
        memcpy(mine, task->args.sendbuf, n);
    }
}

static rcoll_status_t ag_small(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    uint64_t k = S->op.k;

    if (task->phase == 0) {
        if (!rcoll__shm_slots_free(task, sh, k)) {
            return RCOLL_INPROGRESS;
        }
        memcpy(rcoll__shm_slot_data(sh, sh->me, k, n), task->args.sendbuf, n);
        atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, k), k, memory_order_release);
        copy_own(task, n);
        task->phase = 1;
    }
    for (; S->next < sh->p; S->next++) {
        int q = S->next;
        if (q == sh->me) {
            continue;
        }
        if (atomic_load_explicit(rcoll__shm_slot_seq(sh, q, k), memory_order_acquire) != k) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_ARRIVE);
            return RCOLL_INPROGRESS;
        }
        if (sh->fin[q] < k - 1) {
            sh->fin[q] = k - 1;
        }
        rcoll__shm_prefetch(rcoll__shm_slot_data(sh, q, k, n), n);
        memcpy((char *)task->args.recvbuf + (size_t)q * n, rcoll__shm_slot_data(sh, q, k, n), n);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* My chunk ci into my input buffer, once every rank has copied out the
 * chunk that used the buffer before. */
static int chunk_in(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    size_t off = S->ci * S->chunk, len = n - off < S->chunk ? n - off : S->chunk;
    if (!rcoll__shm_put_chunk(task, S->op.sh, S->g0 + S->ci, S->ci,
                              (const char *)task->args.sendbuf + off, len)) {
        return 0;
    }
    S->ci++;
    return 1;
}

/* Chunk co of every other rank's block out of their input buffers. */
static int chunk_out(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    uint64_t g = S->g0 + S->co;
    size_t off = S->co * S->chunk, len = n - off < S->chunk ? n - off : S->chunk;
    int moved = 0;

    for (; S->next < sh->p; S->next++) {
        int q = S->next;
        if (q == sh->me) {
            continue;
        }
        if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->in_ready, &sh->in_ready[q], g)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)S->co);
            return moved;
        }
        memcpy((char *)task->args.recvbuf + (size_t)q * n + off, rcoll__shm_in(sh, q, g), len);
        moved = 1;
    }
    rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->out_done, &sh->out_done[sh->me], g);
    S->next = 0;
    S->co++;
    return 1;
}

static rcoll_status_t ag_large(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int moved = 0, any;

    if (task->phase == 0) {
        S->chunk = sh->chunk;
        S->nchunks = (n + S->chunk - 1) / S->chunk;
        S->g0 = rcoll__shm_pipe_start(sh, S->chunk, S->nchunks);
        task->phase = 1;
    }
    do {
        any = 0;
        if (S->ci < S->nchunks && S->ci < S->co + (size_t)sh->nbuf) {
            any |= chunk_in(task, S, n);
        }
        if (S->co < S->ci) {
            any |= chunk_out(task, S, n);
        }
        moved |= any;
    } while (any && S->co < S->nchunks);
    if (S->co < S->nchunks) {
        if (moved) {
            rcoll__shm_progressed(task);
        }
        return RCOLL_INPROGRESS;
    }
    copy_own(task, n);      /* last: in place, sendbuf is this block of recvbuf */
    rcoll__shm_pipe_leave(task, &S->op, S->g0 + S->nchunks - 1);
    return RCOLL_OK;
}

static rcoll_status_t ag_shm_progress(rcoll_task_t *task)
{
    ag_shm_state_t *S = rcoll_task_state(task, ag_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    return n <= rcoll__shm_copy_slot_max(S->op.sh) ? ag_small(task, S, n) : ag_large(task, S, n);
}

static double ag_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    /* one copy in, p - 1 blocks out */
    return rcoll__shm_cost(m, nranks, ppn, (double)bytes * nranks);
}

const rcoll_alg_t rcoll_allgather_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_shm_progress,
    .cost     = ag_shm_cost,
    .abort    = rcoll__shm_abort,
};
