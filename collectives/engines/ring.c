/*
 * ring.c - the segmented, pipelined ring pass (ring.h).
 */
#include <string.h>
#include "ring.h"
#include "reduce.h"

size_t rcoll__ring_seg(const rcoll_task_t *task, size_t count, int p)
{
    size_t maxblock = rcoll__block_max(count, p);
    size_t max_segs = (size_t)0x7fffffff / (2 * (size_t)(p - 1));    /* p >= 2 */

    return rcoll__seg_elems(rcoll_task_config(task)->segment_size, rcoll__esize(task), maxblock, max_segs);
}

static int ring_batch(int mode, long nseg)
{
    long b;

    if (mode == RCOLL__RING_AG) {
        b = nseg;
    } else {
        b = nseg >= 2 ? nseg / 2 : 1;
    }
    return (int)(b > RCOLL__RING_MAX_BATCH ? RCOLL__RING_MAX_BATCH : b);
}

size_t rcoll__ring_tmp_bytes(size_t count, int p, size_t seg, size_t esize)
{
    long nseg = (long)rcoll__seg_count(rcoll__block_max(count, p), seg);

    return 2 * (size_t)ring_batch(RCOLL__RING_RS, nseg) * seg * esize;
}

void rcoll__ring_init(rcoll__ring_t *R, const rcoll_task_t *task, int mode, size_t count,
                      size_t seg, const void *src, void *work, int alternate, void *out,
                      void *tmp, uint32_t tag_base)
{
    memset(R, 0, sizeof(*R));
    R->p = rcoll_task_size(task);
    R->rank = rcoll_task_rank(task);
    R->mode = mode;
    R->count = count;
    R->esize = rcoll__esize(task);
    R->seg = seg;
    R->nseg = (long)rcoll__seg_count(rcoll__block_max(count, R->p), seg);
    R->nitems = (long)(R->p - 1) * R->nseg;
    R->batch = ring_batch(mode, R->nseg);
    R->src = src;
    R->work = work;
    R->alternate = alternate;
    R->out = out;
    R->tmp = tmp;
    R->tag_base = tag_base;
    R->dtype = task->args.dtype;
    R->op = task->args.op;
}

void rcoll__ring_init_ag(rcoll__ring_t *R, const rcoll_task_t *task, int root, int open,
                         void *buf, size_t count, size_t esize, size_t seg, uint32_t tag_base)
{
    rcoll__ring_init(R, task, RCOLL__RING_AG, count, seg, NULL, buf, 0, NULL, NULL, tag_base);
    R->root = root;
    R->open = open;
    R->rank = rcoll__rel_rank(rcoll_task_rank(task), root, R->p);
    R->esize = esize;
}

/* Where the partial result of block b reduced at RS step s lives. */
static char *ring_work(const rcoll__ring_t *R, long s, int b)
{
    if (R->alternate) {
        return R->work + (size_t)(s % 2) * rcoll__block_max(R->count, R->p) * R->esize;
    }
    return R->work + rcoll__block_lo(R->count, R->p, b) * R->esize;
}

static char *ring_slot(const rcoll__ring_t *R, long i)
{
    return R->tmp + (size_t)(i % (2 * R->batch)) * R->seg * R->esize;
}

static void ring_blocks(const rcoll__ring_t *R, long s, int *sb, int *rb)
{
    if (R->mode == RCOLL__RING_RS) {
        rcoll__ring_rs_blocks(R->rank, R->p, (int)s, sb, rb);
    } else {
        rcoll__ring_ag_blocks(R->rank, R->p, (int)s, sb, rb);
    }
}

static rcoll_status_t ring_post(rcoll_task_t *task, rcoll__ring_t *R, long i)
{
    long s = i / R->nseg;
    size_t j = (size_t)(i % R->nseg), es = R->esize;
    size_t slo, shi, rlo, rhi;
    uint32_t tag = R->tag_base + (uint32_t)i;
    const char *sbuf;
    char *rbuf;
    int sb, rb;
    rcoll_status_t st;

    ring_blocks(R, s, &sb, &rb);
    rcoll__seg_range(rcoll__block_len(R->count, R->p, sb), R->seg, j, &slo, &shi);
    rcoll__seg_range(rcoll__block_len(R->count, R->p, rb), R->seg, j, &rlo, &rhi);
    if (R->mode == RCOLL__RING_RS) {
        sbuf = (s == 0) ? R->src + rcoll__block_lo(R->count, R->p, sb) * es : ring_work(R, s - 1, sb);
        rbuf = ring_slot(R, i);
    } else {
        sbuf = R->work + rcoll__block_lo(R->count, R->p, sb) * es;
        rbuf = R->work + (rcoll__block_lo(R->count, R->p, rb) + rlo) * es;
    }
    if (!R->open || R->rank != 0) {
        st = rcoll__recv_nz(task, rcoll__abs_rank(rcoll__ring_left(R->rank, R->p), R->root, R->p),
                            tag, rbuf, (rhi - rlo) * es);
        if (st != RCOLL_OK) {
            return st;
        }
    }
    if (R->open && R->rank == R->p - 1) {
        return RCOLL_OK;
    }
    return rcoll__send_nz(task, rcoll__abs_rank(rcoll__ring_right(R->rank, R->p), R->root, R->p),
                          tag, sbuf + slo * es, (shi - slo) * es);
}

static void ring_reduce(rcoll__ring_t *R, long i)
{
    long s = i / R->nseg;
    size_t j = (size_t)(i % R->nseg), es = R->esize, lo, hi;
    const char *mine;
    char *dst;
    int sb, rb;

    ring_blocks(R, s, &sb, &rb);
    rcoll__seg_range(rcoll__block_len(R->count, R->p, rb), R->seg, j, &lo, &hi);
    if (hi == lo) {
        return;
    }
    mine = R->src + (rcoll__block_lo(R->count, R->p, rb) + lo) * es;
    dst = (s == R->p - 2) ? R->out : ring_work(R, s, rb);
    rcoll_reduce_local3(dst + lo * es, ring_slot(R, i), mine, hi - lo, R->dtype, R->op);
}

static void ring_reduce_ready(rcoll__ring_t *R)
{
    long i;

    if (R->mode == RCOLL__RING_RS) {
        for (i = R->rd_lo; i < R->rd_hi; i++) {
            ring_reduce(R, i);
        }
    }
    R->rd_lo = R->rd_hi;
}

rcoll_status_t rcoll__ring_progress(rcoll_task_t *task, rcoll__ring_t *R)
{
    rcoll_status_t st;
    long a, b, i;

    for (;;) {
        if (R->in_hi > R->in_lo) {
            st = rcoll_task_test(task);
            if (st != RCOLL_OK) {
                return st;
            }
            R->rd_lo = R->in_lo;
            R->rd_hi = R->in_hi;
            R->in_lo = R->in_hi;
        }
        a = R->in_hi;
        if (a >= R->nitems) {
            ring_reduce_ready(R);
            return RCOLL_OK;
        }
        b = a + R->batch < R->nitems ? a + R->batch : R->nitems;
        /* The sends of items [a, b) carry what items [a - nseg, b - nseg)
         * reduced: reduce the ready batch first unless it is all older. */
        if (R->rd_hi > R->rd_lo && b - R->nseg > R->rd_lo) {
            ring_reduce_ready(R);
        }
        for (i = a; i < b; i++) {
            st = ring_post(task, R, i);
            if (st != RCOLL_OK) {
                return st;
            }
        }
        R->in_lo = a;
        R->in_hi = b;
        ring_reduce_ready(R);       /* overlaps with the batch on the wire */
    }
}

