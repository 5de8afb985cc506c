/*
 * test_coll_node_cost.c - the cost formulas of the node-aware reduce,
 * allgather and barrier: offered only where a communicator spans nodes with
 * more than one rank on some node; chosen by the default model where the
 * network is the dear part (rcoll_info --model --ppn 16 shows the same);
 * and left for the flat algorithms when the model says the network costs
 * no more than the node (the intra / inter parameters decide).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>
#include "coll.h"
#include "selector.h"
#include "engines/compose_cost.h"

static const rcoll_coll_type_t colls[] = { RCOLL_COLL_REDUCE, RCOLL_COLL_ALLGATHER,
                                           RCOLL_COLL_BARRIER };

static const char *choose(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes, int p,
                          int ppn)
{
    const rcoll_alg_t *a = rcoll_select_by_cost(coll, m, bytes, p, ppn);
    assert_non_null(a);
    return a->name;
}

static void test_offered_only_across_nodes(void **state)
{
    const rcoll_model_t *m = rcoll_selector_model();
    (void)state;
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        const rcoll_alg_t *a = rcoll_alg_find(colls[i], "node_aware");
        assert_non_null(a);
        assert_true(a->flags & RCOLL_ALG_COMPOSED);
        for (size_t n = 8; n <= ((size_t)64 << 20); n *= 8) {
            assert_true(isinf(a->cost(m, n, 8, 8)));      /* one node */
            assert_true(isinf(a->cost(m, n, 8, 1)));      /* one rank per node */
            assert_true(isfinite(a->cost(m, n, 8, 4)));
            assert_true(isfinite(a->cost(m, n, 7, 4)));   /* uneven: 4 + 3 */
            assert_false(rcoll_select_by_cost(colls[i], m, n, 8, 8)->flags & RCOLL_ALG_COMPOSED);
            assert_false(rcoll_select_by_cost(colls[i], m, n, 1024, 1)->flags &
                         RCOLL_ALG_COMPOSED);
        }
    }
    const rcoll_alg_t *leader = rcoll_alg_find(RCOLL_COLL_REDUCE, "node_leader");
    assert_non_null(leader);
    assert_true(isinf(leader->cost(m, 8, 8, 8)));
    assert_true(isfinite(leader->cost(m, 8, 8, 4)));
}

/* 64 ranks, 16 per node, the default model (network dearer than the node,
 * shm on the node). */
static void test_default_model_choices(void **state)
{
    const rcoll_model_t *m = rcoll_selector_model();
    (void)state;
    assert_string_equal(choose(RCOLL_COLL_BARRIER, m, 0, 64, 16), "node_aware");
    assert_string_equal(choose(RCOLL_COLL_BARRIER, m, 0, 4, 2), "node_aware");
    assert_string_equal(choose(RCOLL_COLL_REDUCE, m, 8, 64, 16), "node_leader");
    assert_string_equal(choose(RCOLL_COLL_REDUCE, m, 1 << 20, 64, 16), "node_aware");
    assert_string_equal(choose(RCOLL_COLL_ALLGATHER, m, 8, 64, 16), "node_aware");
    /* a large allgather: the node bcast of the whole result costs more
     * than a flat ring saves */
    assert_string_not_equal(choose(RCOLL_COLL_ALLGATHER, m, 1 << 20, 64, 16), "node_aware");
    /* the slices pay for large vectors, the leaders for small ones */
    const rcoll_alg_t *aware = rcoll_alg_find(RCOLL_COLL_REDUCE, "node_aware");
    const rcoll_alg_t *leader = rcoll_alg_find(RCOLL_COLL_REDUCE, "node_leader");
    assert_true(leader->cost(m, 8, 64, 16) < aware->cost(m, 8, 64, 16));
    assert_true(aware->cost(m, 16 << 20, 64, 16) < leader->cost(m, 16 << 20, 64, 16));
}

/* A network as cheap as the node and no shm on it: the extra node steps
 * are pure cost, so the flat algorithms win. */
static void test_cheap_network_flat(void **state)
{
    rcoll_model_t m = *rcoll_selector_model();
    (void)state;
    m.alpha_inter = m.alpha;
    m.beta_inter = m.beta;
    m.shm = 0;
    m.shm_node = 0;
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        assert_false(rcoll_select_by_cost(colls[i], &m, 8, 64, 16)->flags & RCOLL_ALG_COMPOSED);
    }
    /* and a dear network with the same node brings the barrier back */
    m.alpha_inter = 20 * m.alpha;
    assert_string_equal(choose(RCOLL_COLL_BARRIER, &m, 0, 64, 16), "node_aware");
}

/* port() (coll.h): what one call keeps each send port busy, averaged over
 * the ranks, on one node -- never more than the call itself, and for a
 * binomial tree exactly p - 1 messages among p ranks. */
static void test_port_within_cost(void **state)
{
    static const struct { rcoll_coll_type_t coll; const char *name; } algs[] = {
        { RCOLL_COLL_REDUCE, "binomial" }, { RCOLL_COLL_REDUCE, "reduce_scatter_gather" },
        { RCOLL_COLL_BCAST, "binomial" },  { RCOLL_COLL_BCAST, "scatter_allgather" },
    };
    rcoll_model_t m = *rcoll_selector_model();
    (void)state;
    m.shm = 0;
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        const rcoll_alg_t *a = rcoll_alg_find(algs[i].coll, algs[i].name);
        assert_non_null(a);
        assert_non_null(a->port);
        for (int p = 2; p <= 16; p++) {
            for (size_t n = 8; n <= ((size_t)16 << 20); n *= 4) {
                double port = a->port(&m, n, p);
                assert_true(port > 0);
                assert_true(port <= a->cost(&m, n, p, p));
            }
        }
    }
    const rcoll_alg_t *bin = rcoll_alg_find(RCOLL_COLL_REDUCE, "binomial");
    assert_float_equal(bin->port(&m, 4096, 8), 7.0 / 8 * (m.alpha + 4096 * m.beta), 1e-12);
}

/* The spacing of a stream of node children: a whole child on shm (they take
 * turns on the segment); point to point the larger of a quarter child (the
 * window) and the port time. */
static void test_stream_spacing(void **state)
{
    rcoll_model_t m = *rcoll_selector_model();
    (void)state;
    m.shm = 1;
    assert_float_equal(rcoll_compose_cost_spacing(&m, 40e-6, 1e-6), 40e-6, 1e-15);
    m.shm = 0;
    assert_float_equal(rcoll_compose_cost_spacing(&m, 40e-6, 1e-6), 10e-6, 1e-15);
    assert_float_equal(rcoll_compose_cost_spacing(&m, 40e-6, 25e-6), 25e-6, 1e-15);
}

/* node_aware allreduce and reduce, point to point on the node: the slices
 * overlap, so the price lies below the sum of every child, and above what
 * one slice's path and the node's ports need. */
static void test_pipelined_slices(void **state)
{
    rcoll_model_t m = *rcoll_selector_model(), node, rail;
    (void)state;
    m.shm = 0;
    m.shm_node = 0;
    const int nodes = 16, ppn = 8, s = ppn;
    for (size_t n = 4096; n <= ((size_t)2 << 20); n *= 8) {
        size_t slice = n / s;
        node = rail = m;
        rail.beta_inter *= s;
        double r = rcoll_select_best_cost(RCOLL_COLL_REDUCE, &node, slice, ppn, ppn);
        double b = rcoll_select_best_cost(RCOLL_COLL_BCAST, &node, slice, ppn, ppn);
        double pr = rcoll_select_best_port(RCOLL_COLL_REDUCE, &node, slice, ppn);
        double pb = rcoll_select_best_port(RCOLL_COLL_BCAST, &node, slice, ppn);
        double ar = rcoll_select_best_cost(RCOLL_COLL_ALLREDUCE, &rail, slice, nodes, 1);
        double rr = rcoll_select_best_cost(RCOLL_COLL_REDUCE, &rail, slice, nodes, 1);
        double t = rcoll_alg_find(RCOLL_COLL_ALLREDUCE, "node_aware")->cost(&m, n, nodes * ppn,
                                                                              ppn);
        assert_true(t < s * (r + b) + ar);
        assert_true(t >= r + ar + b);
        assert_true(t >= s * (pr + pb));
        t = rcoll_alg_find(RCOLL_COLL_REDUCE, "node_aware")->cost(&m, n, nodes * ppn, ppn);
        assert_true(t < (s + 1) * r + rr);
        assert_true(t >= 2 * r + rr);
        assert_true(t >= s * pr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offered_only_across_nodes),
        cmocka_unit_test(test_default_model_choices),
        cmocka_unit_test(test_cheap_network_flat),
        cmocka_unit_test(test_port_within_cost),
        cmocka_unit_test(test_stream_spacing),
        cmocka_unit_test(test_pipelined_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
