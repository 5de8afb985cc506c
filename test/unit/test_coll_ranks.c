/*
 * test_coll_ranks.c - the rank arithmetic of bcast, allgather and barrier
 * (bcast_ranks.h, allgather_ranks.h, barrier_ranks.h) for p = 1..17 and
 * every root: following each algorithm's data movement on sets of blocks
 * gives every rank everything.  The binomial trees, the ring and recursive
 * doubling are engines now, checked in test_coll_engines.c.
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
        assert_true((1 << rounds) >= p && (rounds == 0 || (1 << (rounds - 1)) < p));
        for (int j = 0; j < p; j++)
            assert_int_equal(heard[j], ALL(p));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_segments),
        cmocka_unit_test(test_allgather_bruck),
        cmocka_unit_test(test_barrier_dissemination),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
