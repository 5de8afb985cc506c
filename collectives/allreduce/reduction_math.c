/*
 * reduction_math.c - pure rank and block arithmetic for the reduction
 * collectives (see reduction_math.h).  No state, no I/O.
 */
#include "reduction_math.h"
#include "selector_cost.h"

int rcoll__pow2_floor(int p)
{
    int p2 = 1;

    while (p2 <= p / 2) {
        p2 *= 2;
    }
    return p2;
}

int rcoll__ceil_log2(int p)
{
    int k = 0;

    while ((1L << k) < (long)p) {
        k++;
    }
    return k;
}

int rcoll__log2_exact(int p2)
{
    int k = 0;

    while ((1 << k) < p2) {
        k++;
    }
    return k;
}

/* ---- fold ---- */

int rcoll__fold_newrank(int rank, int p)
{
    int r = p - rcoll__pow2_floor(p);

    if (rank < 2 * r) {
        return (rank % 2 == 0) ? -1 : rank / 2;
    }
    return rank - r;
}

int rcoll__fold_rank(int newrank, int p)
{
    int r = p - rcoll__pow2_floor(p);

    return (newrank < r) ? 2 * newrank + 1 : newrank + r;
}

int rcoll__fold_partner(int rank, int p)
{
    int r = p - rcoll__pow2_floor(p);

    if (rank >= 2 * r) {
        return -1;
    }
    return (rank % 2 == 0) ? rank + 1 : rank - 1;
}

int rcoll__fold_first(int newrank, int p)
{
    int r = p - rcoll__pow2_floor(p);

    return (newrank < r) ? 2 * newrank : newrank + r;
}

/* ---- balanced blocks ---- */

size_t rcoll__block_lo(size_t count, int nblocks, int i)
{
    size_t q = count / (size_t)nblocks;
    size_t rem = count % (size_t)nblocks;
    size_t ui = (size_t)i;

    return ui * q + (ui < rem ? ui : rem);
}

size_t rcoll__block_len(size_t count, int nblocks, int i)
{
    return rcoll__block_lo(count, nblocks, i + 1) - rcoll__block_lo(count, nblocks, i);
}

size_t rcoll__block_max(size_t count, int nblocks)
{
    return count / (size_t)nblocks + (count % (size_t)nblocks ? 1 : 0);
}

/* ---- recursive halving / doubling / gather ---- */

void rcoll__rh_step(int newrank, int p2, int k, rcoll__rh_step_t *st)
{
    int mask = p2 >> (k + 1);
    int lo = newrank & ~(2 * mask - 1);

    st->peer = newrank ^ mask;
    st->lower = (newrank & mask) == 0;
    if (st->lower) {
        st->keep_lo = lo;
        st->keep_hi = lo + mask;
        st->send_lo = lo + mask;
        st->send_hi = lo + 2 * mask;
    } else {
        st->send_lo = lo;
        st->send_hi = lo + mask;
        st->keep_lo = lo + mask;
        st->keep_hi = lo + 2 * mask;
    }
}

void rcoll__rdag_step(int newrank, int p2, int k, rcoll__rd_step_t *st)
{
    int mask = 1 << k;

    (void)p2;
    st->peer = newrank ^ mask;
    st->send_lo = newrank & ~(mask - 1);
    st->send_hi = st->send_lo + mask;
    st->recv_lo = st->peer & ~(mask - 1);
    st->recv_hi = st->recv_lo + mask;
}

void rcoll__gather_step(int newrank, int target, int p2, int k, rcoll__gather_step_t *st)
{
    int mask = 1 << k;
    int rel = newrank ^ target;

    (void)p2;
    st->peer = newrank ^ mask;
    if ((rel & (mask - 1)) != 0) {
        st->role = RCOLL__GATHER_IDLE;
        st->lo = st->hi = 0;
    } else if (rel & mask) {
        st->role = RCOLL__GATHER_SEND;
        st->lo = newrank & ~(mask - 1);
        st->hi = st->lo + mask;
    } else {
        st->role = RCOLL__GATHER_RECV;
        st->lo = st->peer & ~(mask - 1);
        st->hi = st->lo + mask;
    }
}

/* ---- binomial tree ---- */

int rcoll__binomial_parent_step(int vr, int p)
{
    int k = 0;

    (void)p;
    if (vr == 0) {
        return -1;
    }
    while (!(vr & (1 << k))) {
        k++;
    }
    return k;
}

int rcoll__binomial_child(int vr, int p, int k)
{
    long mask = 1L << k;
    long low = (mask << 1) - 1;

    if ((vr & low) != 0 || vr + mask >= p) {
        return -1;
    }
    return vr + (int)mask;
}

/* ---- ring ---- */

void rcoll__ring_rs_blocks(int rank, int p, int s, int *send_block, int *recv_block)
{
    *send_block = ((rank - s - 1) % p + p) % p;
    *recv_block = ((rank - s - 2) % p + p) % p;
}

void rcoll__ring_ag_blocks(int rank, int p, int s, int *send_block, int *recv_block)
{
    *send_block = ((rank - s) % p + p) % p;
    *recv_block = ((rank - s - 1) % p + p) % p;
}

/* ---- segments ---- */

size_t rcoll__seg_count(size_t maxlen, size_t seg)
{
    return (maxlen + seg - 1) / seg;
}

void rcoll__seg_range(size_t len, size_t seg, size_t j, size_t *lo, size_t *hi)
{
    size_t a = j * seg;
    size_t b = a + seg;

    if (a > len) {
        a = len;
    }
    if (b > len) {
        b = len;
    }
    *lo = a;
    *hi = b;
}

size_t rcoll__seg_elems(size_t segment_bytes, size_t esize, size_t maxlen, size_t max_segs)
{
    size_t seg, min_seg;

    if (maxlen == 0) {
        return 1;
    }
    if (segment_bytes == 0) {
        seg = maxlen;
    } else {
        seg = segment_bytes / esize;
        if (seg == 0) {
            seg = 1;
        }
    }
    if (max_segs == 0) {
        max_segs = 1;
    }
    min_seg = (maxlen + max_segs - 1) / max_segs;
    if (seg < min_seg) {
        seg = min_seg;
    }
    if (seg > maxlen) {
        seg = maxlen;
    }
    return seg;
}

/* ---- cost model pieces ---- */

double rcoll__cost_fold(const rcoll_model_t *m, double n, double back_bytes, int p, int ppn)
{
    int cross = rcoll_cost_cross_xor(1, ppn);
    double t;

    if (rcoll__pow2_floor(p) == p) {
        return 0;
    }
    t = rcoll_cost_msg(m, n, p, ppn, cross) + n * m->gamma;
    if (back_bytes > 0) {
        t += rcoll_cost_msg(m, back_bytes, p, ppn, cross);
    }
    return t;
}

double rcoll__cost_halving(const rcoll_model_t *m, double n, int p, int ppn)
{
    int p2 = rcoll__pow2_floor(p), steps = rcoll__log2_exact(p2), k;
    double t = 0, part;

    for (k = 0; k < steps; k++) {
        part = n / (double)(2L << k);
        t += rcoll_cost_msg(m, part, p, ppn, rcoll_cost_cross_xor(p2 >> (k + 1), ppn)) + part * m->gamma;
    }
    return t;
}

double rcoll__cost_doubling(const rcoll_model_t *m, double n, int p, int ppn)
{
    int p2 = rcoll__pow2_floor(p), steps = rcoll__log2_exact(p2), k;
    double t = 0;

    for (k = 0; k < steps; k++) {
        t += rcoll_cost_msg(m, n * (double)(1L << k) / p2, p, ppn, rcoll_cost_cross_xor(1 << k, ppn));
    }
    return t;
}

double rcoll__cost_tree(const rcoll_model_t *m, double n, int steps, int msgs_per_step, int reduce,
                        int p, int ppn)
{
    double t = 0;
    int k;

    for (k = 0; k < steps; k++) {
        t += msgs_per_step * rcoll_cost_msg(m, n, p, ppn, rcoll_cost_cross_xor(1 << k, ppn));
        if (reduce) {
            t += n * m->gamma;
        }
    }
    return t;
}
