/*
 * test_selector.c - the selector picks the algorithm the cost model says is
 * cheapest: just below and just above crossover points computed here by
 * hand from the formulas in docs/algorithms.md; forced names, tune-file
 * rules and ranks per node through rcoll_select() itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <cmocka.h>
#include "core.h"
#include "selector.h"

/* One node, no rendezvous, round numbers. */
static rcoll_model_t flat_model(void)
{
    rcoll_model_t m = {
        .alpha = 2e-6, .alpha_inter = 3e-6, .beta = 2e-10, .beta_inter = 1e-10,
        .gamma = 1e-10, .rndv_extra = 0, .eager_limit = SIZE_MAX, .segment_size = 65536,
    };
    return m;
}

static const char *choose(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes, int p, int ppn)
{
    const rcoll_alg_t *a = rcoll_select_by_cost(coll, m, bytes, p, ppn);
    assert_non_null(a);
    return a->name;
}

static void expect_crossover(rcoll_coll_type_t coll, const rcoll_model_t *m, int p, double x,
                             const char *below, const char *above)
{
    size_t lo = (size_t)floor(x * 0.97), hi = (size_t)ceil(x * 1.03);
    const char *got_lo = choose(coll, m, lo, p, p), *got_hi = choose(coll, m, hi, p, p);
    if (strcmp(got_lo, below) != 0 || strcmp(got_hi, above) != 0)
        fail_msg("%s p=%d crossover %.0f B: chose %s at %zu (want %s), %s at %zu (want %s)",
                 rcoll_coll_name(coll), p, x, got_lo, lo, below, got_hi, hi, above);
}

/*
 * bcast, p = 8, one node:
 *   binomial           3(a + n b)
 *   scatter_allgather  scatter 3a + (1+2+4) n/8 b, ring 7(a + n/8 b) = 10a + 1.75 n b
 * equal at n = 7a / (1.25 b).
 */
static void test_bcast_binomial_vs_sag(void **state)
{
    rcoll_model_t m = flat_model();
    expect_crossover(RCOLL_COLL_BCAST, &m, 8, 7 * m.alpha / (1.25 * m.beta), "binomial",
                     "scatter_allgather");
    m.alpha = 10e-6;   /* slower messages move it up */
    expect_crossover(RCOLL_COLL_BCAST, &m, 8, 7 * m.alpha / (1.25 * m.beta), "binomial",
                     "scatter_allgather");
}

/*
 * bcast, p = 8, n = k segments of S:  chain (k + 6)(a + S b) against
 * scatter_allgather 10a + 1.75 k S b: equal at k = (6 S b - 4 a) / (0.75 S b - a).
 */
static void test_bcast_sag_vs_chain(void **state)
{
    rcoll_model_t m = flat_model();
    double S = (double)m.segment_size, b = m.beta, a = m.alpha;
    double k = (6 * S * b - 4 * a) / (0.75 * S * b - a);
    size_t klo = (size_t)floor(k), khi = klo + 1;

    assert_true(k > 2 && k != floor(k));
    assert_string_equal(choose(RCOLL_COLL_BCAST, &m, klo * m.segment_size, 8, 8), "scatter_allgather");
    assert_string_equal(choose(RCOLL_COLL_BCAST, &m, khi * m.segment_size, 8, 8), "chain");
    assert_string_equal(choose(RCOLL_COLL_BCAST, &m, (size_t)256 << 20, 8, 8), "chain");
}

/*
 * allgather, p = 7 (q = 4, r = 3), block of n bytes, one node:
 *   recursive_doubling  fold in a + n b, rounds 2(a + n b) + 2(a + 2 n b),
 *                       fold out a + 7 n b          = 6a + 14 n b
 *   bruck               3a + (1+2+3) n b + copy 7 n b = 3a + 13 n b
 *   ring                6(a + n b)                  = 6a + 6 n b
 * bruck below n = 3a / 7b, ring above; with p = 8, recursive doubling
 * (3a + 7 n b) beats both at every size.
 */
static void test_allgather_crossovers(void **state)
{
    rcoll_model_t m = flat_model();
    expect_crossover(RCOLL_COLL_ALLGATHER, &m, 7, 3 * m.alpha / (7 * m.beta), "bruck", "ring");
    for (size_t n = 8; n <= ((size_t)64 << 20); n *= 8)
        assert_string_equal(choose(RCOLL_COLL_ALLGATHER, &m, n, 8, 8), "recursive_doubling");
}

/*
 * The rendezvous extra cost R moves the crossover: with the eager limit E
 * between n and 2n, bruck's rounds 2 and 3 pay R, ring's messages do not:
 * 3a + 13 n b + 2R = 6a + 6 n b  at  n = (3a - 2R) / 7b.
 */
static void test_allgather_rndv_shift(void **state)
{
    rcoll_model_t m = flat_model();
    double x;

    m.rndv_extra = 1e-6;
    x = (3 * m.alpha - 2 * m.rndv_extra) / (7 * m.beta);
    m.eager_limit = (size_t)(1.4 * x);
    expect_crossover(RCOLL_COLL_ALLGATHER, &m, 7, x, "bruck", "ring");
}

/* Ties go to the first table entry; barrier has one algorithm. */
static void test_ties_and_trivial(void **state)
{
    rcoll_model_t m = flat_model();
    assert_string_equal(choose(RCOLL_COLL_BCAST, &m, 1 << 20, 1, 1), "binomial");
    assert_string_equal(choose(RCOLL_COLL_ALLGATHER, &m, 1 << 20, 1, 1), "recursive_doubling");
    assert_string_equal(choose(RCOLL_COLL_BARRIER, &m, 0, 4096, 16), "dissemination");
    assert_null(rcoll_select_by_cost(RCOLL_COLL_LAST, &m, 8, 4, 4));
}

/* Across nodes the network link is shared: every model choice must still be
 * an algorithm of the table, and the same for the same inputs. */
static void test_multinode_deterministic(void **state)
{
    const rcoll_model_t *m = rcoll_selector_model();
    for (int c = 0; c < RCOLL_COLL_LAST; c++)
        for (int p = 2; p <= 4096; p *= 2)
            for (size_t n = 8; n <= ((size_t)256 << 20); n *= 4) {
                const rcoll_alg_t *a = rcoll_select_by_cost((rcoll_coll_type_t)c, m, n, p, 4);
                assert_non_null(a);
                assert_ptr_equal(a, rcoll_alg_find((rcoll_coll_type_t)c, a->name));
                assert_ptr_equal(a, rcoll_select_by_cost((rcoll_coll_type_t)c, m, n, p, 4));
            }
}

/* ---- rcoll_select() on a hand-made context ---- */

static rcoll_context_t ctx;
static rcoll_comm_t comm;
static rcoll_task_t task;
static int world_ranks[6] = { 0, 1, 2, 3, 4, 5 };
static int node_of[6] = { 0, 0, 1, 1, 1, 2 };

static int setup_ctx(void **state)
{
    memset(&ctx, 0, sizeof(ctx));
    memset(&comm, 0, sizeof(comm));
    memset(&task, 0, sizeof(task));
    ctx.size = 6;
    ctx.node_of = node_of;
    ctx.nnodes = 3;
    ctx.eager_limit = 8192;
    ctx.config.segment_size = 65536;
    comm.ctx = &ctx;
    comm.size = 6;
    comm.id = 42;
    comm.world_ranks = world_ranks;
    task.ctx = &ctx;
    task.comm = &comm;
    task.args.type = RCOLL_COLL_BCAST;
    task.args.count = 1;
    task.args.dtype = RCOLL_UINT8;
    return 0;
}

static int teardown_ctx(void **state)
{
    rcoll_selector_fini(&ctx);
    return 0;
}

/* What rcoll_config_set does after a change: the selector's cached choices
 * (per communicator) are stale.  Tests that change the configuration, or
 * the communicator, in place say so. */
static void config_changed(void)
{
    ctx.config.gen++;
}

static void test_select_cache(void **state)
{
    task.args.type = RCOLL_COLL_BCAST;
    task.args.count = 1;
    const rcoll_alg_t *first = rcoll_select(&task);
    assert_non_null(first);
    /* a change not announced is not seen: the choice comes from the cache */
    snprintf(ctx.config.bcast_alg, sizeof(ctx.config.bcast_alg), "chain");
    assert_ptr_equal(rcoll_select(&task), first);
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "chain");
    /* other sizes and collectives have entries of their own */
    task.args.count = 1 << 20;
    assert_string_equal(rcoll_select(&task)->name, "chain");
    task.args.type = RCOLL_COLL_ALLGATHER;
    assert_non_null(rcoll_select(&task));
    assert_true(strcmp(rcoll_select(&task)->name, "chain") != 0);
    ctx.config.bcast_alg[0] = '\0';
    config_changed();
    task.args.type = RCOLL_COLL_BCAST;
    task.args.count = 1;
    assert_ptr_equal(rcoll_select(&task), first);
}

static void test_select_forced(void **state)
{
    snprintf(ctx.config.bcast_alg, sizeof(ctx.config.bcast_alg), "chain");
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "chain");
    snprintf(ctx.config.bcast_alg, sizeof(ctx.config.bcast_alg), "no_such_alg");
    config_changed();
    assert_null(rcoll_select(&task));
    ctx.config.bcast_alg[0] = '\0';
    config_changed();
    assert_non_null(rcoll_select(&task));
    /* forcing one collective leaves the others to the model (3 nodes,
     * up to 3 ranks on one: the node-aware bcast) */
    snprintf(ctx.config.allgather_alg, sizeof(ctx.config.allgather_alg), "ring");
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "node_aware");
    task.args.type = RCOLL_COLL_ALLGATHER;
    assert_string_equal(rcoll_select(&task)->name, "ring");
}

static void test_select_ppn(void **state)
{
    rcoll_model_t m;
    assert_int_equal(rcoll_selector_comm_ppn(&comm), 3);   /* node 1 has three */
    ctx.nnodes = 1;
    comm.id = 43;
    assert_int_equal(rcoll_selector_comm_ppn(&comm), 6);
    ctx.nnodes = 3;
    comm.id = 44;
    comm.size = 2;   /* ranks 0, 1: both on node 0 */
    config_changed();
    assert_int_equal(rcoll_selector_comm_ppn(&comm), 2);
    rcoll_selector_model_for(&ctx, &m);
    assert_int_equal(m.eager_limit, 8192);
    assert_int_equal(m.segment_size, 65536);
}

static void test_select_tune_file(void **state)
{
    char path[] = "/tmp/rcoll_test_tuneXXXXXX";
    int fd = mkstemp(path);
    const char *text = "# test\nbcast 0-100 chain ranks=6\nbcast 101-* scatter_allgather\n";

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(ctx.config.tune_file, sizeof(ctx.config.tune_file), "%s", path);
    config_changed();
    assert_int_equal(rcoll_selector_init(&ctx), RCOLL_OK);
    task.args.count = 100;
    assert_string_equal(rcoll_select(&task)->name, "chain");
    task.args.count = 101;
    assert_string_equal(rcoll_select(&task)->name, "scatter_allgather");
    task.args.count = 50;
    comm.size = 5;                      /* no rule for 5 ranks: the model */
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "node_aware");
    snprintf(ctx.config.bcast_alg, sizeof(ctx.config.bcast_alg), "binomial");   /* forced wins */
    config_changed();
    comm.size = 6;
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "binomial");
    ctx.config.bcast_alg[0] = '\0';
    config_changed();

    /* a bad file fails init and every selection, with file:line logged */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "bcast 1-2 nope\n", 15), 15);
    close(fd);
    assert_int_equal(rcoll_selector_init(&ctx), RCOLL_ERR_INVALID_ARG);
    assert_null(rcoll_select(&task));
    unlink(path);
    ctx.config.tune_file[0] = '\0';
    config_changed();
    assert_non_null(rcoll_select(&task));
}

/* Whether shm may be chosen is the communicator's creation-time property
 * (comm.shm_usable), not whatever the context's setting says later. */
static void test_select_shm_property(void **state)
{
    ctx.nnodes = 1;                     /* every rank on one node */
    ctx.config.shm = 1;
    comm.id = 45;
    task.args.type = RCOLL_COLL_ALLREDUCE;
    task.args.count = 8;
    comm.shm_usable = 1;
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "shm");
    comm.shm_usable = 0;                /* created where shm is not usable */
    config_changed();
    assert_string_not_equal(rcoll_select(&task)->name, "shm");
    /* forcing shm wins over the property (it needs one node only) */
    snprintf(ctx.config.allreduce_alg, sizeof(ctx.config.allreduce_alg), "shm");
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "shm");
    ctx.config.allreduce_alg[0] = '\0';
    /* a context setting changed after creation does not change the choice */
    comm.shm_usable = 1;
    ctx.config.shm = 0;
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "shm");
}

/* The node-aware (composed) algorithms: offered only on a communicator
 * that spans nodes with more than one rank on some node; the cost model
 * prefers them there for large vectors; never given to an internal
 * sub-communicator, even when forced or named by a tune rule. */
static void test_select_node_aware(void **state)
{
    const rcoll_model_t *m = rcoll_selector_model();
    for (size_t n = 8; n <= ((size_t)64 << 20); n *= 8) {
        for (int c = RCOLL_COLL_ALLREDUCE; c <= RCOLL_COLL_BCAST; c++) {
            assert_false(rcoll_select_by_cost(c, m, n, 8, 8)->flags & RCOLL_ALG_COMPOSED);
            assert_false(rcoll_select_by_cost(c, m, n, 8, 1)->flags & RCOLL_ALG_COMPOSED);
            assert_false(rcoll_select_by_cost(c, m, n, 1024, 1)->flags & RCOLL_ALG_COMPOSED);
            assert_true(isinf(rcoll_alg_find(c, "node_aware")->cost(m, n, 8, 8)));
            assert_true(isinf(rcoll_alg_find(c, "node_aware")->cost(m, n, 8, 1)));
            assert_true(isfinite(rcoll_alg_find(c, "node_aware")->cost(m, n, 8, 4)));
        }
    }
    /* 2 nodes x 2 ranks (the acceptance layout), 1 MiB: the slices */
    assert_string_equal(choose(RCOLL_COLL_ALLREDUCE, m, 1 << 20, 4, 2), "node_aware");
    assert_string_equal(choose(RCOLL_COLL_ALLREDUCE, m, 1 << 20, 64, 16), "node_aware");
    assert_string_equal(choose(RCOLL_COLL_BCAST, m, 1 << 20, 64, 16), "node_aware");
    /* leaders beat slices for a small vector (fewer children, one latency) */
    assert_true(rcoll_alg_find(RCOLL_COLL_ALLREDUCE, "node_leader")->cost(m, 8, 64, 16) <
                rcoll_alg_find(RCOLL_COLL_ALLREDUCE, "node_aware")->cost(m, 8, 64, 16));

    /* the hand-made communicator: 6 ranks on nodes 0 0 1 1 1 2 */
    task.args.type = RCOLL_COLL_ALLREDUCE;
    task.args.dtype = RCOLL_FLOAT32;
    task.args.count = 1 << 18;
    ctx.config.shm = 1;                 /* node-local steps in shm (the default) */
    config_changed();
    assert_true(rcoll_select(&task)->flags & RCOLL_ALG_COMPOSED);
    snprintf(ctx.config.allreduce_alg, sizeof(ctx.config.allreduce_alg), "node_leader");
    config_changed();
    assert_string_equal(rcoll_select(&task)->name, "node_leader");
    comm.sub_kind = RCOLL_SUB_RAIL;      /* the same, as a sub-communicator */
    comm.id = 46;
    config_changed();
    assert_non_null(rcoll_select(&task));
    assert_false(rcoll_select(&task)->flags & RCOLL_ALG_COMPOSED);
    ctx.config.allreduce_alg[0] = '\0';
    config_changed();
    assert_false(rcoll_select(&task)->flags & RCOLL_ALG_COMPOSED);
    comm.sub_kind = 0;
}

static void test_print_model(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    rcoll_selector_print_model(f, rcoll_selector_model());
    fclose(f);
    assert_non_null(strstr(text, "bcast (0 = binomial, 1 = scatter_allgather, 2 = chain, 3 = shm, "
                                 "4 = node_aware)"));
    assert_non_null(strstr(text, "256M"));
    assert_non_null(strstr(text, " 4096"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcast_binomial_vs_sag),
        cmocka_unit_test(test_bcast_sag_vs_chain),
        cmocka_unit_test(test_allgather_crossovers),
        cmocka_unit_test(test_allgather_rndv_shift),
        cmocka_unit_test(test_ties_and_trivial),
        cmocka_unit_test(test_multinode_deterministic),
        cmocka_unit_test_setup_teardown(test_select_cache, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_select_forced, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_select_ppn, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_select_tune_file, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_select_shm_property, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(test_select_node_aware, setup_ctx, teardown_ctx),
        cmocka_unit_test(test_print_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
