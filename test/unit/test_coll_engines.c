/*
 * test_coll_engines.c - the engines' own arithmetic (collectives/engines/):
 * the byte ranges each step of the recursive engine moves, in both block
 * layouts and after the fold of every p from 2 to 40; the binomial
 * scatter's ranges; the open ring of a broadcast's allgather.  Each
 * schedule is simulated per byte with bitmasks of the ranks whose data a
 * byte holds: a schedule is right when what one side sends is what its
 * peer receives, no contribution arrives twice, data is sent only once it
 * is there, and every rank ends with what it must hold.
 *
 * (The algorithms themselves run over simulated ranks in
 * test_coll_reduction_sim.c and test_coll_sim.c.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "engines/recursive.h"
#include "engines/binomial.h"

#define PMIN 2                 /* the core runs no algorithm on 1 rank */
#define PMAX 40
#define NMAX 4096              /* bytes simulated per rank */

static const size_t counts[] = { 1, 2, 3, 5, 7, 16, 17, 31, 100 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

static uint64_t have[PMAX][NMAX], next[PMAX][NMAX];

static uint64_t bit(int r)
{
    return (uint64_t)1 << r;
}

static uint64_t all_ranks(int p)
{
    return p == 64 ? ~(uint64_t)0 : bit(p) - 1;
}

/* The ranks newrank j stands for after the fold. */
static uint64_t stands_for(int j, int p)
{
    uint64_t m = 0;

    for (int r = rcoll__fold_first(j, p); r < rcoll__fold_first(j + 1, p); r++) {
        m |= bit(r);
    }
    return m;
}

static void setup(rcoll__recursive_t *R, int kind, int newrank, int p, size_t count, size_t esize,
                  int folded)
{
    memset(R, 0, sizeof(*R));
    R->kind = kind;
    R->newrank = newrank;
    R->blocks.count = count;
    R->blocks.esize = esize;
    R->blocks.p = p;
    R->blocks.p2 = rcoll__pow2_floor(p);
    R->blocks.folded = folded;
    R->nsteps = rcoll__log2_exact(R->blocks.p2);
    R->len = count * esize;
}

static size_t total_bytes(const rcoll__recursive_t *R)
{
    if (R->kind == RCOLL__RECURSIVE_REDUCE_ALL) {
        return R->len;
    }
    return rcoll__blocks_off(&R->blocks, R->blocks.p2);
}

/*
 * Run every step of one kind over the p2 newranks: have[j][x] is what
 * newrank j's byte x holds (reducing kinds: whose contributions; copying
 * kinds: 1 if present).  Checks that sender and receiver agree on ranges,
 * that a reduction never adds a contribution twice and that only present
 * bytes are sent.
 */
static void run_steps(int kind, int p, size_t count, size_t esize, int folded, int target)
{
    int p2 = rcoll__pow2_floor(p);
    rcoll__recursive_t R[PMAX];
    rcoll__recursive_step_t s, t;
    int done[PMAX] = { 0 };

    for (int j = 0; j < p2; j++) {
        setup(&R[j], kind, j, p, count, esize, folded);
        R[j].target = target;
    }
    size_t n = total_bytes(&R[0]);
    assert_true(n <= NMAX);
    for (int k = 0; k < R[0].nsteps; k++) {
        memcpy(next, have, sizeof(next));
        for (int j = 0; j < p2; j++) {
            rcoll__recursive_step(&R[j], k, &s);
            if (s.peer < 0 || done[j]) {
                continue;
            }
            assert_true(s.peer >= 0 && s.peer < p2 && s.peer != j);
            rcoll__recursive_step(&R[s.peer], k, &t);
            assert_int_equal(t.peer, j);
            /* what j receives is what its peer sends, in the same place */
            assert_int_equal(s.recv_len, t.send_len);
            assert_int_equal(s.recv_off, t.send_off);
            assert_true(s.recv_off + s.recv_len <= n && s.send_off + s.send_len <= n);
            assert_int_equal(s.reduce, kind == RCOLL__RECURSIVE_HALVING ||
                                       kind == RCOLL__RECURSIVE_REDUCE_ALL);
            if (s.reduce) {
                assert_int_equal(s.lower, j < s.peer);
            }
            for (size_t x = s.recv_off; x < s.recv_off + s.recv_len; x++) {
                uint64_t in = have[s.peer][x];
                assert_true(in != 0);                          /* sent only once there */
                if (s.reduce) {
                    assert_int_equal(have[j][x] & in, 0);      /* nothing counted twice */
                    next[j][x] = have[j][x] | in;
                } else {
                    assert_int_equal(have[j][x], 0);           /* nothing moved twice */
                    next[j][x] = in;
                }
            }
            if (s.last) {
                done[j] = 1;
            }
        }
        memcpy(have, next, sizeof(have));
    }
}

static void test_halving(void **state)
{
    (void)state;
    for (int p = PMIN; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p);
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int folded = 0; folded < 2; folded++) {
                size_t count = counts[c], esize = 1 + (size_t)(c % 3);
                rcoll__recursive_t R;
                setup(&R, RCOLL__RECURSIVE_HALVING, 0, p, count, esize, folded);
                size_t n = total_bytes(&R), half = rcoll__halving_tmp_bytes(&R.blocks);
                if (n > NMAX) {
                    continue;
                }
                memset(have, 0, sizeof(have));
                for (int j = 0; j < p2; j++) {
                    for (size_t x = 0; x < n; x++) {
                        have[j][x] = stands_for(j, p);      /* after the fold in */
                    }
                }
                run_steps(RCOLL__RECURSIVE_HALVING, p, count, esize, folded, 0);
                for (int j = 0; j < p2; j++) {
                    size_t lo = rcoll__blocks_off(&R.blocks, j), hi = rcoll__blocks_off(&R.blocks, j + 1);
                    for (size_t x = lo; x < hi; x++) {
                        assert_true(have[j][x] == all_ranks(p));
                    }
                    /* folded: block j is the output of exactly the ranks j stands for */
                    if (folded) {
                        assert_int_equal(lo, (size_t)rcoll__fold_first(j, p) * count * esize);
                    }
                    /* tmp holds the largest receive, the first step's */
                    rcoll__recursive_step_t s;
                    setup(&R, RCOLL__RECURSIVE_HALVING, j, p, count, esize, folded);
                    for (int k = 0; k < R.nsteps; k++) {
                        rcoll__recursive_step(&R, k, &s);
                        assert_true(s.recv_len <= half);
                    }
                }
            }
        }
    }
}

static void test_doubling_and_gather(void **state)
{
    static const int kinds[] = { RCOLL__RECURSIVE_DOUBLING, RCOLL__RECURSIVE_GATHER };
    (void)state;
    for (int p = PMIN; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p);
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int folded = 0; folded < 2; folded++) {
                for (int ki = 0; ki < 2; ki++) {
                    int kind = kinds[ki];
                    for (int target = 0; target < (kind == RCOLL__RECURSIVE_GATHER ? p2 : 1); target++) {
                        size_t count = counts[c], esize = 1 + (size_t)(c % 3);
                        rcoll__recursive_t R;
                        setup(&R, kind, 0, p, count, esize, folded);
                        size_t n = total_bytes(&R);
                        if (n > NMAX) {
                            continue;
                        }
                        memset(have, 0, sizeof(have));
                        for (int j = 0; j < p2; j++) {
                            size_t lo = rcoll__blocks_off(&R.blocks, j);
                            for (size_t x = lo; x < rcoll__blocks_off(&R.blocks, j + 1); x++) {
                                have[j][x] = 1;             /* its own block only */
                            }
                        }
                        run_steps(kind, p, count, esize, folded, target);
                        for (int j = 0; j < p2; j++) {
                            if (kind == RCOLL__RECURSIVE_GATHER && j != target) {
                                continue;
                            }
                            for (size_t x = 0; x < n; x++) {
                                assert_true(have[j][x] == 1);
                            }
                        }
                    }
                }
            }
        }
    }
}

static void test_reduce_all(void **state)
{
    (void)state;
    for (int p = PMIN; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p);
        memset(have, 0, sizeof(have));
        for (int j = 0; j < p2; j++) {
            for (size_t x = 0; x < 12; x++) {
                have[j][x] = stands_for(j, p);
            }
        }
        run_steps(RCOLL__RECURSIVE_REDUCE_ALL, p, 3, 4, 0, 0);
        for (int j = 0; j < p2; j++) {
            for (size_t x = 0; x < 12; x++) {
                assert_true(have[j][x] == all_ranks(p));
            }
        }
    }
}

/* The fold pairs ranks so that every rank is an extra, a partner (each the
 * other's), or alone; newranks are 0..p2-1, each played by one rank. */
static void test_fold_pairs(void **state)
{
    (void)state;
    for (int p = PMIN; p <= PMAX; p++) {
        int p2 = rcoll__pow2_floor(p), seen[PMAX] = { 0 };
        for (int r = 0; r < p; r++) {
            int nr = rcoll__fold_newrank(r, p), q = rcoll__fold_partner(r, p);
            if (nr < 0) {
                assert_true(q >= 0 && rcoll__fold_partner(q, p) == r && q > r);
                assert_true(rcoll__fold_newrank(q, p) >= 0);
            } else {
                assert_true(nr < p2);
                assert_int_equal(rcoll__fold_rank(nr, p), r);
                seen[nr]++;
                if (q >= 0) {
                    assert_true(rcoll__fold_newrank(q, p) < 0 && q < r);
                }
            }
        }
        for (int j = 0; j < p2; j++) {
            assert_int_equal(seen[j], 1);
            assert_true(stands_for(j, p) & bit(rcoll__fold_rank(j, p)));
        }
    }
}

/* Binomial scatter: vr receives its subtree's blocks from its parent, which
 * holds them; in the end every vr holds its own block. */
static void test_binomial_scatter(void **state)
{
    (void)state;
    static const size_t lens[] = { 1, 3, 7, 64, 100, 1000 };
    for (int p = PMIN; p <= PMAX; p++) {
        for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++) {
            rcoll__binbc_t B;
            size_t n = lens[c];
            memset(&B, 0, sizeof(B));
            B.p = p;
            B.len = n;
            B.scatter = 1;
            memset(have, 0, sizeof(have));
            for (size_t x = 0; x < n; x++) {
                have[0][x] = 1;
            }
            /* parents before children: in order of vr, a parent is smaller */
            for (int vr = 1; vr < p; vr++) {
                int k = rcoll__binomial_parent_step(vr, p), parent = vr - (1 << k);
                size_t off, len;
                assert_int_equal(rcoll__binomial_child(parent, p, k), vr);
                rcoll__binbc_part(&B, vr, k, &off, &len);
                assert_int_equal(off, rcoll__block_lo(n, p, vr));
                assert_true(off + len <= n);
                for (size_t x = off; x < off + len; x++) {
                    assert_true(have[parent][x] == 1);
                    have[vr][x] = 1;
                }
            }
            for (int vr = 0; vr < p; vr++) {
                for (size_t x = rcoll__block_lo(n, p, vr); x < rcoll__block_lo(n, p, vr + 1); x++) {
                    assert_true(have[vr][x] == 1);
                }
            }
            /* as a broadcast every link carries the whole buffer */
            B.scatter = 0;
            for (int vr = 1; vr < p; vr++) {
                size_t off, len;
                rcoll__binbc_part(&B, vr, rcoll__binomial_parent_step(vr, p), &off, &len);
                assert_true(off == 0 && len == n);
            }
        }
    }
}

/* Open ring (a broadcast's allgather): after the scatter vr holds block vr,
 * the root every block; nothing goes to the root, vr p-1 sends nothing, and
 * after p-1 steps every vr holds every block, each received once. */
static void test_open_ring(void **state)
{
    (void)state;
    for (int p = PMIN; p <= PMAX; p++) {
        memset(have, 0, sizeof(have));
        for (int b = 0; b < p; b++) {
            have[0][b] = 1;
            have[b][b] = 1;
        }
        for (int s = 0; s < p - 1; s++) {
            memcpy(next, have, sizeof(next));
            for (int vr = 1; vr < p; vr++) {
                int sb, rb, lsb, lrb;
                rcoll__ring_ag_blocks(vr, p, s, &sb, &rb);
                rcoll__ring_ag_blocks(vr - 1, p, s, &lsb, &lrb);
                assert_int_equal(rb, lsb);                 /* the left neighbour sends it */
                assert_true(have[vr - 1][rb] == 1);
                assert_true(have[vr][rb] == 0);
                next[vr][rb] = 1;
            }
            memcpy(have, next, sizeof(have));
        }
        for (int vr = 0; vr < p; vr++) {
            for (int b = 0; b < p; b++) {
                assert_true(have[vr][b] == 1);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_pairs),
        cmocka_unit_test(test_halving),
        cmocka_unit_test(test_doubling_and_gather),
        cmocka_unit_test(test_reduce_all),
        cmocka_unit_test(test_binomial_scatter),
        cmocka_unit_test(test_open_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
