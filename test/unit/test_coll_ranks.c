/*
 * test_coll_ranks.c - the rank arithmetic of bcast, allgather and barrier
 * (bcast_ranks.h, allgather_ranks.h, barrier_ranks.h) for p = 1..17 and
 * every root: trees are trees, blocks tile the buffer, and following each
 * algorithm's data movement on sets of blocks gives every rank everything.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "bcast/bcast_ranks.h"
#include "allgather/allgather_ranks.h"
#include "barrier/barrier_ranks.h"

#define MAXP 17

static void test_log2(void **state)
{
    assert_int_equal(rcoll_bc_ceil_log2(1), 0);
    assert_int_equal(rcoll_bc_ceil_log2(2), 1);
    assert_int_equal(rcoll_bc_ceil_log2(3), 2);
    assert_int_equal(rcoll_bc_ceil_log2(16), 4);
    assert_int_equal(rcoll_bc_ceil_log2(17), 5);
    assert_int_equal(rcoll_ag_ceil_log2(9), 4);
    for (int p = 1; p <= 4096; p++) {
        int q = rcoll_ag_pow2_floor(p);
        assert_true(q <= p && 2 * q > p && (q & (q - 1)) == 0);
    }
}

static void test_binomial_tree(void **state)
{
    for (int p = 1; p <= MAXP; p++) {
        int edges = 0;
        for (int vr = 0; vr < p; vr++) {
            int parent = rcoll_bc_binomial_parent(vr), depth = 0, found = 0;
            if (vr == 0) {
                assert_int_equal(parent, -1);
            } else {
                assert_true(parent >= 0 && parent < vr);
                /* vr is among its parent's children, sent in round log2(lowbit) */
                for (int m = rcoll_bc_binomial_mask(parent, p) >> 1; m > 0; m >>= 1)
                    if (parent + m == vr) {
                        found = 1;
                        assert_int_equal(1 << rcoll_bc_binomial_round(vr), m);
                    }
                assert_true(found);
            }
            for (int x = vr; x != 0; x = rcoll_bc_binomial_parent(x))
                depth++;
            assert_true(depth <= rcoll_bc_ceil_log2(p));
            edges += rcoll_bc_binomial_nchildren(vr, p);
            for (int root = 0; root < p; root++)
                assert_int_equal(rcoll_bc_vrank(rcoll_bc_rank(vr, root, p), root, p), vr);
        }
        assert_int_equal(edges, p - 1);
    }
}

static void test_blocks(void **state)
{
    const size_t sizes[] = { 1, 2, 5, 16, 17, 100, 65537 };
    for (int p = 1; p <= MAXP; p++)
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t n = sizes[k], total = 0, lo = (size_t)-1, hi = 0;
            int seen_empty = 0;
            for (int i = 0; i < p; i++) {
                size_t len = rcoll_bc_block_len(n, p, i);
                assert_int_equal(rcoll_bc_block_off(n, p, i), total);
                total += len;
                lo = len < lo ? len : lo;
                hi = len > hi ? len : hi;
                if (len == 0)
                    seen_empty = 1;
                else
                    assert_false(seen_empty);   /* empty blocks are the last ones */
            }
            assert_int_equal(total, n);
            assert_int_equal(rcoll_bc_block_off(n, p, p), n);
            assert_true(hi - lo <= 1);
            /* a subtree's range = its own block + its children's ranges */
            for (int vr = 0; vr < p; vr++) {
                int mask = rcoll_bc_binomial_mask(vr, p);
                size_t sum = rcoll_bc_block_len(n, p, vr);
                for (int m = mask >> 1; m > 0; m >>= 1)
                    if (vr + m < p)
                        sum += rcoll_bc_blocks_len(n, p, vr + m, vr + 2 * m);
                assert_int_equal(sum, rcoll_bc_blocks_len(n, p, vr, vr + mask));
            }
            assert_int_equal(rcoll_bc_blocks_len(n, p, 0, rcoll_bc_binomial_mask(0, p)), n);
        }
}

static void test_chain_segments(void **state)
{
    for (size_t n = 1; n < 300; n += 7)
        for (size_t seg = 1; seg < 70; seg += 3) {
            size_t nsegs = rcoll_bc_nsegs(n, seg), total = 0;
            for (size_t k = 0; k < nsegs; k++) {
                size_t len = rcoll_bc_seg_len(n, seg, k);
                assert_true(len > 0 && len <= seg);
                total += len;
            }
            assert_int_equal(total, n);
            assert_int_equal(rcoll_bc_seg_len(n, seg, nsegs), 0);
        }
}

/* Sets of blocks as bit masks (p <= 17). */
typedef uint32_t set_t;
#define ALL(p) ((set_t)((1u << (p)) - 1))
#define RANGE(a, n) ((n) > 0 ? (set_t)(((1u << (n)) - 1) << (a)) : 0u)

static void test_allgather_rd(void **state)
{
    for (int p = 1; p <= MAXP; p++) {
        int q = rcoll_ag_pow2_floor(p), r = p - q;
        set_t have[MAXP], next[MAXP];
        for (int j = 0; j < p; j++)
            have[j] = 1u << j;
        for (int j = q; j < p; j++) {       /* fold in */
            int to = rcoll_ag_rd_fold_partner(j, p);
            assert_int_equal(to, j - q);
            assert_int_equal(rcoll_ag_rd_fold_partner(to, p), j);
            have[to] |= have[j];
        }
        for (int j = r; j < q; j++)
            assert_int_equal(rcoll_ag_rd_fold_partner(j, p), -1);
        for (int m = 1; m < q; m <<= 1) {
            for (int j = 0; j < q; j++) {
                int partner = j ^ m, pb = rcoll_ag_rd_group_base(partner, m);
                int ne = rcoll_ag_rd_extra_count(pb, m, p);
                set_t got = RANGE(pb, m) |
                            RANGE(rcoll_ag_rd_extra_first(pb, p), ne);
                /* what the partner sends is exactly what it holds, and new to j */
                assert_int_equal(got, have[partner]);
                assert_int_equal(got & have[j], 0);
                next[j] = have[j] | got;
            }
            for (int j = 0; j < q; j++)
                have[j] = next[j];
        }
        for (int j = q; j < p; j++)         /* fold out */
            have[j] = have[j - q];
        for (int j = 0; j < p; j++)
            assert_int_equal(have[j], ALL(p));
    }
}

static void test_allgather_bruck(void **state)
{
    for (int p = 1; p <= MAXP; p++) {
        int pos[MAXP][MAXP];   /* pos[rank][i]: block at position i, -1 unknown */
        int writes[MAXP][MAXP] = { { 0 } };
        for (int j = 0; j < p; j++)
            for (int i = 0; i < p; i++)
                pos[j][i] = i == 0 ? j : -1;
        for (int d = 1; d < p; d <<= 1) {
            int nblk = rcoll_ag_bruck_nblk(d, p), snap[MAXP][MAXP];
            assert_true(nblk >= 1 && d + nblk <= p);
            for (int j = 0; j < p; j++)
                for (int i = 0; i < p; i++)
                    snap[j][i] = pos[j][i];
            for (int j = 0; j < p; j++) {
                int from = rcoll_ag_bruck_recv_peer(j, d, p);
                assert_int_equal(rcoll_ag_bruck_send_peer(from, d, p), j);
                for (int i = 0; i < nblk; i++) {
                    assert_true(snap[from][i] >= 0);
                    pos[j][d + i] = snap[from][i];
                    writes[j][d + i]++;
                }
            }
        }
        for (int j = 0; j < p; j++)
            for (int i = 0; i < p; i++) {
                assert_int_equal(pos[j][i], (j + i) % p);
                assert_int_equal(writes[j][i], i == 0 ? 0 : 1);
            }
    }
}

static void test_allgather_ring(void **state)
{
    for (int p = 1; p <= MAXP; p++) {
        set_t have[MAXP];
        for (int j = 0; j < p; j++)
            have[j] = 1u << j;
        for (int s = 0; s < p - 1; s++) {
            set_t next[MAXP];
            for (int j = 0; j < p; j++) {
                int left = (j - 1 + p) % p, b = rcoll_ag_ring_recv_block(j, s, p);
                assert_int_equal(rcoll_ag_ring_send_block(left, s, p), b);
                assert_true(have[left] & (1u << b));
                assert_false(have[j] & (1u << b));
                next[j] = have[j] | (1u << b);
            }
            for (int j = 0; j < p; j++)
                have[j] = next[j];
        }
        for (int j = 0; j < p; j++)
            assert_int_equal(have[j], ALL(p));
    }
}

static void test_barrier_dissemination(void **state)
{
    for (int p = 1; p <= MAXP; p++) {
        set_t heard[MAXP];   /* ranks whose arrival j knows of */
        int rounds = 0;
        for (int j = 0; j < p; j++)
            heard[j] = 1u << j;
        for (int d = 1; d < p; d <<= 1, rounds++) {
            set_t next[MAXP];
            for (int j = 0; j < p; j++) {
                int from = rcoll_bar_recv_peer(j, d, p);
                assert_int_equal(rcoll_bar_send_peer(from, d, p), j);
                next[j] = heard[j] | heard[from];
            }
            for (int j = 0; j < p; j++)
                heard[j] = next[j];
        }
        assert_int_equal(rounds, rcoll_bc_ceil_log2(p));
        for (int j = 0; j < p; j++)
            assert_int_equal(heard[j], ALL(p));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log2),
        cmocka_unit_test(test_binomial_tree),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_chain_segments),
        cmocka_unit_test(test_allgather_rd),
        cmocka_unit_test(test_allgather_bruck),
        cmocka_unit_test(test_allgather_ring),
        cmocka_unit_test(test_barrier_dissemination),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
