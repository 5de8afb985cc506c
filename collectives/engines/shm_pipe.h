/*
 * shm_pipe.h - the shared-memory engines: reading and writing a rank's
 * slot (small collectives) and the chunk pipeline driver (large ones), used
 * by the shm bcast, allgather and reduction (allreduce, reduce).  The
 * segment, its flags and the chunk-id rules are in shm/shm.h.
 *
 * Slots: collective k's data sits in its writer's slot of parity k & 1,
 * announced by the slot's word reaching k; the writer reuses the slot for
 * k + 2 only once every rank has finished k (rcoll__shm_slots_free).
 *
 * Pipeline: a collective's nchunks chunks (ids g0 .. g0 + nchunks - 1)
 * each go through up to RCOLL__SHM_PIPE_STAGES stages in order (e.g.
 * copy in, reduce, copy out); done[s] counts the chunks through stage s.
 * The driver runs every stage that may take a chunk, again and again while
 * any moved: stage 0 while chunks are left and (with more stages) fewer
 * than nbuf are ahead of stage 1, stage s > 0 while stage s - 1 is ahead
 * of it.  A stage function moves what it can of chunk done[s] (it waits
 * on flags itself, recording the peer in task->wait_peer), increments
 * done[s] when through, and returns 1 if it moved anything.  The stages
 * are called through pointers once per chunk and stage: chunks are 64 KiB
 * and more, small collectives take the slot path.
 */
#ifndef RCOLL_SHM_PIPE_H
#define RCOLL_SHM_PIPE_H

#include <string.h>
#include "coll.h"
#include "shm/shm.h"

/* ---- slots ---- */

/* Collective op->k's n bytes from src into this rank's slot, once every
 * rank is through k - 2, then announce them (with the call's signature,
 * shm.h).  0 while some rank is not.  stream: with non-temporal stores
 * (shm_copy.h; its closing fence orders the data before the word).
 * demote: the lines go to L3 before they are announced (rcoll__shm_demote;
 * its readers demote them after reading). */
static inline int rcoll__shm_slot_write_as(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                           const void *src, size_t n, int stream, int demote)
{
    rcoll__shm_t *sh = op->sh;
    if (!rcoll__shm_slots_free(task, sh, op->k)) {
        return 0;
    }
    char *dst = rcoll__shm_slot_data(sh, sh->me, op->k, n);
    rcoll__shm_copy_kind(dst, src, n, stream);
    if (demote) {
        rcoll__shm_demote(sh, dst, n);
    }
    atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, op->k), op->word, memory_order_release);
    return 1;
}

static inline int rcoll__shm_slot_write_kind(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                             const void *src, size_t n, int stream)
{
    return rcoll__shm_slot_write_as(task, op, src, n, stream, 0);
}

static inline int rcoll__shm_slot_write_demoted(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                                const void *src, size_t n, int stream)
{
    return rcoll__shm_slot_write_as(task, op, src, n, stream, 1);
}

static inline int rcoll__shm_slot_write(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                        const void *src, size_t n)
{
    return rcoll__shm_slot_write_kind(task, op, src, n, 0);
}

/* A flat reduce's slot is filled piece by piece so that the root can fold
 * piece j in while piece j + 1 is being copied: the slot's bytes
 * [j * piece, (j + 1) * piece) of collective k are written once the
 * writer's slot_fill flag is at least rcoll__shm_fill_id(k, j + 1).  The
 * flag only grows (k grows, and a writer finishes k before it starts
 * k + 1), so a reader never takes an earlier call's pieces for k's. */
#define RCOLL__SHM_FILL_BITS 20

static inline uint64_t rcoll__shm_fill_id(uint64_t k, size_t pieces)
{
    return k << RCOLL__SHM_FILL_BITS | (uint64_t)pieces;
}

/* rcoll__shm_slot_write_kind in pieces of `piece` bytes (a line multiple,
 * n / piece < 2^RCOLL__SHM_FILL_BITS), raising slot_fill after each
 * (streaming: each piece fenced before its flag). */
static inline int rcoll__shm_slot_write_pieces_kind(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                                    const void *src, size_t n, size_t piece,
                                                    int stream)
{
    rcoll__shm_t *sh = op->sh;
    if (!rcoll__shm_slots_free(task, sh, op->k)) {
        return 0;
    }
    char *dst = rcoll__shm_slot_data(sh, sh->me, op->k, n);
    _Atomic uint64_t *fill = &rcoll__shm_ctl(sh, sh->me)->slot_fill.v;
    size_t j = 0;
    for (size_t off = 0; off < n; off += piece) {
        rcoll__shm_copy_kind(dst + off, (const char *)src + off, n - off < piece ? n - off : piece,
                             stream);
        atomic_store_explicit(fill, rcoll__shm_fill_id(op->k, ++j), memory_order_release);
    }
    atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, op->k), op->word, memory_order_release);
    return 1;
}

static inline int rcoll__shm_slot_write_pieces(rcoll_task_t *task, const rcoll__shm_op_t *op,
                                               const void *src, size_t n, size_t piece)
{
    return rcoll__shm_slot_write_pieces_kind(task, op, src, n, piece, 0);
}

/* Rank q's slot holds collective k with another signature: the ranks
 * called different collectives (or counts, datatypes, ops, roots).  Sets
 * op->error (logged). */
void rcoll__shm_slot_mismatch(rcoll_task_t *task, rcoll__shm_op_t *op, int q, uint64_t word);

/* Rank q's n bytes of collective op->k, or NULL while q has not written
 * them (task->wait_peer set) or wrote them for a different call (op->error
 * set): the caller returns rcoll__shm_not_read(op).  q arriving at k shows
 * it finished k - 1. */
static inline const char *rcoll__shm_slot_read(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                               size_t n)
{
    rcoll__shm_t *sh = op->sh;
    uint64_t k = op->k, w = atomic_load_explicit(rcoll__shm_slot_seq(sh, q, k), memory_order_acquire);
    if (w != op->word) {
        if ((w & RCOLL__SHM_K_MASK) == (k & RCOLL__SHM_K_MASK)) {
            rcoll__shm_slot_mismatch(task, op, q, w);
        } else {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_ARRIVE);
        }
        return NULL;
    }
    if (sh->fin[q] < k - 1) {
        sh->fin[q] = k - 1;
    }
    return rcoll__shm_slot_data(sh, q, k, n);
}

/* 1 once rank q's slot holds the first `pieces` pieces of collective
 * op->k (rcoll__shm_slot_write_pieces), or all of it (rcoll__shm_slot_read
 * of its n bytes); else 0 with task->wait_peer or op->error set as that
 * leaves them (the caller returns rcoll__shm_not_read(op)).  Pieces are read
 * before the slot word's signature is: the caller checks it with
 * rcoll__shm_slot_read once through. */
static inline int rcoll__shm_slot_pieces_in(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                            size_t n, size_t pieces)
{
    uint64_t f = atomic_load_explicit(&rcoll__shm_ctl(op->sh, q)->slot_fill.v, memory_order_acquire);
    return f >= rcoll__shm_fill_id(op->k, pieces) || rcoll__shm_slot_read(task, op, q, n) != NULL;
}

/* What a progress function returns when rcoll__shm_slot_read gave NULL. */
static inline rcoll_status_t rcoll__shm_not_read(const rcoll__shm_op_t *op)
{
    return op->error != RCOLL_OK ? op->error : RCOLL_INPROGRESS;
}

/* ---- per-rank flags of a chunk ---- */

enum { RCOLL__SHM_IN_READY = 0, RCOLL__SHM_RES_READY };

/* The next rank q >= *next (other than skip) whose in_ready / res_ready
 * flag has reached chunk id g: sh->p once all have, -1 (task->wait_peer
 * set, step RCOLL__SHM_STEP_CHUNK + c) while rank *next has not.  The
 * caller copies from q and advances *next past it. */
static inline int rcoll__shm_next_ready(rcoll_task_t *task, rcoll__shm_t *sh, int which, int *next,
                                        int skip, uint64_t g, size_t c)
{
    for (; *next < sh->p; ++*next) {
        int q = *next;
        if (q == skip) {
            continue;
        }
        rcoll__shm_ctl_t *ctl = rcoll__shm_ctl(sh, q);
        if (which == RCOLL__SHM_IN_READY ? !rcoll__shm_flag_ge(&ctl->in_ready, &sh->in_ready[q], g)
                                         : !rcoll__shm_flag_ge(&ctl->res_ready, &sh->res_ready[q], g)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)c);
            return -1;
        }
        return q;
    }
    return sh->p;
}

/* This rank has copied chunk g out: raise out_done. */
static inline void rcoll__shm_out_done(rcoll__shm_t *sh, uint64_t g)
{
    rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->out_done, &sh->out_done[sh->me], g);
}

/* ---- the pipeline driver ---- */

#define RCOLL__SHM_PIPE_STAGES 3

/* Whose chunks a rank reads (rcoll__shm_pipe_t.reads): every other
 * rank's, none (a bcast root), or one rank's (a bcast leaf: the root). */
#define RCOLL__SHM_READS_ALL  (-1)
#define RCOLL__SHM_READS_NONE (-2)

typedef struct rcoll__shm_pipe {
    uint64_t g0;          /* id of chunk 0 */
    size_t   chunk;       /* bytes per chunk */
    size_t   nchunks;
    size_t   done[RCOLL__SHM_PIPE_STAGES];
    int      nstages;
    int      reads;       /* RCOLL__SHM_READS_ALL (pipe_init's), _NONE, or a rank */
    int      signed_in;   /* this rank's slot word of k holds op->word */
} rcoll__shm_pipe_t;

typedef int (*rcoll__shm_stage_fn)(rcoll_task_t *task, void *state);

/* Cut nbytes into chunks of `chunk` bytes (the input pieces, see
 * rcoll__shm_pipe_start, over_all there) and take their ids. */
void rcoll__shm_pipe_init(rcoll__shm_pipe_t *P, rcoll__shm_t *sh, size_t chunk, size_t nbytes,
                          int nstages, int over_all);

/* Bytes [*off, *off + return) of chunk c of an nbytes-long buffer. */
static inline size_t rcoll__shm_pipe_part(const rcoll__shm_pipe_t *P, size_t c, size_t nbytes,
                                          size_t *off)
{
    *off = c * P->chunk;
    return nbytes - *off < P->chunk ? nbytes - *off : P->chunk;
}

/*
 * Signatures (issue 12 item 3): before its first chunk a rank writes its
 * slot word of k (op->word: k and the call's signature, shm.h) without
 * data, once every rank is through k - 2 (rcoll__shm_slots_free), so that
 * every peer can tell which call it is in.  Once per collective, not per
 * chunk: chunk ids are only handed out in call order, so two ranks whose
 * pipelines disagree in length or kind have different words for the same
 * k.  A rank waiting for a peer's chunk flag looks at that peer's word and
 * fails at once with RCOLL_ERR_PROTOCOL if it holds k with another
 * signature (the peer is in another call: its flags will never come); at
 * the end, before the collective counts as done, every rank it read from
 * must hold op->word and no other rank k with another signature, else the
 * collective fails instead of returning what it copied (bytes of another
 * call).
 *
 * Run the stages (stage s: stages[s](task, state)) as far as they go.
 * RCOLL_OK once the last stage is through every chunk (the collective is
 * then left: rcoll__shm_pipe_leave), else RCOLL_INPROGRESS, progress
 * marked for RCOLL_TIMEOUT if anything moved. */
rcoll_status_t rcoll__shm_pipe_drive(rcoll_task_t *task, rcoll__shm_op_t *op, rcoll__shm_pipe_t *P,
                                     const rcoll__shm_stage_fn *stages, void *state);

#endif
