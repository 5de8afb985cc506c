/*
 * test_p2p.c - the point-to-point layer (src/p2p.c) and the task lifecycle
 * (src/task.c) over the loop transport: 2-4 real contexts in one process.
 *
 * Each context is made by rcoll_init_oob (RCOLL_TRANSPORT=loop) in its own
 * thread over an in-process all-gather; the test thread then drives all of
 * them alternately, never blocking inside one while another must move, so
 * every scenario has an exact interleaving: who posts first, what is in whose
 * inbox when a receive is posted, when a task fails.  Collectives are
 * "scripts": a test algorithm that posts a given list of sends and receives
 * (in stages the test releases) on a communicator made for the test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>
#include "core.h"
#include "p2p_flow.h"
#include "wire.h"
#include "loop_int.h"

#define MAXR   4
#define LIMIT  1024          /* RCOLL_EAGER_LIMIT of these tests */

/* ---- contexts in threads over an in-process all-gather ---- */

typedef struct {
    int                n;
    rcoll_context_t   *ctx[MAXR];
    pthread_barrier_t  bar;
    unsigned char     *buf;
    size_t             cap;
    const char *const *config;
} world_t;

typedef struct {
    world_t         *w;
    int              rank;
    rcoll_status_t   st;
} member_t;

static int ag(const void *in, void *out, size_t len, void *arg)
{
    member_t *m = arg;
    world_t *w = m->w;
    pthread_barrier_wait(&w->bar);
    if (m->rank == 0 && w->cap < (size_t)w->n * len) {
        free(w->buf);
        w->cap = (size_t)w->n * len;
        w->buf = malloc(w->cap);
    }
    pthread_barrier_wait(&w->bar);
    memcpy(w->buf + (size_t)m->rank * len, in, len);
    pthread_barrier_wait(&w->bar);
    memcpy(out, w->buf, (size_t)w->n * len);
    pthread_barrier_wait(&w->bar);
    return 0;
}

static void *member_init(void *arg)
{
    member_t *m = arg;
    rcoll_oob_t oob = { .rank = m->rank, .size = m->w->n, .allgather = ag, .arg = m,
                        .node = NULL };
    m->st = rcoll_init_oob(&oob, m->w->config, &m->w->ctx[m->rank]);
    return NULL;
}

static void *member_fini(void *arg)
{
    member_t *m = arg;
    m->st = RCOLL_STATUS_LAST;                  /* closed before: nothing to check */
    if (m->w->ctx[m->rank] != NULL) {
        m->st = rcoll_finalize(m->w->ctx[m->rank]);
        m->w->ctx[m->rank] = NULL;
    }
    return NULL;
}

static void run_members(world_t *w, void *(*fn)(void *), rcoll_status_t *st)
{
    pthread_t t[MAXR];
    member_t m[MAXR];
    for (int r = 0; r < w->n; r++) {
        m[r] = (member_t){ .w = w, .rank = r };
        assert_int_equal(pthread_create(&t[r], NULL, fn, &m[r]), 0);
    }
    for (int r = 0; r < w->n; r++) {
        pthread_join(t[r], NULL);
        st[r] = m[r].st;
    }
}

/* n contexts over loop with RCOLL_EAGER_LIMIT = LIMIT, RCOLL_TIMEOUT =
 * timeout and one more setting `extra` (NULL: none). */
static world_t *world_open_with(int n, const char *timeout, const char *extra)
{
    char tmo[64];
    snprintf(tmo, sizeof(tmo), "TIMEOUT=%s", timeout);
    const char *config[] = { "TRANSPORT=loop", "SHM=0", "EAGER_LIMIT=1024", tmo, extra, NULL };
    world_t *w = calloc(1, sizeof(*w));
    rcoll_status_t st[MAXR];
    assert_non_null(w);
    w->n = n;
    w->config = config;
    pthread_barrier_init(&w->bar, NULL, (unsigned)n);
    run_members(w, member_init, st);
    for (int r = 0; r < n; r++) {
        assert_int_equal(st[r], RCOLL_OK);
        assert_int_equal(w->ctx[r]->eager_limit, LIMIT);
    }
    w->config = NULL;
    return w;
}

static world_t *world_open(int n, const char *timeout)
{
    return world_open_with(n, timeout, NULL);
}

/* Finalize every context still open; each must return want (RCOLL_OK when
 * all ranks are alive). */
static void world_close(world_t *w, rcoll_status_t want)
{
    rcoll_status_t st[MAXR];
    run_members(w, member_fini, st);
    for (int r = 0; r < w->n; r++) {
        if (st[r] != RCOLL_STATUS_LAST && st[r] != want) {
            fail_msg("rcoll_finalize of rank %d returned %s, expected %s", r,
                     rcoll_strerror(st[r]), rcoll_strerror(want));
        }
    }
    pthread_barrier_destroy(&w->bar);
    free(w->buf);
    free(w);
}

static void enter(rcoll_context_t *ctx)
{
    rcoll_log_enter(&ctx->log);
}

/* Progress every open context `rounds` times.  The core polls transports on
 * every call only while it has ops pending, else every RCOLL_TL_POLL_IDLE-th
 * call: 2 * RCOLL_TL_POLL_IDLE rounds deliver everything in flight. */
static void spin(world_t *w, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        for (int r = 0; r < w->n; r++) {
            if (w->ctx[r] != NULL) {
                enter(w->ctx[r]);
                rcoll_context_progress(w->ctx[r]);
            }
        }
    }
}
#define SETTLE (2 * RCOLL_TL_POLL_IDLE)

/* A communicator of all ranks of w, made locally (no agreement needed: the
 * test picks the id); order[i] is the world rank of comm rank i. */
static rcoll_comm_t *comm_make(rcoll_context_t *ctx, uint64_t id, const int *order, int n)
{
    int *wr = malloc((size_t)n * sizeof(int));
    int me = -1;
    assert_non_null(wr);
    for (int i = 0; i < n; i++) {
        wr[i] = order ? order[i] : i;
        if (wr[i] == ctx->rank) {
            me = i;
        }
    }
    rcoll_comm_t *c = NULL;
    assert_int_equal(rcoll_comm_create(ctx, id, me, n, wr, &c), RCOLL_OK);
    return c;
}

static void comms_make(world_t *w, uint64_t id, const int *order, rcoll_comm_t **out)
{
    for (int r = 0; r < w->n; r++) {
        out[r] = comm_make(w->ctx[r], id, order, w->n);
    }
}

static void comms_free(world_t *w, rcoll_comm_t **c)
{
    for (int r = 0; r < w->n; r++) {
        if (c[r] != NULL && w->ctx[r] != NULL) {
            assert_int_equal(c[r]->nactive, 0);
            rcoll_comm_destroy(c[r]);
        }
        c[r] = NULL;
    }
}

/* ---- scripts: a test algorithm that posts a list of ops ---- */

enum { SEND = 1, RECV = 2 };

typedef struct {
    int      kind, peer;          /* peer: comm rank */
    uint32_t step;
    void    *buf;
    size_t   len;
    int      stage;               /* posted once script.go >= stage */
} sop_t;

typedef struct {
    sop_t          ops[RCOLL_TASK_MAX_OPS];
    int            nops, posted, go;
    rcoll_status_t fail;          /* != OK: the next progress returns it (the task is abandoned) */
    rcoll_task_t  *task;
} script_t;

static rcoll_status_t script_progress(rcoll_task_t *task)
{
    script_t *s = (script_t *)(uintptr_t)task->args.sendbuf;
    if (s->fail != RCOLL_OK) {
        return s->fail;
    }
    while (s->posted < s->nops && s->ops[s->posted].stage <= s->go) {
        sop_t *o = &s->ops[s->posted++];
        rcoll_status_t st = o->kind == SEND ? rcoll_task_send(task, o->peer, o->step, o->buf, o->len)
                                            : rcoll_task_recv(task, o->peer, o->step, o->buf, o->len);
        if (st != RCOLL_OK) {
            return st;
        }
    }
    rcoll_status_t st = rcoll_task_test(task);
    if (st != RCOLL_OK) {
        return st;
    }
    return s->posted == s->nops ? RCOLL_OK : RCOLL_INPROGRESS;
}

static const rcoll_alg_t script_alg = { .name = "p2p_script", .coll = RCOLL_COLL_BCAST,
                                        .progress = script_progress };

static void add(script_t *s, int kind, int peer, uint32_t step, void *buf, size_t len, int stage)
{
    assert_true(s->nops < RCOLL_TASK_MAX_OPS);
    s->ops[s->nops++] = (sop_t){ .kind = kind, .peer = peer, .step = step, .buf = buf,
                                 .len = len, .stage = stage };
}

/* Post s on comm (its ops of stage 0 go out now). */
static rcoll_task_t *start(rcoll_comm_t *comm, script_t *s)
{
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BCAST, .sendbuf = s, .count = 1,
                            .dtype = RCOLL_UINT8 };
    enter(comm->ctx);
    assert_int_equal(rcoll_task_post_alg(comm, &a, &script_alg, &s->task), RCOLL_OK);
    return s->task;
}

static void release_stage(script_t *s, int go)
{
    s->go = go;
}

/* Progress w until every listed task is done, checking their deadlines
 * (RCOLL_TIMEOUT) as a wait would; the test fails after 5 s. */
static void finish(world_t *w, rcoll_task_t **t, int n)
{
    double end = rcoll_time_now() + 5;
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++) {
            all &= t[i] == NULL || t[i]->done;
        }
        if (all) {
            return;
        }
        if (rcoll_time_now() > end) {
            fail_msg("tasks still running after 5 s");
        }
        spin(w, 1);
        for (int i = 0; i < n; i++) {
            if (t[i] != NULL && !t[i]->done) {
                enter(t[i]->ctx);
                rcoll_task_check_deadline(t[i]);
            }
        }
    }
}

/* Op slot i of a task (the slots follow the task: src/core.h). */
static rcoll_p2p_op_t *task_op(rcoll_task_t *t, int i)
{
    return &rcoll_task_ops(t)[i];
}

/* Release a finished task; its status. */
static rcoll_status_t reap(rcoll_task_t *t)
{
    assert_true(t->done);
    rcoll_status_t st = t->status;
    enter(t->ctx);
    rcoll_task_release(t);
    return st;
}

/* ---- data ---- */

static uint8_t pat(uint32_t seed, size_t i)
{
    return (uint8_t)((seed * 131u + (uint32_t)i * 7u + (uint32_t)(i >> 8) + 1u) & 0xff);
}

static void fill(void *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        ((uint8_t *)buf)[i] = pat(seed, i);
    }
}

static int holds(const void *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        if (((const uint8_t *)buf)[i] != pat(seed, i)) {
            return 0;
        }
    }
    return 1;
}

/* A receive buffer of len bytes with CANARY guard bytes on either side. */
#define CANARY 64
typedef struct {
    uint8_t *raw;
    uint8_t *p;
    size_t   len;
} guarded_t;

static guarded_t guarded(size_t len)
{
    guarded_t g = { .raw = malloc(len + 2 * CANARY), .len = len };
    assert_non_null(g.raw);
    memset(g.raw, 0xa5, len + 2 * CANARY);
    g.p = g.raw + CANARY;
    return g;
}

/* 1 if not a byte of g changed (inside and around). */
static int untouched(const guarded_t *g)
{
    for (size_t i = 0; i < g->len + 2 * CANARY; i++) {
        if (g->raw[i] != 0xa5) {
            return 0;
        }
    }
    return 1;
}

static int canaries_ok(const guarded_t *g)
{
    for (size_t i = 0; i < CANARY; i++) {
        if (g->raw[i] != 0xa5 || g->p[g->len + i] != 0xa5) {
            return 0;
        }
    }
    return 1;
}

/* Live registrations of a context's loop port (rendezvous buffers advertised). */
static int live_regs(rcoll_context_t *ctx)
{
    struct rcoll_tl *tl = ctx->tls[0];
    int n = 0;
    pthread_mutex_lock(&tl->port->lock);
    for (struct rcoll_tl_mr *m = tl->port->mrs; m != NULL; m = m->next) {
        n++;
    }
    pthread_mutex_unlock(&tl->port->lock);
    return n;
}

#define TEST_COMM 0x7e57000000000000ull

/* ---- matching ---- */

/* The payload rank `src` sends for (comm c, task q, step s): its seed. */
static uint32_t seed_of(int c, int q, uint32_t s, int src)
{
    return (uint32_t)(1000 * c + 100 * q + 10 * (int)s + src);
}

/* Rank 0 receives from ranks 1 and 2 on two communicators (the second lists
 * the ranks in reverse order), two collectives each (sequences 0 and 1), two
 * steps each: 16 messages of equal length that differ only in (comm,
 * sequence, step, peer).  Senders post sequence 1 before sequence 0 and
 * step 1 before step 0, the second communicator before the first, rank 2
 * before rank 1; the receiver posts in the natural order.  recv_first: every receive is posted
 * before any message exists, else every message arrives first (unexpected). */
static void match_case(size_t len, int recv_first)
{
    world_t *w = world_open(3, "10");
    static const int rev[] = { 2, 1, 0 };
    rcoll_comm_t *c[2][MAXR];
    comms_make(w, TEST_COMM | 1, NULL, c[0]);
    comms_make(w, TEST_COMM | 2, rev, c[1]);

    static script_t s[MAXR][2][2];      /* [world rank][comm][sequence] */
    memset(s, 0, sizeof(s));
    uint8_t *sbuf[MAXR][2][2][2], *rbuf[2][2][2][MAXR];
    for (int ci = 0; ci < 2; ci++) {
        for (int q = 0; q < 2; q++) {
            for (uint32_t st = 0; st < 2; st++) {
                for (int src = 1; src <= 2; src++) {
                    sbuf[src][ci][q][st] = malloc(len + 1);
                    fill(sbuf[src][ci][q][st], len, seed_of(ci, q, st, src));
                    rbuf[ci][q][st][src] = calloc(1, len + 1);
                }
            }
        }
    }
    /* Senders: sequence 1 at stage 0, sequence 0 at stage 1 (released later); step 1 first. */
    const int r0[2] = { 0, 2 };                            /* comm rank of world rank 0 */
    const int cr[2][3] = { { 0, 1, 2 }, { 2, 1, 0 } };     /* [comm][world rank] -> comm rank */
    for (int ci = 0; ci < 2; ci++) {
        for (int q = 0; q < 2; q++) {
            for (int src = 1; src <= 2; src++) {
                script_t *ss = &s[src][ci][q];
                for (int st = 1; st >= 0; st--) {
                    add(ss, SEND, r0[ci], (uint32_t)st, sbuf[src][ci][q][st], len, q == 0 ? 1 : 0);
                }
            }
            script_t *rs = &s[0][ci][q];
            for (int src = 1; src <= 2; src++) {
                for (uint32_t st = 0; st < 2; st++) {
                    add(rs, RECV, cr[ci][src], st, rbuf[ci][q][st][src], len, 0);
                }
            }
        }
    }
    rcoll_task_t *t[12];
    int nt = 0;
    if (recv_first) {
        for (int ci = 0; ci < 2; ci++) {
            for (int q = 0; q < 2; q++) {
                t[nt++] = start(c[ci][0], &s[0][ci][q]);
            }
        }
        spin(w, SETTLE);
    }
    /* Rank 2's messages reach rank 0 before rank 1's, which it receives first. */
    for (int src = 2; src >= 1; src--) {
        for (int ci = 1; ci >= 0; ci--) {     /* the second communicator first */
            for (int q = 0; q < 2; q++) {
                t[nt++] = start(c[ci][src], &s[src][ci][q]);
            }
        }
        spin(w, SETTLE);                       /* sequence 1's messages only */
    }
    for (int ci = 0; ci < 2; ci++) {
        for (int src = 1; src <= 2; src++) {
            release_stage(&s[src][ci][0], 1);
        }
    }
    spin(w, SETTLE);
    if (!recv_first) {
        /* Eager messages wait unexpected at rank 0; rendezvous sends wait for RTRs. */
        assert_int_equal(w->ctx[0]->unexpected_count, len > LIMIT ? 0 : 16);
        for (int ci = 0; ci < 2; ci++) {
            for (int q = 0; q < 2; q++) {
                t[nt++] = start(c[ci][0], &s[0][ci][q]);
            }
        }
    }
    finish(w, t, nt);
    for (int i = 0; i < nt; i++) {
        assert_int_equal(reap(t[i]), RCOLL_OK);
    }
    for (int ci = 0; ci < 2; ci++) {
        for (int q = 0; q < 2; q++) {
            for (uint32_t st = 0; st < 2; st++) {
                for (int src = 1; src <= 2; src++) {
                    if (!holds(rbuf[ci][q][st][src], len, seed_of(ci, q, st, src))) {
                        fail_msg("comm %d seq %d step %u from rank %d: wrong data (mismatched)",
                                 ci, q, st, src);
                    }
                    free(rbuf[ci][q][st][src]);
                    free(sbuf[src][ci][q][st]);
                }
            }
        }
    }
    for (int r = 0; r < 3; r++) {
        assert_int_equal(w->ctx[r]->unexpected_count, 0);
        assert_int_equal(w->ctx[r]->p2p_pending, 0);
        assert_int_equal(live_regs(w->ctx[r]), 0);
    }
    comms_free(w, c[0]);
    comms_free(w, c[1]);
    world_close(w, RCOLL_OK);
}

static void test_match_eager_recv_first(void **state) { (void)state; match_case(8, 1); }
static void test_match_eager_unexpected(void **state) { (void)state; match_case(8, 0); }
static void test_match_rndv_recv_first(void **state) { (void)state; match_case(LIMIT + 100, 1); }
static void test_match_rndv_send_first(void **state) { (void)state; match_case(LIMIT + 100, 0); }

/* ---- unexpected messages: many, then received in the reverse order ---- */

static void test_unexpected_many(void **state)
{
    (void)state;
    enum { N = 60 };
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 3, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t *sb[N], *rb[N];
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(i * 17) % (LIMIT + 1);     /* 0 .. LIMIT, zero included */
        sb[i] = malloc(len + 1);
        rb[i] = calloc(1, len + 1);
        fill(sb[i], len, (uint32_t)i);
        add(&snd, SEND, 0, (uint32_t)i, sb[i], len, 0);
    }
    for (int i = N - 1; i >= 0; i--) {
        add(&rcv, RECV, 1, (uint32_t)i, rb[i], (size_t)(i * 17) % (LIMIT + 1), 0);
    }
    rcoll_task_t *t[2];
    t[0] = start(c[1], &snd);
    spin(w, SETTLE);
    assert_true(t[0]->done);                /* eager sends complete at once */
    assert_int_equal(w->ctx[0]->unexpected_count, N);
    t[1] = start(c[0], &rcv);
    assert_true(t[1]->done);                /* every receive matched on posting */
    assert_int_equal(w->ctx[0]->unexpected_count, 0);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    for (int i = 0; i < N; i++) {
        assert_true(holds(rb[i], (size_t)(i * 17) % (LIMIT + 1), (uint32_t)i));
        free(sb[i]);
        free(rb[i]);
    }
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* ---- eager vs rendezvous around the limit ---- */

static void boundary_case(size_t len, int recv_first)
{
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 4, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t *sb = malloc(len);
    guarded_t g = guarded(len);
    fill(sb, len, 7);
    add(&snd, SEND, 1, 3, sb, len, 0);
    add(&rcv, RECV, 0, 3, g.p, len, 0);
    rcoll_task_t *t[2];
    if (recv_first) {
        t[1] = start(c[1], &rcv);
        spin(w, SETTLE);
        t[0] = start(c[0], &snd);
    } else {
        t[0] = start(c[0], &snd);
        spin(w, SETTLE);
        t[1] = start(c[1], &rcv);
    }
    int rndv = len > LIMIT;
    if (rndv && !recv_first) {
        assert_int_equal(task_op(t[0], 0)->state, RCOLL_P2P_WAIT_RTR);
    }
    finish(w, t, 2);
    assert_int_equal(task_op(t[0], 0)->rndv, rndv);
    assert_int_equal(task_op(t[1], 0)->rndv, rndv);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    assert_true(holds(g.p, len, 7));
    assert_true(canaries_ok(&g));
    assert_int_equal(live_regs(w->ctx[1]), 0);      /* the rendezvous buffer was revoked */
    free(sb);
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

static void test_boundary(void **state)
{
    (void)state;
    const size_t lens[] = { LIMIT - 1, LIMIT, LIMIT + 1 };
    for (int i = 0; i < 3; i++) {
        boundary_case(lens[i], 0);
        boundary_case(lens[i], 1);
    }
}

/* ---- RTR before the send is posted ---- */

static void test_rtr_before_send(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 5, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    size_t len = 3 * LIMIT;
    uint8_t *sb[2], *rb[2];
    for (int i = 0; i < 2; i++) {
        sb[i] = malloc(len);
        rb[i] = calloc(1, len);
        fill(sb[i], len, 50u + (uint32_t)i);
    }
    /* Two rendezvous receives (steps 0, 1): both RTRs reach rank 0 first. */
    add(&rcv, RECV, 0, 0, rb[0], len, 0);
    add(&rcv, RECV, 0, 1, rb[1], len, 0);
    add(&snd, SEND, 1, 1, sb[1], len, 0);
    add(&snd, SEND, 1, 0, sb[0], len, 0);
    rcoll_task_t *t[2];
    t[1] = start(c[1], &rcv);
    assert_int_equal(live_regs(w->ctx[1]), 2);
    spin(w, SETTLE);
    assert_int_equal(w->ctx[0]->unexpected_count, 2);    /* the RTRs, waiting for the sends */
    t[0] = start(c[0], &snd);
    /* Each send found its RTR on posting and started writing at once. */
    assert_int_equal(w->ctx[0]->unexpected_count, 0);
    assert_int_equal(task_op(t[0], 0)->state, RCOLL_P2P_PUTTING);
    assert_int_equal(task_op(t[0], 1)->state, RCOLL_P2P_PUTTING);
    finish(w, t, 2);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    for (int i = 0; i < 2; i++) {
        assert_true(holds(rb[i], len, 50u + (uint32_t)i));
        free(sb[i]);
        free(rb[i]);
    }
    assert_int_equal(live_regs(w->ctx[1]), 0);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* ---- truncation ---- */

/* Rank 0 sends slen bytes, rank 1 posted rlen < slen. */
static void truncation_case(size_t slen, size_t rlen, int recv_first, rcoll_status_t want_send,
                            rcoll_status_t want_recv)
{
    world_t *w = world_open(2, want_send == RCOLL_ERR_TIMEOUT ? "0.3" : "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 6, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t *sb = malloc(slen);
    guarded_t g = guarded(rlen);
    fill(sb, slen, 9);
    add(&snd, SEND, 1, 0, sb, slen, 0);
    add(&rcv, RECV, 0, 0, g.p, rlen, 0);
    rcoll_task_t *t[2];
    if (recv_first) {
        t[1] = start(c[1], &rcv);
        spin(w, SETTLE);
        t[0] = start(c[0], &snd);
    } else {
        t[0] = start(c[0], &snd);
        spin(w, SETTLE);
        t[1] = start(c[1], &rcv);
    }
    finish(w, t, 2);
    /* Whichever side times out first revokes the communicator (revoke.c):
     * the other then ends with PEER_FAILED, not its own timeout. */
    rcoll_status_t got_send = reap(t[0]), got_recv = reap(t[1]);
    if (want_send == RCOLL_ERR_TIMEOUT && got_send == RCOLL_ERR_PEER_FAILED &&
        got_recv == RCOLL_ERR_TIMEOUT) {
        got_send = RCOLL_ERR_TIMEOUT;
    }
    if (want_recv == RCOLL_ERR_TIMEOUT && got_recv == RCOLL_ERR_PEER_FAILED &&
        got_send == RCOLL_ERR_TIMEOUT) {
        got_recv = RCOLL_ERR_TIMEOUT;
    }
    assert_int_equal(got_send, want_send);
    assert_int_equal(got_recv, want_recv);
    if (!untouched(&g)) {
        fail_msg("%zu bytes sent into %zu posted: the receive buffer or its canaries changed",
                 slen, rlen);
    }
    assert_int_equal(live_regs(w->ctx[1]), 0);
    assert_int_equal(w->ctx[0]->p2p_pending, 0);
    assert_int_equal(w->ctx[1]->p2p_pending, 0);
    free(sb);
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

static void test_truncation_eager(void **state)
{
    (void)state;
    truncation_case(100, 64, 1, RCOLL_OK, RCOLL_ERR_TRUNCATED);     /* posted receive */
    truncation_case(100, 64, 0, RCOLL_OK, RCOLL_ERR_TRUNCATED);     /* unexpected message */
}

/* Both sides rendezvous: the sender sees the RTR's length and refuses to
 * write; the receiver must learn it too, at once, not by its deadline. */
static void test_truncation_rndv(void **state)
{
    (void)state;
    truncation_case(3 * LIMIT, 2 * LIMIT, 1, RCOLL_ERR_TRUNCATED, RCOLL_ERR_TRUNCATED);
    truncation_case(3 * LIMIT, 2 * LIMIT, 0, RCOLL_ERR_TRUNCATED, RCOLL_ERR_TRUNCATED);
}

/* The sender is rendezvous, the receiver eager (a mismatch across the
 * limit): each waits for a message the other never sends, so both end by
 * their deadline; still nothing is written. */
static void test_truncation_across_limit(void **state)
{
    (void)state;
    truncation_case(2 * LIMIT, LIMIT / 2, 1, RCOLL_ERR_TIMEOUT, RCOLL_ERR_TIMEOUT);
}

/* ---- cancellation: a task that fails while messages are in flight ---- */

/* The receiver abandons a rendezvous receive after advertising its buffer;
 * the sender then finds the RTR: its write must not land. */
static void test_cancel_rndv_recv(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 7, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    size_t len = 2 * LIMIT;
    uint8_t *sb = malloc(len);
    guarded_t g = guarded(len);
    fill(sb, len, 11);
    add(&rcv, RECV, 0, 0, g.p, len, 0);
    add(&snd, SEND, 1, 0, sb, len, 0);
    rcoll_task_t *t[2];
    t[1] = start(c[1], &rcv);
    assert_int_equal(live_regs(w->ctx[1]), 1);
    rcv.fail = RCOLL_ERR_INTERNAL;               /* abandoned */
    spin(w, SETTLE);
    assert_true(t[1]->done);
    assert_int_equal(live_regs(w->ctx[1]), 0);   /* revoked at once */
    assert_int_equal(w->ctx[1]->p2p_pending, 0);
    assert_int_equal(reap(t[1]), RCOLL_ERR_INTERNAL);
    t[0] = start(c[0], &snd);
    finish(w, t, 1);
    assert_int_not_equal(reap(t[0]), RCOLL_OK);  /* the write was refused */
    spin(w, SETTLE);
    assert_true(untouched(&g));
    free(sb);
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* An eager receive abandoned before its message arrives: the late message
 * is kept aside (freed at finalize), never written into the old buffer. */
static void test_cancel_eager_recv(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 8, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t sb[64];
    guarded_t g = guarded(sizeof(sb));
    fill(sb, sizeof(sb), 12);
    add(&rcv, RECV, 0, 0, g.p, sizeof(sb), 0);
    add(&snd, SEND, 1, 0, sb, sizeof(sb), 0);
    rcoll_task_t *t[2];
    t[1] = start(c[1], &rcv);
    rcv.fail = RCOLL_ERR_INTERNAL;
    spin(w, SETTLE);
    assert_int_equal(reap(t[1]), RCOLL_ERR_INTERNAL);
    assert_true(rcoll_list_empty(&w->ctx[1]->posted_recvs));
    t[0] = start(c[0], &snd);
    finish(w, t, 1);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    spin(w, SETTLE);
    assert_int_equal(w->ctx[1]->unexpected_count, 1);
    assert_true(untouched(&g));
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* A sender whose task fails while its write is in flight: the task is kept
 * (a zombie) until the transport's completion, then freed; the receiver,
 * abandoned too, revokes its buffer. */
static void test_cancel_put_in_flight(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 9, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    size_t len = 4 * LIMIT;
    uint8_t *sb = malloc(len);
    uint8_t *rb = calloc(1, len);
    fill(sb, len, 13);
    add(&snd, SEND, 1, 0, sb, len, 0);
    add(&rcv, RECV, 0, 0, rb, len, 0);
    rcoll_task_t *t[2];
    t[0] = start(c[0], &snd);
    t[1] = start(c[1], &rcv);                   /* its RTR is now in rank 0's inbox */
    snd.fail = RCOLL_ERR_INTERNAL;
    enter(w->ctx[0]);
    rcoll_context_progress(w->ctx[0]);          /* RTR -> put starts; then the task fails */
    assert_true(t[0]->done);
    assert_int_equal(t[0]->inflight_tl, 1);
    assert_int_equal(reap(t[0]), RCOLL_ERR_INTERNAL);
    assert_false(rcoll_list_empty(&w->ctx[0]->zombies));
    int nfree = w->ctx[0]->nfree_tasks;
    rcoll_context_progress(w->ctx[0]);          /* the put's completion frees the zombie */
    assert_true(rcoll_list_empty(&w->ctx[0]->zombies));
    assert_int_equal(w->ctx[0]->nfree_tasks, nfree + 1);
    /* No FIN came: the receiver would wait; it gives up and revokes. */
    spin(w, SETTLE);
    assert_false(t[1]->done);
    rcv.fail = RCOLL_ERR_INTERNAL;
    spin(w, 1);
    assert_int_equal(reap(t[1]), RCOLL_ERR_INTERNAL);
    assert_int_equal(live_regs(w->ctx[1]), 0);
    free(sb);
    free(rb);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* ---- deadlines ---- */

/* stderr into a file while fn runs; returns what was written (malloc'd). */
typedef struct {
    int   saved;
    FILE *f;
} capture_t;

static capture_t capture_begin(void)
{
    capture_t c;
    fflush(stderr);
    c.f = tmpfile();
    assert_non_null(c.f);
    c.saved = dup(2);
    dup2(fileno(c.f), 2);
    return c;
}

static char *capture_end(capture_t c)
{
    fflush(stderr);
    dup2(c.saved, 2);
    close(c.saved);
    long n = ftell(c.f);
    char *s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    rewind(c.f);
    if (n > 0 && fread(s, 1, (size_t)n, c.f) != (size_t)n) {
        s[0] = '\0';
    }
    fclose(c.f);
    fputs(s, stderr);                    /* still shown */
    return s;
}

static void expect_in(const char *log, const char *what)
{
    if (strstr(log, what) == NULL) {
        fail_msg("the log lacks \"%s\"", what);
    }
}

/* A receive whose message never comes: RCOLL_ERR_TIMEOUT after RCOLL_TIMEOUT,
 * and one line naming the collective, its sequence, the step and the peer. */
static void test_deadline_recv(void **state)
{
    (void)state;
    world_t *w = world_open(3, "0.3");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 10, NULL, c);
    static script_t rcv;
    memset(&rcv, 0, sizeof(rcv));
    uint8_t rb[32];
    add(&rcv, RECV, 2, 7, rb, sizeof(rb), 0);
    double t0 = rcoll_time_now();
    rcoll_task_t *t = start(c[1], &rcv);
    capture_t cap = capture_begin();
    rcoll_status_t st = rcoll_task_wait(t);
    char *log = capture_end(cap);
    double took = rcoll_time_now() - t0;
    assert_int_equal(st, RCOLL_ERR_TIMEOUT);
    assert_true(took >= 0.3 && took < 5);
    expect_in(log, "rcoll_bcast timed out");
    expect_in(log, "algorithm p2p_script");
    expect_in(log, "sequence 0");
    expect_in(log, "at step 7");
    expect_in(log, "waiting for rank 2 (world rank 2)");
    expect_in(log, "receive of 32 bytes");
    free(log);
    assert_int_equal(w->ctx[1]->p2p_pending, 0);
    assert_true(rcoll_list_empty(&w->ctx[1]->posted_recvs));
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* Through the public API: a broadcast whose root never calls. */
static void test_deadline_public(void **state)
{
    (void)state;
    world_t *w = world_open(2, "0.3");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 11, NULL, c);
    int32_t v[4] = { 0 };
    rcoll_request_t *req = NULL;
    enter(w->ctx[1]);
    assert_int_equal(rcoll_ibcast(v, 4, RCOLL_INT32, 0, c[1], &req), RCOLL_OK);
    capture_t cap = capture_begin();
    int done = 0;
    rcoll_status_t st = RCOLL_OK;
    double end = rcoll_time_now() + 5;
    while (!done && rcoll_time_now() < end) {
        st = rcoll_test(req, &done);
    }
    char *log = capture_end(cap);
    assert_true(done);
    assert_int_equal(st, RCOLL_ERR_TIMEOUT);
    expect_in(log, "rcoll_bcast timed out");
    expect_in(log, "waiting for rank 0 (world rank 0)");
    expect_in(log, "at step ");
    free(log);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* ---- peer failure ---- */

/* Rank 0 finalizes rank 1 alone after rank 1's message reached it: a peer
 * that has left (e.g. it finished a barrier first) is failed for what it
 * never sent, but what it did send before leaving is still received. */
static void test_recv_after_peer_left(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 13, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t sb[40], rb[40], rb2[8];
    fill(sb, sizeof(sb), 16);
    memset(rb, 0, sizeof(rb));
    add(&snd, SEND, 0, 0, sb, sizeof(sb), 0);
    add(&rcv, RECV, 1, 0, rb, sizeof(rb), 0);
    add(&rcv, RECV, 1, 1, rb2, sizeof(rb2), 1);     /* never sent */
    rcoll_task_t *t = start(c[1], &snd);
    assert_int_equal(reap(t), RCOLL_OK);
    rcoll_comm_destroy(c[1]);
    c[1] = NULL;
    enter(w->ctx[1]);
    assert_int_equal(rcoll_config_set(w->ctx[1], "RCOLL_TIMEOUT", "0.2"), RCOLL_OK);
    assert_int_equal(rcoll_finalize(w->ctx[1]), RCOLL_ERR_TIMEOUT);
    w->ctx[1] = NULL;
    spin(w, SETTLE);                                /* the message, then the departure */
    assert_int_equal(w->ctx[0]->peer_failed[1], RCOLL_ERR_PEER_FAILED);
    t = start(c[0], &rcv);
    assert_false(t->done);
    assert_int_equal(task_op(t, 0)->status, RCOLL_OK);
    assert_true(holds(rb, sizeof(rb), 16));
    release_stage(&rcv, 1);
    finish(w, &t, 1);
    assert_int_equal(reap(t), RCOLL_ERR_PEER_FAILED);
    comms_free(w, c);
    world_close(w, RCOLL_ERR_PEER_FAILED);
}

/* Rank 2 leaves (finalizes alone) while ranks 0 and 1 have an eager receive,
 * a rendezvous receive and a rendezvous send with it pending: all three fail
 * with RCOLL_ERR_PEER_FAILED, the advertised buffer is revoked, later
 * collectives with rank 2 fail at once, and ranks 0 and 1 still talk. */
static void test_peer_failure(void **state)
{
    (void)state;
    world_t *w = world_open(3, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 12, NULL, c);
    static script_t s0, s1, again0, again1;
    memset(&s0, 0, sizeof(s0));
    memset(&s1, 0, sizeof(s1));
    memset(&again0, 0, sizeof(again0));
    memset(&again1, 0, sizeof(again1));
    size_t big = 2 * LIMIT;
    uint8_t small[16], *rb = calloc(1, big), *sb = malloc(big);
    fill(sb, big, 14);
    add(&s0, RECV, 2, 0, small, sizeof(small), 0);
    add(&s0, RECV, 2, 1, rb, big, 0);
    add(&s1, SEND, 2, 2, sb, big, 0);
    rcoll_task_t *t[2];
    t[0] = start(c[0], &s0);
    t[1] = start(c[1], &s1);
    spin(w, SETTLE);
    assert_false(t[0]->done);
    assert_false(t[1]->done);
    assert_int_equal(live_regs(w->ctx[0]), 1);

    /* Rank 2 leaves: its finalize barrier cannot complete (0.2 s), then it closes. */
    rcoll_comm_destroy(c[2]);
    c[2] = NULL;
    enter(w->ctx[2]);
    assert_int_equal(rcoll_config_set(w->ctx[2], "RCOLL_TIMEOUT", "0.2"), RCOLL_OK);
    assert_int_equal(rcoll_finalize(w->ctx[2]), RCOLL_ERR_TIMEOUT);
    w->ctx[2] = NULL;

    finish(w, t, 2);
    assert_int_equal(reap(t[0]), RCOLL_ERR_PEER_FAILED);
    assert_int_equal(reap(t[1]), RCOLL_ERR_PEER_FAILED);
    assert_int_equal(live_regs(w->ctx[0]), 0);
    assert_int_equal(w->ctx[0]->p2p_pending, 0);
    assert_int_equal(w->ctx[1]->p2p_pending, 0);
    assert_int_equal(w->ctx[0]->peer_failed[2], RCOLL_ERR_PEER_FAILED);
    assert_int_equal(w->ctx[1]->peer_failed[2], RCOLL_ERR_PEER_FAILED);

    /* A later collective with the dead rank fails without waiting: at once
     * where rank 2's failed finalize barrier revoked the world (revoke.c). */
    rcoll_request_t *req[2];
    int done[2] = { 0, 0 };
    rcoll_status_t st[2] = { RCOLL_OK, RCOLL_OK };
    for (int r = 0; r < 2; r++) {
        enter(w->ctx[r]);
        st[r] = rcoll_ibarrier(rcoll_comm_world(w->ctx[r]), &req[r]);
        done[r] = st[r] != RCOLL_OK;
    }
    double end = rcoll_time_now() + 3;
    while ((!done[0] || !done[1]) && rcoll_time_now() < end) {
        for (int r = 0; r < 2; r++) {
            if (!done[r]) {
                st[r] = rcoll_test(req[r], &done[r]);
            }
        }
    }
    assert_true(done[0] && done[1]);
    assert_int_equal(st[0], RCOLL_ERR_PEER_FAILED);
    assert_int_equal(st[1], RCOLL_ERR_PEER_FAILED);

    /* Between the living ranks, messages still flow (on a communicator
     * without rank 2: c, which has it, is revoked now, revoke.c). */
    static const int living[2] = { 0, 1 };
    rcoll_comm_t *c2[2] = { comm_make(w->ctx[0], TEST_COMM | 13, living, 2),
                            comm_make(w->ctx[1], TEST_COMM | 13, living, 2) };
    uint8_t a[16], b[16];
    fill(a, sizeof(a), 15);
    memset(b, 0, sizeof(b));
    add(&again0, SEND, 1, 0, a, sizeof(a), 0);
    add(&again1, RECV, 0, 0, b, sizeof(b), 0);
    t[0] = start(c2[0], &again0);
    t[1] = start(c2[1], &again1);
    finish(w, t, 2);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    assert_true(holds(b, sizeof(b), 15));
    rcoll_comm_destroy(c2[0]);
    rcoll_comm_destroy(c2[1]);
    free(rb);
    free(sb);
    comms_free(w, c);
    world_close(w, RCOLL_ERR_PEER_FAILED);      /* their finalize barrier includes rank 2 */
}

/* ---- bounded unexpected memory: credits, held messages (src/p2p_flow.h) ---- */

#define CAP      65536        /* RCOLL_UNEXPECTED_MAX of these scenarios (2 ranks: the share) */
#define CAP_Q    25           /* collectives the sender runs ahead */
#define CAP_PER  40           /* messages in each */
#define CAP_LEN  1000         /* bytes each (eager) */

static int ops_in_state(rcoll_task_t **t, int n, rcoll_p2p_state_t st)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < t[i]->nops; j++) {
            k += task_op(t[i], j)->state == st;
        }
    }
    return k;
}

/* Rank 1 runs 1000 eager messages (25 collectives) ahead of rank 0 with a
 * 64 KiB bound: rank 0 keeps at most 64 KiB of copies, the rest wait at the
 * sender (held); then rank 0 posts in order and gets all of it, intact. */
static void test_cap_many_ahead(void **state)
{
    (void)state;
    world_t *w = world_open_with(2, "10", "UNEXPECTED_MAX=64k");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 20, NULL, c);
    assert_int_equal(w->ctx[0]->flow_share, CAP);
    static script_t snd[CAP_Q], rcv[CAP_Q];
    memset(snd, 0, sizeof(snd));
    memset(rcv, 0, sizeof(rcv));
    size_t total = (size_t)CAP_Q * CAP_PER * CAP_LEN;
    uint8_t *sb = malloc(total), *rb = calloc(1, total);
    assert_true(sb != NULL && rb != NULL);
    for (int q = 0; q < CAP_Q; q++) {
        for (int i = 0; i < CAP_PER; i++) {
            size_t k = (size_t)q * CAP_PER + (size_t)i;
            fill(sb + k * CAP_LEN, CAP_LEN, (uint32_t)k);
            add(&snd[q], SEND, 0, (uint32_t)i, sb + k * CAP_LEN, CAP_LEN, 0);
            add(&rcv[q], RECV, 1, (uint32_t)i, rb + k * CAP_LEN, CAP_LEN, 0);
        }
    }
    rcoll_task_t *t[2 * CAP_Q];
    for (int q = 0; q < CAP_Q; q++) {
        t[q] = start(c[1], &snd[q]);
    }
    spin(w, SETTLE);
    size_t per = rcoll__flow_charge(CAP_LEN), fit = CAP / per;
    assert_int_equal(w->ctx[0]->unexpected_bytes, fit * per);      /* as many as the credit takes */
    assert_int_equal(w->ctx[0]->unexpected_held, CAP_Q * CAP_PER - fit);
    assert_int_equal(ops_in_state(t, CAP_Q, RCOLL_P2P_WAIT_PULL), CAP_Q * CAP_PER - fit);
    assert_true(w->ctx[1]->flow[0].sent <= CAP);
    for (int q = 0; q < CAP_Q; q++) {
        t[CAP_Q + q] = start(c[0], &rcv[q]);
    }
    finish(w, t, 2 * CAP_Q);
    for (int i = 0; i < 2 * CAP_Q; i++) {
        assert_int_equal(reap(t[i]), RCOLL_OK);
    }
    for (size_t k = 0; k < (size_t)CAP_Q * CAP_PER; k++) {
        if (!holds(rb + k * CAP_LEN, CAP_LEN, (uint32_t)k)) {
            fail_msg("message %zu: wrong data", k);
        }
    }
    assert_true(w->ctx[0]->unexpected_peak <= CAP);
    assert_int_equal(w->ctx[0]->unexpected_peak, fit * per);
    assert_int_equal(w->ctx[0]->unexpected_bytes, 0);
    assert_int_equal(w->ctx[0]->unexpected_held, 0);
    assert_int_equal(w->ctx[0]->unexpected_count, 0);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(w->ctx[r]->p2p_pending, 0);
        assert_true(rcoll_list_empty(&w->ctx[r]->sends_wait_rtr));
        assert_true(rcoll_list_empty(&w->ctx[r]->posted_recvs));
    }
    free(sb);
    free(rb);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* Rank 0 is at its bound with messages of a collective it has not reached
 * (communicator A); the message its posted receive waits for (communicator
 * B) must still come: held, then pulled, not stuck behind the others. */
static void test_cap_posted_at_cap(void **state)
{
    (void)state;
    enum { N = 20, LEN = 1000, XLEN = 500 };
    world_t *w = world_open_with(2, "10", "UNEXPECTED_MAX=8k");
    rcoll_comm_t *a[MAXR], *b[MAXR];
    comms_make(w, TEST_COMM | 21, NULL, a);
    comms_make(w, TEST_COMM | 22, NULL, b);
    static script_t sa, sx, ra, rx;
    memset(&sa, 0, sizeof(sa));
    memset(&sx, 0, sizeof(sx));
    memset(&ra, 0, sizeof(ra));
    memset(&rx, 0, sizeof(rx));
    uint8_t *sb = malloc(N * LEN), *rb = calloc(1, N * LEN), xs[XLEN];
    guarded_t xr = guarded(XLEN);
    for (int i = 0; i < N; i++) {
        fill(sb + i * LEN, LEN, 300u + (uint32_t)i);
        add(&sa, SEND, 0, (uint32_t)i, sb + i * LEN, LEN, 0);
        add(&ra, RECV, 1, (uint32_t)i, rb + i * LEN, LEN, 0);
    }
    fill(xs, XLEN, 77);
    add(&sx, SEND, 0, 0, xs, XLEN, 0);
    add(&rx, RECV, 1, 0, xr.p, XLEN, 0);
    rcoll_task_t *t[4];
    t[0] = start(a[1], &sa);
    t[1] = start(b[1], &sx);
    spin(w, SETTLE);
    size_t cap = 8192, per = rcoll__flow_charge(LEN);
    assert_int_equal(w->ctx[0]->unexpected_bytes, (cap / per) * per);
    assert_int_equal(task_op(t[1], 0)->state, RCOLL_P2P_WAIT_PULL);   /* no credit left for it */
    t[2] = start(b[0], &rx);
    finish(w, &t[1], 2);                     /* B completes while A's messages wait */
    assert_int_equal(reap(t[1]), RCOLL_OK);
    assert_int_equal(reap(t[2]), RCOLL_OK);
    assert_true(holds(xr.p, XLEN, 77));
    assert_true(canaries_ok(&xr));
    t[1] = t[2] = NULL;
    t[3] = start(a[0], &ra);
    finish(w, t, 4);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[3]), RCOLL_OK);
    for (int i = 0; i < N; i++) {
        assert_true(holds(rb + i * LEN, LEN, 300u + (uint32_t)i));
    }
    assert_true(w->ctx[0]->unexpected_peak <= cap);
    assert_int_equal(w->ctx[0]->unexpected_count, 0);
    free(sb);
    free(rb);
    free(xr.raw);
    comms_free(w, a);
    comms_free(w, b);
    world_close(w, RCOLL_OK);
}

/* RCOLL_UNEXPECTED_MAX=0: every eager message to a peer is held and pulled.
 * Both orders work; a length mismatch fails both sides at once, nothing
 * written; a held send that fails withdraws it, and the receive posted
 * afterwards fails at once rather than by its deadline. */
static void held_case(size_t slen, size_t rlen, int recv_first, rcoll_status_t want)
{
    world_t *w = world_open_with(2, "10", "UNEXPECTED_MAX=0");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 23, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t *sb = malloc(slen + 1);
    guarded_t g = guarded(rlen);
    fill(sb, slen, 31);
    add(&snd, SEND, 1, 0, sb, slen, 0);
    add(&rcv, RECV, 0, 0, g.p, rlen, 0);
    rcoll_task_t *t[2];
    if (recv_first) {
        t[1] = start(c[1], &rcv);
        spin(w, SETTLE);
        t[0] = start(c[0], &snd);
    } else {
        t[0] = start(c[0], &snd);
        spin(w, SETTLE);
        assert_int_equal(task_op(t[0], 0)->state, RCOLL_P2P_WAIT_PULL);
        assert_int_equal(w->ctx[1]->unexpected_held, 1);
        t[1] = start(c[1], &rcv);
    }
    finish(w, t, 2);
    assert_int_equal(reap(t[0]), want);
    assert_int_equal(reap(t[1]), want);
    if (want == RCOLL_OK) {
        assert_true(holds(g.p, rlen, 31));
        assert_true(canaries_ok(&g));
    } else {
        assert_true(untouched(&g));
    }
    assert_int_equal(w->ctx[1]->unexpected_peak, 0);
    assert_int_equal(w->ctx[1]->unexpected_count, 0);
    free(sb);
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

static void test_cap_zero_held(void **state)
{
    (void)state;
    held_case(100, 100, 0, RCOLL_OK);
    held_case(100, 100, 1, RCOLL_OK);
    held_case(0, 0, 0, RCOLL_OK);
    held_case(100, 64, 0, RCOLL_ERR_TRUNCATED);
    held_case(100, 64, 1, RCOLL_ERR_TRUNCATED);
}

static void test_cap_held_send_withdrawn(void **state)
{
    (void)state;
    world_t *w = world_open_with(2, "10", "UNEXPECTED_MAX=0");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 24, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    uint8_t sb[100];
    guarded_t g = guarded(sizeof(sb));
    fill(sb, sizeof(sb), 5);
    add(&snd, SEND, 1, 0, sb, sizeof(sb), 0);
    add(&rcv, RECV, 0, 0, g.p, sizeof(sb), 0);
    rcoll_task_t *t[2];
    t[0] = start(c[0], &snd);
    spin(w, SETTLE);
    assert_int_equal(task_op(t[0], 0)->state, RCOLL_P2P_WAIT_PULL);
    snd.fail = RCOLL_ERR_INTERNAL;
    spin(w, SETTLE);
    assert_int_equal(reap(t[0]), RCOLL_ERR_INTERNAL);
    assert_int_equal(w->ctx[1]->unexpected_held, 0);          /* the WITHDRAW dropped the HOLD */
    double t0 = rcoll_time_now();
    t[1] = start(c[1], &rcv);
    finish(w, &t[1], 1);
    assert_true(rcoll_time_now() - t0 < 5);                   /* not by its 10 s deadline */
    assert_int_equal(reap(t[1]), RCOLL_ERR_TIMEOUT);
    assert_true(untouched(&g));
    assert_int_equal(w->ctx[1]->unexpected_count, 0);
    spin(w, SETTLE);
    assert_true(rcoll_list_empty(&w->ctx[0]->sends_wait_rtr));
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* ---- the pull rendezvous (transports without revocable keys: UCX) ---- */

/* Withhold PUT from every rank's loop instance: rendezvous goes by get. */
static void pull_world(world_t *w)
{
    for (int r = 0; r < w->n; r++) {
        w->ctx[r]->tls[0]->caps_off = RCOLL_TL_CAP_PUT;
    }
}

/* RTS, the receiver's get, DONE: the data lands, both sides deregister. */
static void test_pull_rendezvous(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    pull_world(w);
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 27, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    size_t len = 4 * LIMIT + 3;
    uint8_t *sb = malloc(len);
    guarded_t g = guarded(len);
    fill(sb, len, 41);
    add(&snd, SEND, 1, 0, sb, len, 0);
    add(&rcv, RECV, 0, 0, g.p, len, 0);
    rcoll_task_t *t[2];
    t[0] = start(c[0], &snd);
    spin(w, SETTLE);
    assert_int_equal(task_op(t[0], 0)->rndv, RCOLL_P2P_RNDV_GET);
    assert_int_equal(task_op(t[0], 0)->state, RCOLL_P2P_WAIT_DONE);
    t[1] = start(c[1], &rcv);
    finish(w, t, 2);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    assert_true(holds(g.p, len, 41));
    assert_true(canaries_ok(&g));
    assert_int_equal(live_regs(w->ctx[0]), 0);
    assert_int_equal(live_regs(w->ctx[1]), 0);
    free(sb);
    free(g.raw);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

/* A send withdrawn while its reader may be reading it waits for the answer;
 * a reader found dead in that wait ends it once, with the peer's failure, at
 * once.  (drain_withdrawn used to complete it a second time: the context's
 * count of pending operations went below zero.) */
static void test_pull_withdrawn_reader_dies(void **state)
{
    (void)state;
    world_t *w = world_open(2, "10");
    pull_world(w);
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 28, NULL, c);
    static script_t snd;
    memset(&snd, 0, sizeof(snd));
    size_t len = 4 * LIMIT;
    uint8_t *sb = malloc(len);
    fill(sb, len, 43);
    add(&snd, SEND, 1, 0, sb, len, 0);
    rcoll_task_t *t0 = start(c[0], &snd);
    spin(w, SETTLE);
    assert_int_equal(task_op(t0, 0)->state, RCOLL_P2P_WAIT_DONE);

    /* Rank 1 dies with the RTS unanswered; rank 0's collective then fails. */
    rcoll__loop_port_kill(w->ctx[1]->tls[0]->port);
    snd.fail = RCOLL_ERR_INTERNAL;
    double t_start = rcoll_time_now();
    enter(w->ctx[0]);
    rcoll_context_progress(w->ctx[0]);
    assert_true(t0->done);
    assert_true(rcoll_time_now() - t_start < 5);              /* not the 10 s drain bound */
    assert_int_equal(task_op(t0, 0)->state, RCOLL_P2P_DONE);
    assert_int_equal(task_op(t0, 0)->status, RCOLL_ERR_PEER_FAILED);
    assert_int_equal(t0->npending, 0);
    assert_int_equal(w->ctx[0]->p2p_pending, 0);
    assert_int_equal(w->ctx[0]->peer_failed[1], RCOLL_ERR_PEER_FAILED);
    assert_int_equal(reap(t0), RCOLL_ERR_INTERNAL);
    assert_int_equal(live_regs(w->ctx[0]), 0);
    assert_true(rcoll_list_empty(&w->ctx[0]->sends_wait_rtr));

    rcoll_comm_destroy(c[1]);
    c[1] = NULL;
    enter(w->ctx[1]);
    assert_int_equal(rcoll_config_set(w->ctx[1], "RCOLL_TIMEOUT", "0.2"), RCOLL_OK);
    (void)rcoll_finalize(w->ctx[1]);                          /* its port is dead already */
    w->ctx[1] = NULL;
    free(sb);
    comms_free(w, c);
    world_close(w, RCOLL_ERR_PEER_FAILED);      /* rank 0's finalize barrier includes rank 1 */
}

/* One message from `from` into ctx, as its transport would hand it over. */
static void inject(rcoll_context_t *ctx, int from, int type, uint32_t step, size_t len,
                   size_t body_len)
{
    static uint8_t msg[RCOLL_WIRE_HDR_SIZE + 2048];
    rcoll_wire_hdr_t h = { .type = (uint8_t)type, .version = RCOLL_WIRE_VERSION, .seq = 3,
                           .comm_id = TEST_COMM | 25, .step = step, .src = (uint32_t)from,
                           .len = len, .rkey_len = type == RCOLL_MSG_RTR || type == RCOLL_MSG_RTS ?
                                                  (uint16_t)body_len : 0 };
    assert_true(body_len <= 2048);
    rcoll_wire_encode(&h, msg);
    memset(msg + RCOLL_WIRE_HDR_SIZE, 0x5a, body_len);
    enter(ctx);
    rcoll_p2p_recv_cb(ctx, from, msg, RCOLL_WIRE_HDR_SIZE + body_len);
}

/* A broken or hostile peer: repeated control messages are kept once (the
 * fuzzer's "unbounded duplicate RTRs"); answers nobody asked for (PULL,
 * PULLED, CREDIT) are dropped; eager data beyond its credit is dropped, so
 * the receiver stays within its bound. */
static void test_cap_duplicates_and_floods(void **state)
{
    (void)state;
    world_t *w = world_open_with(2, "10", "UNEXPECTED_MAX=64k");
    rcoll_context_t *ctx = w->ctx[0];
    static const int kept[] = { RCOLL_MSG_RTR, RCOLL_MSG_RTS, RCOLL_MSG_HOLD, RCOLL_MSG_DECLINE,
                                RCOLL_MSG_WITHDRAW };
    size_t before = ctx->unexpected_count;
    for (int i = 0; i < 1000; i++) {
        for (int k = 0; k < 5; k++) {
            int key = kept[k] == RCOLL_MSG_RTR || kept[k] == RCOLL_MSG_RTS;
            inject(ctx, 1, kept[k], (uint32_t)k, 4096, key ? 16 : 0);
        }
        inject(ctx, 1, RCOLL_MSG_PULL, 9, 100, 0);
        inject(ctx, 1, RCOLL_MSG_PULLED, 9, 100, 100);
        inject(ctx, 1, RCOLL_MSG_CREDIT, 0, 1u << 20, 0);
    }
    /* WITHDRAW drops the RTS and the HOLD of its own key only (steps differ here). */
    assert_int_equal(ctx->unexpected_count, before + 5);
    assert_int_equal(ctx->flow[1].sent, 0);
    for (uint32_t i = 0; i < 1000; i++) {
        inject(ctx, 1, RCOLL_MSG_EAGER, 100 + i, 1000, 1000);
    }
    size_t per = rcoll__flow_charge(1000);
    assert_int_equal(ctx->unexpected_bytes, (CAP / per) * per);
    assert_true(ctx->unexpected_peak <= CAP);
    world_close(w, RCOLL_OK);
}

/* The fuzzer's "reserved header bytes ignored": a header whose reserved
 * bytes (44-47, wire.h) are not 0 is malformed and dropped, whatever the
 * rest says; the same message with them 0 is taken (the control). */
static void test_reserved_bytes_dropped(void **state)
{
    (void)state;
    world_t *w = world_open_with(2, "10", NULL);
    rcoll_context_t *ctx = w->ctx[0];
    static uint8_t msg[RCOLL_WIRE_HDR_SIZE + 64];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_EAGER, .version = RCOLL_WIRE_VERSION, .seq = 3,
                           .comm_id = TEST_COMM | 25, .step = 7, .src = 1, .len = 64 };
    size_t before = ctx->unexpected_count;
    for (int b = 44; b < RCOLL_WIRE_HDR_SIZE; b++) {
        rcoll_wire_encode(&h, msg);
        msg[b] = 0x01;
        enter(ctx);
        rcoll_p2p_recv_cb(ctx, 1, msg, sizeof(msg));
        assert_int_equal(ctx->unexpected_count, before);
    }
    rcoll_wire_encode(&h, msg);
    enter(ctx);
    rcoll_p2p_recv_cb(ctx, 1, msg, sizeof(msg));
    assert_int_equal(ctx->unexpected_count, before + 1);
    world_close(w, RCOLL_OK);
}

/* The fuzzer's "forged FIN completes receive": a rendezvous receive
 * completes only on a FIN from the rank it advertised its buffer to (the
 * transport names the sender), for its own transfer: the communicator,
 * sequence, step and the address its RTR advertised.  A FIN that differs
 * in any of them leaves it waiting; the real transfer then completes it
 * with the sender's bytes. */
static void test_forged_fin(void **state)
{
    (void)state;
    world_t *w = world_open(3, "10");
    rcoll_comm_t *c[MAXR];
    comms_make(w, TEST_COMM | 8, NULL, c);
    static script_t snd, rcv;
    memset(&snd, 0, sizeof(snd));
    memset(&rcv, 0, sizeof(rcv));
    size_t len = 2 * LIMIT;
    uint8_t *sb = malloc(len), *rb = calloc(1, len);
    assert_non_null(sb);
    assert_non_null(rb);
    fill(sb, len, 13);
    add(&rcv, RECV, 0, 4, rb, len, 0);
    add(&snd, SEND, 1, 4, sb, len, 0);
    rcoll_task_t *t[2];
    t[1] = start(c[1], &rcv);
    spin(w, SETTLE);                             /* the RTR is out: waiting for FIN */
    assert_false(t[1]->done);
    rcoll_wire_hdr_t real = { .type = RCOLL_MSG_FIN, .version = RCOLL_WIRE_VERSION,
                              .seq = t[1]->seq, .comm_id = TEST_COMM | 8, .step = 4, .src = 0,
                              .len = len, .addr = (uint64_t)(uintptr_t)rb, .sig = t[1]->sig };
    /* (another signature or length from the right rank fails the receive
     * instead: the peer is in another call, test_truncation_rndv) */
    rcoll_wire_hdr_t forged[5];
    for (int i = 0; i < 5; i++) {
        forged[i] = real;
    }
    forged[0].addr = 0;                      /* not the advertised buffer */
    forged[1].addr += 64;
    forged[2].seq++;
    forged[3].step++;
    forged[4].comm_id ^= 1;
    uint8_t msg[RCOLL_WIRE_HDR_SIZE];
    for (int i = 0; i < 5; i++) {
        rcoll_wire_encode(&forged[i], msg);
        enter(w->ctx[1]);
        rcoll_p2p_recv_cb(w->ctx[1], 0, msg, sizeof(msg));
        spin(w, 2);
        assert_false(t[1]->done);
    }
    rcoll_wire_encode(&real, msg);               /* right fields, from the wrong rank */
    enter(w->ctx[1]);
    rcoll_p2p_recv_cb(w->ctx[1], 2, msg, sizeof(msg));
    spin(w, 2);
    assert_false(t[1]->done);
    t[0] = start(c[0], &snd);
    finish(w, t, 2);
    assert_int_equal(reap(t[0]), RCOLL_OK);
    assert_int_equal(reap(t[1]), RCOLL_OK);
    assert_memory_equal(rb, sb, len);
    free(sb);
    free(rb);
    comms_free(w, c);
    world_close(w, RCOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_eager_recv_first),
        cmocka_unit_test(test_match_eager_unexpected),
        cmocka_unit_test(test_match_rndv_recv_first),
        cmocka_unit_test(test_match_rndv_send_first),
        cmocka_unit_test(test_unexpected_many),
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_rtr_before_send),
        cmocka_unit_test(test_truncation_eager),
        cmocka_unit_test(test_truncation_rndv),
        cmocka_unit_test(test_truncation_across_limit),
        cmocka_unit_test(test_cancel_rndv_recv),
        cmocka_unit_test(test_cancel_eager_recv),
        cmocka_unit_test(test_cancel_put_in_flight),
        cmocka_unit_test(test_deadline_recv),
        cmocka_unit_test(test_deadline_public),
        cmocka_unit_test(test_recv_after_peer_left),
        cmocka_unit_test(test_peer_failure),
        cmocka_unit_test(test_cap_many_ahead),
        cmocka_unit_test(test_cap_posted_at_cap),
        cmocka_unit_test(test_cap_zero_held),
        cmocka_unit_test(test_cap_held_send_withdrawn),
        cmocka_unit_test(test_pull_rendezvous),
        cmocka_unit_test(test_pull_withdrawn_reader_dies),
        cmocka_unit_test(test_cap_duplicates_and_floods),
        cmocka_unit_test(test_reserved_bytes_dropped),
        cmocka_unit_test(test_forged_fin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
