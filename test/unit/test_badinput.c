/*
 * test_badinput.c - bad input on several ranks never corrupts (issue 12,
 * item 3): ranks are threads in one process, each with its own context made
 * by rcoll_init_oob over an in-process all-gather and the loop transport.
 *
 *  - settings that must be equal on every rank (RCOLL_SEGMENT_SIZE,
 *    RCOLL_SHM, an algorithm choice, the tune file's contents) fail init on
 *    every rank with INVALID_ARG, and the log names the setting;
 *  - rcoll_finalize with a collective still in flight returns
 *    NOT_FINALIZED and leaves the context usable;
 *  - ranks calling different collectives, counts, datatypes, ops or roots
 *    never get success with wrong data, on the shm path (slot signature)
 *    and over messages (wire header signature), and the odd rank fails.
 *
 * Each test runs in a child process with an alarm, so a hang fails the
 * test instead of the run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rcoll.h"

#define MAX_RANKS 8

/* ---- ranks as threads ---- */

typedef struct {
    pthread_barrier_t bar;
    int               n;
    unsigned char    *buf;
    size_t            cap;
} world_t;

typedef struct rank rank_t;
struct rank {
    world_t          *w;
    int               rank;
    const char *const *config;       /* this rank's rcoll_init_oob config */
    int             (*body)(rank_t *r, rcoll_context_t *ctx);   /* after a successful init */
    rcoll_status_t    init_status;
    int               result;        /* 0: body passed */
};

static int thread_allgather(const void *in, void *out, size_t len, void *arg)
{
    rank_t *r = arg;
    world_t *w = r->w;
    pthread_barrier_wait(&w->bar);
    if (r->rank == 0 && w->cap < (size_t)w->n * len) {
        free(w->buf);
        w->cap = (size_t)w->n * len;
        w->buf = malloc(w->cap);
    }
    pthread_barrier_wait(&w->bar);
    memcpy(w->buf + (size_t)r->rank * len, in, len);
    pthread_barrier_wait(&w->bar);
    memcpy(out, w->buf, (size_t)w->n * len);
    pthread_barrier_wait(&w->bar);
    return 0;
}

/* 0: a failing rcoll_finalize is not a failure (after a mismatch its
 * barrier may time out on the ranks that were left waiting). */
static int check_finalize = 1;

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    rcoll_oob_t oob = { .rank = r->rank, .size = r->w->n, .allgather = thread_allgather, .arg = r,
                        .node = "node0" };
    rcoll_context_t *ctx = NULL;
    r->init_status = rcoll_init_oob(&oob, r->config, &ctx);
    if (r->init_status == RCOLL_OK) {
        r->result = r->body ? r->body(r, ctx) : 0;
        rcoll_status_t st = rcoll_finalize(ctx);
        if (st != RCOLL_OK && check_finalize) {
            fprintf(stderr, "rank %d: rcoll_finalize: %s\n", r->rank, rcoll_strerror(st));
            r->result = 1;
        }
    }
    return NULL;
}

/* n ranks, rank i with configs[i]; fills st[i] (init status) and res[i]. */
static void run_ranks(int n, const char *const *const *configs,
                      int (*body)(rank_t *, rcoll_context_t *), rcoll_status_t *st, int *res)
{
    world_t w = { .n = n };
    rank_t r[MAX_RANKS];
    pthread_t tid[MAX_RANKS];
    pthread_barrier_init(&w.bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        r[i] = (rank_t){ .w = &w, .rank = i, .config = configs[i], .body = body };
        pthread_create(&tid[i], NULL, rank_main, &r[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        st[i] = r[i].init_status;
        res[i] = r[i].result;
    }
    pthread_barrier_destroy(&w.bar);
    free(w.buf);
}

/* Run fn in a child with an alarm; its exit status (100 + signal if killed). */
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
    return WIFSIGNALED(status) ? 100 + WTERMSIG(status) : WEXITSTATUS(status);
}

#define CHILD_EXPECT(_cond, _code) do { if (!(_cond)) { \
    fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #_cond); return (_code); } } while (0)

/* stderr into a temporary file while capturing; the text afterwards. */
static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void)
{
    char path[] = "/tmp/rcoll_test_badinput_XXXXXX";
    cap_fd = mkstemp(path);
    unlink(path);
    fflush(stderr);
    cap_saved = dup(2);
    dup2(cap_fd, 2);
}

static const char *capture_end(void)
{
    static char text[16384];
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    ssize_t n = pread(cap_fd, text, sizeof(text) - 1, 0);
    close(cap_fd);
    text[n > 0 ? n : 0] = '\0';
    fputs(text, stderr);       /* still shown */
    return text;
}

/* ---- settings that must match ---- */

static int body_allreduce(rank_t *r, rcoll_context_t *ctx)
{
    int32_t x = r->rank + 1, y = 0;
    rcoll_status_t st = rcoll_allreduce(&x, &y, 1, RCOLL_INT32, RCOLL_SUM, rcoll_comm_world(ctx));
    int n = r->w->n;
    return st != RCOLL_OK || y != n * (n + 1) / 2;
}

/* Three ranks; rank 2 gets `odd` on top of the common settings.  Every rank
 * must fail init with INVALID_ARG and the log must name `name`. */
static int expect_mismatch(const char *odd, const char *name)
{
    static const char *const common[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", NULL };
    const char *const odd_cfg[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", odd, NULL };
    const char *const *configs[3] = { common, common, odd_cfg };
    rcoll_status_t st[3];
    int res[3];
    capture_begin();
    run_ranks(3, configs, body_allreduce, st, res);
    const char *log = capture_end();
    for (int i = 0; i < 3; i++) {
        if (st[i] != RCOLL_ERR_INVALID_ARG) {
            fprintf(stderr, "%s on rank 2: rank %d's init returned %s, expected invalid argument\n",
                    odd, i, rcoll_strerror(st[i]));
            return 10 + i;
        }
    }
    if (strstr(log, name) == NULL) {
        fprintf(stderr, "%s on rank 2: no log line names %s\n", odd, name);
        return 20;
    }
    return 0;
}

static char tune_a[64], tune_b[64];

static void write_file(char *path, const char *text)
{
    strcpy(path, "/tmp/rcoll_tune_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int child_settings_mismatch(void)
{
    int rc;
    /* the control: equal settings, init and a collective work */
    static const char *const common[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", NULL };
    const char *const *same[3] = { common, common, common };
    rcoll_status_t st[3];
    int res[3];
    run_ranks(3, same, body_allreduce, st, res);
    for (int i = 0; i < 3; i++) {
        CHILD_EXPECT(st[i] == RCOLL_OK && res[i] == 0, 1);
    }
    if ((rc = expect_mismatch("RCOLL_SEGMENT_SIZE=32768", "RCOLL_SEGMENT_SIZE")) != 0) return rc;
    if ((rc = expect_mismatch("RCOLL_SHM=0", "RCOLL_SHM")) != 0) return 30 + rc;
    if ((rc = expect_mismatch("RCOLL_EAGER_LIMIT=4096", "RCOLL_EAGER_LIMIT")) != 0) return 60 + rc;
    if ((rc = expect_mismatch("RCOLL_BCAST_ALGORITHM=binomial", "RCOLL_BCAST_ALGORITHM")) != 0)
        return 90 + rc;
    /* tune files: the same name is not enough, the contents must be equal */
    static char a[96], b[96];
    snprintf(a, sizeof(a), "RCOLL_TUNE_FILE=%s", tune_a);
    snprintf(b, sizeof(b), "RCOLL_TUNE_FILE=%s", tune_b);
    const char *const cfg_a[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", a, NULL };
    const char *const cfg_b[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", b, NULL };
    const char *const *tuned[3] = { cfg_a, cfg_a, cfg_b };
    capture_begin();
    run_ranks(3, tuned, body_allreduce, st, res);
    const char *log = capture_end();
    for (int i = 0; i < 3; i++) {
        CHILD_EXPECT(st[i] == RCOLL_ERR_INVALID_ARG, 120 + i);
    }
    CHILD_EXPECT(strstr(log, "RCOLL_TUNE_FILE") != NULL, 125);
    return 0;
}

static void test_settings_mismatch(void **state)
{
    (void)state;
    write_file(tune_a, "allreduce 0-1k ring\n");
    write_file(tune_b, "allreduce 0-1k recursive_doubling\n");
    int rc = in_child(child_settings_mismatch);
    unlink(tune_a);
    unlink(tune_b);
    assert_int_equal(rc, 0);
}

/* ---- finalize while a collective is in flight ---- */

static pthread_barrier_t fin_bar;

/* Rank 0 posts an allreduce that cannot finish before rank 1 joins, calls
 * finalize (refused, context intact), then lets rank 1 join and waits. */
static int body_finalize_in_flight(rank_t *r, rcoll_context_t *ctx)
{
    rcoll_comm_t *w = rcoll_comm_world(ctx);
    int64_t x[64], y[64];
    for (int i = 0; i < 64; i++)
        x[i] = r->rank + i;
    if (r->rank == 0) {
        rcoll_request_t *req = NULL;
        if (rcoll_iallreduce(x, y, 64, RCOLL_INT64, RCOLL_SUM, w, &req) != RCOLL_OK)
            return 1;
        rcoll_status_t st = rcoll_finalize(ctx);
        pthread_barrier_wait(&fin_bar);          /* now rank 1 joins */
        if (st != RCOLL_ERR_NOT_FINALIZED) {
            fprintf(stderr, "finalize with a collective in flight returned %s\n", rcoll_strerror(st));
            rcoll_wait(req);
            return 2;
        }
        if (rcoll_wait(req) != RCOLL_OK)
            return 3;
    } else {
        pthread_barrier_wait(&fin_bar);
        if (rcoll_allreduce(x, y, 64, RCOLL_INT64, RCOLL_SUM, w) != RCOLL_OK)
            return 4;
    }
    for (int i = 0; i < 64; i++)
        if (y[i] != 1 + 2 * i)
            return 5;
    /* the context is still whole: another collective works */
    return rcoll_barrier(w) != RCOLL_OK ? 6 : 0;
}

static int child_finalize_in_flight(void)
{
    static const char *const cfg[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=20", NULL };
    const char *const *configs[2] = { cfg, cfg };
    rcoll_status_t st[2];
    int res[2];
    pthread_barrier_init(&fin_bar, NULL, 2);
    run_ranks(2, configs, body_finalize_in_flight, st, res);
    for (int i = 0; i < 2; i++) {
        CHILD_EXPECT(st[i] == RCOLL_OK, 10 + i);
        if (res[i] != 0) {
            fprintf(stderr, "rank %d failed check %d\n", i, res[i]);
            return 20 + i;
        }
    }
    return 0;
}

static void test_finalize_in_flight(void **state)
{
    (void)state;
    assert_int_equal(in_child(child_finalize_in_flight), 0);
}

/* ---- mismatched calls on the shm path ---- */

enum { CALL_BCAST, CALL_ALLGATHER, CALL_ALLREDUCE };

/* What one rank calls. */
typedef struct {
    int              type;
    size_t           count;
    rcoll_datatype_t dtype;
    rcoll_op_t       op;
    int              root;
} call_t;

static const call_t *mm_calls;     /* per rank */
static unsigned      mm_must_fail; /* bit r: rank r must return an error */

static int64_t val(int r, size_t i) { return (int64_t)r * 1000 + (int64_t)i + 1; }

static void put(void *buf, rcoll_datatype_t dt, size_t i, int64_t v)
{
    if (dt == RCOLL_INT64)
        ((int64_t *)buf)[i] = v;
    else
        ((int32_t *)buf)[i] = (int32_t)v;
}

static int64_t get(const void *buf, rcoll_datatype_t dt, size_t i)
{
    return dt == RCOLL_INT64 ? ((const int64_t *)buf)[i] : ((const int32_t *)buf)[i];
}

/* The result this rank's own call implies, had every rank called the same. */
static int64_t expected(const call_t *c, int n, size_t i)
{
    if (c->type == CALL_BCAST)
        return val(c->root, i);
    if (c->type == CALL_ALLGATHER)
        return val((int)(i / c->count), i % c->count);
    if (c->op == RCOLL_MAX)
        return val(n - 1, i);
    int64_t sum = 0;
    for (int q = 0; q < n; q++)
        sum += val(q, i);
    return sum;
}

/* Runs this rank's call.  A success must come with the data its own call
 * implies (stale or foreign bytes fail); a rank in mm_must_fail must
 * return an error; errors must be PROTOCOL or TRUNCATED, or for a rank
 * left waiting TIMEOUT, or PEER_FAILED once a peer that gave up has
 * finalized. */
static int body_mismatch(rank_t *r, rcoll_context_t *ctx)
{
    const call_t *c = &mm_calls[r->rank];
    rcoll_comm_t *w = rcoll_comm_world(ctx);
    int n = r->w->n, me = r->rank;
    /* a matching collective first: on the shm path it sets the segment up
     * (whose set-up messages would catch a mismatch themselves), so that
     * the case exercises the slot words */
    int32_t one = 1, cnt = 0;
    if (rcoll_allreduce(&one, &cnt, 1, RCOLL_INT32, RCOLL_SUM, w) != RCOLL_OK || cnt != n) {
        fprintf(stderr, "rank %d: the matching allreduce before the case failed\n", me);
        return 4;
    }
    int64_t *sbuf = calloc(1024, sizeof(int64_t)), *rbuf = malloc(1024 * 8 * sizeof(int64_t));
    memset(rbuf, 0x5a, 1024 * 8 * sizeof(int64_t));      /* "stale" bytes */
    for (size_t i = 0; i < c->count; i++)
        put(sbuf, c->dtype, i, val(me, i));
    rcoll_status_t st;
    if (c->type == CALL_BCAST) {
        if (me == c->root)
            memcpy(rbuf, sbuf, 1024 * sizeof(int64_t));
        st = rcoll_bcast(rbuf, c->count, c->dtype, c->root, w);
    } else if (c->type == CALL_ALLGATHER) {
        st = rcoll_allgather(sbuf, rbuf, c->count, c->dtype, w);
    } else {
        st = rcoll_allreduce(sbuf, rbuf, c->count, c->dtype, c->op, w);
    }
    int rc = 0;
    size_t total = c->count * (c->type == CALL_ALLGATHER ? (size_t)n : 1);
    for (size_t i = 0; st == RCOLL_OK && i < total && rc == 0; i++) {
        if (get(rbuf, c->dtype, i) != expected(c, n, i)) {
            fprintf(stderr, "rank %d: success with wrong data at element %zu: %lld, expected %lld\n",
                    me, i, (long long)get(rbuf, c->dtype, i), (long long)expected(c, n, i));
            rc = 1;
        }
    }
    if (rc == 0 && (mm_must_fail >> me & 1) && st == RCOLL_OK) {
        fprintf(stderr, "rank %d: success although its call differed from the others'\n", me);
        rc = 2;
    }
    if (rc == 0 && st != RCOLL_OK && st != RCOLL_ERR_PROTOCOL && st != RCOLL_ERR_TRUNCATED &&
        st != RCOLL_ERR_TIMEOUT && st != RCOLL_ERR_PEER_FAILED) {
        fprintf(stderr, "rank %d: unexpected status %s\n", me, rcoll_strerror(st));
        rc = 3;
    }
    free(sbuf);
    free(rbuf);
    return rc;
}

static int mm_p2p;     /* 1: RCOLL_SHM=0 (messages), 0: the shm algorithms forced */

/* Three ranks on one node, each calling calls[r]. */
static int run_mismatch(const char *what, const call_t *calls, unsigned must_fail)
{
    const char *const shm[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=2",
                                "RCOLL_BCAST_ALGORITHM=shm", "RCOLL_ALLGATHER_ALGORITHM=shm",
                                "RCOLL_ALLREDUCE_ALGORITHM=shm", NULL };
    const char *const p2p[] = { "RCOLL_TRANSPORT=loop", "RCOLL_TIMEOUT=2", "RCOLL_SHM=0", NULL };
    const char *const *cfg = mm_p2p ? p2p : shm;
    const char *const *configs[3] = { cfg, cfg, cfg };
    rcoll_status_t st[3];
    int res[3];
    mm_calls = calls;
    mm_must_fail = must_fail;
    check_finalize = 0;
    run_ranks(3, configs, body_mismatch, st, res);
    for (int i = 0; i < 3; i++) {
        if (st[i] != RCOLL_OK || res[i] != 0) {
            fprintf(stderr, "%s: rank %d: init %s, check %d\n", what, i, rcoll_strerror(st[i]), res[i]);
            return 1 + i;
        }
    }
    return 0;
}

#define B(_cnt, _root)       { CALL_BCAST, _cnt, RCOLL_INT32, RCOLL_SUM, _root }
#define G(_cnt)              { CALL_ALLGATHER, _cnt, RCOLL_INT32, RCOLL_SUM, 0 }
#define R(_cnt, _dt, _op)    { CALL_ALLREDUCE, _cnt, _dt, _op, 0 }

#define TRY(_code, _call) do { int _r = (_call); if (_r) return (_code) + _r; } while (0)

static int child_shm_mismatch(void)
{
    /* the control: every rank calls the same */
    static const call_t same[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                    R(16, RCOLL_INT32, RCOLL_SUM) };
    TRY(0, run_mismatch("same calls", same, 0));
    static const call_t bc_count[3] = { B(16, 0), B(16, 0), B(8, 0) };
    TRY(10, run_mismatch("bcast, rank 2 with another count", bc_count, 1u << 2));
    static const call_t bc_big[3] = { B(12, 0), B(12, 0), B(100, 0) };
    TRY(20, run_mismatch("bcast, rank 2 with a larger count", bc_big, 1u << 2));
    static const call_t ag_count[3] = { G(16), G(16), G(4) };
    TRY(30, run_mismatch("allgather, rank 2 with another count", ag_count, 7));
    static const call_t ar_op[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                     R(16, RCOLL_INT32, RCOLL_MAX) };
    TRY(40, run_mismatch("allreduce, rank 2 with another op", ar_op, 7));
    static const call_t ar_dt[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                     R(8, RCOLL_INT64, RCOLL_SUM) };
    TRY(50, run_mismatch("allreduce, rank 2 with another datatype, same bytes", ar_dt, 7));
    static const call_t ar_count[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                        R(4, RCOLL_INT32, RCOLL_SUM) };
    TRY(60, run_mismatch("allreduce, rank 2 with another count", ar_count, 7));
    static const call_t coll[3] = { B(16, 0), B(16, 0), R(16, RCOLL_INT32, RCOLL_SUM) };
    TRY(70, run_mismatch("rank 2 calls allreduce, the others bcast", coll, 1u << 2));
    static const call_t root[3] = { B(16, 0), B(16, 0), B(16, 1) };
    TRY(80, run_mismatch("bcast, rank 2 names another root", root, 0));
    return 0;
}

static void test_shm_mismatch(void **state)
{
    (void)state;
    mm_p2p = 0;
    assert_int_equal(in_child(child_shm_mismatch), 0);
}

/* The same over messages (RCOLL_SHM=0): the signature in the wire header.
 * Only the odd rank is sure to see the mismatch itself (the others may
 * instead wait for a peer that gave up, until RCOLL_TIMEOUT). */
static int child_p2p_mismatch(void)
{
    static const call_t same[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                    R(16, RCOLL_INT32, RCOLL_SUM) };
    TRY(0, run_mismatch("p2p: same calls", same, 0));
    static const call_t bc_count[3] = { B(16, 0), B(16, 0), B(8, 0) };
    TRY(10, run_mismatch("p2p: bcast, rank 2 with another count", bc_count, 1u << 2));
    static const call_t ag_count[3] = { G(16), G(16), G(4) };
    TRY(30, run_mismatch("p2p: allgather, rank 2 with another count", ag_count, 1u << 2));
    static const call_t ar_op[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                     R(16, RCOLL_INT32, RCOLL_MAX) };
    TRY(40, run_mismatch("p2p: allreduce, rank 2 with another op", ar_op, 1u << 2));
    static const call_t ar_dt[3] = { R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM),
                                     R(8, RCOLL_INT64, RCOLL_SUM) };
    TRY(50, run_mismatch("p2p: allreduce, rank 2 with another datatype", ar_dt, 1u << 2));
    static const call_t coll[3] = { B(16, 0), B(16, 0), R(16, RCOLL_INT32, RCOLL_SUM) };
    TRY(70, run_mismatch("p2p: rank 2 calls allreduce, the others bcast", coll, 1u << 2));
    return 0;
}

static void test_p2p_mismatch(void **state)
{
    (void)state;
    mm_p2p = 1;
    assert_int_equal(in_child(child_p2p_mismatch), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_mismatch),
        cmocka_unit_test(test_finalize_in_flight),
        cmocka_unit_test(test_shm_mismatch),
        cmocka_unit_test(test_p2p_mismatch),
    };
    if (getenv("RCOLL_LOG_LEVEL") == NULL)
        setenv("RCOLL_LOG_LEVEL", "error", 1);
    return cmocka_run_group_tests_name("bad input", tests, NULL, NULL) ? 1 : 0;
}
