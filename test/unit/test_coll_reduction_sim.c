/*
 * test_coll_reduction_sim.c - runs the reduction algorithms themselves
 * (allreduce, reduce, reduce_scatter) for p = 2..17 simulated ranks in one
 * process over the shared simulator harness (sim_harness.h) in rendezvous
 * mode: a send buffer is read only when its message is delivered and must
 * not change while in flight, and no message may be empty.  Results are
 * checked against locally computed expectations; float results must be
 * bitwise equal on every rank.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim_harness.h"
#include "reduce.h"

#define PMAX 17

/* ---- running one collective on p simulated ranks ---- */

static int run_sim(const rcoll_alg_t *alg, int p, const rcoll_coll_args_t *args, size_t segsize)
{
    static unsigned seed = 12345;
    sim_config_t cfg = { .p = p, .rndv = 1, .forbid_empty = 1, .seed = seed++,
                         .segment_size = segsize };
    sim_result_t res;

    if (sim_run(&cfg, alg, args, &res) != 0) {
        print_error("%s p=%d count=%zu: %s\n", alg->name, p, args[0].count, res.failure);
        return -1;
    }
    return 0;
}

/* Input element i of rank r: small integers, so any order gives the same sum. */
static int32_t input(int r, size_t i)
{
    return (int32_t)((r * 7 + i * 13) % 101) - 50;
}

static const size_t counts[] = { 1, 2, 3, 7, 16, 17, 100, 1023 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
static const size_t segsizes[] = { 0, 4, 12, 64 };

/* The algorithms under test (the tables in collectives/ also list algorithms
 * that need real processes, such as shm, so the test keeps its own). */
extern const rcoll_alg_t rcoll_allreduce_recursive_doubling, rcoll_allreduce_ring,
    rcoll_allreduce_rabenseifner, rcoll_allreduce_reduce_bcast, rcoll_reduce_binomial,
    rcoll_reduce_reduce_scatter_gather, rcoll_reduce_scatter_recursive_halving,
    rcoll_reduce_scatter_ring;
static const rcoll_alg_t *const allreduce_algs[] = {
    &rcoll_allreduce_recursive_doubling, &rcoll_allreduce_ring, &rcoll_allreduce_rabenseifner,
    &rcoll_allreduce_reduce_bcast, NULL
};
static const rcoll_alg_t *const reduce_algs[] = {
    &rcoll_reduce_binomial, &rcoll_reduce_reduce_scatter_gather, NULL
};
static const rcoll_alg_t *const reduce_scatter_algs[] = {
    &rcoll_reduce_scatter_recursive_halving, &rcoll_reduce_scatter_ring, NULL
};

static const rcoll_alg_t *find(const rcoll_alg_t *const *table, const char *name)
{
    for (; *table != NULL; table++) {
        if (strcmp((*table)->name, name) == 0) {
            return *table;
        }
    }
    fail_msg("algorithm %s not in its table", name);
    return NULL;
}

static void allreduce_case(const char *name)
{
    const rcoll_alg_t *alg = find(allreduce_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                size_t n = counts[c];
                int32_t *in[PMAX], *out[PMAX];
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(n * 4);
                    out[r] = malloc(n * 4);
                    for (size_t i = 0; i < n; i++) {
                        in[r][i] = input(r, i);
                        out[r][i] = inplace ? in[r][i] : 0x55555555;
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLREDUCE,
                        .sendbuf = inplace ? out[r] : in[r], .recvbuf = out[r], .count = n,
                        .dtype = RCOLL_INT32, .op = RCOLL_SUM, .in_place = inplace };
                }
                assert_int_equal(run_sim(alg, p, args, segsizes[(p + c) % 4]), 0);
                for (int r = 0; r < p; r++) {
                    for (size_t i = 0; i < n; i++) {
                        int32_t e = 0;
                        for (int q = 0; q < p; q++) {
                            e += input(q, i);
                        }
                        if (out[r][i] != e) {
                            fail_msg("allreduce %s p=%d n=%zu inplace=%d: rank %d elem %zu = %d, expected %d",
                                     name, p, n, inplace, r, i, out[r][i], e);
                        }
                        if (!inplace && in[r][i] != input(r, i)) {
                            fail_msg("allreduce %s: sendbuf changed", name);
                        }
                    }
                    free(in[r]);
                    free(out[r]);
                }
            }
        }
    }
}

static void test_allreduce_recursive_doubling(void **s) { (void)s; allreduce_case("recursive_doubling"); }
static void test_allreduce_ring(void **s)               { (void)s; allreduce_case("ring"); }
static void test_allreduce_rabenseifner(void **s)       { (void)s; allreduce_case("rabenseifner"); }
static void test_allreduce_reduce_bcast(void **s)       { (void)s; allreduce_case("reduce_bcast"); }

static void reduce_case(const char *name)
{
    const rcoll_alg_t *alg = find(reduce_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int root = 0; root < p; root++) {
                size_t n = counts[c];
                int inplace = (root + (int)c) % 2;
                int32_t *in[PMAX], *out = malloc(n * 4);
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(n * 4);
                    for (size_t i = 0; i < n; i++) {
                        in[r][i] = input(r, i);
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_REDUCE, .sendbuf = in[r],
                        .recvbuf = NULL, .count = n, .dtype = RCOLL_INT32, .op = RCOLL_SUM,
                        .root = root };
                }
                for (size_t i = 0; i < n; i++) {
                    out[i] = inplace ? in[root][i] : 0x55555555;
                }
                args[root].recvbuf = out;
                if (inplace) {
                    args[root].sendbuf = out;
                    args[root].in_place = 1;
                }
                assert_int_equal(run_sim(alg, p, args, 0), 0);
                for (size_t i = 0; i < n; i++) {
                    int32_t e = 0;
                    for (int q = 0; q < p; q++) {
                        e += input(q, i);
                    }
                    if (out[i] != e) {
                        fail_msg("reduce %s p=%d n=%zu root=%d: elem %zu = %d, expected %d",
                                 name, p, n, root, i, out[i], e);
                    }
                }
                for (int r = 0; r < p; r++) {
                    free(in[r]);
                }
                free(out);
            }
        }
    }
}

static void test_reduce_binomial(void **s)              { (void)s; reduce_case("binomial"); }
static void test_reduce_reduce_scatter_gather(void **s) { (void)s; reduce_case("reduce_scatter_gather"); }

static void reduce_scatter_case(const char *name)
{
    const rcoll_alg_t *alg = find(reduce_scatter_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < 5; c++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                size_t rc = counts[c], tot = rc * (size_t)p;
                int32_t *in[PMAX], *out[PMAX];
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(tot * 4);
                    out[r] = malloc(tot * 4);
                    for (size_t i = 0; i < tot; i++) {
                        in[r][i] = input(r, i);
                        out[r][i] = inplace ? in[r][i] : 0x55555555;
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_REDUCE_SCATTER,
                        .sendbuf = inplace ? out[r] : in[r], .recvbuf = out[r], .count = rc,
                        .dtype = RCOLL_INT32, .op = RCOLL_SUM, .in_place = inplace };
                }
                assert_int_equal(run_sim(alg, p, args, segsizes[(p + c) % 4]), 0);
                for (int r = 0; r < p; r++) {
                    for (size_t i = 0; i < rc; i++) {
                        int32_t e = 0;
                        for (int q = 0; q < p; q++) {
                            e += input(q, (size_t)r * rc + i);
                        }
                        if (out[r][i] != e) {
                            fail_msg("reduce_scatter %s p=%d rc=%zu inplace=%d: rank %d elem %zu = %d, expected %d",
                                     name, p, rc, inplace, r, i, out[r][i], e);
                        }
                    }
                    free(in[r]);
                    free(out[r]);
                }
            }
        }
    }
}

static void test_reduce_scatter_recursive_halving(void **s) { (void)s; reduce_scatter_case("recursive_halving"); }
static void test_reduce_scatter_ring(void **s)              { (void)s; reduce_scatter_case("ring"); }

/* Floats reduced by several ranks must come out bitwise equal everywhere.
 * MIN over +0 and -0 returns whichever operand comes second when they tie,
 * so it exposes ranks that apply the operands in different orders. */
static void bitwise_case(rcoll_op_t op)
{
    for (const rcoll_alg_t *const *a = allreduce_algs; *a != NULL; a++) {
        for (int p = 2; p <= 9; p++) {
            size_t n = 37;
            float *in[PMAX], *out[PMAX];
            rcoll_coll_args_t args[PMAX];
            for (int r = 0; r < p; r++) {
                in[r] = malloc(n * 4);
                out[r] = malloc(n * 4);
                for (size_t i = 0; i < n; i++) {
                    if (op == RCOLL_MIN) {
                        in[r][i] = ((r * 5 + (int)i) % 3) ? 0.0f : -0.0f;
                    } else {
                        in[r][i] = 1.0f / (float)(r * 3 + (int)i + 1) + 1e7f * (float)(r % 2);
                    }
                }
                args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLREDUCE, .sendbuf = in[r],
                    .recvbuf = out[r], .count = n, .dtype = RCOLL_FLOAT32, .op = op };
            }
            assert_int_equal(run_sim(*a, p, args, 8), 0);
            for (int r = 1; r < p; r++) {
                if (memcmp(out[r], out[0], n * 4) != 0) {
                    fail_msg("allreduce %s p=%d %s: rank %d's float result differs from rank 0's",
                             (*a)->name, p, rcoll_op_name(op), r);
                }
            }
            for (int r = 0; r < p; r++) {
                free(in[r]);
                free(out[r]);
            }
        }
    }
}

static void test_allreduce_bitwise_equal(void **state)
{
    (void)state;
    bitwise_case(RCOLL_SUM);
    bitwise_case(RCOLL_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_recursive_doubling),
        cmocka_unit_test(test_allreduce_ring),
        cmocka_unit_test(test_allreduce_rabenseifner),
        cmocka_unit_test(test_allreduce_reduce_bcast),
        cmocka_unit_test(test_allreduce_bitwise_equal),
        cmocka_unit_test(test_reduce_binomial),
        cmocka_unit_test(test_reduce_reduce_scatter_gather),
        cmocka_unit_test(test_reduce_scatter_recursive_halving),
        cmocka_unit_test(test_reduce_scatter_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
