/*
 * test_tune.c - the RCOLL_TUNE_FILE parser: a good file gives the rules and
 * lookups it says; each kind of bad file is refused with "name:line: why".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>
#include "coll.h"
#include "config.h"
#include "selector.h"
#include "../../tools/rcoll_tune.h"

static const char *good =
    "# rcoll tune file\n"
    "\n"
    "bcast      0-64k      binomial             # small\n"
    "bcast      64k-*      scatter_allgather    ranks=3-*\n"
    "bcast      *          chain\n"
    "\t allgather 1m-1g ring ranks=8\r\n"
    "allgather  100        bruck\n"
    "barrier    *          dissemination";   /* no final newline */

static void test_good(void **state)
{
    rcoll_tune_t t;
    char err[256];

    assert_int_equal(rcoll_tune_parse_text(good, "good", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 6);
    assert_int_equal(t.rules[0].line, 3);
    assert_int_equal(t.rules[0].min_bytes, 0);
    assert_int_equal(t.rules[0].max_bytes, 65536);
    assert_int_equal(t.rules[1].min_ranks, 3);
    assert_int_equal(t.rules[1].max_ranks, INT32_MAX);
    assert_int_equal(t.rules[3].min_bytes, 1 << 20);
    assert_int_equal(t.rules[3].max_bytes, 1 << 30);
    assert_int_equal(t.rules[3].min_ranks, 8);
    assert_int_equal(t.rules[3].max_ranks, 8);
    assert_int_equal(t.rules[5].line, 8);

    /* first match wins */
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_BCAST, 100, 2)->name, "binomial");
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_BCAST, 65536, 64)->name, "binomial");
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_BCAST, 65537, 64)->name, "scatter_allgather");
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_BCAST, 65537, 2)->name, "chain");
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_ALLGATHER, 1 << 20, 8)->name, "ring");
    assert_null(rcoll_tune_lookup(&t, RCOLL_COLL_ALLGATHER, 1 << 20, 9));
    assert_null(rcoll_tune_lookup(&t, RCOLL_COLL_ALLGATHER, (1u << 30) + 1, 8));
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_ALLGATHER, 100, 9)->name, "bruck");
    assert_null(rcoll_tune_lookup(&t, RCOLL_COLL_ALLGATHER, 101, 9));
    assert_null(rcoll_tune_lookup(&t, RCOLL_COLL_ALLREDUCE, 8, 2));
    assert_string_equal(rcoll_tune_lookup(&t, RCOLL_COLL_BARRIER, 0, 4096)->name, "dissemination");
    rcoll_tune_free(&t);
    assert_int_equal(t.nrules, 0);

    /* an empty file or comments only: no rules */
    assert_int_equal(rcoll_tune_parse_text("", "e", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 0);
    assert_int_equal(rcoll_tune_parse_text("# x\n\n  # y\n", "e", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 0);
    rcoll_tune_free(&t);
}

static void expect_error(const char *text, const char *where, const char *why)
{
    rcoll_tune_t t = { (rcoll_tune_rule_t *)0x1, 77 };   /* must stay untouched */
    char err[512];

    err[0] = '\0';
    if (rcoll_tune_parse_text(text, "bad.tune", &t, err, sizeof(err)) == RCOLL_OK)
        fail_msg("accepted bad tune text \"%s\"", text);
    assert_int_equal(t.nrules, 77);
    if (strncmp(err, where, strlen(where)) != 0 || strstr(err, why) == NULL)
        fail_msg("error \"%s\": want prefix \"%s\" and \"%s\"", err, where, why);
}

static void test_bad(void **state)
{
    char longline[2000];

    expect_error("bcast 0-1k binomial\nbcats 0-1k binomial\n", "bad.tune:2: ",
                 "unknown collective 'bcats'");
    expect_error("# c\n\nbcast 0-1k nope\n", "bad.tune:3: ",
                 "unknown bcast algorithm 'nope' (valid: binomial, scatter_allgather, chain, shm, node_aware)");
    expect_error("bcast 0-1x binomial\n", "bad.tune:1: ", "bad size range '0-1x'");
    expect_error("bcast -5 binomial\n", "bad.tune:1: ", "bad size range '-5'");
    expect_error("bcast 1k- binomial\n", "bad.tune:1: ", "bad size range");
    expect_error("bcast 99999999999999999999 binomial\n", "bad.tune:1: ", "bad size range");
    expect_error("\n\n\n\nbcast 2k-1k binomial\n", "bad.tune:5: ", "empty size range '2k-1k'");
    expect_error("bcast 0-1k\n", "bad.tune:1: ", "expected COLLECTIVE SIZES ALGORITHM");
    expect_error("ok\n", "bad.tune:1: ", "got 1 field");
    expect_error("bcast * binomial ranks=2 extra\n", "bad.tune:1: ", "too many fields");
    expect_error("bcast * binomial nodes=2\n", "bad.tune:1: ", "unexpected 'nodes=2'");
    expect_error("bcast * binomial ranks=0-4\n", "bad.tune:1: ", "bad rank range '0-4'");
    expect_error("bcast * binomial ranks=9-4\n", "bad.tune:1: ", "bad rank range");
    expect_error("bcast * binomial ranks=x\n", "bad.tune:1: ", "bad rank range");
    expect_error("bcast * binomial ranks=99999999999\n", "bad.tune:1: ", "bad rank range");
    memset(longline, 'a', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = '\0';
    expect_error(longline, "bad.tune:1: ", "line longer than");
}

/* `model KEY VALUE` lines: stored with their line, applied over a model
 * (the keys not given keep its values), each kind of bad line refused. */
static void test_model(void **state)
{
    rcoll_tune_t t;
    char err[512];
    const char *text =
        "# measured\n"
        "model alpha 2.5e-06\n"
        "bcast * binomial\n"
        "model  gamma\t1e-10   # s/B\n"
        "model rndv_extra 0\n"
        "model xcore_beta 1e-10\n";

    assert_int_equal(rcoll_tune_parse_text(text, "m", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 1);
    assert_int_equal(t.rules[0].line, 3);
    assert_int_equal(t.model_line[RCOLL_TUNE_ALPHA], 2);
    assert_int_equal(t.model_line[RCOLL_TUNE_GAMMA], 4);
    assert_int_equal(t.model_line[RCOLL_TUNE_RNDV_EXTRA], 5);
    assert_int_equal(t.model_line[RCOLL_TUNE_BETA], 0);
    assert_true(t.model[RCOLL_TUNE_ALPHA] == 2.5e-6);

    rcoll_model_t m = *rcoll_selector_model();
    rcoll_tune_apply_model(&t, &m);
    assert_true(m.alpha == 2.5e-6);
    assert_true(m.gamma == 1e-10);
    assert_true(m.rndv_extra == 0);
    assert_true(m.beta == rcoll_selector_model()->beta);            /* not given */
    assert_true(m.alpha_inter == rcoll_selector_model()->alpha_inter);
    assert_true(rcoll_tune_model_value(&m, RCOLL_TUNE_GAMMA) == 1e-10);
    assert_true(isnan(rcoll_tune_model_value(&m, RCOLL_TUNE_XCORE_BETA)));   /* recorded only */
    rcoll_tune_apply_model(NULL, &m);                                   /* no file: no change */
    assert_true(m.alpha == 2.5e-6);
    rcoll_tune_free(&t);
    assert_int_equal(t.model_line[RCOLL_TUNE_ALPHA], 0);

    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++)
        assert_int_equal(rcoll_tune_key_find(rcoll_tune_key_name(k)), k);
    assert_int_equal(rcoll_tune_key_find("delta"), -1);
    assert_non_null(rcoll_tune_default_path());
    assert_non_null(strstr(rcoll_tune_default_path(), "rcoll/tune"));

    expect_error("bcast * binomial\nmodel delta 1\n", "bad.tune:2: ",
                 "unknown model key 'delta' (valid: alpha, alpha_inter, beta");
    expect_error("model alpha 1e-6\n\nmodel alpha 2e-6\n", "bad.tune:3: ",
                 "model alpha given twice (first on line 1)");
    expect_error("model alpha fast\n", "bad.tune:1: ", "model alpha: 'fast' is not a number");
    expect_error("model alpha 1e-6s\n", "bad.tune:1: ", "'1e-6s' is not a number");
    expect_error("model beta nan\n", "bad.tune:1: ", "'nan' is not a number");
    expect_error("model beta inf\n", "bad.tune:1: ", "'inf' is not a number");
    expect_error("model beta 1e999\n", "bad.tune:1: ", "is not a number");
    expect_error("model alpha 0\n", "bad.tune:1: ", "model alpha 0 out of range");
    expect_error("model alpha -1e-6\n", "bad.tune:1: ", "out of range");
    expect_error("model gamma 1\n", "bad.tune:1: ", "model gamma 1 out of range [1e-13, 1e-06] s/B");
    expect_error("model rndv_extra -0.5\n", "bad.tune:1: ", "out of range");
    expect_error("model alpha\n", "bad.tune:1: ", "expected model KEY VALUE, got 2 fields");
    expect_error("model\n", "bad.tune:1: ", "expected model KEY VALUE, got 1 field");
    expect_error("model alpha 1e-6 1e-6\n", "bad.tune:1: ", "expected model KEY VALUE, got 4");
}

/* `shm cma_* SIZES|none` lines: stored with their line, the defaults where
 * none is given, each kind of bad line refused. */
static void test_shm_cma(void **state)
{
    rcoll_tune_t t;
    char err[512], buf[48];
    size_t lo, hi, dlo, dhi;
    const char *text =
        "bcast * binomial\n"
        "shm cma_bcast 8k-2m   # measured\n"
        "shm\tcma_reduce none\n";

    /* the defaults: bcast from a size on (no upper bound since
     * 2026-12-06), reduce none (no file) */
    assert_int_equal(rcoll_tune_cma_range(NULL, RCOLL_TUNE_CMA_BCAST, &dlo, &dhi), 0);
    assert_true(dlo > 0 && dlo <= dhi && dhi == SIZE_MAX);
    assert_int_equal(rcoll_tune_cma_range(NULL, RCOLL_TUNE_CMA_REDUCE, &lo, &hi), 0);
    assert_true(lo > hi);

    assert_int_equal(rcoll_tune_parse_text(text, "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 1);
    assert_int_equal(rcoll_tune_cma_range(&t, RCOLL_TUNE_CMA_BCAST, &lo, &hi), 2);
    assert_int_equal(lo, 8192);
    assert_int_equal(hi, 2 << 20);
    assert_int_equal(rcoll_tune_cma_range(&t, RCOLL_TUNE_CMA_REDUCE, &lo, &hi), 3);
    assert_true(lo > hi);
    /* not in the file: the default */
    size_t alo, ahi;
    rcoll_tune_cma_range(NULL, RCOLL_TUNE_CMA_ALLGATHER, &alo, &ahi);
    assert_int_equal(rcoll_tune_cma_range(&t, RCOLL_TUNE_CMA_ALLGATHER, &lo, &hi), 0);
    assert_true(lo == alo && hi == ahi);
    rcoll_tune_free(&t);

    /* formats the parser reads back */
    rcoll_tune_cma_format(SIZE_MAX, 0, buf, sizeof(buf));
    assert_string_equal(buf, "none");
    rcoll_tune_cma_format(16384, SIZE_MAX, buf, sizeof(buf));
    assert_string_equal(buf, "16384-*");
    rcoll_tune_cma_format(0, SIZE_MAX, buf, sizeof(buf));
    assert_string_equal(buf, "*");
    rcoll_tune_cma_format(32768, 65535, buf, sizeof(buf));
    assert_string_equal(buf, "32768-65535");
    assert_int_equal(rcoll_tune_parse_text("shm cma_allgather 16384-*\nshm cma_bcast *\n", "s", &t,
                                           err, sizeof(err)), RCOLL_OK);
    assert_int_equal(rcoll_tune_cma_range(&t, RCOLL_TUNE_CMA_ALLGATHER, &lo, &hi), 1);
    assert_true(lo == 16384 && hi == SIZE_MAX);
    assert_int_equal(rcoll_tune_cma_range(&t, RCOLL_TUNE_CMA_BCAST, &lo, &hi), 2);
    assert_true(lo == 0 && hi == SIZE_MAX);
    rcoll_tune_free(&t);
    for (int w = 0; w < RCOLL_TUNE_NCMA; w++)
        assert_int_equal(rcoll_tune_cma_find(rcoll_tune_cma_name(w)), w);
    assert_int_equal(rcoll_tune_cma_find("cma_barrier"), -1);

    expect_error("shm cma_barrier 1k-*\n", "bad.tune:1: ", "unknown shm setting 'cma_barrier'");
    expect_error("shm cma_bcast 1k-*\nshm cma_bcast none\n", "bad.tune:2: ",
                 "shm cma_bcast given twice (first on line 1)");
    expect_error("shm cma_bcast 2k-1k\n", "bad.tune:1: ", "shm cma_bcast: bad size range '2k-1k'");
    expect_error("shm cma_bcast never\n", "bad.tune:1: ", "bad size range 'never'");
    expect_error("shm cma_bcast\n", "bad.tune:1: ", "expected shm cma_bcast|cma_allgather|cma_reduce");
    expect_error("shm cma_bcast 1k 2k\n", "bad.tune:1: ", "got 4 fields");
}

/* `shm stream_min SIZE|off`: stored with its line (off: SIZE_MAX), absent
 * by default, each kind of bad line refused. */
static void test_shm_stream_min(void **state)
{
    rcoll_tune_t t;
    char err[512];

    (void)state;
    assert_int_equal(rcoll_tune_parse_text("bcast * binomial\n", "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.stream_line, 0);
    rcoll_tune_free(&t);
    assert_int_equal(rcoll_tune_parse_text("model alpha 1e-6\nshm stream_min 2m   # measured\n", "s",
                                           &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.stream_line, 2);
    assert_true(t.stream_min == (size_t)2 << 20);
    rcoll_tune_free(&t);
    assert_int_equal(rcoll_tune_parse_text("shm\tstream_min off\n", "s", &t, err, sizeof(err)),
                     RCOLL_OK);
    assert_int_equal(t.stream_line, 1);
    assert_true(t.stream_min == SIZE_MAX);
    rcoll_tune_free(&t);
    assert_int_equal(rcoll_tune_parse_text("shm stream_min 0\n", "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_true(t.stream_line == 1 && t.stream_min == 0);
    rcoll_tune_free(&t);

    expect_error("shm stream_min 1m\nshm stream_min off\n", "bad.tune:2: ",
                 "shm stream_min given twice (first on line 1)");
    expect_error("shm stream_min 1x\n", "bad.tune:1: ", "shm stream_min: bad size '1x'");
    expect_error("shm stream_min -1\n", "bad.tune:1: ", "shm stream_min: bad size '-1'");
    expect_error("shm stream_min never\n", "bad.tune:1: ", "bad size 'never'");
    expect_error("shm stream_min\n", "bad.tune:1: ", "shm stream_min SIZE|off or shm pair_flat_max SIZE, got 2 fields");
    expect_error("shm stream_mins 1m\n", "bad.tune:1: ", "unknown shm setting 'stream_mins'");
}

/* `shm pair_flat_max SIZE`: stored with its line, absent by default (the
 * default then, line 0), each kind of bad line refused; and the cut
 * rcoll_tune writes from its times. */
static void test_shm_pair_flat_max(void **state)
{
    rcoll_tune_t t;
    char err[512];
    size_t v;

    (void)state;
    assert_int_equal(rcoll_tune_parse_text("bcast * binomial\n", "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.pair_flat_line, 0);
    assert_int_equal(rcoll_tune_pair_flat_max(&t, &v), 0);
    assert_int_equal(v, RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT);
    rcoll_tune_free(&t);
    assert_int_equal(rcoll_tune_pair_flat_max(NULL, &v), 0);
    assert_int_equal(v, RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT);
    assert_int_equal(rcoll_tune_parse_text("shm stream_min off\nshm pair_flat_max 12k  # measured\n",
                                           "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(rcoll_tune_pair_flat_max(&t, &v), 2);
    assert_int_equal(v, 12288);
    rcoll_tune_free(&t);
    assert_int_equal(rcoll_tune_parse_text("shm pair_flat_max 0\n", "s", &t, err, sizeof(err)), RCOLL_OK);
    assert_true(t.pair_flat_line == 1 && t.pair_flat_max == 0);
    rcoll_tune_free(&t);

    expect_error("shm pair_flat_max 4k\nshm pair_flat_max 8k\n", "bad.tune:2: ",
                 "shm pair_flat_max given twice (first on line 1)");
    expect_error("shm pair_flat_max off\n", "bad.tune:1: ", "shm pair_flat_max: bad size 'off'");
    expect_error("shm pair_flat_max -1\n", "bad.tune:1: ", "shm pair_flat_max: bad size '-1'");
    expect_error("shm pair_flat_max 2t\n", "bad.tune:1: ", "shm pair_flat_max: bad size '2t'");
    expect_error("shm pair_flat_max\n", "bad.tune:1: ", "got 2 fields");

    /* the cut: flat below, pipelined above, by the smallest summed log-time */
    static const size_t size[] = { 8, 512, 2048, 8192, 32768, 131072 };
    static const double flat[] = { 0.2, 0.3, 0.5, 2.0, 8.4, 32.7 };
    static const double pipe[] = { 0.4, 0.4, 0.6, 1.0, 3.0, 9.6 };
    assert_int_equal(tune_flat_cut(size, flat, pipe, 6), 4096);          /* sqrt(2048 * 8192) */
    static const double slow[] = { 0.5, 0.6, 0.9, 3.0, 12.0, 50.0 };
    assert_int_equal(tune_flat_cut(size, slow, flat, 6), 0);             /* pipelined everywhere */
    assert_int_equal(tune_flat_cut(size, flat, flat, 6), 0);             /* ties: the pipeline */
    assert_int_equal(tune_flat_cut(size, flat, slow, 6), 131072);        /* flat everywhere */
    static const double noisy[] = { 0.4, 0.4, 0.45, 1.0, 3.0, 9.6 };     /* 2048 one-off: flat */
    static const double flat2[] = { 0.2, 0.3, 0.5, 0.7, 8.4, 32.7 };     /* 8192: flat by 30% */
    assert_int_equal(tune_flat_cut(size, flat2, noisy, 6), 16384);
    static const double failed[] = { 0.2, 0.3, -1, 2.0, 8.4, 32.7 };     /* a failed flat time */
    assert_int_equal(tune_flat_cut(size, failed, pipe, 6), 1024);
}

static void test_file(void **state)
{
    char path[] = "/tmp/rcoll_test_tuneXXXXXX", err[512], want[600];
    rcoll_tune_t t;
    int fd = mkstemp(path);
    const char *text = "allgather * ring\nallgather * ring\nreduce * nope\n";

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(rcoll_tune_parse_file(path, &t, err, sizeof(err)), RCOLL_ERR_INVALID_ARG);
    snprintf(want, sizeof(want), "%s:3: unknown reduce algorithm 'nope'", path);
    assert_int_equal(strncmp(err, want, strlen(want)), 0);

    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, 34), 34);
    close(fd);
    assert_int_equal(rcoll_tune_parse_file(path, &t, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(t.nrules, 2);
    rcoll_tune_free(&t);
    unlink(path);

    assert_int_equal(rcoll_tune_parse_file(path, &t, err, sizeof(err)), RCOLL_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "cannot open"));
    assert_non_null(strstr(err, path));
}

/* RCOLL_TUNE_FILE as the settings resolve it: a path stays, "none" is no
 * file, empty is the default location exactly when a file is there. */
static void test_config_path(void **state)
{
    rcoll_config_t cfg;
    const char *path_ov[] = { "RCOLL_TUNE_FILE=/some/where.tune", NULL };
    const char *none_ov[] = { "RCOLL_TUNE_FILE=none", NULL };
    const char *empty_ov[] = { "RCOLL_TUNE_FILE=", NULL };

    assert_int_equal(rcoll_config_load(path_ov, &cfg), RCOLL_OK);
    assert_string_equal(cfg.tune_file, "/some/where.tune");
    assert_int_equal(rcoll_config_load(none_ov, &cfg), RCOLL_OK);
    assert_string_equal(cfg.tune_file, "");
    assert_int_equal(rcoll_config_load(empty_ov, &cfg), RCOLL_OK);
    if (access(rcoll_tune_default_path(), F_OK) == 0)
        assert_string_equal(cfg.tune_file, rcoll_tune_default_path());
    else
        assert_string_equal(cfg.tune_file, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_shm_cma),
        cmocka_unit_test(test_shm_stream_min),
        cmocka_unit_test(test_shm_pair_flat_max),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_config_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
