/*
 * test_api.c - the public API at its edge, in singleton mode (no PMIx
 * server: rcoll_init gives a world of size 1).
 *
 *  - argument validation of every public function: bad arguments return
 *    RCOLL_ERR_INVALID_ARG and leave buffers and output arguments untouched;
 *  - count 0 returns at once; singleton collectives are local copies;
 *  - rcoll_strerror, datatype/op names and sizes, rcoll_algorithms;
 *  - rcoll_config_get/set, rcoll_init's config array (bad keys and values);
 *  - a multi-process launch without PMIx (SLURM_NTASKS / OMPI_COMM_WORLD_SIZE
 *    / PMI_SIZE > 1) fails with RCOLL_ERR_BOOTSTRAP instead of N singletons.
 *
 * Tests that change the environment or call rcoll_init run in a child
 * process (with an alarm), so they cannot disturb each other.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rcoll.h"

extern char **environ;

/* ---- helpers ---- */

static void unset_launch_env(void)
{
    static const char *const vars[] = {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
                                       "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                                       "MPI_LOCALNRANKS", NULL};
    for (int k = 0; vars[k]; k++)
        unsetenv(vars[k]);
    for (int again = 1; again;) {       /* every PMIX_* variable */
        again = 0;
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "PMIX_", 5) == 0) {
                char name[256];
                size_t len = strcspn(*e, "=");
                if (len >= sizeof(name))
                    len = sizeof(name) - 1;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
    /* settings from the caller's environment must not change the results */
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "RCOLL_", 6) == 0 && strncmp(*e, "RCOLL_LOG_LEVEL=", 16) != 0) {
                char name[256];
                size_t len = strcspn(*e, "=");
                if (len >= sizeof(name))
                    len = sizeof(name) - 1;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

/* Run fn in a child process; returns its exit status (or 100 + signal). */
static int in_child(int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60);
        _exit(fn());
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        return 100 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* In a child: report the first failed expectation as the exit status. */
#define CHILD_EXPECT(_cond, _code) do { if (!(_cond)) { \
    fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #_cond); return (_code); } } while (0)

#define SENTINEL_CTX  ((rcoll_context_t *)(uintptr_t)0x5eed)
#define SENTINEL_REQ  ((rcoll_request_t *)(uintptr_t)0x5eed)
#define SENTINEL_COMM ((rcoll_comm_t *)(uintptr_t)0x5eed)

/* ---- status codes, datatypes, ops ---- */

static void test_strerror(void **state)
{
    (void)state;
    for (int s = 0; s < RCOLL_STATUS_LAST; s++) {
        const char *t = rcoll_strerror((rcoll_status_t)s);
        assert_non_null(t);
        assert_true(strlen(t) > 0);
        for (int u = 0; u < s; u++)
            assert_string_not_equal(t, rcoll_strerror((rcoll_status_t)u));
    }
    assert_non_null(rcoll_strerror(RCOLL_STATUS_LAST));
    assert_non_null(rcoll_strerror((rcoll_status_t)-12345));
    assert_non_null(rcoll_strerror((rcoll_status_t)1000));
}

static void test_datatypes_and_ops(void **state)
{
    (void)state;
    static const size_t sizes[RCOLL_DATATYPE_LAST] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
    static const char *const names[RCOLL_DATATYPE_LAST] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
        "bfloat16", "float32", "float64"};
    for (int d = 0; d < RCOLL_DATATYPE_LAST; d++) {
        assert_int_equal(rcoll_datatype_size((rcoll_datatype_t)d), sizes[d]);
        assert_string_equal(rcoll_datatype_name((rcoll_datatype_t)d), names[d]);
    }
    assert_int_equal(rcoll_datatype_size(RCOLL_DATATYPE_LAST), 0);
    assert_int_equal(rcoll_datatype_size((rcoll_datatype_t)-1), 0);
    assert_string_equal(rcoll_datatype_name(RCOLL_DATATYPE_LAST), "unknown");
    assert_string_equal(rcoll_datatype_name((rcoll_datatype_t)-1), "unknown");
    static const char *const ops[RCOLL_OP_LAST] = {"sum", "prod", "min", "max", "band", "bor",
                                                   "bxor"};
    for (int o = 0; o < RCOLL_OP_LAST; o++)
        assert_string_equal(rcoll_op_name((rcoll_op_t)o), ops[o]);
    assert_string_equal(rcoll_op_name(RCOLL_OP_LAST), "unknown");
    assert_string_equal(rcoll_op_name((rcoll_op_t)-1), "unknown");
}

static void test_algorithms(void **state)
{
    (void)state;
    static const char *const colls[] = {"allreduce", "bcast", "barrier", "reduce", "allgather",
                                        "reduce_scatter"};
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
        const char *names[65];
        int n = rcoll_algorithms(colls[c], names, 64);
        assert_true(n >= 1 && n <= 64);
        for (int i = 0; i < n; i++) {
            assert_non_null(names[i]);
            assert_true(strlen(names[i]) > 0);
            for (int j = 0; j < i; j++)
                assert_string_not_equal(names[i], names[j]);
        }
        /* max smaller than the count: the count, and only max names written */
        names[0] = NULL;
        names[1] = "untouched";
        assert_int_equal(rcoll_algorithms(colls[c], names, 1), n);
        assert_non_null(names[0]);
        assert_string_equal(names[1], "untouched");
        assert_int_equal(rcoll_algorithms(colls[c], NULL, 0), n);
    }
    const char *names[4];
    assert_int_equal(rcoll_algorithms("alltoall", names, 4), -1);
    assert_int_equal(rcoll_algorithms("", names, 4), -1);
    assert_int_equal(rcoll_algorithms(NULL, names, 4), -1);
}

/* ---- rcoll_init: config array, launch detection ---- */

static int child_init_bad_config(void)
{
    unset_launch_env();
    static const char *const bad[][2] = {
        {"RCOLL_NO_SUCH_SETTING=1", NULL}, {"NO_SUCH_SETTING=1", NULL}, {"RCOLL_TIMEOUT", NULL},
        {"=5", NULL}, {"RCOLL_TIMEOUT=soon", NULL}, {"RCOLL_LOG_LEVEL=loud", NULL},
        {"RCOLL_EAGER_LIMIT=12q", NULL}, {"RCOLL_TRANSPORT=carrier-pigeon", NULL},
        {"RCOLL_EAGER_LIMIT=-5", NULL},
        /* out of the table's ranges (issue 12: 2^63 overflowed the verbs buffer arithmetic) */
        {"RCOLL_EAGER_LIMIT=9223372036854775808", NULL}, {"RCOLL_EAGER_LIMIT=2m", NULL},
        {"RCOLL_TIMEOUT=3e9", NULL}, {"RCOLL_TIMEOUT=1e300", NULL},
        {"RCOLL_SEGMENT_SIZE=0", NULL}, {"RCOLL_SEGMENT_SIZE=16g", NULL},
        {"RCOLL_IB_GID_INDEX=256", NULL}, {"RCOLL_IB_GID_INDEX=-2", NULL},
        {"RCOLL_SPIN_COUNT=2000000000", NULL}, {"RCOLL_RCACHE_MAX=2000g", NULL},
        /* RCOLL_FAULT (src/fault.c): a singleton has only world rank 0 */
        {"RCOLL_FAULT=1:fence", NULL}, {"RCOLL_FAULT=-1:fence", NULL}, {"RCOLL_FAULT=fence", NULL},
        {"RCOLL_FAULT=0:bogus", NULL}, {"RCOLL_FAULT=0:fence:2", NULL},
        {"RCOLL_FAULT=0:pipeline:0", NULL}, {"RCOLL_FAULT=0:rndv:1000001", NULL},
        {"RCOLL_FAULT=0:rndv:3x", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rcoll_context_t *ctx = SENTINEL_CTX;
        rcoll_status_t st = rcoll_init(bad[i], &ctx);
        if (st != RCOLL_ERR_INVALID_ARG || ctx != SENTINEL_CTX) {
            fprintf(stderr, "rcoll_init({\"%s\"}) returned %s, ctx %s\n", bad[i][0],
                    rcoll_strerror(st), ctx == SENTINEL_CTX ? "untouched" : "written");
            return 10 + (int)i;
        }
    }
    CHILD_EXPECT(rcoll_init(NULL, NULL) == RCOLL_ERR_INVALID_ARG, 30);
    /* a bad value in the environment fails the same way */
    setenv("RCOLL_TIMEOUT", "soon", 1);
    rcoll_context_t *ctx = SENTINEL_CTX;
    CHILD_EXPECT(rcoll_init(NULL, &ctx) == RCOLL_ERR_INVALID_ARG, 31);
    CHILD_EXPECT(ctx == SENTINEL_CTX, 32);
    unsetenv("RCOLL_TIMEOUT");
    return 0;
}

static void test_init_bad_config(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_init_bad_config), 0);
}

/* RCOLL_FAULT=0:finalize: the singleton kills itself in rcoll_finalize;
 * a valid setting whose point never comes changes nothing. */
static int child_fault_finalize(void)
{
    unset_launch_env();
    const char *const later[] = {"RCOLL_FAULT=0:pipeline:1000000", NULL};
    rcoll_context_t *ctx = NULL;
    CHILD_EXPECT(rcoll_init(later, &ctx) == RCOLL_OK, 10);
    CHILD_EXPECT(rcoll_finalize(ctx) == RCOLL_OK, 11);
    const char *const now[] = {"RCOLL_FAULT=0:finalize", NULL};
    CHILD_EXPECT(rcoll_init(now, &ctx) == RCOLL_OK, 12);
    rcoll_finalize(ctx);
    return 13;                  /* still alive: the hook did not fire */
}

static void test_fault_finalize(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_fault_finalize), 100 + SIGKILL);
}

/* The values at the ends of each range are accepted; the refusal of one
 * outside names the setting and its range in the log. */
static int child_init_range_edges(void)
{
    unset_launch_env();
    static const char *const good[] = {"RCOLL_EAGER_LIMIT=1m", "RCOLL_EAGER_LIMIT=0",
                                       "RCOLL_TIMEOUT=1e6", "RCOLL_SEGMENT_SIZE=1k",
                                       "RCOLL_SEGMENT_SIZE=1g", "RCOLL_IB_GID_INDEX=255",
                                       "RCOLL_IB_GID_INDEX=-1"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *const cfg[] = {good[i], NULL};
        rcoll_context_t *ctx = NULL;
        rcoll_status_t st = rcoll_init(cfg, &ctx);
        if (st != RCOLL_OK) {
            fprintf(stderr, "rcoll_init({\"%s\"}) returned %s\n", good[i], rcoll_strerror(st));
            return 10 + (int)i;
        }
        CHILD_EXPECT(rcoll_finalize(ctx) == RCOLL_OK, 30);
    }
    char path[] = "/tmp/rcoll_test_api_XXXXXX";
    int fd = mkstemp(path);
    CHILD_EXPECT(fd >= 0, 31);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("RCOLL_EAGER_LIMIT", "9223372036854775808", 1);
    rcoll_context_t *ctx = SENTINEL_CTX;
    rcoll_status_t st = rcoll_init(NULL, &ctx);
    fflush(stderr);
    dup2(saved, 2);
    CHILD_EXPECT(st == RCOLL_ERR_INVALID_ARG && ctx == SENTINEL_CTX, 32);
    char log[4096] = "";
    ssize_t n = pread(fd, log, sizeof(log) - 1, 0);
    CHILD_EXPECT(n > 0, 33);
    log[n] = '\0';
    if (strstr(log, "RCOLL_EAGER_LIMIT") == NULL || strstr(log, "1048576") == NULL) {
        fprintf(stderr, "the refusal does not name the setting and its range:\n%s", log);
        return 34;
    }
    return 0;
}

static void test_init_range_edges(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_init_range_edges), 0);
}

static int child_init_config_precedence(void)
{
    unset_launch_env();
    setenv("RCOLL_TIMEOUT", "9", 1);
    rcoll_context_t *ctx = NULL;
    CHILD_EXPECT(rcoll_init(NULL, &ctx) == RCOLL_OK && ctx != NULL, 10);
    const char *v = rcoll_config_get(ctx, "RCOLL_TIMEOUT");
    CHILD_EXPECT(v != NULL && atof(v) == 9.0, 11);
    v = rcoll_config_get(ctx, "TIMEOUT");           /* prefix optional */
    CHILD_EXPECT(v != NULL && atof(v) == 9.0, 12);
    CHILD_EXPECT(rcoll_finalize(ctx) == RCOLL_OK, 13);

    const char *const cfg[] = {"TIMEOUT=7", "RCOLL_EAGER_LIMIT=4k", NULL};
    ctx = NULL;
    CHILD_EXPECT(rcoll_init(cfg, &ctx) == RCOLL_OK && ctx != NULL, 14);
    v = rcoll_config_get(ctx, "RCOLL_TIMEOUT");
    CHILD_EXPECT(v != NULL && atof(v) == 7.0, 15);   /* config array beats environment */
    v = rcoll_config_get(ctx, "RCOLL_EAGER_LIMIT");
    CHILD_EXPECT(v != NULL, 16);
    char *end;
    unsigned long long el = strtoull(v, &end, 10);
    if (*end == 'k' || *end == 'K')
        el <<= 10;
    CHILD_EXPECT(el == 4096, 17);
    CHILD_EXPECT(rcoll_config_get(ctx, "RCOLL_NO_SUCH_SETTING") == NULL, 18);
    CHILD_EXPECT(rcoll_config_get(ctx, NULL) == NULL, 19);
    CHILD_EXPECT(rcoll_config_get(NULL, "RCOLL_TIMEOUT") == NULL, 20);
    CHILD_EXPECT(rcoll_finalize(ctx) == RCOLL_OK, 21);
    return 0;
}

static void test_init_config_precedence(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_init_config_precedence), 0);
}

static const char *launch_var;

static int child_launch_without_pmix(void)
{
    unset_launch_env();
    setenv(launch_var, "4", 1);
    rcoll_context_t *ctx = SENTINEL_CTX;
    rcoll_status_t st = rcoll_init(NULL, &ctx);
    if (st != RCOLL_ERR_BOOTSTRAP || ctx != SENTINEL_CTX) {
        fprintf(stderr, "%s=4 without PMIx: rcoll_init returned %s, ctx %s\n", launch_var,
                rcoll_strerror(st), ctx == SENTINEL_CTX ? "untouched" : "written");
        return 10;
    }
    /* one task is a singleton, not an error */
    setenv(launch_var, "1", 1);
    ctx = NULL;
    CHILD_EXPECT(rcoll_init(NULL, &ctx) == RCOLL_OK && ctx != NULL, 11);
    CHILD_EXPECT(rcoll_context_size(ctx) == 1, 12);
    CHILD_EXPECT(rcoll_finalize(ctx) == RCOLL_OK, 13);
    return 0;
}

static void test_launch_without_pmix(void **state)
{
    (void)state;
    static const char *const vars[] = {"SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        launch_var = vars[i];
        int rc = in_child(child_launch_without_pmix);
        if (rc != 0)
            fail_msg("%s=4 and no PMIx server: check %d failed", vars[i], rc);
    }
}

/* ---- a live singleton context for the rest ---- */

static rcoll_context_t *ctx;
static rcoll_comm_t *world;

static int setup_ctx(void **state)
{
    (void)state;
    unset_launch_env();
    if (rcoll_init(NULL, &ctx) != RCOLL_OK)
        return -1;
    world = rcoll_comm_world(ctx);
    return world ? 0 : -1;
}

static int teardown_ctx(void **state)
{
    (void)state;
    return rcoll_finalize(ctx) == RCOLL_OK ? 0 : -1;
}

static void test_singleton_identity(void **state)
{
    (void)state;
    assert_non_null(world);
    assert_int_equal(rcoll_comm_rank(world), 0);
    assert_int_equal(rcoll_comm_size(world), 1);
    assert_int_equal(rcoll_context_rank(ctx), 0);
    assert_int_equal(rcoll_context_size(ctx), 1);
    assert_int_equal(rcoll_context_local_size(ctx), 1);
    assert_int_equal(rcoll_comm_rank(NULL), -1);
    assert_int_equal(rcoll_comm_size(NULL), -1);
    assert_int_equal(rcoll_progress(ctx), RCOLL_OK);
    assert_int_equal(rcoll_progress(NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_finalize(NULL), RCOLL_OK);
}

/* Buffers whose contents must survive a rejected call. */
#define N 16
static unsigned char sbuf[N * 8], rbuf[N * 8 * 2];
static unsigned char spat[sizeof(sbuf)], rpat[sizeof(rbuf)];

static void fill_patterns(void)
{
    for (size_t i = 0; i < sizeof(sbuf); i++)
        spat[i] = sbuf[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(rbuf); i++)
        rpat[i] = rbuf[i] = (unsigned char)(i * 13 + 5);
}

static void assert_untouched(void)
{
    assert_memory_equal(sbuf, spat, sizeof(sbuf));
    assert_memory_equal(rbuf, rpat, sizeof(rbuf));
}

/* The call must fail with INVALID_ARG and touch nothing. */
#define EXPECT_INVALID(_call) do {                                   \
        fill_patterns();                                             \
        req = SENTINEL_REQ;                                          \
        rcoll_status_t _st = (_call);                                \
        if (_st != RCOLL_ERR_INVALID_ARG)                            \
            fail_msg("%s returned %s, expected invalid argument",   \
                     #_call, rcoll_strerror(_st));                   \
        assert_untouched();                                          \
        assert_ptr_equal(req, SENTINEL_REQ);                         \
    } while (0)

static const rcoll_datatype_t BAD_DT1 = RCOLL_DATATYPE_LAST, BAD_DT2 = (rcoll_datatype_t)-1;
static const rcoll_op_t BAD_OP1 = RCOLL_OP_LAST, BAD_OP2 = (rcoll_op_t)-1;

static void test_validate_allreduce(void **state)
{
    (void)state;
    rcoll_request_t *req;
    EXPECT_INVALID(rcoll_allreduce(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, NULL, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(RCOLL_IN_PLACE, NULL, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, BAD_DT1, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, BAD_DT2, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, RCOLL_INT32, BAD_OP1, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, RCOLL_INT32, BAD_OP2, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, NULL));
    static const rcoll_datatype_t floats[] = {RCOLL_FLOAT16, RCOLL_BFLOAT16, RCOLL_FLOAT32,
                                              RCOLL_FLOAT64};
    static const rcoll_op_t bitwise[] = {RCOLL_BAND, RCOLL_BOR, RCOLL_BXOR};
    for (int f = 0; f < 4; f++)
        for (int b = 0; b < 3; b++) {
            EXPECT_INVALID(rcoll_allreduce(sbuf, rbuf, N, floats[f], bitwise[b], world));
            EXPECT_INVALID(rcoll_iallreduce(sbuf, rbuf, N, floats[f], bitwise[b], world, &req));
            EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, floats[f], bitwise[b], 0, world));
            EXPECT_INVALID(rcoll_reduce_scatter(sbuf, rbuf, N, floats[f], bitwise[b], world));
        }
    EXPECT_INVALID(rcoll_iallreduce(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, world, &req));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, NULL, N, RCOLL_INT32, RCOLL_SUM, world, &req));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, rbuf, N, BAD_DT1, RCOLL_SUM, world, &req));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, rbuf, N, RCOLL_INT32, BAD_OP1, world, &req));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, NULL, &req));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, world, NULL));
}

static void test_validate_bcast_barrier(void **state)
{
    (void)state;
    rcoll_request_t *req;
    EXPECT_INVALID(rcoll_bcast(NULL, N, RCOLL_INT32, 0, world));
    EXPECT_INVALID(rcoll_bcast(rbuf, N, RCOLL_INT32, -1, world));
    EXPECT_INVALID(rcoll_bcast(rbuf, N, RCOLL_INT32, 1, world));
    EXPECT_INVALID(rcoll_bcast(rbuf, N, BAD_DT1, 0, world));
    EXPECT_INVALID(rcoll_bcast(rbuf, N, BAD_DT2, 0, world));
    EXPECT_INVALID(rcoll_bcast(rbuf, N, RCOLL_INT32, 0, NULL));
    EXPECT_INVALID(rcoll_ibcast(NULL, N, RCOLL_INT32, 0, world, &req));
    EXPECT_INVALID(rcoll_ibcast(rbuf, N, RCOLL_INT32, 1, world, &req));
    EXPECT_INVALID(rcoll_ibcast(rbuf, N, RCOLL_INT32, -1, world, &req));
    EXPECT_INVALID(rcoll_ibcast(rbuf, N, BAD_DT1, 0, world, &req));
    EXPECT_INVALID(rcoll_ibcast(rbuf, N, RCOLL_INT32, 0, NULL, &req));
    EXPECT_INVALID(rcoll_ibcast(rbuf, N, RCOLL_INT32, 0, world, NULL));
    EXPECT_INVALID(rcoll_barrier(NULL));
    EXPECT_INVALID(rcoll_ibarrier(NULL, &req));
    EXPECT_INVALID(rcoll_ibarrier(world, NULL));
}

static void test_validate_reduce(void **state)
{
    (void)state;
    rcoll_request_t *req;
    EXPECT_INVALID(rcoll_reduce(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, NULL, N, RCOLL_INT32, RCOLL_SUM, 0, world));  /* at root */
    EXPECT_INVALID(rcoll_reduce(RCOLL_IN_PLACE, NULL, N, RCOLL_INT32, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, -1, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, 1, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, BAD_DT1, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, BAD_DT2, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, RCOLL_INT32, BAD_OP1, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, RCOLL_INT32, BAD_OP2, 0, world));
    EXPECT_INVALID(rcoll_reduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, 0, NULL));
    EXPECT_INVALID(rcoll_ireduce(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, 0, world, &req));
    EXPECT_INVALID(rcoll_ireduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, 1, world, &req));
    EXPECT_INVALID(rcoll_ireduce(sbuf, rbuf, N, RCOLL_FLOAT32, RCOLL_BAND, 0, world, &req));
    EXPECT_INVALID(rcoll_ireduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, 0, NULL, &req));
    EXPECT_INVALID(rcoll_ireduce(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, 0, world, NULL));
}

static void test_validate_allgather_reduce_scatter(void **state)
{
    (void)state;
    rcoll_request_t *req;
    EXPECT_INVALID(rcoll_allgather(NULL, rbuf, N, RCOLL_INT32, world));
    EXPECT_INVALID(rcoll_allgather(sbuf, NULL, N, RCOLL_INT32, world));
    EXPECT_INVALID(rcoll_allgather(RCOLL_IN_PLACE, NULL, N, RCOLL_INT32, world));
    EXPECT_INVALID(rcoll_allgather(sbuf, rbuf, N, BAD_DT1, world));
    EXPECT_INVALID(rcoll_allgather(sbuf, rbuf, N, BAD_DT2, world));
    EXPECT_INVALID(rcoll_allgather(sbuf, rbuf, N, RCOLL_INT32, NULL));
    EXPECT_INVALID(rcoll_iallgather(NULL, rbuf, N, RCOLL_INT32, world, &req));
    EXPECT_INVALID(rcoll_iallgather(sbuf, rbuf, N, BAD_DT1, world, &req));
    EXPECT_INVALID(rcoll_iallgather(sbuf, rbuf, N, RCOLL_INT32, NULL, &req));
    EXPECT_INVALID(rcoll_iallgather(sbuf, rbuf, N, RCOLL_INT32, world, NULL));
    EXPECT_INVALID(rcoll_reduce_scatter(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, NULL, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_reduce_scatter(RCOLL_IN_PLACE, NULL, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, rbuf, N, BAD_DT1, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, rbuf, N, RCOLL_INT32, BAD_OP1, world));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, rbuf, N, RCOLL_INT32, BAD_OP2, world));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, NULL));
    EXPECT_INVALID(rcoll_ireduce_scatter(NULL, rbuf, N, RCOLL_INT32, RCOLL_SUM, world, &req));
    EXPECT_INVALID(rcoll_ireduce_scatter(sbuf, rbuf, N, RCOLL_FLOAT64, RCOLL_BXOR, world, &req));
    EXPECT_INVALID(rcoll_ireduce_scatter(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, NULL, &req));
    EXPECT_INVALID(rcoll_ireduce_scatter(sbuf, rbuf, N, RCOLL_INT32, RCOLL_SUM, world, NULL));
}

/* RCOLL_IN_PLACE is only a send buffer: as a receive buffer or as bcast's
 * buffer it is refused (issue 12: it was taken as address 0x1). */
static void test_validate_in_place(void **state)
{
    (void)state;
    rcoll_request_t *req;
    void *IP = (void *)RCOLL_IN_PLACE;
    EXPECT_INVALID(rcoll_allreduce(sbuf, IP, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_allreduce(RCOLL_IN_PLACE, IP, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_iallreduce(sbuf, IP, N, RCOLL_INT32, RCOLL_SUM, world, &req));
    EXPECT_INVALID(rcoll_bcast(IP, N, RCOLL_INT32, 0, world));
    EXPECT_INVALID(rcoll_ibcast(IP, N, RCOLL_INT32, 0, world, &req));
    EXPECT_INVALID(rcoll_reduce(sbuf, IP, N, RCOLL_INT32, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_reduce(RCOLL_IN_PLACE, IP, N, RCOLL_INT32, RCOLL_SUM, 0, world));
    EXPECT_INVALID(rcoll_allgather(sbuf, IP, N, RCOLL_INT32, world));
    EXPECT_INVALID(rcoll_allgather(RCOLL_IN_PLACE, IP, N, RCOLL_INT32, world));
    EXPECT_INVALID(rcoll_iallgather(sbuf, IP, N, RCOLL_INT32, world, &req));
    EXPECT_INVALID(rcoll_reduce_scatter(sbuf, IP, N, RCOLL_INT32, RCOLL_SUM, world));
    EXPECT_INVALID(rcoll_ireduce_scatter(RCOLL_IN_PLACE, IP, N, RCOLL_INT32, RCOLL_SUM, world, &req));
    /* count 0 as well: the buffer is never meaningful */
    EXPECT_INVALID(rcoll_bcast(IP, 0, RCOLL_INT32, 0, world));
    EXPECT_INVALID(rcoll_allreduce(sbuf, IP, 0, RCOLL_INT32, RCOLL_SUM, world));
    /* where it is allowed it still works */
    fill_patterns();
    assert_int_equal(rcoll_allreduce(RCOLL_IN_PLACE, rbuf, N, RCOLL_INT32, RCOLL_SUM, world), RCOLL_OK);
    assert_memory_equal(rbuf, rpat, N * 4);
}

static void test_validate_requests_and_comms(void **state)
{
    (void)state;
    int done = 7;
    assert_int_equal(rcoll_wait(NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_test(NULL, &done), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(done, 7);
    rcoll_request_t *req = NULL;
    assert_int_equal(rcoll_ibarrier(world, &req), RCOLL_OK);
    assert_non_null(req);
    assert_int_equal(rcoll_test(req, NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_wait(req), RCOLL_OK);

    rcoll_comm_t *nc = SENTINEL_COMM;
    assert_int_equal(rcoll_comm_split(NULL, 0, 0, &nc), RCOLL_ERR_INVALID_ARG);
    assert_ptr_equal(nc, SENTINEL_COMM);
    assert_int_equal(rcoll_comm_split(world, 0, 0, NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_dup(NULL, &nc), RCOLL_ERR_INVALID_ARG);
    assert_ptr_equal(nc, SENTINEL_COMM);
    assert_int_equal(rcoll_comm_dup(world, NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_free(NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_free(world), RCOLL_ERR_INVALID_ARG);   /* owned by the context */
    assert_int_equal(rcoll_comm_size(world), 1);                        /* and still usable */
    assert_int_equal(rcoll_barrier(world), RCOLL_OK);
}

/* A request is gone once waited (or tested done): using its handle again
 * is refused with INVALID_ARG, and the requests made after it stay
 * distinct (issue 12: a second wait put the request on the free list
 * twice, so two later requests became one object). */
static void test_request_reuse(void **state)
{
    (void)state;
    int done = 7;
    rcoll_request_t *req = NULL, *r2 = NULL, *r3 = NULL;
    assert_int_equal(rcoll_ibarrier(world, &req), RCOLL_OK);
    assert_int_equal(rcoll_wait(req), RCOLL_OK);
    assert_int_equal(rcoll_wait(req), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_test(req, &done), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(done, 7);
    /* the next two requests are two objects, each completing once */
    int32_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, ra[4] = {0}, rb[4] = {0};
    assert_int_equal(rcoll_iallreduce(a, ra, 4, RCOLL_INT32, RCOLL_SUM, world, &r2), RCOLL_OK);
    assert_int_equal(rcoll_iallreduce(b, rb, 4, RCOLL_INT32, RCOLL_SUM, world, &r3), RCOLL_OK);
    assert_true(r2 != r3);
    assert_true(r2 != req && r3 != req);
    assert_int_equal(rcoll_wait(req), RCOLL_ERR_INVALID_ARG);   /* stale, not r2 or r3 */
    assert_int_equal(rcoll_test(r3, &done), RCOLL_OK);
    assert_int_equal(done, 1);
    assert_int_equal(rcoll_test(r3, &done), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_wait(r3), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_wait(r2), RCOLL_OK);
    assert_int_equal(rcoll_wait(r2), RCOLL_ERR_INVALID_ARG);
    assert_memory_equal(ra, a, sizeof(a));
    assert_memory_equal(rb, b, sizeof(b));
    /* many reuses of the same storage later, the first handle is still stale */
    for (int i = 0; i < 100; i++) {
        rcoll_request_t *r = NULL;
        assert_int_equal(rcoll_ibarrier(world, &r), RCOLL_OK);
        assert_true(r != req);
        assert_int_equal(rcoll_wait(r), RCOLL_OK);
    }
    assert_int_equal(rcoll_wait(req), RCOLL_ERR_INVALID_ARG);
    /* and the context still works */
    assert_int_equal(rcoll_barrier(world), RCOLL_OK);
}

/* rcoll_finalize with a request not yet completed by wait/test refuses,
 * and leaves the context whole: the request can still be waited for, the
 * context used and then finalized (issue 12: it was destroyed anyway). */
static int child_finalize_active(void)
{
    unset_launch_env();
    rcoll_context_t *c = NULL;
    CHILD_EXPECT(rcoll_init(NULL, &c) == RCOLL_OK, 10);
    rcoll_comm_t *w = rcoll_comm_world(c), *d = NULL;
    rcoll_request_t *req = NULL, *req2 = NULL;
    CHILD_EXPECT(rcoll_ibarrier(w, &req) == RCOLL_OK, 11);
    CHILD_EXPECT(rcoll_finalize(c) == RCOLL_ERR_NOT_FINALIZED, 12);
    CHILD_EXPECT(rcoll_context_size(c) == 1, 13);
    CHILD_EXPECT(rcoll_wait(req) == RCOLL_OK, 14);
    /* a request on another communicator counts as well */
    CHILD_EXPECT(rcoll_comm_dup(w, &d) == RCOLL_OK, 15);
    int32_t x = 3, y = 0;
    CHILD_EXPECT(rcoll_iallreduce(&x, &y, 1, RCOLL_INT32, RCOLL_SUM, d, &req2) == RCOLL_OK, 16);
    CHILD_EXPECT(rcoll_finalize(c) == RCOLL_ERR_NOT_FINALIZED, 17);
    CHILD_EXPECT(rcoll_wait(req2) == RCOLL_OK && y == 3, 18);
    CHILD_EXPECT(rcoll_comm_free(d) == RCOLL_OK, 19);
    CHILD_EXPECT(rcoll_barrier(w) == RCOLL_OK, 20);
    CHILD_EXPECT(rcoll_finalize(c) == RCOLL_OK, 21);
    return 0;
}

static void test_finalize_active(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_finalize_active), 0);
}

static void test_config_set(void **state)
{
    (void)state;
    const char *names[64];
    int n = rcoll_algorithms("allreduce", names, 64);
    assert_true(n >= 1);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", names[n - 1]), RCOLL_OK);
    assert_string_equal(rcoll_config_get(ctx, "RCOLL_ALLREDUCE_ALGORITHM"), names[n - 1]);
    assert_int_equal(rcoll_config_set(ctx, "ALLREDUCE_ALGORITHM", names[0]), RCOLL_OK);
    assert_string_equal(rcoll_config_get(ctx, "RCOLL_ALLREDUCE_ALGORITHM"), names[0]);
    /* an algorithm of another collective, or none at all */
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", "no_such_algorithm"),
                     RCOLL_ERR_INVALID_ARG);
    assert_string_equal(rcoll_config_get(ctx, "RCOLL_ALLREDUCE_ALGORITHM"), names[0]);
    const char *bnames[16];
    int nb = rcoll_algorithms("barrier", bnames, 16);
    assert_true(nb >= 1);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", bnames[0]),
                     RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", ""), RCOLL_OK);
    assert_string_equal(rcoll_config_get(ctx, "RCOLL_ALLREDUCE_ALGORITHM"), "");

    assert_int_equal(rcoll_config_set(ctx, "RCOLL_NO_SUCH_SETTING", "1"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(ctx, "", "1"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(NULL, "RCOLL_TIMEOUT", "5"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(ctx, NULL, "5"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_TIMEOUT", NULL), RCOLL_ERR_INVALID_ARG);

    assert_int_equal(rcoll_config_set(ctx, "RCOLL_TIMEOUT", "45"), RCOLL_OK);
    assert_true(atof(rcoll_config_get(ctx, "RCOLL_TIMEOUT")) == 45.0);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_TIMEOUT", "soon"), RCOLL_ERR_INVALID_ARG);
    assert_true(atof(rcoll_config_get(ctx, "RCOLL_TIMEOUT")) == 45.0);   /* unchanged */
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_LOG_LEVEL", "loud"), RCOLL_ERR_INVALID_ARG);
    /* outside the range: refused, the old value kept */
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_TIMEOUT", "3e9"), RCOLL_ERR_INVALID_ARG);
    assert_true(atof(rcoll_config_get(ctx, "RCOLL_TIMEOUT")) == 45.0);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_SEGMENT_SIZE", "0"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_SEGMENT_SIZE", "16g"), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(strtoull(rcoll_config_get(ctx, "RCOLL_SEGMENT_SIZE"), NULL, 10), 65536);
    /* set once at init: changing it later is not supported */
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_TRANSPORT", "ucx"), RCOLL_ERR_NOT_SUPPORTED);
    assert_int_equal(rcoll_config_set(ctx, "RCOLL_EAGER_LIMIT", "4096"), RCOLL_ERR_NOT_SUPPORTED);
}

/* count 0 returns at once and touches nothing, even with NULL buffers */
static void test_count_zero(void **state)
{
    (void)state;
    rcoll_request_t *req = NULL;
    int done = 0;
    fill_patterns();
    assert_int_equal(rcoll_allreduce(sbuf, rbuf, 0, RCOLL_INT32, RCOLL_SUM, world), RCOLL_OK);
    assert_int_equal(rcoll_bcast(rbuf, 0, RCOLL_INT32, 0, world), RCOLL_OK);
    assert_int_equal(rcoll_reduce(sbuf, rbuf, 0, RCOLL_INT32, RCOLL_SUM, 0, world), RCOLL_OK);
    assert_int_equal(rcoll_allgather(sbuf, rbuf, 0, RCOLL_INT32, world), RCOLL_OK);
    assert_int_equal(rcoll_reduce_scatter(sbuf, rbuf, 0, RCOLL_INT32, RCOLL_SUM, world), RCOLL_OK);
    assert_untouched();
    assert_int_equal(rcoll_allreduce(NULL, NULL, 0, RCOLL_INT32, RCOLL_SUM, world), RCOLL_OK);
    assert_int_equal(rcoll_bcast(NULL, 0, RCOLL_INT32, 0, world), RCOLL_OK);
    assert_int_equal(rcoll_reduce(NULL, NULL, 0, RCOLL_INT32, RCOLL_SUM, 0, world), RCOLL_OK);
    assert_int_equal(rcoll_allgather(NULL, NULL, 0, RCOLL_INT32, world), RCOLL_OK);
    assert_int_equal(rcoll_reduce_scatter(NULL, NULL, 0, RCOLL_INT32, RCOLL_SUM, world), RCOLL_OK);
    assert_int_equal(rcoll_iallreduce(NULL, NULL, 0, RCOLL_INT32, RCOLL_SUM, world, &req), RCOLL_OK);
    assert_non_null(req);
    assert_int_equal(rcoll_test(req, &done), RCOLL_OK);
    assert_int_equal(done, 1);
    req = NULL;
    assert_int_equal(rcoll_ibcast(rbuf, 0, RCOLL_INT32, 0, world, &req), RCOLL_OK);
    assert_non_null(req);
    assert_int_equal(rcoll_wait(req), RCOLL_OK);
    req = NULL;
    assert_int_equal(rcoll_ireduce_scatter(sbuf, rbuf, 0, RCOLL_INT8, RCOLL_BXOR, world, &req),
                     RCOLL_OK);
    assert_int_equal(rcoll_wait(req), RCOLL_OK);
    assert_untouched();
}

/* With one rank every collective is a local copy; in place, nothing moves. */
static void check_copies(rcoll_comm_t *comm, rcoll_datatype_t dt, rcoll_op_t op, int nb)
{
    size_t bytes = N * rcoll_datatype_size(dt);
    rcoll_request_t *req;
#define RUN(_blocking, _nonblocking) do {                                  \
        if (nb) {                                                          \
            req = NULL;                                                    \
            assert_int_equal((_nonblocking), RCOLL_OK);                    \
            assert_non_null(req);                                          \
            assert_int_equal(rcoll_wait(req), RCOLL_OK);                   \
        } else {                                                           \
            assert_int_equal((_blocking), RCOLL_OK);                       \
        }                                                                  \
    } while (0)
    /* not in place: recvbuf[0..bytes) = sendbuf, the rest untouched, sendbuf intact */
    fill_patterns();
    RUN(rcoll_allreduce(sbuf, rbuf, N, dt, op, comm),
        rcoll_iallreduce(sbuf, rbuf, N, dt, op, comm, &req));
    assert_memory_equal(rbuf, spat, bytes);
    assert_memory_equal(rbuf + bytes, rpat + bytes, sizeof(rbuf) - bytes);
    assert_memory_equal(sbuf, spat, sizeof(sbuf));
    fill_patterns();
    RUN(rcoll_reduce(sbuf, rbuf, N, dt, op, 0, comm),
        rcoll_ireduce(sbuf, rbuf, N, dt, op, 0, comm, &req));
    assert_memory_equal(rbuf, spat, bytes);
    assert_memory_equal(rbuf + bytes, rpat + bytes, sizeof(rbuf) - bytes);
    fill_patterns();
    RUN(rcoll_reduce_scatter(sbuf, rbuf, N, dt, op, comm),
        rcoll_ireduce_scatter(sbuf, rbuf, N, dt, op, comm, &req));
    assert_memory_equal(rbuf, spat, bytes);
    assert_memory_equal(rbuf + bytes, rpat + bytes, sizeof(rbuf) - bytes);
    fill_patterns();
    RUN(rcoll_allgather(sbuf, rbuf, N, dt, comm),
        rcoll_iallgather(sbuf, rbuf, N, dt, comm, &req));
    assert_memory_equal(rbuf, spat, bytes);
    assert_memory_equal(rbuf + bytes, rpat + bytes, sizeof(rbuf) - bytes);
    assert_memory_equal(sbuf, spat, sizeof(sbuf));
    /* in place and bcast: nothing changes */
    fill_patterns();
    RUN(rcoll_allreduce(RCOLL_IN_PLACE, rbuf, N, dt, op, comm),
        rcoll_iallreduce(RCOLL_IN_PLACE, rbuf, N, dt, op, comm, &req));
    RUN(rcoll_reduce(RCOLL_IN_PLACE, rbuf, N, dt, op, 0, comm),
        rcoll_ireduce(RCOLL_IN_PLACE, rbuf, N, dt, op, 0, comm, &req));
    RUN(rcoll_reduce_scatter(RCOLL_IN_PLACE, rbuf, N, dt, op, comm),
        rcoll_ireduce_scatter(RCOLL_IN_PLACE, rbuf, N, dt, op, comm, &req));
    RUN(rcoll_allgather(RCOLL_IN_PLACE, rbuf, N, dt, comm),
        rcoll_iallgather(RCOLL_IN_PLACE, rbuf, N, dt, comm, &req));
    RUN(rcoll_bcast(rbuf, N, dt, 0, comm), rcoll_ibcast(rbuf, N, dt, 0, comm, &req));
    RUN(rcoll_barrier(comm), rcoll_ibarrier(comm, &req));
    assert_untouched();
#undef RUN
}

static void test_singleton_copies(void **state)
{
    (void)state;
    for (int d = 0; d < RCOLL_DATATYPE_LAST; d++)
        for (int o = 0; o < RCOLL_OP_LAST; o++) {
            int is_float = d >= RCOLL_FLOAT16;
            if (is_float && o >= RCOLL_BAND)
                continue;
            check_copies(world, (rcoll_datatype_t)d, (rcoll_op_t)o, (d + o) % 2);
        }
}

static void test_singleton_comms(void **state)
{
    (void)state;
    rcoll_comm_t *c = NULL, *d = NULL, *u = SENTINEL_COMM;
    assert_int_equal(rcoll_comm_split(world, 3, 9, &c), RCOLL_OK);
    assert_non_null(c);
    assert_true(c != world);
    assert_int_equal(rcoll_comm_size(c), 1);
    assert_int_equal(rcoll_comm_rank(c), 0);
    assert_int_equal(rcoll_comm_split(world, -1, 0, &u), RCOLL_OK);
    assert_null(u);
    assert_int_equal(rcoll_comm_dup(c, &d), RCOLL_OK);
    assert_non_null(d);
    assert_true(d != c);
    assert_int_equal(rcoll_comm_size(d), 1);
    check_copies(c, RCOLL_FLOAT32, RCOLL_SUM, 0);
    check_copies(d, RCOLL_UINT16, RCOLL_BXOR, 1);
    /* a root valid in world terms is checked against this communicator */
    rcoll_request_t *req;
    EXPECT_INVALID(rcoll_bcast(rbuf, N, RCOLL_INT32, 1, d));
    assert_int_equal(rcoll_comm_free(d), RCOLL_OK);
    assert_int_equal(rcoll_comm_free(c), RCOLL_OK);
    /* freeing a communicator with a request not yet waited for is refused */
    assert_int_equal(rcoll_comm_dup(world, &d), RCOLL_OK);
    req = NULL;
    assert_int_equal(rcoll_ibarrier(d, &req), RCOLL_OK);
    assert_int_equal(rcoll_comm_free(d), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_wait(req), RCOLL_OK);
    assert_int_equal(rcoll_comm_free(d), RCOLL_OK);
}

int main(void)
{
    const struct CMUnitTest standalone[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_datatypes_and_ops),
        cmocka_unit_test(test_algorithms),
        cmocka_unit_test(test_init_bad_config),
        cmocka_unit_test(test_init_range_edges),
        cmocka_unit_test(test_init_config_precedence),
        cmocka_unit_test(test_launch_without_pmix),
        cmocka_unit_test(test_finalize_active),
    };
    const struct CMUnitTest with_ctx[] = {
        cmocka_unit_test(test_singleton_identity),
        cmocka_unit_test(test_validate_allreduce),
        cmocka_unit_test(test_validate_bcast_barrier),
        cmocka_unit_test(test_validate_reduce),
        cmocka_unit_test(test_validate_allgather_reduce_scatter),
        cmocka_unit_test(test_validate_in_place),
        cmocka_unit_test(test_validate_requests_and_comms),
        cmocka_unit_test(test_request_reuse),
        cmocka_unit_test(test_config_set),
        cmocka_unit_test(test_count_zero),
        cmocka_unit_test(test_singleton_copies),
        cmocka_unit_test(test_fault_finalize),
        cmocka_unit_test(test_singleton_comms),
    };
    /* validation failures are logged at error level: keep the output short */
    if (getenv("RCOLL_LOG_LEVEL") == NULL)
        setenv("RCOLL_LOG_LEVEL", "error", 1);
    int failed = cmocka_run_group_tests_name("api (no context)", standalone, NULL, NULL);
    failed += cmocka_run_group_tests_name("api (singleton context)", with_ctx, setup_ctx,
                                          teardown_ctx);
    return failed ? 1 : 0;
}
