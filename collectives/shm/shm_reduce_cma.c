/*
 * shm_reduce_cma.c - the single-copy shm reduce (shm_cma.h), the reduction
 * shared among the ranks: the vector is split into p slices (whole
 * datatype elements, cache-line multiples where the count allows; some are
 * empty when it is small) and rank r reduces slice r.  Every rank
 * publishes where its send buffer is, the root also its receive buffer and
 * how large its own slice is (a 40-byte descriptor; "The split" below).
 * Rank r reads slice r of every other rank's vector piece by piece
 * (RCOLL__SHM_CMA_PIECE, so a piece stays in cache between its read and
 * its reduction) with process_vm_readv and folds them in rank order 0, 1,
 * ..., p - 1, as the flat path does (the result is bitwise the same); the
 * root folds its slice straight into its receive buffer, any other rank
 * into its scratch and writes each finished piece into the root's receive
 * buffer with process_vm_writev.  Each byte crosses between cores once,
 * and the p ranks reduce at once.
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
 * over (the root, which writes into no other rank, right after its last
 * read, before that piece's fold), and leaves only once every other rank
 * has raised it (or left), so no send buffer goes while someone may read
 * it; the root waits for every other rank's cma_read itself
 * (rcoll__shm_cma_wrote: a rank that left without it fails the reduce), so
 * every slice is in its receive buffer.
 *
 * The split.  The root reads p - 1 parts of its slice; every other rank
 * reads p - 1 parts of its own and writes the result into the root's
 * buffer, one cross-core copy more, and pays a second system call per
 * piece.  Even slices leave the root waiting for them: on the Intel Xeon
 * VM (2 ranks) a 64 KiB reduce took 5.3 us with even slices, 4.7 with the
 * root's 3/5 or 2/3, but from 768 KiB 2/3 was 10-20% slower than even
 * while 3/5 still won, so no one ratio fits every size, nor, presumably,
 * every machine.  The root balances its share per size class at run time:
 * when its own slice is done it looks whether every other rank has
 * finished; if not, its next call of that class takes RCOLL__SHM_SPLIT_STEP
 * / RCOLL__SHM_SPLIT_ONE more, else as much less.  It publishes the split
 * it used in its descriptor, so all ranks slice alike; the result is
 * bitwise the same whatever the split (every element folds in rank order).
 * RCOLL_SHM_ADAPT=off keeps even slices, =random picks them at random.
 *
 * State (rcoll__shm_red_t): next, the rank whose descriptor to check
 * next; cs, the rank whose cma_read to check next; split, the root's.
 * task->phase: 0 before publishing, 1 published, 2 this rank's slice done.  Waits: step 1 the
 * slot (k - 2), step 2 a rank's descriptor, step 3 a rank still reading or
 * writing (task->wait_peer names the rank).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "reduce.h"
#include "shm_cma.h"
#include "shm_reduction.h"
#include "engines/shm_pipe.h"

/* Slices are whole groups of lcm(dsize, line) bytes (elements never
 * split; line-aligned slices where the buffers are, so two ranks' writes
 * into the root's buffer share no line), in rank order: the root's
 * split/RCOLL__SHM_SPLIT_ONE of the groups, the others ceil(rest / (p - 1))
 * each, the last ones shorter or empty. */
void rcoll__shm_reduce_slice(size_t n, size_t dsize, int p, int root, unsigned split, int r,
                             size_t *off, size_t *len)
{
    size_t count = n / dsize, g = dsize, a = RCOLL__SHM_LINE;
    while (a != 0) {                        /* g = gcd(dsize, line) */
        size_t t = g % a;
        g = a;
        a = t;
    }
    size_t unit = RCOLL__SHM_LINE / g;      /* elements per lcm(dsize, line) bytes */
    size_t groups = (count + unit - 1) / unit, one = RCOLL__SHM_SPLIT_ONE;
    size_t at_root = p == 1 ? groups
                   : groups / one * split + (groups % one * split + one / 2) / one;
    size_t left = groups - at_root;
    size_t per = p == 1 ? 0 : (left + (size_t)p - 2) / (size_t)(p - 1);
    size_t from = 0, mine = 0;
    for (int q = 0; q <= r; q++) {
        size_t gq = at_root;
        if (q != root) {
            gq = left < per ? left : per;
            left -= gq;
        }
        if (q == r) {
            mine = gq;
        } else {
            from += gq;
        }
    }
    from = from * unit < count ? from * unit : count;
    size_t to = count - from < mine * unit ? count : from + mine * unit;
    *off = from * dsize;
    *len = (to - from) * dsize;
}

static int split_class(size_t n)
{
    int b = 0;
    while (b + 1 < RCOLL__SHM_SPLIT_NB && (n >> (b + 1)) != 0) {
        b++;
    }
    return b;
}

void rcoll__shm_split_offer(rcoll__shm_t *sh, int mode)
{
    memset(&sh->split, 0, sizeof(sh->split));
    sh->split.mode = mode;
    sh->split.chaos = mode == 2 ? (uint64_t)getpid() * 0xA24BAED4963EE407ull | 1 : 0;
}

unsigned rcoll__shm_split_choose(rcoll__shm_t *sh, size_t n)
{
    rcoll__shm_split_t *s = &sh->split;
    if (s->mode == 2) {
        return (unsigned)(rcoll__shm_chaos_next(&s->chaos) % (RCOLL__SHM_SPLIT_ONE + 1));
    }
    unsigned even = (RCOLL__SHM_SPLIT_ONE + (unsigned)sh->p / 2) / (unsigned)sh->p;
    unsigned v = s->mode == 1 ? s->root[split_class(n)] : 0;
    return v == 0 ? even : v - 1;
}

void rcoll__shm_split_learn(rcoll__shm_t *sh, size_t n, unsigned split, int waited)
{
    rcoll__shm_split_t *s = &sh->split;
    if (s->mode != 1 || split > RCOLL__SHM_SPLIT_ONE) {
        return;
    }
    unsigned v = waited ? (split + RCOLL__SHM_SPLIT_STEP < RCOLL__SHM_SPLIT_ONE
                           ? split + RCOLL__SHM_SPLIT_STEP : RCOLL__SHM_SPLIT_ONE)
                        : (split > RCOLL__SHM_SPLIT_STEP ? split - RCOLL__SHM_SPLIT_STEP : 0);
    s->root[split_class(n)] = (uint16_t)(v + 1);
    s->moves++;
}

void rcoll__shm_split_report(const rcoll_comm_t *comm, const rcoll__shm_t *sh)
{
    char buf[1024];
    size_t len = 0;

    if (rcoll__log.level < RCOLL_LOG_DEBUG || sh->split.mode != 1) {
        return;
    }
    for (int b = 0; b < RCOLL__SHM_SPLIT_NB && len < sizeof(buf) - 48; b++) {
        if (sh->split.root[b] != 0) {
            size_t from = (size_t)1 << b;
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %zu %s: %.3f;",
                                    from >= 1024 ? from / 1024 : from, from >= 1024 ? "KiB" : "B",
                                    (sh->split.root[b] - 1) / (double)RCOLL__SHM_SPLIT_ONE);
        }
    }
    if (len > 0) {
        rcoll_debug("shm: communicator 0x%llx: comm rank %d's share of the vector as the root of a "
                    "single-copy reduce, balanced at run time (%llu steps), per size class "
                    "from:%s", (unsigned long long)comm->id, sh->me,
                    (unsigned long long)sh->split.moves, buf);
    }
}

/* Fold bytes [off, off + len) of every rank's vector; the root into its
 * receive buffer, the others into the scratch and then into the root's.
 * The root's last piece (last set) raises its cma_read as soon as its last
 * read is over, before that piece's last fold: the others may leave then
 * (what they publish is copied; the root writes nowhere else), and a
 * rank's time in the call is what an OSU benchmark averages. */
static rcoll_status_t fold_piece(rcoll_task_t *task, rcoll__shm_red_t *S, size_t n, size_t off,
                                 size_t len, int last)
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
            if (last && sh->me == root && q == (sh->me == sh->p - 1 ? sh->p - 2 : sh->p - 1)) {
                rcoll__shm_cma_read_done(sh, S->op.k);      /* its reads are over */
            }
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

    if (task->phase == 0) {
        if (sh->p > 1 && sh->cma_scratch == NULL) {
            /* made on the first single-copy reduce; freed with the segment */
            sh->cma_scratch = aligned_alloc(RCOLL__SHM_LINE, 2 * RCOLL__SHM_CMA_PIECE);
            if (sh->cma_scratch == NULL) {
                rcoll_error("shm reduce: comm rank %d: no memory for the %d KiB scratch of the "
                            "single-copy reduce", sh->me, 2 * RCOLL__SHM_CMA_PIECE / 1024);
                return RCOLL_ERR_NO_MEMORY;
            }
        }
        /* the root: others read its part from its receive buffer in place
         * (sendbuf is recvbuf then) and write their slices into it */
        if (sh->me == root && S->split == 0) {
            S->split = (int16_t)(rcoll__shm_split_choose(sh, n) + 1);
        }
        int posted = sh->me == root
                   ? rcoll__shm_cma_post_split(task, &S->op, a->in_place ? a->recvbuf : a->sendbuf,
                                               a->recvbuf, n, (unsigned)S->split - 1)
                   : rcoll__shm_cma_post(task, &S->op, a->sendbuf, n);
        if (!posted) {
            return RCOLL_INPROGRESS;
        }
        task->phase = 1;
    }
    if (task->phase == 1) {
        if (S->split == 0) {
            unsigned split;
            rcoll_status_t st = rcoll__shm_cma_split_of(task, &S->op, root, n, &split);
            if (st != RCOLL_OK) {
                return st;
            }
            S->split = (int16_t)(split + 1);
        }
        rcoll__shm_reduce_slice(n, dsize, sh->p, root, (unsigned)S->split - 1, sh->me, &off,
                                &len);
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
                size_t l = len - o < piece ? len - o : piece;
                rcoll_status_t st = fold_piece(task, S, n, off + o, l, o + l >= len);
                if (st != RCOLL_OK) {
                    return st;
                }
            }
        }
        rcoll__shm_cma_read_done(sh, S->op.k);
        if (sh->me == root) {
            rcoll__shm_split_learn(sh, n, (unsigned)S->split - 1,
                                   !rcoll__shm_cma_all_read(sh, S->op.k));
        }
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
