/*
 * binomial.c - binomial reduce and broadcast / scatter state machines
 * (binomial.h).
 */
#include <string.h>
#include "binomial.h"
#include "reduce.h"

/* ---- binomial reduce ---- */

void rcoll__binred_init(rcoll__binred_t *B, const rcoll_task_t *task, int root, size_t count,
                        const void *src, void *acc, void *tmp, uint32_t tag_base)
{
    memset(B, 0, sizeof(*B));
    B->p = rcoll_task_size(task);
    B->root = root;
    B->vr = rcoll__rel_rank(rcoll_task_rank(task), root, B->p);
    B->nsteps = rcoll__ceil_log2(B->p);
    B->count = count;
    B->esize = rcoll__esize(task);
    B->cur = src;
    B->acc = acc;
    B->tmp = tmp;
    B->tag_base = tag_base;
    B->dtype = task->args.dtype;
    B->op = task->args.op;
}

enum { BINRED_IDLE = 0, BINRED_SENDING = 1, BINRED_RECEIVING = 2 };

rcoll_status_t rcoll__binred_progress(rcoll_task_t *task, rcoll__binred_t *B)
{
    size_t len = B->count * B->esize;
    rcoll_status_t st;
    int child;

    for (;;) {
        if (B->posted != BINRED_IDLE) {
            st = rcoll_task_test(task);
            if (st != RCOLL_OK) {
                return st;
            }
            if (B->posted == BINRED_SENDING) {
                B->posted = BINRED_IDLE;
                return RCOLL_OK;            /* handed to the parent: done */
            }
            /* (lower ranks) op (child's subtree) */
            rcoll_reduce_local3(B->acc, B->cur, B->tmp, B->count, B->dtype, B->op);
            B->cur = B->acc;
            B->posted = BINRED_IDLE;
            B->k++;
        }
        if (B->k >= B->nsteps) {
            return RCOLL_OK;    /* the root: it received from child 1 at least (p >= 2) */
        }
        if (B->vr & (1 << B->k)) {
            st = rcoll__send_nz(task, rcoll__abs_rank(B->vr - (1 << B->k), B->root, B->p),
                                B->tag_base + (uint32_t)B->k, B->cur, len);
            B->posted = BINRED_SENDING;
        } else if ((child = rcoll__binomial_child(B->vr, B->p, B->k)) >= 0) {
            st = rcoll__recv_nz(task, rcoll__abs_rank(child, B->root, B->p),
                                B->tag_base + (uint32_t)B->k, B->tmp, len);
            B->posted = BINRED_RECEIVING;
        } else {
            B->k++;
            continue;
        }
        if (st != RCOLL_OK) {
            return st;
        }
    }
}

/* ---- binomial broadcast ---- */

void rcoll__binbc_init(rcoll__binbc_t *B, const rcoll_task_t *task, int root, void *buf,
                       size_t len, uint32_t tag_base)
{
    memset(B, 0, sizeof(*B));
    B->p = rcoll_task_size(task);
    B->root = root;
    B->vr = rcoll__rel_rank(rcoll_task_rank(task), root, B->p);
    B->buf = buf;
    B->len = len;
    B->tag_base = tag_base;
}

void rcoll__binscatter_init(rcoll__binbc_t *B, const rcoll_task_t *task, int root, void *buf,
                            size_t len, uint32_t tag_base)
{
    rcoll__binbc_init(B, task, root, buf, len, tag_base);
    B->scatter = 1;
}

void rcoll__binbc_part(const rcoll__binbc_t *B, int vr, int k, size_t *off, size_t *len)
{
    long hi = (long)vr + (1L << k);

    if (!B->scatter) {
        *off = 0;
        *len = B->len;
        return;
    }
    *off = rcoll__block_lo(B->len, B->p, vr);
    *len = rcoll__block_lo(B->len, B->p, hi < B->p ? (int)hi : B->p) - *off;
}

enum { BINBC_START = 0, BINBC_RECV, BINBC_SEND, BINBC_DONE };

rcoll_status_t rcoll__binbc_progress(rcoll_task_t *task, rcoll__binbc_t *B)
{
    int pk = rcoll__binomial_parent_step(B->vr, B->p);
    int k, top, child;
    size_t off, len;
    rcoll_status_t st;

    switch (B->stage) {
    case BINBC_START:
        if (pk >= 0) {
            rcoll__binbc_part(B, B->vr, pk, &off, &len);
            st = rcoll__recv_nz(task, rcoll__abs_rank(B->vr - (1 << pk), B->root, B->p),
                                B->tag_base + (uint32_t)pk, B->buf + off, len);
            if (st != RCOLL_OK) {
                return st;
            }
        }
        B->stage = BINBC_RECV;
        /* fall through */
    case BINBC_RECV:
        st = rcoll_task_test(task);
        if (st != RCOLL_OK) {
            return st;
        }
        /* largest subtree first */
        top = pk >= 0 ? pk : rcoll__ceil_log2(B->p);
        for (k = top - 1; k >= 0; k--) {
            child = rcoll__binomial_child(B->vr, B->p, k);
            if (child < 0) {
                continue;
            }
            rcoll__binbc_part(B, child, k, &off, &len);
            st = rcoll__send_nz(task, rcoll__abs_rank(child, B->root, B->p),
                                B->tag_base + (uint32_t)k, B->buf + off, len);
            if (st != RCOLL_OK) {
                return st;
            }
        }
        B->stage = BINBC_SEND;
        /* fall through */
    case BINBC_SEND:
        st = rcoll_task_test(task);
        if (st != RCOLL_OK) {
            return st;
        }
        B->stage = BINBC_DONE;
        /* fall through */
    default:
        return RCOLL_OK;
    }
}
