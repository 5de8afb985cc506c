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
 * buffer) into its result buffer, (C) every rank that needs the result
 * copies all result slices out.  Stages of consecutive chunks overlap
 * across nbuf buffers; each byte crosses between cores once each way.
 *
 * Waits: step 1 a slot still being read, step 2 a contribution, step 16 + c
 * chunk c of the pipeline (task->wait_peer names the rank).
 */
#include <string.h>
#include "reduce.h"
#include "shm.h"

typedef rcoll__shm_red_t ar_shm_state_t;
RCOLL_ALG_STATE_CHECK(ar_shm_state_t);

enum { PH_START = 0, PH_GATHER };

static rcoll_status_t ar_small(rcoll_task_t *task, ar_shm_state_t *S, size_t n, int root)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    uint64_t k = S->op.k;

    if (task->phase == PH_START) {
        if (!rcoll__shm_slots_free(task, sh, k)) {
            return RCOLL_INPROGRESS;
        }
        memcpy(rcoll__shm_slot_data(sh, sh->me, k, n), a->sendbuf, n);
        atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, k), k, memory_order_release);
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
        if (atomic_load_explicit(rcoll__shm_slot_seq(sh, q, k), memory_order_acquire) != k) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_ARRIVE);
            return RCOLL_INPROGRESS;
        }
        if (sh->fin[q] < k - 1) {
            sh->fin[q] = k - 1;       /* q arrived at k: it finished k - 1 */
        }
        if (q != sh->me || a->in_place) {
            rcoll__shm_prefetch(rcoll__shm_slot_data(sh, q, k, n), n);
        }
        if (q == 1) {
            rcoll_reduce_local3(a->recvbuf, SRC(0), SRC(1), a->count, a->dtype, a->op);
        } else if (q > 1) {
            rcoll_reduce_local(a->recvbuf, SRC(q), a->count, a->dtype, a->op);
        }
    }
#undef SRC
    rcoll__shm_leave(task, &S->op);
    return RCOLL_OK;
}

/* Elements [lo, hi) of slice s of a chunk of m elements. */
static size_t slice_lo(size_t m, int s, int p)
{
    return m * (size_t)s / (size_t)p;
}

typedef struct {
    size_t off, m, es;    /* chunk's first element, elements, element size */
} chunk_t;

static chunk_t chunk_of(const ar_shm_state_t *S, const rcoll_coll_args_t *a, size_t j)
{
    chunk_t c;
    size_t per = S->chunk / (c.es = rcoll_datatype_size(a->dtype));
    c.off = j * per;
    c.m = a->count - c.off < per ? a->count - c.off : per;
    return c;
}

/* Stage A: my input slices for the other ranks into my buffer. */
static int stage_in(rcoll_task_t *task, ar_shm_state_t *S)
{
    rcoll__shm_t *sh = S->op.sh;
    uint64_t g = S->g0 + S->ci, reuse = rcoll__shm_reuse_id(sh, g);
    int me = sh->me;

    for (int q = 0; q < sh->p; q++) {
        if (q != me && !rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->res_ready, &sh->res_ready[q], reuse)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)S->ci);
            return 0;
        }
    }
    chunk_t c = chunk_of(S, &task->args, S->ci);
    const char *src = (const char *)task->args.sendbuf + c.off * c.es;
    char *dst = rcoll__shm_in(sh, me, g);
    size_t lo = slice_lo(c.m, me, sh->p), hi = slice_lo(c.m, me + 1, sh->p);
    memcpy(dst, src, lo * c.es);
    memcpy(dst + hi * c.es, src + hi * c.es, (c.m - hi) * c.es);
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->in_ready, &sh->in_ready[me], g);
    S->ci++;
    return 1;
}

/* Stage B reduces this rank's slice into its receive buffer and copies it
 * to the result buffer (see stage_reduce) when it has a receive buffer of
 * its own: not in place, and not a reduce's non-root rank. */
static int reduces_direct(const rcoll_task_t *task, const ar_shm_state_t *S)
{
    return !task->args.in_place && (S->root < 0 || S->root == S->op.sh->me);
}

/* Stage B: reduce my slice of chunk cr over every rank, in rank order. */
static int stage_reduce(rcoll_task_t *task, ar_shm_state_t *S)
{
    rcoll__shm_t *sh = S->op.sh;
    rcoll_coll_args_t *a = &task->args;
    uint64_t g = S->g0 + S->cr, reuse = rcoll__shm_reuse_id(sh, g);
    int me = sh->me, p = sh->p;

    for (int q = 0; q < p; q++) {
        rcoll__shm_ctl_t *c = rcoll__shm_ctl(sh, q);
        if ((q != me && !rcoll__shm_flag_ge(&c->in_ready, &sh->in_ready[q], g)) ||
            !rcoll__shm_flag_ge(&c->out_done, &sh->out_done[q], reuse)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)S->cr);
            return 0;
        }
    }
    chunk_t c = chunk_of(S, a, S->cr);
    size_t lo = slice_lo(c.m, me, p), len = slice_lo(c.m, me + 1, p) - lo;
    const char *mine = (const char *)a->sendbuf + (c.off + lo) * c.es;
    char *res = rcoll__shm_res(sh, me, g);
    /* Direct: reduce into this rank's receive buffer, then memcpy the slice
     * to the result buffer.  The result buffer's lines were read by the
     * other ranks in its last use; the kernel's vector stores fetch each
     * for ownership across cores (5.5 GB/s on this VM), while memcpy's
     * string stores write whole lines (30+ GB/s). */
    int direct = reduces_direct(task, S);
    char *out = direct ? (char *)a->recvbuf + (c.off + lo) * c.es : res;
#define SRC(_q) ((_q) == me ? mine : rcoll__shm_in(sh, (_q), g) + lo * c.es)
    if (len > 0) {
        rcoll_reduce_local3(out, SRC(0), SRC(1), len, a->dtype, a->op);
        for (int q = 2; q < p; q++) {
            rcoll_reduce_local(out, SRC(q), len, a->dtype, a->op);
        }
        if (direct) {
            memcpy(res, out, len * c.es);
        }
    }
#undef SRC
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->res_ready, &sh->res_ready[me], g);
    S->cr++;
    if (S->root >= 0 && me != S->root) {
        /* reduce: only the root copies results out; this rank is through */
        rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->out_done, &sh->out_done[me], g);
        S->co++;
    }
    return 1;
}

/* Stage C: every result slice of chunk co into the receive buffer. */
static int stage_out(rcoll_task_t *task, ar_shm_state_t *S)
{
    rcoll__shm_t *sh = S->op.sh;
    uint64_t g = S->g0 + S->co;
    chunk_t c = chunk_of(S, &task->args, S->co);
    char *dst = (char *)task->args.recvbuf + c.off * c.es;
    int moved = 0;

    for (; S->cs < sh->p; S->cs++) {
        int s = S->cs;
        if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, s)->res_ready, &sh->res_ready[s], g)) {
            rcoll__shm_waiting(task, s, RCOLL__SHM_STEP_CHUNK + (uint32_t)S->co);
            return moved;
        }
        size_t lo = slice_lo(c.m, s, sh->p), hi = slice_lo(c.m, s + 1, sh->p);
        if (s != sh->me || !reduces_direct(task, S)) {     /* direct: already there */
            memcpy(dst + lo * c.es, rcoll__shm_res(sh, s, g), (hi - lo) * c.es);
        }
        moved = 1;
    }
    rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->out_done, &sh->out_done[sh->me], g);
    S->cs = 0;
    S->co++;
    return 1;
}

static rcoll_status_t ar_large(rcoll_task_t *task, ar_shm_state_t *S, int root)
{
    rcoll__shm_t *sh = S->op.sh;
    int moved = 0, any;

    if (task->phase == PH_START) {
        size_t es = rcoll_datatype_size(task->args.dtype);
        S->chunk = sh->chunk;
        size_t per = S->chunk / es;
        S->nchunks = (task->args.count + per - 1) / per;
        S->g0 = rcoll__shm_pipe_start(sh, S->chunk, S->nchunks);
        S->root = root;
        task->phase = PH_GATHER;
    }
    do {
        any = 0;
        if (S->ci < S->nchunks && S->ci < S->cr + (size_t)sh->nbuf) {
            any |= stage_in(task, S);
        }
        if (S->cr < S->ci) {
            any |= stage_reduce(task, S);
        }
        if (S->co < S->cr) {
            any |= stage_out(task, S);
        }
        moved |= any;
    } while (any && S->co < S->nchunks);
    if (S->co < S->nchunks) {
        if (moved) {
            rcoll__shm_progressed(task);
        }
        return RCOLL_INPROGRESS;
    }
    rcoll__shm_pipe_leave(task, &S->op, S->g0 + S->nchunks - 1);
    return RCOLL_OK;
}

rcoll_status_t rcoll__shm_reduce_progress(rcoll_task_t *task, rcoll__shm_red_t *S, int root)
{
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    return rcoll__shm_flat(S->op.sh, n) ? ar_small(task, S, n, root) : ar_large(task, S, root);
}
