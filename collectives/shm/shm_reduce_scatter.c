/*
 * shm_reduce_scatter.c - reduce_scatter through the communicator's
 * shared-memory segment (every rank on one node), no messages.  Rank r
 * reduces block r over all ranks, in rank order, straight into its receive
 * buffer; each input byte crosses between cores once.
 *
 * Small (the whole input, p blocks, fits a slot): each rank copies its
 * input into its slot of parity k & 1 and raises the slot's word to k; rank
 * r folds block r of every slot (its own from its send buffer).
 *
 * Larger, or where rank 0 finds it faster from RCOLL__SHM_RSPATH_MIN
 * (shm_adapt.h, "rspath"): a two-stage chunk pipeline over sub-blocks of
 * sh->slice bytes.
 * Chunk c: (A) each rank copies sub-block c of every other rank's block into
 * its input buffer (block q's at q * slice) and raises in_ready; (B) rank r
 * reduces sub-block c of block r from every input buffer into its receive
 * buffer and raises out_done, which lets the owners reuse their buffers
 * nbuf chunks later.
 *
 * In place (the input in recvbuf, the result to its first block): block 0's
 * bytes are overwritten only after this rank has copied them out (slot, or
 * stage A of the same chunk).
 *
 * Waits: step 1 a slot still being read, step 2 a rank's input, step 16 + c
 * chunk c (task->wait_peer names the rank).
 */
#include <string.h>
#include "reduce.h"
#include "shm.h"
#include "shm_adapt.h"
#include "engines/shm_pipe.h"

typedef struct {
    rcoll__shm_op_t   op;
    rcoll__shm_pipe_t pipe;
    int               next;       /* small: next rank to fold in */
    rcoll__shm_store_call_t store;   /* the store kind into the segment (shm_adapt.h, "rsstore") */
    int8_t            path;       /* 0 not chosen yet, 1 slots, 2 pipeline */
    int8_t            explore;    /* that path is a try (shm_adapt.h, "rspath") */
    uint64_t          t0;         /* rank 0: when it chose (0: not timed) */
} rs_shm_state_t;
RCOLL_ALG_STATE_CHECK(rs_shm_state_t);

static size_t block_bytes(const rcoll_task_t *task)
{
    return task->args.count * rcoll_datatype_size(task->args.dtype);
}

/* One rank alone: its block is the result. */
static void copy_own(rcoll_task_t *task, size_t b)
{
    const char *mine = (const char *)task->args.sendbuf + (size_t)task->comm->rank * b;
    if (mine != task->args.recvbuf) {
        memmove(task->args.recvbuf, mine, b);
    }
}

static rcoll_status_t rs_small(rcoll_task_t *task, rs_shm_state_t *S, size_t b)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    int me = sh->me, p = sh->p;
    size_t at = (size_t)me * b;

    if (task->phase == 0) {
        if (!rcoll__shm_slot_write_kind(task, &S->op, a->sendbuf, (size_t)p * b, S->store.stream)) {
            return RCOLL_INPROGRESS;
        }
        task->phase = 1;
    }
#define SRC(_q) ((_q) == me ? (const char *)a->sendbuf + at \
                            : rcoll__shm_slot_data(sh, (_q), S->op.k, (size_t)p * b) + at)
    for (; S->next < p; S->next++) {
        int q = S->next;
        if (q != me) {
            const char *data = rcoll__shm_slot_read(task, &S->op, q, (size_t)p * b);
            if (data == NULL) {
                return rcoll__shm_not_read(&S->op);
            }
            rcoll__shm_prefetch(data + at, b);
        }
        if (q == 1) {
            rcoll_reduce_local3(a->recvbuf, SRC(0), SRC(1), a->count, a->dtype, a->op);
        } else if (q > 1) {
            rcoll_reduce_local(a->recvbuf, SRC(q), a->count, a->dtype, a->op);
        }
    }
#undef SRC
    if (p == 1) {
        copy_own(task, b);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* Bytes [*off, *off + return) of each block in chunk c. */
static size_t sub_block(const rcoll__shm_t *sh, size_t c, size_t b, size_t *off)
{
    *off = c * sh->slice;
    return b - *off < sh->slice ? b - *off : sh->slice;
}

/* Stage A: sub-block c of every other rank's block into my input buffer,
 * once every rank is through the chunk that used the buffer before. */
static int stage_in(rcoll_task_t *task, void *state)
{
    rs_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    size_t c = S->pipe.done[0], b = block_bytes(task), off, len = sub_block(sh, c, b, &off);
    uint64_t g = S->pipe.g0 + c;
    int me = sh->me;

    if (!rcoll__shm_piece_free(task, sh, g, c)) {
        return 0;
    }
    char *dst = rcoll__shm_in(sh, me, g);
    const char *src = task->args.sendbuf;
    for (int q = 0; q < sh->p; q++) {
        if (q != me) {
            rcoll__shm_copy_kind(dst + (size_t)q * sh->slice, src + (size_t)q * b + off, len,
                                 S->store.stream);
        }
    }
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->in_ready, &sh->in_ready[me], g);
    S->pipe.done[0]++;
    return 1;
}

/* Stage B: sub-block c of my block over every rank, in rank order. */
static int stage_reduce(rcoll_task_t *task, void *state)
{
    rs_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    size_t c = S->pipe.done[1], b = block_bytes(task), off, len = sub_block(sh, c, b, &off);
    size_t es = rcoll_datatype_size(a->dtype);
    uint64_t g = S->pipe.g0 + c;
    int me = sh->me, p = sh->p;

    for (int q = 0; q < p; q++) {
        if (q != me && !rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->in_ready, &sh->in_ready[q], g)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)c);
            return 0;
        }
    }
    char *out = (char *)a->recvbuf + off;
    const char *mine = (const char *)a->sendbuf + (size_t)me * b + off;
#define SRC(_q) ((_q) == me ? mine : rcoll__shm_in(sh, (_q), g) + (size_t)me * sh->slice)
    rcoll_reduce_local3(out, SRC(0), SRC(1), len / es, a->dtype, a->op);
    for (int q = 2; q < p; q++) {
        rcoll_reduce_local(out, SRC(q), len / es, a->dtype, a->op);
    }
#undef SRC
    rcoll__shm_out_done(sh, g);
    S->pipe.done[1]++;
    RCOLL_FAULT_AT(task->ctx, RCOLL_FAULT_PIPELINE, S->pipe.done[1]);
    return 1;
}

static const rcoll__shm_stage_fn rs_stages[] = { stage_in, stage_reduce };

static rcoll_status_t rs_large(rcoll_task_t *task, rs_shm_state_t *S, size_t b)
{
    rcoll__shm_t *sh = S->op.sh;
    if (task->phase == 0) {
        /* chunk c carries sub-block c of all p blocks: p slices = sh->chunk */
        size_t nchunks = (b + sh->slice - 1) / sh->slice;
        rcoll__shm_pipe_init(&S->pipe, sh, sh->chunk, nchunks * sh->chunk, 2, 0);
        task->phase = 1;
    }
    return rcoll__shm_pipe_drive(task, &S->op, &S->pipe, rs_stages, S);
}

static rcoll_status_t rs_shm_progress(rcoll_task_t *task)
{
    rs_shm_state_t *S = rcoll_task_state(task, rs_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll__shm_t *sh = S->op.sh;
    size_t b = block_bytes(task), n = (size_t)sh->p * b;
    if (!S->store.chosen && sh->p > 1 && n >= sh->rsstore.min) {
        rcoll__shm_store_call_begin(sh, &S->store, S->op.k, n, rcoll__shm_rsstore_choose);
    }
    if (S->path == 0) {
        /* once per call: the slots up to their size, or rank 0's choice */
        int pipe = sh->p > 1 && n > rcoll__shm_copy_slot_max(sh), explore = 0;
        if (sh->p > 1 && !pipe && rcoll__shm_rspath_covers(sh, n)) {
            if (!rcoll__shm_rspath_choose(task, &S->op, n, &pipe, &explore)) {
                return RCOLL_INPROGRESS;
            }
            S->t0 = sh->me == 0 ? rcoll__shm_adapt_now() : 0;
        }
        S->path = pipe ? 2 : 1;
        rcoll__shm_word_path(&S->op, S->path);
        S->explore = (int8_t)explore;
    }
    st = S->path == 1 ? rs_small(task, S, b) : rs_large(task, S, b);
    if (st == RCOLL_OK) {
        rcoll__shm_store_call_end(sh, &S->store, n, rcoll__shm_rsstore_sample);
        if (S->t0 != 0 && !S->store.explore) {
            /* (a store try's time is not the path's) */
            rcoll__shm_chooser_sample(&sh->rspath, n, S->path == 2, S->explore,
                                      rcoll__shm_adapt_now() - S->t0);
        }
    }
    return st;
}

static double rs_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    /* bytes: one rank's block; p - 1 blocks copied in, p - 1 read and reduced */
    return rcoll__shm_cost(m, nranks, ppn, (double)bytes * (2 * nranks - 1));
}

const rcoll_alg_t rcoll_reduce_scatter_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_REDUCE_SCATTER,
    .progress = rs_shm_progress,
    .cost     = rs_shm_cost,
    .abort    = rcoll__shm_abort,
};
