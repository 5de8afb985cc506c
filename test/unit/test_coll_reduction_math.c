/*
 * test_coll_reduction_math.c - the rank arithmetic of the reduction
 * collectives (collectives/allreduce/reduction_math.h), checked by
 * simulating each schedule with bitmasks of contributions for p = 1..17
 * ranks and odd counts, including count < p.  A schedule is right when
 * every send is matched by a receive of the same blocks on the peer and
 * every rank ends with each element's full set of contributions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "allreduce/reduction_math.h"

#define PMAX 17
#define FULL(p) ((uint32_t)((1u << (p)) - 1))

static const size_t counts[] = { 0, 1, 2, 3, 5, 7, 16, 17, 31, 1023, 65537 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

/* a contiguous, non-empty range of bits */
static int contiguous(uint32_t m)
{
    if (m == 0) {
        return 0;
    }
    while (!(m & 1)) {
        m >>= 1;
    }
    return (m & (m + 1)) == 0;
}

static void test_pow2_log2(void **state)
{
    (void)state;
    for (int p = 1; p <= 4097; p++) {
        int p2 = rcoll__pow2_floor(p), k = rcoll__ceil_log2(p);
        assert_true(p2 <= p && 2 * p2 > p && (p2 & (p2 - 1)) == 0);
        assert_true((1L << k) >= p && (k == 0 || (1L << (k - 1)) < p));
        assert_int_equal(1 << rcoll__log2_exact(p2), p2);
    }
}

static void test_blocks(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        for (size_t c = 0; c < NCOUNTS; c++) {
            size_t n = counts[c], mx = 0, mn = (size_t)-1;
            assert_int_equal(rcoll__block_lo(n, p, 0), 0);
            assert_int_equal(rcoll__block_lo(n, p, p), n);
            for (int i = 0; i < p; i++) {
                size_t len = rcoll__block_len(n, p, i);
                assert_true(rcoll__block_lo(n, p, i + 1) >= rcoll__block_lo(n, p, i));
                mx = len > mx ? len : mx;
                mn = len < mn ? len : mn;
                /* larger blocks come first: the lower half is the larger */
                if (i > 0) {
                    assert_true(rcoll__block_len(n, p, i - 1) >= len);
                }
            }
            assert_true(mx - mn <= 1);
            assert_int_equal(rcoll__block_max(n, p), mx);
        }
    }
}

static void test_fold(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p), seen[PMAX] = { 0 }, nextra = 0;
        for (int r = 0; r < p; r++) {
            int nr = rcoll__fold_newrank(r, p), partner = rcoll__fold_partner(r, p);
            if (nr < 0) {
                nextra++;
                assert_int_equal(r % 2, 0);
                assert_true(partner == r + 1 && rcoll__fold_newrank(partner, p) >= 0);
            } else {
                assert_true(nr < p2);
                assert_int_equal(rcoll__fold_rank(nr, p), r);
                seen[nr]++;
                /* the ranks newrank nr stands for: itself and its extra */
                assert_true(rcoll__fold_first(nr, p) <= r && r < rcoll__fold_first(nr + 1, p));
                if (partner >= 0) {
                    assert_int_equal(partner, r - 1);
                    assert_int_equal(rcoll__fold_first(nr, p), partner);
                } else {
                    assert_int_equal(rcoll__fold_first(nr + 1, p), r + 1);
                }
            }
            if (partner >= 0) {
                assert_int_equal(rcoll__fold_partner(partner, p), r);
            }
        }
        assert_int_equal(nextra, p - p2);
        for (int j = 0; j < p2; j++) {
            assert_int_equal(seen[j], 1);
            assert_true(rcoll__fold_first(j, p) < rcoll__fold_first(j + 1, p));
        }
        assert_int_equal(rcoll__fold_first(0, p), 0);
        assert_int_equal(rcoll__fold_first(p2, p), p);
    }
}

/* Initial masks after the fold: newrank j holds its ranks' contributions. */
static uint32_t folded_mask(int j, int p)
{
    uint32_t m = 0;

    for (int r = rcoll__fold_first(j, p); r < rcoll__fold_first(j + 1, p); r++) {
        m |= 1u << r;
    }
    return m;
}

static void test_recursive_doubling(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p), steps = rcoll__log2_exact(p2);
        uint32_t v[PMAX], nv[PMAX];
        for (int j = 0; j < p2; j++) {
            v[j] = folded_mask(j, p);
        }
        for (int k = 0; k < steps; k++) {
            for (int j = 0; j < p2; j++) {
                int peer = j ^ (1 << k);
                uint32_t lower = (j & (1 << k)) ? v[peer] : v[j];
                uint32_t upper = (j & (1 << k)) ? v[j] : v[peer];
                /* (lower ranks) op (upper ranks): every bit of lower below upper */
                assert_true(lower < upper && (lower & upper) == 0);
                assert_true(contiguous(lower | upper));
                nv[j] = lower | upper;
            }
            memcpy(v, nv, sizeof(v));
        }
        for (int j = 0; j < p2; j++) {
            assert_int_equal(v[j], FULL(p));
        }
    }
}

/* Rabenseifner: recursive halving then recursive doubling over p2 blocks. */
static void test_halving_doubling(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p), steps = rcoll__log2_exact(p2);
        static uint32_t v[PMAX][PMAX], nv[PMAX][PMAX];
        for (int j = 0; j < p2; j++) {
            for (int b = 0; b < p2; b++) {
                v[j][b] = folded_mask(j, p);
            }
        }
        for (int k = 0; k < steps; k++) {
            memcpy(nv, v, sizeof(v));
            for (int j = 0; j < p2; j++) {
                rcoll__rh_step_t me, peer;
                rcoll__rh_step(j, p2, k, &me);
                rcoll__rh_step(me.peer, p2, k, &peer);
                assert_int_equal(peer.peer, j);
                assert_int_equal(me.lower, !peer.lower);
                /* what the peer sends is exactly what I keep */
                assert_int_equal(peer.send_lo, me.keep_lo);
                assert_int_equal(peer.send_hi, me.keep_hi);
                assert_int_equal(me.keep_hi - me.keep_lo, p2 >> (k + 1));
                assert_true(me.keep_lo <= j && j < me.keep_hi);
                for (int b = me.keep_lo; b < me.keep_hi; b++) {
                    uint32_t lo = me.lower ? v[j][b] : v[me.peer][b];
                    uint32_t hi = me.lower ? v[me.peer][b] : v[j][b];
                    assert_true(lo < hi && (lo & hi) == 0);
                    nv[j][b] = lo | hi;
                }
            }
            memcpy(v, nv, sizeof(v));
        }
        for (int j = 0; j < p2; j++) {
            assert_int_equal(v[j][j], FULL(p));     /* block j done on newrank j */
        }
        for (int k = 0; k < steps; k++) {
            memcpy(nv, v, sizeof(v));
            for (int j = 0; j < p2; j++) {
                rcoll__rd_step_t me, peer;
                rcoll__rdag_step(j, p2, k, &me);
                rcoll__rdag_step(me.peer, p2, k, &peer);
                assert_int_equal(peer.peer, j);
                assert_int_equal(peer.send_lo, me.recv_lo);
                assert_int_equal(peer.send_hi, me.recv_hi);
                for (int b = me.send_lo; b < me.send_hi; b++) {
                    assert_int_equal(v[j][b], FULL(p));     /* only finished blocks move */
                }
                for (int b = me.recv_lo; b < me.recv_hi; b++) {
                    nv[j][b] = v[me.peer][b];
                }
            }
            memcpy(v, nv, sizeof(v));
        }
        for (int j = 0; j < p2; j++) {
            for (int b = 0; b < p2; b++) {
                assert_int_equal(v[j][b], FULL(p));
            }
        }
    }
}

static void test_gather(void **state)
{
    (void)state;
    for (int p2 = 1; p2 <= 16; p2 *= 2) {
        int steps = rcoll__log2_exact(p2);
        for (int t = 0; t < p2; t++) {
            int have[16][16] = { { 0 } }, done[16] = { 0 };
            for (int j = 0; j < p2; j++) {
                have[j][j] = 1;
            }
            for (int k = 0; k < steps; k++) {
                for (int j = 0; j < p2; j++) {
                    rcoll__gather_step_t me, peer;
                    rcoll__gather_step(j, t, p2, k, &me);
                    if (done[j]) {
                        assert_int_equal(me.role, RCOLL__GATHER_IDLE);
                        continue;
                    }
                    assert_int_not_equal(me.role, RCOLL__GATHER_IDLE);
                    rcoll__gather_step(me.peer, t, p2, k, &peer);
                    assert_int_equal(peer.peer, j);
                    assert_int_equal(peer.lo, me.lo);
                    assert_int_equal(peer.hi, me.hi);
                    assert_int_equal(peer.role + me.role, RCOLL__GATHER_SEND + RCOLL__GATHER_RECV);
                    if (me.role == RCOLL__GATHER_SEND) {
                        for (int b = me.lo; b < me.hi; b++) {
                            assert_true(have[j][b]);
                            have[me.peer][b] = 1;
                        }
                        done[j] = 1;
                    }
                }
            }
            for (int j = 0; j < p2; j++) {
                assert_int_equal(done[j], j != t);
                assert_true(have[t][j]);
            }
        }
    }
}

static void test_binomial(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        int steps = rcoll__ceil_log2(p), active[PMAX], nparent[PMAX] = { 0 };
        uint32_t v[PMAX];
        for (int vr = 0; vr < p; vr++) {
            v[vr] = 1u << vr;
            active[vr] = 1;
        }
        /* every rank but 0 is the child of exactly one rank */
        for (int vr = 0; vr < p; vr++) {
            for (int k = 0; k < steps; k++) {
                int c = rcoll__binomial_child(vr, p, k);
                if (c >= 0) {
                    assert_int_equal(rcoll__binomial_parent_step(c, p), k);
                    nparent[c]++;
                }
            }
        }
        assert_int_equal(rcoll__binomial_parent_step(0, p), -1);
        for (int vr = 1; vr < p; vr++) {
            assert_int_equal(nparent[vr], 1);
        }
        /* reduce: at step k children with bit k hand over to their parent */
        for (int k = 0; k < steps; k++) {
            for (int vr = 0; vr < p; vr++) {
                int c = rcoll__binomial_child(vr, p, k);
                if (!active[vr] || c < 0) {
                    continue;
                }
                assert_true(active[c]);
                assert_true(v[vr] < v[c] && contiguous(v[vr] | v[c]));
                v[vr] |= v[c];
                active[c] = 0;
            }
        }
        assert_int_equal(v[0], FULL(p));
        for (int vr = 1; vr < p; vr++) {
            assert_false(active[vr]);
        }
        /* relative ranks map back and forth for every root */
        for (int root = 0; root < p; root++) {
            for (int r = 0; r < p; r++) {
                assert_int_equal(rcoll__abs_rank(rcoll__rel_rank(r, root, p), root, p), r);
            }
        }
    }
}

static void test_ring(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        static uint32_t v[PMAX][PMAX], nv[PMAX][PMAX];
        for (int r = 0; r < p; r++) {
            for (int b = 0; b < p; b++) {
                v[r][b] = 1u << r;
            }
        }
        for (int s = 0; s < p - 1; s++) {
            memcpy(nv, v, sizeof(v));
            for (int r = 0; r < p; r++) {
                int sb, rb, rsb, rrb, right = rcoll__ring_right(r, p);
                rcoll__ring_rs_blocks(r, p, s, &sb, &rb);
                rcoll__ring_rs_blocks(right, p, s, &rsb, &rrb);
                assert_int_equal(rcoll__ring_left(right, p), r);
                assert_int_equal(rrb, sb);         /* the right neighbour receives what I send */
                assert_int_equal(__builtin_popcount(v[r][sb]), s + 1);
                nv[right][sb] = v[r][sb] | (1u << right);
            }
            memcpy(v, nv, sizeof(v));
        }
        for (int r = 0; r < p; r++) {
            assert_int_equal(v[r][r], FULL(p));
        }
        for (int s = 0; s < p - 1; s++) {
            memcpy(nv, v, sizeof(v));
            for (int r = 0; r < p; r++) {
                int sb, rb, rsb, rrb, right = rcoll__ring_right(r, p);
                rcoll__ring_ag_blocks(r, p, s, &sb, &rb);
                rcoll__ring_ag_blocks(right, p, s, &rsb, &rrb);
                assert_int_equal(rrb, sb);
                assert_int_equal(v[r][sb], FULL(p));
                nv[right][sb] = v[r][sb];
            }
            memcpy(v, nv, sizeof(v));
        }
        for (int r = 0; r < p; r++) {
            for (int b = 0; b < p; b++) {
                assert_int_equal(v[r][b], FULL(p));
            }
        }
    }
}

static void test_segments(void **state)
{
    (void)state;
    for (size_t maxlen = 0; maxlen <= 40; maxlen++) {
        for (size_t seg = 1; seg <= 9; seg++) {
            size_t nseg = rcoll__seg_count(maxlen, seg);
            for (size_t len = maxlen ? maxlen - 1 : 0; len <= maxlen; len++) {
                size_t covered = 0;
                for (size_t j = 0; j < nseg; j++) {
                    size_t lo, hi;
                    rcoll__seg_range(len, seg, j, &lo, &hi);
                    assert_true(lo <= hi && hi - lo <= seg);
                    assert_int_equal(lo, covered < len ? covered : len);
                    covered = hi > covered ? hi : covered;
                }
                assert_int_equal(covered, len);
            }
        }
    }
    /* segment size from bytes: 0 = whole block; bounded segment count */
    assert_int_equal(rcoll__seg_elems(0, 4, 1000, 100), 1000);
    assert_int_equal(rcoll__seg_elems(64, 4, 1000, 100), 16);
    assert_int_equal(rcoll__seg_elems(2, 4, 1000, 100), 10);      /* at least 1, then 100 segs max */
    assert_int_equal(rcoll__seg_elems(65536, 8, 3, 100), 3);       /* never above the block */
    for (size_t maxlen = 1; maxlen < 300; maxlen += 7) {
        for (size_t ms = 1; ms < 40; ms += 3) {
            size_t s = rcoll__seg_elems(16, 4, maxlen, ms);
            assert_true(s >= 1 && s <= maxlen);
            assert_true(rcoll__seg_count(maxlen, s) <= ms);
        }
    }
}

/* reduce_scatter recursive halving: super-blocks cover original blocks */
static void test_superblocks(void **state)
{
    (void)state;
    for (int p = 1; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p);
        for (int r = 0; r < p; r++) {
            int nr = rcoll__fold_newrank(r, p);
            if (nr < 0) {
                nr = rcoll__fold_newrank(rcoll__fold_partner(r, p), p);
            }
            assert_true(rcoll__fold_first(nr, p) <= r && r < rcoll__fold_first(nr + 1, p));
        }
        for (int j = 0; j < p2; j++) {
            int w = rcoll__fold_first(j + 1, p) - rcoll__fold_first(j, p);
            assert_true(w == 1 || w == 2);
        }
    }
}

/* The cost formulas of the reduction algorithms: positive, growing with the
 * size, and ordered as theory says at the extremes. */
static double cost(rcoll_coll_type_t coll, const char *name, size_t bytes, int p, int ppn,
                   const rcoll_model_t *m)
{
    const rcoll_alg_t *a = rcoll_alg_find(coll, name);

    assert_non_null(a);
    assert_non_null(a->cost);
    assert_int_equal(a->coll, coll);
    return a->cost(m, bytes, p, ppn);
}

static void test_costs(void **state)
{
    const rcoll_model_t m = { .alpha = 1e-6, .alpha_inter = 3e-6, .beta = 1e-10, .beta_inter = 1e-9,
                              .gamma = 2e-10, .rndv_extra = 2e-6, .eager_limit = 8192 };
    static const struct { rcoll_coll_type_t coll; const char *name; } algs[] = {
        { RCOLL_COLL_ALLREDUCE, "recursive_doubling" }, { RCOLL_COLL_ALLREDUCE, "ring" },
        { RCOLL_COLL_ALLREDUCE, "rabenseifner" }, { RCOLL_COLL_ALLREDUCE, "reduce_bcast" },
        { RCOLL_COLL_REDUCE, "binomial" }, { RCOLL_COLL_REDUCE, "reduce_scatter_gather" },
        { RCOLL_COLL_REDUCE_SCATTER, "recursive_halving" }, { RCOLL_COLL_REDUCE_SCATTER, "ring" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        for (int p = 2; p <= 64; p += 3) {
            double prev = 0;
            for (size_t b = 8; b <= ((size_t)1 << 28); b *= 8) {
                double t = cost(algs[i].coll, algs[i].name, b, p, p, &m);
                assert_true(t > 0 && t >= prev);
                prev = t;
                assert_true(cost(algs[i].coll, algs[i].name, b, p, 4, &m) >= t * 0.999);
            }
        }
    }
    /* small vectors: log p latency wins; large: the bandwidth-optimal ones */
    for (int p = 4; p <= 64; p *= 2) {
        double rd = cost(RCOLL_COLL_ALLREDUCE, "recursive_doubling", 8, p, p, &m);
        assert_true(rd < cost(RCOLL_COLL_ALLREDUCE, "ring", 8, p, p, &m));
        assert_true(rd < cost(RCOLL_COLL_ALLREDUCE, "rabenseifner", 8, p, p, &m));
        assert_true(rd < cost(RCOLL_COLL_ALLREDUCE, "reduce_bcast", 8, p, p, &m));
        size_t big = (size_t)64 << 20;
        rd = cost(RCOLL_COLL_ALLREDUCE, "recursive_doubling", big, p, p, &m);
        assert_true(cost(RCOLL_COLL_ALLREDUCE, "ring", big, p, p, &m) < rd);
        assert_true(cost(RCOLL_COLL_ALLREDUCE, "rabenseifner", big, p, p, &m) < rd);
        assert_true(cost(RCOLL_COLL_REDUCE, "reduce_scatter_gather", big, p, p, &m) <
                    cost(RCOLL_COLL_REDUCE, "binomial", big, p, p, &m));
        assert_true(cost(RCOLL_COLL_REDUCE, "binomial", 8, p, p, &m) <
                    cost(RCOLL_COLL_REDUCE, "reduce_scatter_gather", 8, p, p, &m));
        assert_true(cost(RCOLL_COLL_REDUCE_SCATTER, "recursive_halving", 8, p, p, &m) <
                    cost(RCOLL_COLL_REDUCE_SCATTER, "ring", 8, p, p, &m));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pow2_log2),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_recursive_doubling),
        cmocka_unit_test(test_halving_doubling),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_binomial),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_superblocks),
        cmocka_unit_test(test_costs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
