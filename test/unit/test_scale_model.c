/*
 * test_scale_model.c - the model at scale (rcoll_info --model --nodes N
 * --ppn P --net NAME): the named network profiles exist and are applied as
 * documented; the alpha-beta-gamma lower bound never exceeds any applicable
 * algorithm's prediction (so not the selected one's either) over a grid of
 * layouts, sizes, collectives and networks; and the table for the largest
 * layout, 1024 nodes x 128 ranks, is printed in well under a few seconds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <cmocka.h>
#include "coll.h"
#include "selector.h"
#include "selector_scale.h"

/* a == b to within tol (relative to the larger; absolute below 1) */
#define assert_near(a, b, tol) \
    assert_true(fabs((double)(a) - (double)(b)) <= \
                (tol) * fmax(1.0, fmax(fabs((double)(a)), fabs((double)(b)))))

static const char *const required[] = { "hdr", "ndr", "roce100", "roce400", "tcp" };

static void test_profiles(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        const rcoll_net_profile_t *p = rcoll_net_profile_find(required[i]);
        assert_non_null(p);
        assert_string_equal(p->name, required[i]);
        assert_true(p->latency > 0 && p->latency < 100e-6);
        assert_true(p->bandwidth > 1e9 && p->bandwidth < 1e12);
        assert_non_null(p->source);
        assert_true(strlen(p->source) > 20);
        assert_non_null(p->what);

        rcoll_model_t m = *rcoll_selector_model();
        rcoll_net_profile_apply(p, &m);
        assert_near(m.alpha_inter, rcoll_selector_model()->alpha + p->latency, 1e-15);
        assert_near(m.beta_inter * p->bandwidth, 1.0, 1e-12);
        assert_near(m.alpha, rcoll_selector_model()->alpha, 0);
        assert_near(m.gamma, rcoll_selector_model()->gamma, 0);
    }
    /* line rates in the order the specifications give them */
    assert_true(rcoll_net_profile_find("ndr")->bandwidth ==
                2 * rcoll_net_profile_find("hdr")->bandwidth);
    assert_true(rcoll_net_profile_find("roce400")->bandwidth ==
                4 * rcoll_net_profile_find("roce100")->bandwidth);
    assert_null(rcoll_net_profile_find("nosuchnet"));
    assert_null(rcoll_net_profile_find(NULL));
    assert_null(rcoll_net_profile_find("list"));
}

static void check_grid(const rcoll_model_t *m, const char *label)
{
    static const int nodes[] = { 1, 2, 3, 4, 16, 128, 1024 };
    static const int ppns[] = { 1, 2, 3, 8, 16, 128 };

    for (int c = 0; c < RCOLL_COLL_LAST; c++) {
        const rcoll_alg_t *const *a = rcoll_coll_algs((rcoll_coll_type_t)c);
        for (size_t ni = 0; ni < sizeof(nodes) / sizeof(nodes[0]); ni++) {
            for (size_t pi = 0; pi < sizeof(ppns) / sizeof(ppns[0]); pi++) {
                int N = nodes[ni], P = ppns[pi], p = N * P;
                if (p < 2)
                    continue;
                for (size_t b = 8; b <= ((size_t)1 << 30); b *= 8) {
                    double lb = rcoll_coll_lower_bound((rcoll_coll_type_t)c, m, b, N, P);
                    assert_true(isfinite(lb) && lb >= 0);
                    if (N > 1)
                        assert_true(lb >= m->alpha_inter);
                    for (int i = 0; a[i] != NULL; i++) {
                        double t = a[i]->cost(m, b, p, P);
                        if (!(t >= lb * (1 - 1e-12))) {
                            fail_msg("%s: %s %s %zu B on %d x %d: predicted %g s < bound %g s",
                                     label, rcoll_coll_name((rcoll_coll_type_t)c), a[i]->name,
                                     b, N, P, t, lb);
                        }
                    }
                    const rcoll_alg_t *sel = rcoll_select_by_cost((rcoll_coll_type_t)c, m, b, p,
                                                                  P);
                    assert_non_null(sel);
                    assert_true(isfinite(sel->cost(m, b, p, P)));
                    if (c == RCOLL_COLL_BARRIER)
                        break;
                }
            }
        }
    }
}

static void test_bound_below_predictions(void **state)
{
    (void)state;
    check_grid(rcoll_selector_model(), "default");
    for (const rcoll_net_profile_t *p = rcoll_net_profiles; p->name != NULL; p++) {
        rcoll_model_t m = *rcoll_selector_model();
        rcoll_net_profile_apply(p, &m);
        check_grid(&m, p->name);
    }
}

/* The bound is Chan et al.'s: on two single-rank nodes a 1 GiB allreduce
 * is the larger of n beta_inter (bandwidth) and n/2 gamma (computation), a
 * bcast n beta_inter; on 1024 x 1
 * the latency term is ceil(log2 1024) alpha_inter; with 4 ranks per node
 * ceil(log5 1024) = 5 steps. */
static void test_bound_formula(void **state)
{
    rcoll_model_t m = *rcoll_selector_model();
    (void)state;
    rcoll_net_profile_apply(rcoll_net_profile_find("hdr"), &m);
    double n = (double)((size_t)1 << 30);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_ALLREDUCE, &m, 1u << 30, 2, 1),
                        fmax(n * m.beta_inter, n / 2 * m.gamma), 1e-9);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_BCAST, &m, 1u << 30, 16, 8),
                        n * m.beta_inter, 1e-9);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_BARRIER, &m, 0, 1024, 1),
                        10 * m.alpha_inter, 1e-12);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_BARRIER, &m, 0, 1024, 4),
                        5 * m.alpha_inter, 1e-12);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_ALLGATHER, &m, 1u << 20, 4, 2),
                        3.0 / 4 * 8 * (1u << 20) * m.beta_inter, 1e-12);
    /* one node: only the computation */
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_BCAST, &m, 1024, 1, 8), 0, 0);
    assert_near(rcoll_coll_lower_bound(RCOLL_COLL_ALLREDUCE, &m, 1024, 1, 8),
                        7.0 / 8 * 1024 * m.gamma, 1e-15);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_largest_layout(void **state)
{
    rcoll_model_t m = *rcoll_selector_model();
    char *buf = NULL;
    size_t len = 0;
    (void)state;
    rcoll_net_profile_apply(rcoll_net_profile_find("roce100"), &m);
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    double t0 = now();
    rcoll_selector_print_scale(f, &m, 1024, 128, "roce100", RCOLL_COLL_LAST);
    double dt = now() - t0;
    fclose(f);
    assert_true(dt < 3.0);
    assert_non_null(strstr(buf, "allreduce, 1024 nodes x 128 ranks per node = 131072 ranks"));
    assert_non_null(strstr(buf, "bcast, 1024 nodes x 128 ranks per node"));
    assert_non_null(strstr(buf, "PREDICTIONS"));
    assert_non_null(strstr(buf, "1024M"));
    assert_null(strstr(buf, "nan"));
    free(buf);
}

/* --bytes: one row per size given, in that order, and nothing else (the
 * rows model_check.sh parses: the selected algorithm's time) */
static void test_given_sizes(void **state)
{
    rcoll_model_t m = *rcoll_selector_model();
    const size_t sizes[] = { 1048576, 3000 };
    char *buf = NULL;
    size_t len = 0;
    (void)state;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    rcoll_selector_print_scale_sizes(f, &m, 2, 2, "x", RCOLL_COLL_ALLREDUCE, sizes, 2);
    fclose(f);
    char *one = strstr(buf, "\n       1M ");
    assert_non_null(one);
    assert_non_null(strstr(one + 1, "\n    3000B "));
    assert_null(strstr(buf, "\n       8B "));
    assert_null(strstr(buf, "\nbcast, 2 nodes"));
    const rcoll_alg_t *sel = rcoll_select_by_cost(RCOLL_COLL_ALLREDUCE, &m, 1048576, 4, 2);
    assert_non_null(sel);
    char *eol = strchr(one + 1, '\n');
    assert_non_null(eol);
    *eol = '\0';
    assert_non_null(strstr(one, sel->name));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_bound_below_predictions),
        cmocka_unit_test(test_bound_formula),
        cmocka_unit_test(test_largest_layout),
        cmocka_unit_test(test_given_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
