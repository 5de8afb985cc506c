/*
 * recursive.c - the recursive halving / doubling / gather engine
 * (recursive.h): one post-wait-reduce loop over the steps of each schedule.
 */
#include <string.h>
#include "recursive.h"
#include "reduce.h"

void rcoll__blocks_balanced(rcoll__blocks_t *b, const rcoll_task_t *task, size_t count)
{
    b->count = count;
    b->esize = rcoll__esize(task);
    b->p = rcoll_task_size(task);
    b->p2 = rcoll__pow2_floor(b->p);
    b->folded = 0;
}

void rcoll__blocks_folded(rcoll__blocks_t *b, const rcoll_task_t *task, size_t count)
{
    rcoll__blocks_balanced(b, task, count);
    b->folded = 1;
}

size_t rcoll__halving_tmp_bytes(const rcoll__blocks_t *b)
{
    size_t lo = rcoll__blocks_off(b, b->p2 / 2) - rcoll__blocks_off(b, 0);
    size_t hi = rcoll__blocks_off(b, b->p2) - rcoll__blocks_off(b, b->p2 / 2);

    return lo > hi ? lo : hi;
}

static void init(rcoll__recursive_t *R, const rcoll_task_t *task, int kind, int newrank,
                 const rcoll__blocks_t *b, uint32_t tag_base)
{
    memset(R, 0, sizeof(*R));
    if (b != NULL) {
        R->blocks = *b;
    } else {
        rcoll__blocks_balanced(&R->blocks, task, 0);
    }
    R->kind = kind;
    R->newrank = newrank;
    /* an extra rank folded away (newrank -1) takes no steps */
    R->nsteps = newrank < 0 ? 0 : rcoll__log2_exact(rcoll__pow2_floor(rcoll_task_size(task)));
    R->tag_base = tag_base;
    R->dtype = task->args.dtype;
    R->op = task->args.op;
}

void rcoll__halving_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                         const rcoll__blocks_t *b, const void *src, void *acc, void *tmp,
                         uint32_t tag_base)
{
    init(R, task, RCOLL__RECURSIVE_HALVING, newrank, b, tag_base);
    R->cur = src;
    R->acc = acc;
    R->tmp = tmp;
}

void rcoll__doubling_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                          const rcoll__blocks_t *b, void *buf, uint32_t tag_base)
{
    init(R, task, RCOLL__RECURSIVE_DOUBLING, newrank, b, tag_base);
    R->cur = R->acc = buf;
}

void rcoll__reduce_all_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank,
                            size_t len, const void *src, void *acc, void *tmp, uint32_t tag_base)
{
    init(R, task, RCOLL__RECURSIVE_REDUCE_ALL, newrank, NULL, tag_base);
    R->len = len;
    R->cur = src;
    R->acc = acc;
    R->tmp = tmp;
}

void rcoll__gather_init(rcoll__recursive_t *R, const rcoll_task_t *task, int newrank, int target,
                        const rcoll__blocks_t *b, void *buf, uint32_t tag_base)
{
    init(R, task, RCOLL__RECURSIVE_GATHER, newrank, b, tag_base);
    R->target = target;
    R->cur = R->acc = buf;
}

/* Byte range of blocks [lo, hi). */
static void range(const rcoll__recursive_t *R, int lo, int hi, size_t *off, size_t *len)
{
    *off = rcoll__blocks_off(&R->blocks, lo);
    *len = rcoll__blocks_off(&R->blocks, hi) - *off;
}

void rcoll__recursive_step(const rcoll__recursive_t *R, int k, rcoll__recursive_step_t *s)
{
    rcoll__rh_step_t rh;
    rcoll__rd_step_t rd;
    rcoll__gather_step_t g;
    int p2 = R->blocks.p2;

    memset(s, 0, sizeof(*s));
    switch (R->kind) {
    case RCOLL__RECURSIVE_HALVING:
        rcoll__rh_step(R->newrank, p2, k, &rh);
        s->peer = rh.peer;
        range(R, rh.send_lo, rh.send_hi, &s->send_off, &s->send_len);
        range(R, rh.keep_lo, rh.keep_hi, &s->recv_off, &s->recv_len);
        s->reduce = 1;
        s->lower = rh.lower;
        break;
    case RCOLL__RECURSIVE_DOUBLING:
        rcoll__rdag_step(R->newrank, p2, k, &rd);
        s->peer = rd.peer;
        range(R, rd.send_lo, rd.send_hi, &s->send_off, &s->send_len);
        range(R, rd.recv_lo, rd.recv_hi, &s->recv_off, &s->recv_len);
        break;
    case RCOLL__RECURSIVE_REDUCE_ALL:
        s->peer = R->newrank ^ (1 << k);
        s->send_len = s->recv_len = R->len;
        s->reduce = 1;
        s->lower = (R->newrank & (1 << k)) == 0;
        break;
    default:       /* gather */
        rcoll__gather_step(R->newrank, R->target, p2, k, &g);
        if (g.role == RCOLL__GATHER_IDLE) {
            s->peer = -1;
            break;
        }
        s->peer = g.peer;
        if (g.role == RCOLL__GATHER_SEND) {
            range(R, g.lo, g.hi, &s->send_off, &s->send_len);
            s->last = 1;
        } else {
            range(R, g.lo, g.hi, &s->recv_off, &s->recv_len);
        }
        break;
    }
}

static rcoll_status_t post(rcoll_task_t *task, const rcoll__recursive_t *R,
                           const rcoll__recursive_step_t *s)
{
    int peer = rcoll__fold_rank(s->peer, rcoll_task_size(task));
    uint32_t tag = R->tag_base + (uint32_t)R->k;
    char *rbuf = s->reduce ? R->tmp : R->acc + s->recv_off;
    rcoll_status_t st;

    st = rcoll__recv_nz(task, peer, tag, rbuf, s->recv_len);
    if (st != RCOLL_OK) {
        return st;
    }
    return rcoll__send_nz(task, peer, tag, R->cur + s->send_off, s->send_len);
}

/* (lower ranks) op (upper ranks), so every rank computes the same bits. */
static void reduce(rcoll__recursive_t *R, const rcoll__recursive_step_t *s)
{
    size_t n = s->recv_len / R->blocks.esize;
    const char *mine = R->cur + s->recv_off;
    char *dst = R->acc + s->recv_off;

    if (s->lower) {
        rcoll_reduce_local3(dst, mine, R->tmp, n, R->dtype, R->op);
    } else {
        rcoll_reduce_local3(dst, R->tmp, mine, n, R->dtype, R->op);
    }
    R->cur = R->acc;
}

rcoll_status_t rcoll__recursive_progress(rcoll_task_t *task, rcoll__recursive_t *R)
{
    rcoll__recursive_step_t s;
    rcoll_status_t st;

    for (; R->k < R->nsteps; R->k++) {
        rcoll__recursive_step(R, R->k, &s);
        if (s.peer < 0) {
            continue;
        }
        if (!R->posted) {
            if ((st = post(task, R, &s)) != RCOLL_OK) {
                return st;
            }
            R->posted = 1;
        }
        if ((st = rcoll_task_test(task)) != RCOLL_OK) {
            return st;
        }
        R->posted = 0;
        if (s.reduce) {
            reduce(R, &s);
        }
        if (s.last) {
            R->k = R->nsteps;
            break;
        }
    }
    return RCOLL_OK;
}
