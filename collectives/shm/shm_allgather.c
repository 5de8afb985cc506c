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
 * bcast root at once; a block of several chunks goes into the segment and
 * into the rank's own place in its receive buffer in one pass over the
 * send buffer (rcoll__shm_copy_two).  Either way, from 2 KiB blocks, its
 * copies into the segment use plain or streaming stores, rank 0's run-time
 * choice (shm_adapt.h, "agstore").
 *
 * Rotating blocks (2 ranks, sh->ag_rotate_min up to one chunk): the
 * pipeline with one piece of the block's size per call, the pieces
 * rotating over the whole pipeline area (rcoll__shm_pipe_start's
 * over_all), so a rank rewrites a piece only after four L2 caches' worth
 * of others (rcoll__shm_bc_ring_bytes).  The slot of parity k & 1, or the
 * input buffer nbuf calls back, held lines the other rank had read and
 * still cached, and each store took one back across cores (docs/shm.md,
 * "The allgather's rotating pieces").  Plain stores: no "agstore" choice,
 * whose streaming only paid off against that hand-over.
 *
 * Waits: step 1 a slot still being read, step 2 a rank's block, step
 * 16 + c chunk c (task->wait_peer names the rank).
 */
#include <string.h>
#include "shm.h"
#include "shm_cma.h"
#include "shm_adapt.h"
#include "engines/shm_pipe.h"

typedef struct {
    rcoll__shm_op_t   op;
    rcoll__shm_pipe_t pipe;
    int               next;       /* next rank to copy out (slots, or chunk done[1]) */
    int               path;       /* 0: not chosen yet, 1: two copies, 2: single copy */
    int               explore;    /* part of a try of the other path (shm_adapt.h) */
    uint64_t          t0;         /* rank 0 of an adaptive call: when it began */
    int8_t            stores;     /* two copies: 0 plain (not chosen), 1 plain, 2 streaming */
    int8_t            sexplore;   /* a try of the other store kind (shm_adapt.h, "agstore") */
    int8_t            own_done;   /* single copy: this rank's own block copied */
} ag_shm_state_t;
RCOLL_ALG_STATE_CHECK(ag_shm_state_t);

static size_t block_bytes(const rcoll_task_t *task)
{
    return task->args.count * rcoll_datatype_size(task->args.dtype);
}

/* Where this rank's block goes in its receive buffer; NULL in place. */
static char *own_place(rcoll_task_t *task, size_t n)
{
    char *mine = (char *)task->args.recvbuf + (size_t)task->comm->rank * n;
    return task->args.sendbuf != mine ? mine : NULL;
}

/* Bytes [off, off + len) of this rank's block from its send buffer into
 * its receive buffer (in place: they are there). */
static void copy_own_part(rcoll_task_t *task, size_t n, size_t off, size_t len)
{
    char *mine = own_place(task, n);
    if (mine != NULL) {
        memcpy(mine + off, (const char *)task->args.sendbuf + off, len);
    }
}

static void copy_own(rcoll_task_t *task, size_t n)
{
    copy_own_part(task, n, 0, n);
}

/* The same, streaming where the receive buffer is large (sh->stream_min):
 * the single-copy path, whose copy needs the lines of no reader. */
static void copy_own_out(rcoll_task_t *task, const rcoll__shm_t *sh, size_t n)
{
    char *mine = own_place(task, n);
    if (mine != NULL) {
        rcoll__shm_copy_out(sh->stream_min, mine, task->args.sendbuf, n, (size_t)sh->p * n);
    }
}

/* A block of n bytes rotates (see the top of this file). */
static int ag_rotates(const rcoll__shm_t *sh, size_t n)
{
    return sh->p == 2 && n >= sh->ag_rotate_min && n <= sh->chunk;
}

static rcoll_status_t ag_small(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    const char *data;

    if (task->phase == 0) {
        if (!rcoll__shm_slot_write_demoted(task, &S->op, task->args.sendbuf, n, S->stores == 2)) {
            return RCOLL_INPROGRESS;
        }
        copy_own(task, n);
        task->phase = 1;
    }
    for (; S->next < sh->p; S->next++) {
        int q = S->next;
        if (q == sh->me) {
            continue;
        }
        if ((data = rcoll__shm_slot_read(task, &S->op, q, n)) == NULL) {
            return rcoll__shm_not_read(&S->op);
        }
        rcoll__shm_prefetch(data, n);
        memcpy((char *)task->args.recvbuf + (size_t)q * n, data, n);
        rcoll__shm_demote(sh, data, n);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* Stage 1: my next chunk into my input buffer, once every rank has copied
 * out the chunk that used the buffer before; then the same bytes into my
 * own block of the receive buffer, while they are in this core's cache
 * (once the whole block after the pipeline, it read the send buffer again
 * from memory: 2-rank allgather of 1-4 MiB 10-15% slower, docs/shm.md).
 * A block of several chunks: both copies in one pass over the send buffer
 * (docs/shm.md, "The allgather's two copies in one pass"). */
static int chunk_in(rcoll_task_t *task, void *state)
{
    ag_shm_state_t *S = state;
    size_t c = S->pipe.done[0], n = block_bytes(task), off, len = rcoll__shm_pipe_part(&S->pipe, c, n, &off);
    const char *src = (const char *)task->args.sendbuf + off;
    char *own = own_place(task, n);
    char *both = S->pipe.nchunks > 1 && own != NULL ? own + off : NULL;   /* one pass */

    if (!rcoll__shm_put_chunk_two(task, S->op.sh, S->pipe.g0 + c, c, src, len, S->stores == 2,
                                  both)) {
        return 0;
    }
    if (both == NULL) {
        copy_own_part(task, n, off, len);
    }
    S->pipe.done[0]++;
    return 1;
}

/* Stage 2: the chunk of every other rank's block out of their input buffers. */
static int chunk_out(rcoll_task_t *task, void *state)
{
    ag_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    size_t c = S->pipe.done[1], n = block_bytes(task), off, len = rcoll__shm_pipe_part(&S->pipe, c, n, &off);
    uint64_t g = S->pipe.g0 + c;
    int q, moved = 0;

    for (; (q = rcoll__shm_next_ready(task, sh, RCOLL__SHM_IN_READY, &S->next, sh->me, g, c)) >= 0 &&
           q < sh->p;
         S->next++) {
        memcpy((char *)task->args.recvbuf + (size_t)q * n + off, rcoll__shm_in(sh, q, g), len);
        moved = 1;
    }
    if (q < 0) {
        return moved;
    }
    rcoll__shm_out_done(sh, g);
    S->next = 0;
    S->pipe.done[1]++;
    return 1;
}

/* ag_cma's own block: copied once per call (copy_own_out); 1 if now. */
static int copy_own_once(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    if (S->own_done) {
        return 0;
    }
    copy_own_out(task, S->op.sh, n);
    S->own_done = 1;
    return 1;
}

/* Single copy (shm_cma.h): every rank publishes where its block is, reads
 * every other rank's straight into its recvbuf (starting with the next
 * rank, so that the p readers do not all read rank 0 first), and waits
 * until every other rank has read its block.  Its own block it copies
 * while it waits: at the first descriptor not yet published, else once
 * its reads are over and announced (cma_read), so that the others' wait
 * for that word, and its own for theirs, pass during the copy. */
static rcoll_status_t ag_cma(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int p = sh->p, me = sh->me;

    if (task->phase == 0) {
        if (!rcoll__shm_cma_post(task, &S->op, task->args.sendbuf, n)) {
            return RCOLL_INPROGRESS;
        }
        S->next = 1;
        task->phase = 1;
    }
    if (task->phase == 1) {
        for (; S->next < p; S->next++) {
            int q = (me + S->next) % p;
            rcoll_status_t st = rcoll__shm_cma_pull(task, &S->op, q,
                                                    (char *)task->args.recvbuf + (size_t)q * n, n);
            if (st == RCOLL_INPROGRESS && copy_own_once(task, S, n)) {
                rcoll__shm_progressed(task);   /* q has not published yet */
            }
            if (st != RCOLL_OK) {
                return st;
            }
            rcoll__shm_progressed(task);
        }
        rcoll__shm_cma_read_done(sh, S->op.k);
        copy_own_once(task, S, n);
        S->next = 0;
        task->phase = 2;
    }
    if (!rcoll__shm_cma_readers_gone(task, &S->op, &S->next)) {
        return rcoll__shm_not_read(&S->op);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

static const rcoll__shm_stage_fn ag_stages[] = { chunk_in, chunk_out };

/* Every rank's pipeline area, mapped here in one go (each rank reads all
 * of every other rank's in a pipelined allgather; once per segment). */
static void fault_in_pipes(rcoll__shm_t *sh)
{
    for (int q = 0; q < sh->p; q++) {
        rcoll__shm_fault_in_pipe(sh, q);
    }
}

static rcoll_status_t ag_large(rcoll_task_t *task, ag_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;

    if (task->phase == 0) {
        int rotates = ag_rotates(sh, n);
        size_t piece = rotates ? rcoll__shm_lines(n) : sh->chunk;
        rcoll__shm_pipe_init(&S->pipe, sh, piece, n, 2, rotates);
        /* every rank reads all of every other rank's pipeline area: its
         * pages mapped here in this call, not one buffer per call over the
         * next nbuf calls (each page fault of a fresh mapping costs
         * microseconds on a VM; spread over the calls after the first, the
         * untimed one, they made the run-time path choice time a try of
         * two copies at 13-15 us against 5.3 steady, and keep single copy,
         * 8 us, for the rest of the run) */
        fault_in_pipes(sh);
        task->phase = 1;
    }
    return rcoll__shm_pipe_drive(task, &S->op, &S->pipe, ag_stages, S);   /* own block: chunk_in */
}

static rcoll_status_t ag_shm_progress(rcoll_task_t *task)
{
    ag_shm_state_t *S = rcoll_task_state(task, ag_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll__shm_t *sh = S->op.sh;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    if (S->path == 0) {
        /* once per call: the fixed sizes, or rank 0's run-time choice */
        int cma = rcoll__shm_cma_allgather(sh, n), explore = 0;
        if (rcoll__shm_adapt_covers(sh, n)) {
            if (!rcoll__shm_adapt_choose(task, &S->op, n, &cma, &explore)) {
                return RCOLL_INPROGRESS;
            }
            if (sh->me == 0) {
                S->t0 = rcoll__shm_adapt_now();
            }
        }
        S->path = cma ? 2 : 1;
        rcoll__shm_word_path(&S->op, S->path);
        S->explore = explore;
        if (cma && (n > rcoll__shm_copy_slot_max(sh) || ag_rotates(sh, n)) &&
            rcoll__shm_adapt_covers(sh, n)) {
            /* single copy, with a try of two copies to come: the pages
             * that try will touch (as ag_large), faulted in now.  Else the
             * try pays them, 5-25 us a page on a VM (shm_segment.c), in a
             * call well into the timed ones: a stock OSU sweep's 128 KiB
             * allgather took 80 us instead of 9. */
            fault_in_pipes(sh);
        }
        if (!cma && n >= sh->agstore.min && !ag_rotates(sh, n)) {
            /* two copies: plain or streaming stores into the segment.  One
             * try at a time: a try of the two-copy path runs on the store
             * kind in use (a streaming try 3x slower in it kept the path
             * on single copy for thousands of calls) */
            int stream = rcoll__shm_agstore_choose(sh, S->op.k, n, &explore);
            if (explore && S->explore) {
                stream ^= 1;
                explore = 0;
            }
            S->stores = (int8_t)(1 + stream);
            S->sexplore = (int8_t)explore;
            if (sh->me == 0 && S->t0 == 0 && rcoll__shm_timed_k(S->op.k, explore)) {
                S->t0 = rcoll__shm_adapt_now();
            }
        }
    }
    if (S->path == 2) {
        st = ag_cma(task, S, n);
    } else {
        st = n <= rcoll__shm_copy_slot_max(sh) && !ag_rotates(sh, n) ? ag_small(task, S, n)
                                                                      : ag_large(task, S, n);
    }
    if (st == RCOLL_OK && S->t0 != 0) {
        uint64_t ns = rcoll__shm_adapt_now() - S->t0;
        if (rcoll__shm_adapt_covers(sh, n) && !S->sexplore) {
            /* (a store try's time is not the two-copy path's) */
            rcoll__shm_adapt_sample(sh, n, S->path == 2, S->explore, ns);
        }
        if (S->stores != 0) {
            rcoll__shm_agstore_sample(sh, n, S->stores == 2, S->sexplore, ns);
        }
    }
    return st;
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
