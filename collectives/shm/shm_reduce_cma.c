/*
 * shm_reduce_cma.c - the single-copy shm reduce (shm_cma.h), the reduction
 * shared among the ranks: the vector is split into p slices (whole
 * datatype elements, cache-line multiples where the count allows; some are
 * empty when it is small) and rank r reduces slice r.  Every rank
 * publishes where its send buffer is, the root also its receive buffer (a
 * 32-byte descriptor).  Rank r reads slice r of every other rank's vector
 * piece by piece (RCOLL__SHM_CMA_PIECE, so a piece stays in cache between
 * its read and its reduction) with process_vm_readv and folds them in rank
 * order 0, 1, ..., p - 1, as the flat path does (the result is bitwise the
 * same); the root folds its slice straight into its receive buffer, any
 * other rank into its scratch and writes each finished piece into the
 * root's receive buffer with process_vm_writev.  Each byte crosses between
 * cores once, and the p ranks reduce at once.
 *
 * Per piece: rank 0's part goes straight into the accumulator (or, if
 * it is this rank's own, the first fold reads it from there), every later
 * rank's into the scratch, then folded in.  In place on a root other than 0, its own part
 * is saved first (the second scratch piece), since rank 0's part lands on
 * it.  In place the others read the root's part of slice r from its
 * receive buffer and rank r writes slice r back there: only rank r touches
 * slice r, each piece read before it is written.
 *
 * Completion: a rank raises cma_read once its reads and its writes are
 * over, and leaves only once every other rank has raised it (or left), so
 * no send buffer goes while someone may read it; the root waits for every
 * other rank's cma_read itself (rcoll__shm_cma_wrote: a rank that left
 * without it fails the reduce), so every slice is in its receive buffer.
 *
 * State (rcoll__shm_red_t): next, the rank whose descriptor to check
 * next; cs, the rank whose cma_read to check next.  task->phase: 0 before
 * publishing, 1 published, 2 this rank's slice done.  Waits: step 1 the
 * slot (k - 2), step 2 a rank's descriptor, step 3 a rank still reading or
 * writing (task->wait_peer names the rank).
 */
#include <stdlib.h>
#include <string.h>
#include "reduce.h"
#include "shm_cma.h"
#include "shm_reduction.h"
#include "engines/shm_pipe.h"

/* Rank r's slice of an n-byte vector of dsize-byte elements, in bytes:
 * ceil(count / p) elements rounded up to a whole number of cache lines
 * (elements never split; line-aligned slices where the buffers are, so
 * two ranks' writes into the root's buffer share no line), the last ones
 * shorter or empty. */
static void slice_of(size_t n, size_t dsize, int p, int r, size_t *off, size_t *len)
{
    size_t count = n / dsize, g = dsize, a = RCOLL__SHM_LINE;
    while (a != 0) {                        /* g = gcd(dsize, line) */
        size_t t = g % a;
        g = a;
        a = t;
    }
    size_t unit = RCOLL__SHM_LINE / g;      /* elements per lcm(dsize, line) bytes */
    size_t per = (count + (size_t)p - 1) / (size_t)p;
    per = (per + unit - 1) / unit * unit;
    size_t from = (size_t)r * per < count ? (size_t)r * per : count;
    size_t to = count - from < per ? count : from + per;
    *off = from * dsize;
    *len = (to - from) * dsize;
}

/* Fold bytes [off, off + len) of every rank's vector; the root into its
 * receive buffer, the others into the scratch and then into the root's. */
static rcoll_status_t fold_piece(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n, size_t off,
                                 size_t len)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    size_t dsize = rcoll_datatype_size(a->dtype), cnt = len / dsize;
    int root = a->root;
    char *acc, *in = sh->cma_scratch;
    const char *own = (const char *)a->sendbuf + off;
    rcoll_status_t st;

    if (sh->me != root) {
        acc = sh->cma_scratch + RCOLL__SHM_CMA_PIECE;
    } else {
        acc = (char *)a->recvbuf + off;
        if (a->in_place) {
            own = acc;
            if (sh->me != 0) {
                memcpy(sh->cma_scratch + RCOLL__SHM_CMA_PIECE, acc, len);
                own = sh->cma_scratch + RCOLL__SHM_CMA_PIECE;
            }
        }
    }
    const char *cur = acc;   /* the fold so far: rank 0's part where it lies */
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
            cur = src;   /* this rank's own: folded from there, not copied first */
        } else {
            rcoll_reduce_local3(acc, cur, src, cnt, a->dtype, a->op);
            cur = acc;
        }
    }
    if (cur != acc) {
        memcpy(acc, cur, len);   /* one rank */
    }
    if (sh->me != root &&
        (st = rcoll__shm_cma_push_part(task, &S->op, root, acc, n, off, len)) != RCOLL_OK) {
        return st == RCOLL_INPROGRESS ? RCOLL_ERR_INTERNAL : st;   /* the root published */
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll__shm_reduce_cma(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    int root = a->root;
    size_t dsize = rcoll_datatype_size(a->dtype), off, len;

    slice_of(n, dsize, sh->p, sh->me, &off, &len);
    if (task->phase == 0) {
        if (len > 0 && sh->cma_scratch == NULL) {
            /* made on the first single-copy reduce with a slice here; freed
             * with the segment */
            sh->cma_scratch = aligned_alloc(RCOLL__SHM_LINE, 2 * RCOLL__SHM_CMA_PIECE);
            if (sh->cma_scratch == NULL) {
                rcoll_error("shm reduce: comm rank %d: no memory for the %d KiB scratch of the "
                            "single-copy reduce", sh->me, 2 * RCOLL__SHM_CMA_PIECE / 1024);
                return RCOLL_ERR_NO_MEMORY;
            }
        }
        /* the root: others read its part from its receive buffer in place
         * (sendbuf is recvbuf then) and write their slices into it */
        int posted = sh->me == root
                   ? rcoll__shm_cma_post_rw(task, &S->op, a->in_place ? a->recvbuf : a->sendbuf,
                                            a->recvbuf, n)
                   : rcoll__shm_cma_post(task, &S->op, a->sendbuf, n);
        if (!posted) {
            return RCOLL_INPROGRESS;
        }
        task->phase = 1;
    }
    if (task->phase == 1) {
        if (len > 0) {
            /* every vector published, so the reads and writes below never wait */
            for (; S->next < sh->p; S->next++) {
                if (S->next != sh->me &&
                    rcoll__shm_slot_read(task, &S->op, S->next, 2 * sizeof(uint64_t)) == NULL) {
                    return rcoll__shm_not_read(&S->op);
                }
            }
            size_t piece = RCOLL__SHM_CMA_PIECE / dsize * dsize;
            for (size_t o = 0; o < len; o += piece) {
                rcoll_status_t st = fold_piece(task, S, n, off + o, len - o < piece ? len - o : piece);
                if (st != RCOLL_OK) {
                    return st;
                }
            }
        }
        rcoll__shm_cma_read_done(sh, S->op.k);
        task->phase = 2;
    }
    /* nobody leaves while another may still read its buffer; the root not
     * before every slice is written */
    for (; S->cs < sh->p; S->cs++) {
        if (S->cs == sh->me) {
            continue;
        }
        int gone = sh->me == root ? rcoll__shm_cma_wrote(task, &S->op, S->cs)
                                  : rcoll__shm_cma_reader_gone(task, &S->op, S->cs);
        if (!gone) {
            return rcoll__shm_not_read(&S->op);
        }
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}
