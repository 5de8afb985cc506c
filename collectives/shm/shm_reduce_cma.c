/*
 * shm_reduce_cma.c - the single-copy shm reduce (shm_cma.h): every rank
 * other than the root publishes where its vector is and waits until the
 * root has read it; the root reads the vectors piece by piece
 * (RCOLL__SHM_CMA_PIECE, so a piece stays in cache between its read and
 * its reduction) with process_vm_readv and folds them in rank order
 * 0, 1, ..., p - 1 into its receive buffer, as the flat path does.  Each
 * byte crosses between cores once (the two-copy path: in, and the result
 * slices out), at the price of the root reducing alone.
 *
 * Per piece: rank 0's part goes straight into the receive buffer (or is
 * the root's own), every later rank's into the scratch, then folded in.
 * In place on a root other than 0, its own part is saved first (the second
 * scratch piece), since rank 0's part lands on it.
 *
 * State (rcoll__shm_red_t): next, the rank whose descriptor to check
 * next; cs, 1 once all are published.  Waits: step 2 a rank's descriptor,
 * step 3 the root still reading (task->wait_peer names the rank).
 */
#include <stdlib.h>
#include <string.h>
#include "reduce.h"
#include "shm_cma.h"
#include "shm_reduction.h"
#include "engines/shm_pipe.h"

/* The root: fold bytes [off, off + len) of every rank's vector into acc. */
static rcoll_status_t fold_piece(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n, size_t off,
                                 size_t len)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    size_t dsize = rcoll_datatype_size(a->dtype), cnt = len / dsize;
    char *acc = (char *)a->recvbuf + off, *in = sh->cma_scratch;
    const char *own = (const char *)a->sendbuf + off;
    rcoll_status_t st;

    if (a->in_place) {
        own = acc;
        if (sh->me != 0) {
            memcpy(sh->cma_scratch + RCOLL__SHM_CMA_PIECE, acc, len);
            own = sh->cma_scratch + RCOLL__SHM_CMA_PIECE;
        }
    }
    for (int q = 0; q < sh->p; q++) {
        const char *src = own;
        if (q != sh->me) {
            if ((st = rcoll__shm_cma_pull_part(task, &S->op, q, q == 0 ? acc : in, n, off, len)) !=
                RCOLL_OK) {
                return st == RCOLL_INPROGRESS ? RCOLL_ERR_INTERNAL : st;   /* all were published */
            }
            src = q == 0 ? acc : in;
        }
        if (q == 0) {
            if (src != acc) {
                memcpy(acc, src, len);
            }
        } else {
            rcoll_reduce_local(acc, src, cnt, a->dtype, a->op);
        }
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll__shm_reduce_cma(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    int root = task->args.root;

    if (sh->me != root) {
        if (task->phase == 0) {
            if (!rcoll__shm_cma_post(task, &S->op, task->args.sendbuf, n)) {
                return RCOLL_INPROGRESS;
            }
            task->phase = 1;
        }
        if (!rcoll__shm_cma_reader_gone(task, &S->op, root)) {
            return rcoll__shm_not_read(&S->op);
        }
        rcoll__shm_leave(task, &S->op);
        return RCOLL_OK;
    }
    if (sh->cma_scratch == NULL) {
        /* made on the first single-copy reduce this rank roots; freed with
         * the segment */
        sh->cma_scratch = aligned_alloc(RCOLL__SHM_LINE, 2 * RCOLL__SHM_CMA_PIECE);
        if (sh->cma_scratch == NULL) {
            rcoll_error("shm reduce: comm rank %d (the root): no memory for the %d KiB scratch "
                        "of the single-copy reduce", sh->me, 2 * RCOLL__SHM_CMA_PIECE / 1024);
            return RCOLL_ERR_NO_MEMORY;
        }
    }
    if (task->phase == 0) {
        if (!rcoll__shm_slots_free(task, sh, S->op.k)) {
            return RCOLL_INPROGRESS;
        }
        atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, S->op.k), S->op.word,
                              memory_order_release);
        task->phase = 1;
    }
    /* every vector published, so the reads below never wait */
    for (; S->next < sh->p; S->next++) {
        if (S->next != sh->me &&
            rcoll__shm_slot_read(task, &S->op, S->next, 2 * sizeof(uint64_t)) == NULL) {
            return rcoll__shm_not_read(&S->op);
        }
    }
    size_t dsize = rcoll_datatype_size(task->args.dtype);
    size_t piece = RCOLL__SHM_CMA_PIECE / dsize * dsize;
    for (size_t off = 0; off < n; off += piece) {
        rcoll_status_t st = fold_piece(task, S, n, off, n - off < piece ? n - off : piece);
        if (st != RCOLL_OK) {
            return st;
        }
    }
    rcoll__shm_cma_read_done(sh, S->op.k);
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}
