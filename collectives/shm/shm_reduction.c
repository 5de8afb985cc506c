/*
 * shm_reduction.c - the reduction engine of the shm allreduce and reduce
 * (root < 0: every rank gets the result; else only root).
 *
 * Flat (small vectors, rcoll__shm_flat): each rank copies its vector into
 * its slot of parity k & 1 and raises the slot's sequence word to k; the
 * ranks that need the result reduce all slots in rank order 0, 1, ..., p-1
 * (their own vector from their send buffer, same bits), so all compute
 * bitwise the same value.  A slot is rewritten for collective k + 2 only
 * when every rank has finished k (its done flag).
 *
 * Pipelined (larger): chunks of p slices.  Per chunk, (A) each rank copies
 * the slices of the others into its input buffer, (B) rank r reduces slice
 * r over all ranks in rank order (its own slice straight from its send
 * buffer) into its result buffer (2-rank allreduce: over the other rank's
 * input slice, res_over_input, and into its receive buffer in the same
 * pass), (C) every rank that needs the result copies all result slices
 * out.  Stages of consecutive chunks overlap
 * across nbuf buffers; each byte crosses between cores once each way.
 * A 2-rank reduce of sh->red_rotate_min bytes up to one chunk takes the
 * pipeline too, its pieces rotating over the whole area (red_rotates).
 *
 * Waits: step 1 a slot still being read, step 2 a contribution, step 16 + c
 * chunk c of the pipeline (task->wait_peer names the rank).
 */
#include <stdint.h>
#include <string.h>
#include "reduce.h"
#include "shm_adapt.h"
#include "shm_reduction.h"

typedef rcoll__shm_red_t ar_shm_state_t;
RCOLL_ALG_STATE_CHECK(ar_shm_state_t);

enum { PH_START = 0, PH_GATHER, PH_CHECK };

/* A flat reduce of at least sh->red_pieced_min bytes: the other ranks
 * fill their slots in pieces (rcoll__shm_slot_write_pieces), and the root
 * folds piece j of every rank, in rank order, as soon as it is there,
 * while piece j + 1 is still being copied: the copy and the reduction
 * overlap, where the whole-slot path runs them one after the other.  The
 * root writes no slot of its own (no one reads it) unless in place, where
 * its vector is about to be overwritten. */
static rcoll_status_t red_small_pieced(rcoll_task_t *task, ar_shm_state_t *S, size_t n, int root)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    uint64_t k = S->op.k;
    size_t piece = rcoll__shm_red_piece_for(sh, n), npieces = (n + piece - 1) / piece;
    size_t es = rcoll_datatype_size(a->dtype);
    int me = sh->me, p = sh->p;

    if (task->phase == PH_START) {
        if (me != root) {
            if (!rcoll__shm_slot_write_pieces_kind(task, &S->op, a->sendbuf, n, piece, S->store.stream)) {
                return RCOLL_INPROGRESS;
            }
            rcoll__shm_leave(task, &S->op);
            return RCOLL_OK;
        }
        if (a->in_place && !rcoll__shm_slot_write(task, &S->op, a->sendbuf, n)) {
            return RCOLL_INPROGRESS;
        }
        S->cs = 0;
        S->next = 0;
        task->phase = PH_GATHER;
    }
#define SRC(_q) ((_q) == me && !a->in_place ? (const char *)a->sendbuf \
                                            : rcoll__shm_slot_data(sh, (_q), k, n))
    char *out = a->recvbuf;
    for (; task->phase == PH_GATHER && (size_t)S->cs < npieces; S->cs++, S->next = 0) {
        size_t off = (size_t)S->cs * piece, len = n - off < piece ? n - off : piece;
        for (; S->next < p; S->next++) {
            int q = S->next;
            if (q != me) {
                if (!rcoll__shm_slot_pieces_in(task, &S->op, q, n, (size_t)S->cs + 1)) {
                    return rcoll__shm_not_read(&S->op);
                }
                rcoll__shm_prefetch(SRC(q) + off, len);
            }
            if (q == 1) {
                rcoll_reduce_local3(out + off, SRC(0) + off, SRC(1) + off, len / es, a->dtype, a->op);
            } else if (q > 1) {
                rcoll_reduce_local(out + off, SRC(q) + off, len / es, a->dtype, a->op);
            }
        }
    }
#undef SRC
    if (task->phase == PH_GATHER) {
        task->phase = PH_CHECK;
        S->next = 0;
    }
    /* every slot word: the signature check (and what says q finished k - 1) */
    for (; S->next < p; S->next++) {
        if (S->next != me && rcoll__shm_slot_read(task, &S->op, S->next, n) == NULL) {
            return rcoll__shm_not_read(&S->op);
        }
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* This rank's vector into its slot: plain stores, or from sh->store.min
 * on in an allreduce, plain or streaming as rank 0 chooses at run time
 * (shm_adapt.h), rank 0 timing the call from here to its return (every
 * try, one call in 8 else); where the node's ranks outnumber its CPUs, an
 * allreduce streams from sh->over_stream_min (no choice there).  0 while
 * some rank is not through k - 2. */
static int copy_in(rcoll_task_t *task, ar_shm_state_t *S, size_t n, int root)
{
    rcoll__shm_t *sh = S->op.sh;

    if (root < 0 && n >= sh->store.min && !S->store.chosen) {
        rcoll__shm_store_call_begin(sh, &S->store, S->op.k, n, rcoll__shm_store_choose);
    }
    int stream = S->store.stream || (root < 0 && n >= sh->over_stream_min);
    return rcoll__shm_slot_write_kind(task, &S->op, task->args.sendbuf, n, stream);
}

static rcoll_status_t ar_small(rcoll_task_t *task, ar_shm_state_t *S, size_t n, int root)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    uint64_t k = S->op.k;

    if (task->phase == PH_START) {
        if (!copy_in(task, S, n, root)) {
            return RCOLL_INPROGRESS;
        }
        task->phase = PH_GATHER;
        if (root >= 0 && sh->me != root) {
            rcoll__shm_leave(task, &S->op);    /* reduce: the root reads it */
            return RCOLL_OK;
        }
    }
    /* this rank's own vector straight from its send buffer (same bits as
     * its slot) unless in place, where the result overwrites it */
#define SRC(_q) ((_q) == sh->me && !a->in_place ? (const char *)a->sendbuf \
                                                : rcoll__shm_slot_data(sh, (_q), k, n))
    for (; S->next < sh->p; S->next++) {
        int q = S->next;
        const char *data = rcoll__shm_slot_read(task, &S->op, q, n);
        if (data == NULL) {
            return rcoll__shm_not_read(&S->op);
        }
        if (q != sh->me || a->in_place) {
            rcoll__shm_prefetch(data, n);
        }
        if (q == 1) {
            rcoll_reduce_local3(a->recvbuf, SRC(0), SRC(1), a->count, a->dtype, a->op);
        } else if (q > 1) {
            rcoll_reduce_local(a->recvbuf, SRC(q), a->count, a->dtype, a->op);
        }
    }
#undef SRC
    if (root < 0) {   /* a reduce's: rcoll__shm_reduce_progress */
        rcoll__shm_store_call_end(sh, &S->store, n, rcoll__shm_store_sample);
    }
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* Where slice s of a chunk of m elements begins (slice s: [lo(s), lo(s + 1))).
 * An allreduce, or a reduce on more than 2 ranks: p equal slices.  A reduce
 * on 2 ranks: the root's slice is the whole chunk (the same on both ranks:
 * in place or not is the root's own business).  Equal slices make the root
 * copy its half in, reduce its half and copy the other half out (three
 * half-vector passes on its critical path); reducing the whole chunk from
 * the other rank's input buffer is one pass, and the other rank's copy-in
 * of chunk c + 1 overlaps it (2-rank reduce of 512 KiB-4 MiB 15-30% faster,
 * A/B on the Xeon VM).  A root in place reduces into its receive buffer as
 * well (reduces_direct): a result buffer in the segment holds one slice. */
static int root_all(const ar_shm_state_t *S)
{
    return S->root >= 0 && S->op.sh->p == 2;
}

static size_t slice_lo(const ar_shm_state_t *S, size_t m, int s, int p)
{
    if (root_all(S)) {
        return s > S->root ? m : 0;
    }
    return m * (size_t)s / (size_t)p;
}

typedef struct {
    size_t off, m, es;    /* chunk's first element, elements, element size */
} chunk_t;

static chunk_t chunk_of(const ar_shm_state_t *S, const rcoll_coll_args_t *a, size_t j)
{
    chunk_t c;
    size_t per = S->pipe.chunk / (c.es = rcoll_datatype_size(a->dtype));
    c.off = j * per;
    c.m = a->count - c.off < per ? a->count - c.off : per;
    return c;
}

/* A 2-rank allreduce keeps each result slice where the reduction read the
 * other rank's part of it: rank r reduces slice r into the other rank's
 * input buffer (the lines it has just read from there, element for
 * element), copies it into its receive buffer, and the other rank copies
 * it out of its own input buffer.  No result buffer: the copy into it
 * (lines the other rank read in their last use) was a quarter of the
 * call's time (docs/shm.md, "Results over the inputs").  So a rank's
 * input buffer holds the other rank's result until this rank has copied
 * it out: stage A reuses it only after stage C.  Not with more ranks (not
 * measured: this machine has 2 cores) nor for a reduce (its root reduces
 * whole chunks). */
static int res_over_input(const ar_shm_state_t *S)
{
    return S->root < 0 && S->op.sh->p == 2;
}

/* Stage A: my input slices for the other ranks into my buffer. */
static int stage_in(rcoll_task_t *task, void *state)
{
    ar_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    size_t ci = S->pipe.done[0];
    uint64_t g = S->pipe.g0 + ci, reuse = rcoll__shm_reuse_id(sh, g);
    int me = sh->me;

    for (int q = 0; q < sh->p; q++) {
        if (q != me && !rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->res_ready, &sh->res_ready[q], reuse)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)ci);
            return 0;
        }
    }
    if (res_over_input(S) && ci >= S->pipe.done[2] + sh->ring) {
        return 0;   /* the other's result of chunk ci - ring is still here (stage C) */
    }
    chunk_t c = chunk_of(S, &task->args, ci);
    const char *src = (const char *)task->args.sendbuf + c.off * c.es;
    char *dst = rcoll__shm_in(sh, me, g);
    size_t lo = slice_lo(S, c.m, me, sh->p), hi = slice_lo(S, c.m, me + 1, sh->p);
    int stream = S->root >= 0 && S->store.stream;   /* a reduce's choice (rcoll__shm_reduce_progress) */
    rcoll__shm_copy_kind(dst, src, lo * c.es, stream);
    rcoll__shm_copy_kind(dst + hi * c.es, src + hi * c.es, (c.m - hi) * c.es, stream);
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->in_ready, &sh->in_ready[me], g);
    S->pipe.done[0]++;
    return 1;
}

/* Stage B reduces this rank's slice into its receive buffer when it has
 * one of its own: not in place, and not a reduce's non-root rank.  An
 * allreduce then copies the slice to the result buffer for the others
 * (see stage_reduce); a reduce's root is the only reader of results, so
 * its own slice stays where it is. */
static int reduces_direct(const rcoll_task_t *task, const ar_shm_state_t *S)
{
    if (root_all(S) && S->root == S->op.sh->me) {
        return 1;   /* in place too: out is one of the two inputs, element for element */
    }
    return !task->args.in_place && (S->root < 0 || S->root == S->op.sh->me);
}

/* Stage B: reduce my slice of chunk cr over every rank, in rank order. */
static int stage_reduce(rcoll_task_t *task, void *state)
{
    ar_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    size_t cr = S->pipe.done[1];
    uint64_t g = S->pipe.g0 + cr, reuse = rcoll__shm_reuse_id(sh, g);
    int me = sh->me, p = sh->p;

    for (int q = 0; q < p; q++) {
        rcoll__shm_ctl_t *c = rcoll__shm_ctl(sh, q);
        if ((q != me && !rcoll__shm_flag_ge(&c->in_ready, &sh->in_ready[q], g)) ||
            !rcoll__shm_flag_ge(&c->out_done, &sh->out_done[q], reuse)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)cr);
            return 0;
        }
    }
    chunk_t c = chunk_of(S, a, cr);
    size_t lo = slice_lo(S, c.m, me, p), len = slice_lo(S, c.m, me + 1, p) - lo;
    const char *mine = (const char *)a->sendbuf + (c.off + lo) * c.es;
    char *res = rcoll__shm_res(sh, me, g);
    /* Direct: reduce into this rank's receive buffer, then memcpy the slice
     * to the result buffer.  The result buffer's lines were read by the
     * other ranks in its last use; the kernel's vector stores fetch each
     * for ownership across cores (5.5 GB/s on this VM), while memcpy's
     * string stores write whole lines (30+ GB/s). */
    int direct = reduces_direct(task, S), over = res_over_input(S);
    char *mine_out = (char *)a->recvbuf + (c.off + lo) * c.es;
    char *out = over ? rcoll__shm_in(sh, 1 - me, g) + lo * c.es : direct ? mine_out : res;
#define SRC(_q) ((_q) == me ? mine : rcoll__shm_in(sh, (_q), g) + lo * c.es)
    int stream = a->count * c.es >= sh->stream_min;
    if (len > 0 && over && !a->in_place && (!stream || ((uintptr_t)mine_out & 15) == 0)) {
        /* the result over the other's input and into my receive buffer in
         * one pass (docs/shm.md, "The result written twice in one pass");
         * in place, the receive buffer is an input; a receive buffer not
         * 16-byte aligned cannot take streaming stores, which the copy
         * below can (from its first whole line) */
        rcoll_reduce_local3_copy(out, SRC(0), SRC(1), mine_out, len, a->dtype, a->op, stream);
    } else if (len > 0) {
        rcoll_reduce_local3(out, SRC(0), SRC(1), len, a->dtype, a->op);
        for (int q = 2; q < p; q++) {
            rcoll_reduce_local(out, SRC(q), len, a->dtype, a->op);
        }
        if (over) {
            rcoll__shm_copy_out(sh->stream_min, mine_out, out, len * c.es, a->count * c.es);
        } else if (direct && S->root < 0) {
            memcpy(res, out, len * c.es);   /* a reduce's root reads its own slice from out */
        }
    }
#undef SRC
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->res_ready, &sh->res_ready[me], g);
    S->pipe.done[1]++;
    RCOLL_FAULT_AT(task->ctx, RCOLL_FAULT_PIPELINE, S->pipe.done[1]);
    if (S->root >= 0 && me != S->root) {
        /* reduce: only the root copies results out; this rank is through */
        rcoll__shm_out_done(sh, g);
        S->pipe.done[2]++;
    }
    return 1;
}

/* Stage C: every result slice of the chunk into the receive buffer. */
static int stage_out(rcoll_task_t *task, void *state)
{
    ar_shm_state_t *S = state;
    rcoll__shm_t *sh = S->op.sh;
    size_t co = S->pipe.done[2];
    uint64_t g = S->pipe.g0 + co;
    chunk_t c = chunk_of(S, &task->args, co);
    char *dst = (char *)task->args.recvbuf + c.off * c.es;
    int s, moved = 0;

    for (; (s = rcoll__shm_next_ready(task, sh, RCOLL__SHM_RES_READY, &S->cs, -1, g, co)) >= 0 &&
           s < sh->p;
         S->cs++) {
        size_t lo = slice_lo(S, c.m, s, sh->p), hi = slice_lo(S, c.m, s + 1, sh->p);
        int over = res_over_input(S);
        if (s != sh->me || !(over || reduces_direct(task, S))) {   /* else already there */
            const char *src = over ? rcoll__shm_in(sh, sh->me, g) + lo * c.es
                                   : rcoll__shm_res(sh, s, g);
            rcoll__shm_copy_out(sh->stream_min, dst + lo * c.es, src, (hi - lo) * c.es,
                                task->args.count * c.es);
        }
        moved = 1;
    }
    if (s < 0) {
        return moved;
    }
    rcoll__shm_out_done(sh, g);
    S->cs = 0;
    S->pipe.done[2]++;
    return 1;
}

static const rcoll__shm_stage_fn red_stages[] = { stage_in, stage_reduce, stage_out };

/* A 2-rank allreduce moves pair pieces: two chunks to a piece, in half as
 * many input and result buffers (the same memory).  Each stage then copies
 * or reduces 256 KiB runs instead of 128 KiB, which the hardware
 * prefetchers stream through with fewer restarts: medians 2-9% faster at
 * 1-4 MiB on the AMD EPYC Zen 5 VM, within noise at 8-16 MiB (docs/shm.md,
 * "Pair pieces").  Not with more ranks or for a reduce (not measured). */
static size_t red_piece(const rcoll__shm_t *sh, int root)
{
    if (root < 0 && sh->p == 2 && sh->nbuf >= 4 && sh->nbuf % 2 == 0) {
        return 2 * sh->chunk;
    }
    return sh->chunk;
}

/* A 2-rank reduce of sh->red_rotate_min bytes up to one chunk runs the
 * pipeline in pieces that rotate over the whole pipeline area, as the
 * allgather's blocks do (shm_allgather.c): its slot, rewritten every other
 * call, held lines the root had read and still cached, and the other
 * rank's stores fetched each back across cores (docs/shm.md, "The 2-rank
 * reduce's rotating pieces").  Pieces of sh->red_rotate_piece: the
 * root folds one while the next is copied in.  Plain stores (no "rstore"
 * choice, whose streaming only paid off against that hand-over). */
static int red_rotates(const rcoll__shm_t *sh, size_t n, int root)
{
    return root >= 0 && sh->p == 2 && n >= sh->red_rotate_min && n <= sh->chunk;
}

static size_t rot_piece(const rcoll__shm_t *sh, size_t n)
{
    size_t whole = rcoll__shm_lines(n);
    return whole < sh->red_rotate_piece ? whole : sh->red_rotate_piece;
}

/* rotates: red_rotates(sh, n, root) */
static rcoll_status_t ar_large(rcoll_task_t *task, ar_shm_state_t *S, int root, int rotates)
{
    rcoll__shm_t *sh = S->op.sh;

    if (task->phase == PH_START) {
        size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
        /* whole elements per chunk: sh->chunk is a multiple of every esize */
        rcoll__shm_pipe_init(&S->pipe, sh, rotates ? rot_piece(sh, n) : red_piece(sh, root), n,
                             3, rotates);
        if (rotates) {
            rcoll__shm_fault_in_pipe(sh, 1 - sh->me);   /* the root reads all of it */
        }
        S->root = root;
        task->phase = PH_GATHER;
    }
    return rcoll__shm_pipe_drive(task, &S->op, &S->pipe, red_stages, S);
}

rcoll_status_t rcoll__shm_reduce_progress(rcoll_task_t *task, rcoll__shm_red_t *S, int root)
{
    rcoll__shm_t *sh = S->op.sh;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);

    /* a reduce's stores into the segment, plain or streaming (shm_adapt.h,
     * "rstore"; the flat allreduce chooses in copy_in) */
    int reduce = root >= 0, rotates = red_rotates(sh, n, root);
    if (reduce && !rotates && !S->store.chosen && n >= sh->rstore.min) {
        rcoll__shm_store_call_begin(sh, &S->store, S->op.k, n, rcoll__shm_rstore_choose);
    }
    int flat = reduce ? rcoll__shm_flat(sh, n) : rcoll__shm_ar_flat(sh, n);
    rcoll_status_t st = !flat || rotates                       ? ar_large(task, S, root, rotates)
                      : reduce && n >= sh->red_pieced_min ? red_small_pieced(task, S, n, root)
                                                               : ar_small(task, S, n, root);
    if (reduce && st == RCOLL_OK) {
        rcoll__shm_store_call_end(sh, &S->store, n, rcoll__shm_rstore_sample);
    }
    return st;
}
