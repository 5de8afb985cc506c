/*
 * shm_bcast.c - broadcast through the communicator's shared-memory segment
 * (every rank on one node); no messages.
 *
 * Small buffers (<= 64 KiB and the slot size): the root copies the buffer into its
 * slot of parity k & 1 and raises the slot's sequence word to k; the others
 * wait for it and copy out.  The root rewrites that slot (collective k + 2)
 * only after every rank has finished k.
 *
 * Large buffers: a pipeline over chunks.  The root copies chunk c into its
 * input buffer c mod nbuf and raises in_ready; the others copy it out and
 * raise out_done, which lets the root reuse the buffer nbuf chunks later.
 *
 * Waits: step 1 a slot still being read, step 2 the root's data, step
 * 16 + c chunk c (task->wait_peer names the rank).
 */
#include <string.h>
#include "shm.h"

typedef struct {
    rcoll__shm_op_t op;
    uint64_t        g0;
    size_t          chunk, nchunks, c;
} bc_shm_state_t;
RCOLL_ALG_STATE_CHECK(bc_shm_state_t);

static rcoll_status_t bc_small(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int root = task->args.root;
    uint64_t k = S->op.k;

    if (sh->me == root) {
        if (!rcoll__shm_slots_free(task, sh, k)) {
            return RCOLL_INPROGRESS;
        }
        memcpy(rcoll__shm_slot_data(sh, root, k, n), task->args.recvbuf, n);
        atomic_store_explicit(rcoll__shm_slot_seq(sh, root, k), k, memory_order_release);
    } else {
        if (atomic_load_explicit(rcoll__shm_slot_seq(sh, root, k), memory_order_acquire) != k) {
            rcoll__shm_waiting(task, root, RCOLL__SHM_STEP_ARRIVE);
            return RCOLL_INPROGRESS;
        }
        if (sh->fin[root] < k - 1) {
            sh->fin[root] = k - 1;
        }
        rcoll__shm_prefetch(rcoll__shm_slot_data(sh, root, k, n), n);
        memcpy(task->args.recvbuf, rcoll__shm_slot_data(sh, root, k, n), n);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* One chunk at the root: into the input buffer once every rank has copied
 * out the chunk that used it before. */
static int root_chunk(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    size_t off = S->c * S->chunk, len = n - off < S->chunk ? n - off : S->chunk;
    if (!rcoll__shm_put_chunk(task, S->op.sh, S->g0 + S->c, S->c,
                              (const char *)task->args.recvbuf + off, len)) {
        return 0;
    }
    S->c++;
    return 1;
}

static int leaf_chunk(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    uint64_t g = S->g0 + S->c;
    int root = task->args.root, me = sh->me;

    if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, root)->in_ready, &sh->in_ready[root], g)) {
        rcoll__shm_waiting(task, root, RCOLL__SHM_STEP_CHUNK + (uint32_t)S->c);
        return 0;
    }
    size_t off = S->c * S->chunk, len = n - off < S->chunk ? n - off : S->chunk;
    memcpy((char *)task->args.recvbuf + off, rcoll__shm_in(sh, root, g), len);
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->out_done, &sh->out_done[me], g);
    S->c++;
    return 1;
}

/* Pipeline chunk: sh->bc_piece (64 KiB) up to 8 pieces (512 KiB), so that a
 * medium bcast runs through at least a few chunks (10% faster at 128-512
 * KiB than one p x slice chunk, A/B 2026-11-29); larger ones use whole
 * chunks, whose fewer flag round trips win there (3-4% at 1-4 MiB). */
static size_t bc_chunk(const rcoll__shm_t *sh, size_t n)
{
    if (n <= 8 * sh->bc_piece && sh->chunk > sh->bc_piece) {
        return sh->bc_piece;
    }
    return sh->chunk;
}

static rcoll_status_t bc_large(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int is_root = sh->me == task->args.root, moved = 0;

    if (task->phase == 0) {
        S->chunk = bc_chunk(sh, n);
        S->nchunks = (n + S->chunk - 1) / S->chunk;
        S->g0 = rcoll__shm_pipe_start(sh, S->chunk, S->nchunks);
        if (S->chunk < sh->chunk) {
            rcoll__shm_fault_in_pipe(sh, task->args.root);   /* the ring reads all of it */
        }
        task->phase = 1;
    }
    while (S->c < S->nchunks && (is_root ? root_chunk(task, S, n) : leaf_chunk(task, S, n))) {
        moved = 1;
    }
    if (S->c < S->nchunks) {
        if (moved) {
            rcoll__shm_progressed(task);
        }
        return RCOLL_INPROGRESS;
    }
    rcoll__shm_pipe_leave(task, &S->op, S->g0 + S->nchunks - 1);
    return RCOLL_OK;
}

static rcoll_status_t bc_shm_progress(rcoll_task_t *task)
{
    bc_shm_state_t *S = rcoll_task_state(task, bc_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    return n <= rcoll__shm_copy_slot_max(S->op.sh) ? bc_small(task, S, n) : bc_large(task, S, n);
}

static double bc_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    /* the root copies in once, every other rank copies out */
    return rcoll__shm_cost(m, nranks, ppn, 2.0 * (double)bytes);
}

const rcoll_alg_t rcoll_bcast_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bc_shm_progress,
    .cost     = bc_shm_cost,
    .abort    = rcoll__shm_abort,
};
