/*
 * shm_bcast.c - broadcast through the communicator's shared-memory segment
 * (every rank on one node); no messages.
 *
 * Small buffers (<= 64 KiB and the slot size): the root copies the buffer into its
 * slot of parity k & 1 and raises the slot's sequence word to k; the others
 * raise their own word to k (no data: it tells a peer in another call that
 * this rank is in a bcast) and wait for the root's and copy out.  The root rewrites that slot (collective k + 2)
 * only after every rank has finished k.
 *
 * Large buffers: a pipeline over chunks.  The root copies chunk c into
 * piece c mod ring of its pipeline area and raises in_ready; the others
 * copy it out and raise out_done, which lets the root reuse the piece ring
 * chunks later.  The pieces run over the whole area (input and result
 * buffers, at least four times the L2: RCOLL__SHM_BC_RING_MAX in shm.h), so the
 * root rewrites a piece only after the reader's L2 has let it go.
 *
 * Waits: step 1 a slot still being read, step 2 the root's data, step
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
    int               next;       /* single copy, root: next reader to wait for */
    int               path;       /* 0: not chosen yet, 1: two copies, 2: single copy */
    int               explore;    /* part of a try of the other path (shm_adapt.h) */
    uint64_t          t0;         /* a timed call whose path is chosen at run time: its start */
} bc_shm_state_t;
RCOLL_ALG_STATE_CHECK(bc_shm_state_t);

/* This rank's slot word of k says which call it is in (no data), so that a
 * root or barrier in another call sees the mismatch at once.  0 while
 * some rank is not through k - 2. */
static int announce(rcoll_task_t *task, bc_shm_state_t *S)
{
    rcoll__shm_t *sh = S->op.sh;
    if (!rcoll__shm_slots_free(task, sh, S->op.k)) {
        return 0;
    }
    atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, S->op.k), S->op.word, memory_order_release);
    return 1;
}

/* The root's share of an n-byte single-copy bcast: the bytes from *from
 * on, 0 where the root does not help (the same answer on every rank). */
static size_t root_share(const rcoll__shm_t *sh, size_t n, size_t *from)
{
    size_t share = n / (size_t)sh->p & ~(size_t)(RCOLL__SHM_LINE - 1);
    if (share < sh->cma_share_min) {
        share = 0;
    }
    *from = n - share;
    return share;
}

/* Single copy (shm_cma.h): the root publishes where its buffer is and
 * waits until every other rank has read it straight into its own buffer.
 *
 * From sh->cma_share_min bytes per rank on, the root, which has
 * nothing else to do, copies a share too: every other rank also publishes
 * its receive buffer, the root writes the last n / p bytes of its message
 * into each (process_vm_writev) while that rank reads the rest, and a rank
 * returns only once the root's write into it is over.  Each copy is then
 * (p - 1) / p of the message on every rank instead of all of it on the
 * readers (2 ranks: half; the Xeon VM's 128-512 KiB bcast 1.6-1.9x
 * faster, docs/shm.md "Single copy"). */
static rcoll_status_t bc_cma(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int root = task->args.root;
    size_t from, share = root_share(sh, n, &from);
    rcoll_status_t st;

    if (sh->me == root) {
        if (task->phase == 0) {
            if (!rcoll__shm_cma_post(task, &S->op, task->args.recvbuf, n)) {
                return RCOLL_INPROGRESS;
            }
            S->next = share > 0 ? 1 : 0;   /* phase 1: the offset from root; 2: a rank */
            task->phase = share > 0 ? 1 : 2;
        }
        if (task->phase == 1) {
            /* my share into every other rank's receive buffer, the next
             * rank first (p roots at once would not all start at rank 0) */
            for (; S->next < sh->p; S->next++) {
                int q = (root + S->next) % sh->p;
                st = rcoll__shm_cma_push_part(task, &S->op, q,
                                              (const char *)task->args.recvbuf + from, n, from,
                                              share);
                if (st != RCOLL_OK) {
                    return st;
                }
                rcoll__shm_progressed(task);
            }
            rcoll__shm_cma_read_done(sh, S->op.k);     /* my writes are over */
            S->next = 0;
            task->phase = 2;
        }
        if (!rcoll__shm_cma_readers_gone(task, &S->op, &S->next)) {
            return rcoll__shm_not_read(&S->op);
        }
    } else {
        if (task->phase == 0) {
            if (!(share > 0 ? rcoll__shm_cma_post_rw(task, &S->op, task->args.recvbuf,
                                                     task->args.recvbuf, n)
                            : announce(task, S))) {
                return RCOLL_INPROGRESS;
            }
            task->phase = 1;
        }
        if (task->phase == 1) {
            st = rcoll__shm_cma_pull_part(task, &S->op, root, task->args.recvbuf, n, 0, from);
            if (st != RCOLL_OK) {
                return st;
            }
            rcoll__shm_cma_read_done(sh, S->op.k);
            task->phase = 2;
        }
        if (share > 0 && !rcoll__shm_cma_wrote(task, &S->op, root)) {
            return rcoll__shm_not_read(&S->op);   /* the root still writes into my buffer */
        }
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

static rcoll_status_t bc_small(rcoll_task_t *task, bc_shm_state_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int root = task->args.root;
    const char *data;

    if (sh->me == root) {
        int stream = n >= sh->over_stream_min, timed = 0;   /* oversubscribed: fixed */
        uint64_t t0 = 0;
        if (n >= sh->bstore.min) {
            stream = rcoll__shm_bstore_root(sh, S->op.k, n, S->explore, &timed);
            t0 = timed ? rcoll__shm_adapt_now() : 0;
        }
        if (!rcoll__shm_slot_write_demoted(task, &S->op, task->args.recvbuf, n, stream)) {
            return RCOLL_INPROGRESS;
        }
        if (timed) {
            rcoll__shm_bstore_wrote(sh, S->op.k, rcoll__shm_adapt_now() - t0);
        }
    } else {
        if (task->phase == 0) {
            if (!announce(task, S)) {
                return RCOLL_INPROGRESS;
            }
            task->phase = 1;
        }
        if ((data = rcoll__shm_slot_read(task, &S->op, root, n)) == NULL) {
            return rcoll__shm_not_read(&S->op);
        }
        uint64_t t0 = n >= sh->bstore.min && rcoll__shm_bstore_timed(sh, S->op.k, S->explore) ?
                      rcoll__shm_adapt_now() : 0;
        rcoll__shm_prefetch(data, n);
        memcpy(task->args.recvbuf, data, n);
        rcoll__shm_demote(sh, data, n);
        if (t0 != 0) {
            rcoll__shm_bstore_copied(sh, S->op.k, rcoll__shm_adapt_now() - t0);
        }
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* The root's only stage: the next chunk into its input buffer once every
 * rank has copied out the chunk that used it before. */
static int root_chunk(rcoll_task_t *task, void *state)
{
    bc_shm_state_t *S = state;
    size_t c = S->pipe.done[0], off, n = task->args.count * rcoll_datatype_size(task->args.dtype);
    size_t len = rcoll__shm_pipe_part(&S->pipe, c, n, &off);

    if (!rcoll__shm_put_chunk_kind(task, S->op.sh, S->pipe.g0 + c, c,
                                   (const char *)task->args.recvbuf + off, len,
                                   n >= S->op.sh->over_stream_min)) {
        return 0;
    }
    S->pipe.done[0]++;
    return 1;
}

/* The others' only stage: the next chunk out of the root's input buffer. */
static int leaf_chunk(rcoll_task_t *task, void *state)
{
    bc_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    size_t c = S->pipe.done[0], off, n = task->args.count * rcoll_datatype_size(task->args.dtype);
    uint64_t g = S->pipe.g0 + c;
    int root = task->args.root;

    if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, root)->in_ready, &sh->in_ready[root], g)) {
        rcoll__shm_waiting(task, root, RCOLL__SHM_STEP_CHUNK + (uint32_t)c);
        return 0;
    }
    size_t len = rcoll__shm_pipe_part(&S->pipe, c, n, &off);
    rcoll__shm_copy_out(sh->stream_min, (char *)task->args.recvbuf + off, rcoll__shm_in(sh, root, g),
                        len, n);
    rcoll__shm_out_done(sh, g);
    S->pipe.done[0]++;
    return 1;
}

static const rcoll__shm_stage_fn root_stages[] = { root_chunk };
static const rcoll__shm_stage_fn leaf_stages[] = { leaf_chunk };

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
    int root = task->args.root;

    if (task->phase == 0) {
        rcoll__shm_pipe_init(&S->pipe, sh, bc_chunk(sh, n), n, 1, 1);
        S->pipe.reads = sh->me == root ? RCOLL__SHM_READS_NONE : root;
        /* the ring reads all of the root's pipeline area: its pages
         * mapped in one go, once per segment (shm_segment.c) */
        rcoll__shm_fault_in_pipe(sh, root);
        task->phase = 1;
    }
    return rcoll__shm_pipe_drive(task, &S->op, &S->pipe, sh->me == root ? root_stages : leaf_stages, S);
}

/* A call on the single-copy path whose path is chosen at run time: the
 * pages a try of two copies will touch, faulted in now (once per segment):
 * this rank's pipeline area, and the root's, all of which the ring reads.
 * Else the try pays them, 5-25 us a page on a VM (shm_segment.c), in one
 * call well into the timed ones: 5-9 ms at 128 KiB-1 MiB on the Zen 5 VM,
 * a stock OSU sweep's 128 KiB bcast 70 us instead of 7. */
static void fault_in_for_try(rcoll__shm_t *sh, int root, size_t n)
{
    if (n <= rcoll__shm_copy_slot_max(sh)) {
        return;                                 /* a try of the slots: no pipeline */
    }
    rcoll__shm_fault_in_pipe(sh, sh->me);      /* rcoll__shm_pipe_start's */
    rcoll__shm_fault_in_pipe(sh, root);        /* bc_large's */
}

static rcoll_status_t bc_shm_progress(rcoll_task_t *task)
{
    bc_shm_state_t *S = rcoll_task_state(task, bc_shm_state_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll__shm_t *sh = S->op.sh;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    if (S->path == 0) {
        /* once per call: the fixed sizes, or rank 0's run-time choice */
        int cma = rcoll__shm_cma_bcast(sh, n), explore = 0;
        if (rcoll__shm_bpath_covers(sh, n)) {
            if (!rcoll__shm_bpath_choose(task, &S->op, n, &cma, &explore)) {
                return RCOLL_INPROGRESS;
            }
            S->t0 = rcoll__shm_bpath_timed(sh, S->op.k, n, explore) ? rcoll__shm_adapt_now() : 0;
        }
        S->path = cma ? 2 : 1;
        rcoll__shm_word_path(&S->op, S->path);
        S->explore = explore;
        if (cma && rcoll__shm_bpath_covers(sh, n)) {
            fault_in_for_try(sh, task->args.root, n);
        }
    }
    if (S->path == 2) {
        st = bc_cma(task, S, n);
    } else {
        st = n <= rcoll__shm_copy_slot_max(sh) ? bc_small(task, S, n) : bc_large(task, S, n);
    }
    if (st == RCOLL_OK && S->t0 != 0) {
        rcoll__shm_bpath_called(sh, S->op.k, n, S->path == 2, S->explore,
                                rcoll__shm_adapt_now() - S->t0);
    }
    return st;
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
