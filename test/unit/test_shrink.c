/*
 * test_shrink.c - revoke, rcoll_comm_failed and rcoll_comm_shrink (src/revoke.c,
 * src/comm_shrink.c) over the loop transport: 4-5 real contexts in one process,
 * each driven by its own thread while it runs a blocking call.
 *
 * A rank "dies" as a closed process would look to the others: its loop port
 * is killed and every peer gets the transport's dead notice; it sends nothing
 * more.  Failures during the shrink are placed exactly by letting the victim
 * play its part of the agreement by hand (a proposal, a decision sent to one
 * rank) and then die.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include "core.h"
#include "ft.h"
#include "wire.h"
#include "loop_int.h"

#define MAXR 6

typedef struct world world_t;
typedef void (*rank_fn_t)(world_t *w, int rank);

struct world {
    int                n;
    rcoll_context_t   *ctx[MAXR];
    pthread_barrier_t  bar;
    unsigned char     *buf;
    size_t             cap;
    const char *const *config;
    rank_fn_t          fn;
    /* results, per rank */
    rcoll_status_t     st[MAXR], st2[MAXR];
    rcoll_comm_t      *newcomm[MAXR];
    double             took[MAXR];
};

typedef struct {
    world_t *w;
    int      rank;
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
    rcoll_oob_t oob = { .rank = m->rank, .size = m->w->n, .allgather = ag, .arg = m };
    m->w->st[m->rank] = rcoll_init_oob(&oob, m->w->config, &m->w->ctx[m->rank]);
    return NULL;
}

static void *member_run(void *arg)
{
    member_t *m = arg;
    rcoll_log_enter(&m->w->ctx[m->rank]->log);
    m->w->fn(m->w, m->rank);
    return NULL;
}

static void *member_fini(void *arg)
{
    member_t *m = arg;
    m->w->st[m->rank] = rcoll_finalize(m->w->ctx[m->rank]);
    return NULL;
}

/* fn on each rank whose bit is in mask, each in its own thread. */
static void run_ranks(world_t *w, void *(*fn)(void *), unsigned mask)
{
    pthread_t t[MAXR];
    member_t m[MAXR];
    for (int r = 0; r < w->n; r++) {
        m[r] = (member_t){ .w = w, .rank = r };
        if (mask & (1u << r)) {
            assert_int_equal(pthread_create(&t[r], NULL, fn, &m[r]), 0);
        }
    }
    for (int r = 0; r < w->n; r++) {
        if (mask & (1u << r)) {
            pthread_join(t[r], NULL);
        }
    }
}

static void run(world_t *w, rank_fn_t fn, unsigned mask)
{
    w->fn = fn;
    run_ranks(w, member_run, mask);
}

static world_t *world_open(int n, const char *timeout)
{
    char tmo[64];
    snprintf(tmo, sizeof(tmo), "TIMEOUT=%s", timeout);
    const char *config[] = { "TRANSPORT=loop", "SHM=0", tmo, NULL };
    world_t *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->n = n;
    w->config = config;
    pthread_barrier_init(&w->bar, NULL, (unsigned)n);
    run_ranks(w, member_init, (1u << n) - 1);
    for (int r = 0; r < n; r++) {
        assert_int_equal(w->st[r], RCOLL_OK);
    }
    w->config = NULL;
    return w;
}

/* Finalize all: the world was revoked, so no finalize may wait (each
 * returns at once with an error) and none may crash. */
static void world_close(world_t *w)
{
    double t0 = rcoll_time_now();
    run_ranks(w, member_fini, (1u << w->n) - 1);
    assert_true(rcoll_time_now() - t0 < 3);
    pthread_barrier_destroy(&w->bar);
    free(w->buf);
    free(w);
}

/* Rank r dies: it sends nothing more, its port takes nothing more, and each
 * peer gets the loop transport's dead notice (as when a process exits). */
static void die(world_t *w, int r)
{
    rcoll_context_t *v = w->ctx[r];
    struct rcoll_tl *tl = v->tls[0];
    for (int q = 0; q < w->n; q++) {
        if (q != r) {
            v->peer_failed[q] = RCOLL_ERR_PEER_FAILED;
        }
    }
    rcoll__loop_port_kill(tl->port);
    for (int q = 0; q < w->n; q++) {
        if (q != r && tl->peers[q] != NULL) {
            loop_msg_t *m = calloc(1, sizeof(*m));
            assert_non_null(m);
            m->src = r;
            m->kind = LOOP_MSG_DEAD;
            if (rcoll__loop_port_post(tl->peers[q], m) != RCOLL_OK) {
                free(m);
            }
        }
    }
}

/* Progress ctx until it holds want shrink messages (bounded: 5 s). */
static void wait_msgs(rcoll_context_t *ctx, int want)
{
    double end = rcoll_time_now() + 5;
    while ((ctx->ft == NULL || ctx->ft->nmsgs < want) && rcoll_time_now() < end) {
        rcoll_context_progress(ctx);
    }
    assert_true(ctx->ft != NULL && ctx->ft->nmsgs >= want);
}

/* Send by hand one message of the shrink agreement on comm (epoch 0). */
static void send_shrink(rcoll_comm_t *comm, int to, int kind, int round, const uint8_t *set,
                        uint64_t id)
{
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_SHRINK, .version = RCOLL_WIRE_VERSION, .seq = 0,
                           .comm_id = comm->id, .step = (uint32_t)round << 2 | (uint32_t)kind,
                           .src = (uint32_t)comm->rank, .len = (uint64_t)comm->size, .addr = id };
    assert_int_equal(rcoll__ft_send(comm->ctx, comm->world_ranks[to], &h, set,
                                    (size_t)comm->size), RCOLL_OK);
}
enum { K_PROPOSE = 0, K_DECIDE = 1, K_ACK = 2, K_COMMIT = 3 };   /* as comm_shrink.c */

/* ---- what the survivors do ---- */

static int64_t sum_of_world_ranks(const rcoll_comm_t *c)
{
    int64_t s = 0;
    for (int i = 0; i < c->size; i++) {
        s += c->world_ranks[i];
    }
    return s;
}

/* allreduce on comm until one fails (a rank may complete the one its peer
 * died in, if all it needed had arrived: the next cannot); at most 3. */
static rcoll_status_t until_fails(rcoll_comm_t *comm, double *took)
{
    double t0 = rcoll_time_now();
    rcoll_status_t st = RCOLL_OK;
    for (int i = 0; i < 3 && st == RCOLL_OK; i++) {
        int64_t x = comm->rank, y = -1;
        st = rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, comm);
        if (st == RCOLL_OK) {
            assert_int_equal(y, (int64_t)comm->size * (comm->size - 1) / 2);
        }
    }
    *took = rcoll_time_now() - t0;
    return st;
}

/* allreduce on the world (fails: someone died), shrink, then allreduce and
 * bcast on the new communicator must give the right results. */
static void survivor(world_t *w, int r)
{
    rcoll_context_t *ctx = w->ctx[r];
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int64_t x, y = 0;
    w->st[r] = until_fails(world, &w->took[r]);
    w->st2[r] = rcoll_comm_shrink(world, &w->newcomm[r]);
    if (w->st2[r] != RCOLL_OK) {
        return;
    }
    rcoll_comm_t *nc = w->newcomm[r];
    x = ctx->rank;
    assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, nc), RCOLL_OK);
    assert_int_equal(y, sum_of_world_ranks(nc));
    int64_t b = nc->rank == nc->size - 1 ? 4242 : 0;
    assert_int_equal(rcoll_bcast(&b, 1, RCOLL_INT64, nc->size - 1, nc), RCOLL_OK);
    assert_int_equal(b, 4242);
}

/* Every survivor has the same new communicator: alive, in world order. */
static void check_new(world_t *w, unsigned alive)
{
    uint64_t id = 0;
    int size = __builtin_popcount(alive);
    for (int r = 0; r < w->n; r++) {
        if (!(alive & (1u << r))) {
            continue;
        }
        assert_int_equal(w->st2[r], RCOLL_OK);
        rcoll_comm_t *nc = w->newcomm[r];
        assert_non_null(nc);
        assert_int_equal(nc->size, size);
        if (id == 0) {
            id = nc->id;
        }
        assert_true(nc->id == id);
        int i = 0;
        for (int q = 0; q < w->n; q++) {
            if (alive & (1u << q)) {
                assert_int_equal(nc->world_ranks[i], q);
                if (q == r) {
                    assert_int_equal(nc->rank, i);
                }
                i++;
            }
        }
    }
}

static void free_new(world_t *w)
{
    for (int r = 0; r < w->n; r++) {
        if (w->newcomm[r] != NULL) {
            assert_int_equal(rcoll_comm_free(w->newcomm[r]), RCOLL_OK);
            w->newcomm[r] = NULL;
        }
    }
}

/* ---- revoke ---- */

static rcoll_comm_t *pair[MAXR];    /* world ranks 0 and 1 only */

/* Rank 3 dies in its allreduce; the others' allreduce fails within a
 * fraction of RCOLL_TIMEOUT (10 s), a later one at once; the communicator
 * of ranks 0 and 1 keeps working; rcoll_comm_failed names rank 3. */
static void revoke_rank(world_t *w, int r)
{
    rcoll_context_t *ctx = w->ctx[r];
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int64_t x = r, y = 0;
    if (r == 3) {
        rcoll_request_t *req;
        assert_int_equal(rcoll_iallreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, world, &req),
                         RCOLL_OK);
        die(w, 3);                           /* its first messages are out */
        w->st[r] = rcoll_wait(req);          /* its own view does not matter */
        return;
    }
    w->st[r] = until_fails(world, &w->took[r]);
    double t0 = rcoll_time_now();
    w->st2[r] = rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, world);
    assert_true(rcoll_time_now() - t0 < 0.5);
    if (r < 2) {
        x = 10 + r;
        assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, pair[r]), RCOLL_OK);
        assert_int_equal(y, 21);
    }
    /* the transport's notice of rank 3 reaches everyone */
    double end = rcoll_time_now() + 5;
    while (ctx->peer_failed[3] == RCOLL_OK && rcoll_time_now() < end) {
        rcoll_context_progress(ctx);
    }
    int ranks[4] = { -1, -1, -1, -1 };
    assert_int_equal(rcoll_comm_failed(world, ranks, 4), 1);
    assert_int_equal(ranks[0], 3);
    assert_int_equal(rcoll_comm_failed(world, NULL, 0), 1);
    assert_int_equal(rcoll_comm_failed(pair[0] && r < 2 ? pair[r] : world, ranks, 4),
                     r < 2 ? 0 : 1);
}

static void deliver_revoke(rcoll_context_t *ctx, int from, uint64_t comm_id, uint32_t err,
                           uint32_t failed)
{
    uint8_t msg[RCOLL_WIRE_HDR_SIZE];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_REVOKE, .version = RCOLL_WIRE_VERSION, .seq = err,
                           .comm_id = comm_id, .step = failed, .src = 0 };
    rcoll_wire_encode(&h, msg);
    rcoll_p2p_recv_cb(ctx, from, msg, sizeof(msg));
}

static void test_revoke(void **state)
{
    (void)state;
    world_t *w = world_open(4, "10");
    for (int r = 0; r < 2; r++) {
        int *wr = malloc(2 * sizeof(int));
        wr[0] = 0;
        wr[1] = 1;
        assert_int_equal(rcoll_comm_create(w->ctx[r], 0x7e57000000000001ull >> 1, r, 2, wr,
                                           &pair[r]), RCOLL_OK);
    }
    run(w, revoke_rank, 0xf);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(w->st[r], RCOLL_ERR_PEER_FAILED);
        assert_true(w->took[r] < 5);
        assert_int_equal(w->st2[r], RCOLL_ERR_PEER_FAILED);
    }

    /* Hostile REVOKEs are dropped: unknown comm, a sender outside it, a
     * failed rank outside it, no error; a good one revokes. */
    rcoll_context_t *c0 = w->ctx[0];
    rcoll_log_enter(&c0->log);
    deliver_revoke(c0, 1, 0x123456789ull, RCOLL_ERR_PEER_FAILED, UINT32_MAX);
    deliver_revoke(c0, 2, pair[0]->id, RCOLL_ERR_PEER_FAILED, UINT32_MAX);
    deliver_revoke(c0, 1, pair[0]->id, RCOLL_ERR_PEER_FAILED, 3);
    deliver_revoke(c0, 1, pair[0]->id, RCOLL_ERR_PEER_FAILED, 77);
    deliver_revoke(c0, 1, pair[0]->id, RCOLL_OK, UINT32_MAX);
    deliver_revoke(c0, 1, pair[0]->id, 9999, UINT32_MAX);
    assert_int_equal(pair[0]->revoked, RCOLL_OK);
    deliver_revoke(c0, 1, pair[0]->id, RCOLL_ERR_TIMEOUT, UINT32_MAX);
    assert_int_equal(pair[0]->revoked, RCOLL_ERR_PEER_FAILED);
    int64_t x = 1, y;
    assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, pair[0]),
                     RCOLL_ERR_PEER_FAILED);
    assert_int_equal(rcoll_comm_failed(pair[0], NULL, 0), 0);
    for (int r = 0; r < 2; r++) {
        rcoll_log_enter(&w->ctx[r]->log);
        assert_int_equal(rcoll_comm_free(pair[r]), RCOLL_OK);
    }
    world_close(w);
}

/* ---- shrink ---- */

static void kill2_rank(world_t *w, int r)
{
    if (r == 2) {
        int64_t x = r, y;
        rcoll_request_t *req;
        assert_int_equal(rcoll_iallreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM,
                                          rcoll_comm_world(w->ctx[r]), &req), RCOLL_OK);
        die(w, 2);                           /* its first messages are out */
        w->st[r] = rcoll_wait(req);
        return;
    }
    survivor(w, r);
}

/* Rank 2 dies mid-allreduce: the 4 others get PEER_FAILED, shrink to
 * world ranks 0, 1, 3, 4 and compute right on the new communicator. */
static void test_shrink_after_kill(void **state)
{
    (void)state;
    world_t *w = world_open(5, "10");
    run(w, kill2_rank, 0x1f);
    for (int r = 0; r < 5; r++) {
        if (r != 2) {
            assert_int_equal(w->st[r], RCOLL_ERR_PEER_FAILED);
            assert_true(w->took[r] < 5);
            int ranks[5];
            assert_int_equal(rcoll_comm_failed(rcoll_comm_world(w->ctx[r]), ranks, 5), 1);
            assert_int_equal(ranks[0], 2);
        }
    }
    check_new(w, 0x1b);
    free_new(w);
    world_close(w);
}

/* Rank 2 died before; rank 4 proposes, then dies once the coordinator has
 * decided (with it): the coordinator decides again without it. */
static void second_rank(world_t *w, int r)
{
    if (r == 4) {
        rcoll_comm_t *world = rcoll_comm_world(w->ctx[4]);
        uint8_t F[5] = { 0, 0, 1, 0, 0 };
        send_shrink(world, 0, K_PROPOSE, 0, F, 0);
        wait_msgs(w->ctx[4], 1);                /* the decision (with rank 4) */
        rcoll_ft_msg_t *m = rcoll_container_of(w->ctx[4]->ft->msgs.next, rcoll_ft_msg_t, link);
        assert_int_equal(m->hdr.step & 3, K_DECIDE);
        assert_int_equal(m->body[4], 0);
        die(w, 4);
        return;
    }
    survivor(w, r);
}

static void test_shrink_second_failure(void **state)
{
    (void)state;
    world_t *w = world_open(5, "10");
    die(w, 2);
    run(w, second_rank, 0x1b);
    check_new(w, 0x0b);
    free_new(w);
    world_close(w);
}

/* Rank 4 died before; coordinator rank 0 collects every proposal, sends
 * its decision to rank 1 only and dies: rank 1 takes over. */
static void coordinator_rank(world_t *w, int r)
{
    if (r == 0) {
        rcoll_comm_t *world = rcoll_comm_world(w->ctx[0]);
        wait_msgs(w->ctx[0], 3);
        uint8_t D[5] = { 0, 0, 0, 0, 1 };
        send_shrink(world, 1, K_DECIDE, 0, D, rcoll__comm_id_next(w->ctx[0]));
        die(w, 0);
        return;
    }
    survivor(w, r);
}

static void test_shrink_coordinator_fails(void **state)
{
    (void)state;
    world_t *w = world_open(5, "10");
    die(w, 4);
    run(w, coordinator_rank, 0x0f);
    check_new(w, 0x0e);
    free_new(w);
    world_close(w);
}

/* The coordinator commits to rank 1 only and dies: rank 1 forwards the
 * commit, so everyone ends with that decision (which still holds the dead
 * coordinator); the next collective fails and a second shrink removes it. */
static void commit_rank(world_t *w, int r)
{
    if (r == 0) {
        rcoll_comm_t *world = rcoll_comm_world(w->ctx[0]);
        wait_msgs(w->ctx[0], 3);
        uint8_t D[5] = { 0, 0, 0, 0, 1 };
        send_shrink(world, 1, K_COMMIT, 0, D, rcoll__comm_id_next(w->ctx[0]));
        die(w, 0);
        return;
    }
    rcoll_context_t *ctx = w->ctx[r];
    rcoll_comm_t *first;
    int64_t x = r, y;
    w->st[r] = rcoll_comm_shrink(rcoll_comm_world(ctx), &first);
    assert_int_equal(w->st[r], RCOLL_OK);
    assert_int_equal(first->size, 4);
    assert_int_equal(first->world_ranks[0], 0);
    assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, first),
                     RCOLL_ERR_PEER_FAILED);
    w->st2[r] = rcoll_comm_shrink(first, &w->newcomm[r]);
    assert_int_equal(rcoll_comm_free(first), RCOLL_OK);
    if (w->st2[r] == RCOLL_OK) {
        rcoll_comm_t *nc = w->newcomm[r];
        x = ctx->rank;
        assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, nc), RCOLL_OK);
        assert_int_equal(y, 6);
    }
}

static void test_shrink_commit_forwarded(void **state)
{
    (void)state;
    world_t *w = world_open(5, "10");
    die(w, 4);
    run(w, commit_rank, 0x0f);
    check_new(w, 0x0e);
    free_new(w);
    world_close(w);
}

/* Rank 3 is alive but silent (as if stopped) while the others run: they
 * time out (RCOLL_TIMEOUT 0.5 s), shrink without it; when it moves again,
 * its allreduce on the old world fails at once and its shrink says it was
 * declared failed: it is never readmitted. */
static void silent_rank(world_t *w, int r)
{
    if (r != 3) {
        survivor(w, r);
        return;
    }
    rcoll_context_t *ctx = w->ctx[3];
    int64_t x = 3, y;
    double t0 = rcoll_time_now();
    w->st[3] = rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, rcoll_comm_world(ctx));
    w->took[3] = rcoll_time_now() - t0;
    w->st2[3] = rcoll_comm_shrink(rcoll_comm_world(ctx), &w->newcomm[3]);
}

static void test_shrink_silent_rank(void **state)
{
    (void)state;
    world_t *w = world_open(4, "0.5");
    run(w, silent_rank, 0x7);
    for (int r = 0; r < 3; r++) {
        assert_true(w->st[r] == RCOLL_ERR_TIMEOUT || w->st[r] == RCOLL_ERR_PEER_FAILED);
    }
    check_new(w, 0x7);
    run(w, silent_rank, 0x8);
    assert_true(w->st[3] != RCOLL_OK);
    assert_true(w->took[3] < 1);
    assert_int_equal(w->st2[3], RCOLL_ERR_PEER_FAILED);
    assert_null(w->newcomm[3]);
    free_new(w);
    world_close(w);
}

/* Nothing failed: the shrink is a dup (same ranks, new id). */
static void nothing_rank(world_t *w, int r)
{
    rcoll_comm_t *world = rcoll_comm_world(w->ctx[r]);
    assert_int_equal(rcoll_comm_failed(world, NULL, 0), 0);
    w->st2[r] = rcoll_comm_shrink(world, &w->newcomm[r]);
    int64_t x = r, y;
    assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, w->newcomm[r]), RCOLL_OK);
    assert_int_equal(y, 6);
    assert_int_equal(rcoll_allreduce(&x, &y, 1, RCOLL_INT64, RCOLL_SUM, world), RCOLL_OK);
}

static void test_shrink_nothing_failed(void **state)
{
    (void)state;
    world_t *w = world_open(4, "10");
    run(w, nothing_rank, 0xf);
    check_new(w, 0xf);
    assert_true(w->newcomm[0]->id != 1);
    free_new(w);
    for (int r = 0; r < 4; r++) {           /* close normally: nothing was revoked */
        assert_int_equal(rcoll_comm_world(w->ctx[r])->revoked, RCOLL_OK);
    }
    world_close(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revoke),
        cmocka_unit_test(test_shrink_nothing_failed),
        cmocka_unit_test(test_shrink_after_kill),
        cmocka_unit_test(test_shrink_second_failure),
        cmocka_unit_test(test_shrink_coordinator_fails),
        cmocka_unit_test(test_shrink_commit_forwarded),
        cmocka_unit_test(test_shrink_silent_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
