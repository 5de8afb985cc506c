/*
 * test_whereis.c - "where is everyone" across nodes (src/whereis_remote.c):
 * a timeout's report asks the other node over the transport.
 *
 * Three contexts over the loop transport in one process, made by
 * rcoll_init_oob in threads, on two nodes by their node strings: world rank
 * 0 on node "a", ranks 1 and 2 on node "b" (which share a where table).  The
 * test communicator lists them as 0, 2, 1, so rank 0 asks world rank 2
 * first.
 *  - a node neighbour answers for a stuck rank: rank 2 never progresses,
 *    rank 1 does (in a thread); rank 0's query reaches rank 1 after the
 *    0.25 s retry and the answer carries what the table says of both;
 *  - nobody answers: the ask ends after its 1 s bound, saying so;
 *  - hostile input: malformed queries and answers (sizes, counts, ranks,
 *    nonce, unit, records) are dropped, and forged answers sent while a
 *    query is in flight are not taken for an answer.
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
#include <cmocka.h>

#include "core.h"
#include "wire.h"
#include "whereis.h"

#define N       3
#define COMM_ID 0x7700000001ull
#define ENTERED (((uint64_t)4 + 1) << 8 | (uint64_t)RCOLL_COLL_ALLREDUCE)   /* seq 4 */

typedef struct {
    rcoll_context_t  *ctx[N];
    rcoll_comm_t     *comm[N];
    pthread_barrier_t bar;
    unsigned char    *buf;
    size_t            cap;
} world_t;

typedef struct {
    world_t       *w;
    int            rank;
    rcoll_status_t st;
} member_t;

static int ag(const void *in, void *out, size_t len, void *arg)
{
    member_t *m = arg;
    world_t *w = m->w;
    pthread_barrier_wait(&w->bar);
    if (m->rank == 0 && w->cap < N * len) {
        free(w->buf);
        w->cap = N * len;
        w->buf = malloc(w->cap);
    }
    pthread_barrier_wait(&w->bar);
    memcpy(w->buf + (size_t)m->rank * len, in, len);
    pthread_barrier_wait(&w->bar);
    memcpy(out, w->buf, N * len);
    pthread_barrier_wait(&w->bar);
    return 0;
}

static void *member_init(void *arg)
{
    member_t *m = arg;
    const char *const config[] = { "TRANSPORT=loop", "SHM=0", NULL };
    rcoll_oob_t oob = { .rank = m->rank, .size = N, .allgather = ag, .arg = m,
                        .node = m->rank == 0 ? "node-a" : "node-b" };
    m->st = rcoll_init_oob(&oob, config, &m->w->ctx[m->rank]);
    return NULL;
}

static world_t *world_open(void)
{
    world_t *w = calloc(1, sizeof(*w));
    pthread_t t[N];
    member_t m[N];
    assert_non_null(w);
    pthread_barrier_init(&w->bar, NULL, N);
    for (int r = 0; r < N; r++) {
        m[r] = (member_t){ .w = w, .rank = r };
        assert_int_equal(pthread_create(&t[r], NULL, member_init, &m[r]), 0);
    }
    for (int r = 0; r < N; r++) {
        pthread_join(t[r], NULL);
        assert_int_equal(m[r].st, RCOLL_OK);
    }
    assert_int_equal(w->ctx[0]->nnodes, 2);
    assert_int_not_equal(w->ctx[0]->node_of[0], w->ctx[0]->node_of[2]);
    static const int order[N] = { 0, 2, 1 };
    for (int r = 0; r < N; r++) {
        int *wr = malloc(sizeof(order));
        assert_non_null(wr);
        memcpy(wr, order, sizeof(order));
        int me = r == 0 ? 0 : r == 2 ? 1 : 2;
        assert_int_equal(rcoll_comm_create(w->ctx[r], COMM_ID, me, N, wr, &w->comm[r]), RCOLL_OK);
    }
    /* rank 1 has entered allreduce sequence 4 and waits in rcoll; rank 2 has not */
    atomic_store(&((rcoll_where_comm_t *)w->comm[1]->where)->entered, ENTERED);
    rcoll_whereis_inside(w->ctx[1], 1);
    return w;
}

static void *member_fini(void *arg)
{
    member_t *m = arg;
    m->st = rcoll_finalize(m->w->ctx[m->rank]);
    return NULL;
}

/* rcoll_finalize is collective: every rank in its thread.  First every
 * rank answers the queries still in its inbox (rank 2 never progressed)
 * while the asker is there to take the answer: an answer sent to a rank
 * that has closed its transport would report that rank failed. */
static void world_close(world_t *w)
{
    for (int i = 0; i < 8 * RCOLL_TL_POLL_IDLE; i++) {
        for (int r = 0; r < N; r++) {
            rcoll_log_enter(&w->ctx[r]->log);
            rcoll_context_progress(w->ctx[r]);
        }
    }
    pthread_t t[N];
    member_t m[N];
    for (int r = 0; r < N; r++) {
        rcoll_comm_destroy(w->comm[r]);
        m[r] = (member_t){ .w = w, .rank = r };
        assert_int_equal(pthread_create(&t[r], NULL, member_fini, &m[r]), 0);
    }
    for (int r = 0; r < N; r++) {
        pthread_join(t[r], NULL);
        if (m[r].st != RCOLL_OK) {
            fail_msg("rcoll_finalize of rank %d: %s", r, rcoll_strerror(m[r].st));
        }
    }
    pthread_barrier_destroy(&w->bar);
    free(w->buf);
    free(w);
}

/* ---- helper threads: rank 1 progressing (answering), or forging answers ---- */

typedef struct {
    world_t    *w;
    atomic_int  stop;
    int         forge;       /* send forged WHERE_A to rank 0 instead of progressing */
    int         forged;      /* how many */
} helper_t;

static void send_raw(rcoll_context_t *ctx, int to, const rcoll_wire_hdr_t *h, const void *body)
{
    uint8_t hdr[RCOLL_WIRE_HDR_SIZE];
    rcoll_wire_encode(h, hdr);
    (void)ctx->peer_ops[to]->send(ctx->peer_tl[to], to, hdr, sizeof(hdr), body, h->len);
}

/* Forged answers to rank 0's query in flight: each breaks one rule. */
static void forge(helper_t *hp)
{
    rcoll_context_t *c0 = hp->w->ctx[0], *c1 = hp->w->ctx[1];
    struct rcoll_whereis *w0 = c0->whereis;
    while (__atomic_load_n(&w0->fetch, __ATOMIC_ACQUIRE) == NULL && !atomic_load(&hp->stop)) {
        sched_yield();
    }
    uint32_t nonce = __atomic_load_n(&w0->nonce, __ATOMIC_ACQUIRE);
    uint8_t body[4 * 72];
    memset(body, 0, sizeof(body));
    /* records for world ranks 2 and 1, in the order asked, flags "known" */
    body[0] = 2; body[4] = 1;
    body[72] = 1; body[76] = 1;
    rcoll_wire_hdr_t good = { .type = RCOLL_MSG_WHERE_A, .version = RCOLL_WIRE_VERSION,
                              .comm_id = COMM_ID, .step = nonce, .addr = 0, .len = 2 * 72 };
    rcoll_wire_hdr_t h;
    h = good; h.step = nonce + 1;           send_raw(c1, 0, &h, body);   /* stale nonce */
    h = good; h.comm_id = COMM_ID + 1;      send_raw(c1, 0, &h, body);   /* other comm */
    h = good; h.addr = 1;                   send_raw(c1, 0, &h, body);   /* no such unit */
    h = good; h.addr = 1ull << 40;          send_raw(c1, 0, &h, body);
    h = good; h.len = 72;                   send_raw(c1, 0, &h, body);   /* one record short */
    h = good; h.len = 3 * 72;               send_raw(c1, 0, &h, body);   /* one too many */
    h = good; h.len = 2 * 72 - 1;           send_raw(c1, 0, &h, body);
    h = good; h.len = 0;                    send_raw(c1, 0, &h, body);
    uint8_t swapped[sizeof(body)];
    memcpy(swapped, body, sizeof(body));
    swapped[0] = 1; swapped[72] = 2;        /* records out of order */
    send_raw(c1, 0, &good, swapped);
    swapped[0] = 0xff; swapped[3] = 0xff; swapped[72] = 1;   /* a rank that does not exist */
    send_raw(c1, 0, &good, swapped);
    hp->forged = 10;
}

static void *helper(void *arg)
{
    helper_t *hp = arg;
    if (hp->forge) {
        forge(hp);
        return NULL;
    }
    rcoll_context_t *c1 = hp->w->ctx[1];
    while (!atomic_load(&hp->stop)) {
        rcoll_log_enter(&c1->log);
        rcoll_context_progress(c1);
        sched_yield();
    }
    return NULL;
}

/* rank 0 asks; returns the remote state and the seconds it took */
static rcoll_where_remote_t *ask(world_t *w, int forge_answers, double *secs)
{
    helper_t hp = { .w = w, .forge = forge_answers };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, helper, &hp), 0);
    rcoll_log_enter(&w->ctx[0]->log);
    double t0 = rcoll_time_now();
    rcoll_where_remote_t *rem = rcoll__whereis_ask(w->ctx[0], w->comm[0], 4);
    *secs = rcoll_time_now() - t0;
    atomic_store(&hp.stop, 1);
    pthread_join(t, NULL);
    if (forge_answers) {
        assert_int_equal(hp.forged, 10);
    }
    return rem;
}

static void test_neighbour_answers(void **state)
{
    (void)state;
    world_t *w = world_open();
    double secs;
    rcoll_where_remote_t *rem = ask(w, 0, &secs);
    assert_non_null(rem);
    assert_true(secs >= RCOLL_WHERE_ASK_S * 0.9 && secs < RCOLL_WHERE_ASK_S + 1.0);
    rcoll_where_rank_t tmp;
    char why[128];
    /* comm rank 2 is world rank 1: entered allreduce sequence 4, waiting in rcoll */
    const rcoll_where_rank_t *r = rcoll__whereis_remote(rem, 2, &tmp, why, sizeof(why));
    assert_non_null(r);
    assert_int_equal(atomic_load(&r->world_rank), 1);
    assert_int_equal(atomic_load(&r->pid), 1);
    assert_int_equal(atomic_load(&r->inside), 1);
    assert_int_equal(atomic_load(&r->comms[0].comm_id), COMM_ID);
    assert_int_equal(atomic_load(&r->comms[0].entered), ENTERED);
    /* comm rank 1 is world rank 2, stuck: answered for by rank 1 */
    r = rcoll__whereis_remote(rem, 1, &tmp, why, sizeof(why));
    assert_non_null(r);
    assert_int_equal(atomic_load(&r->world_rank), 2);
    assert_int_equal(atomic_load(&r->pid), 1);
    assert_int_equal(atomic_load(&r->inside), 0);
    assert_int_equal(atomic_load(&r->comms[0].entered), 0);
    rcoll__whereis_remote_free(rem);
    world_close(w);
}

static void test_no_answer(void **state)
{
    (void)state;
    world_t *w = world_open();
    rcoll_log_enter(&w->ctx[0]->log);
    double t0 = rcoll_time_now();
    rcoll_where_remote_t *rem = rcoll__whereis_ask(w->ctx[0], w->comm[0], 4);
    double secs = rcoll_time_now() - t0;
    assert_non_null(rem);
    assert_true(secs >= RCOLL_WHERE_ASK_S * 0.9 && secs < RCOLL_WHERE_ASK_S + 1.0);
    rcoll_where_rank_t tmp;
    char why[128];
    assert_null(rcoll__whereis_remote(rem, 1, &tmp, why, sizeof(why)));
    assert_non_null(strstr(why, "no answer from node"));
    assert_null(rcoll__whereis_remote(rem, 2, &tmp, why, sizeof(why)));
    rcoll__whereis_remote_free(rem);
    world_close(w);
}

static void test_forged_answers(void **state)
{
    (void)state;
    world_t *w = world_open();
    double secs;
    rcoll_where_remote_t *rem = ask(w, 1, &secs);
    assert_non_null(rem);
    rcoll_where_rank_t tmp;
    char why[128];
    assert_null(rcoll__whereis_remote(rem, 1, &tmp, why, sizeof(why)));
    assert_null(rcoll__whereis_remote(rem, 2, &tmp, why, sizeof(why)));
    rcoll__whereis_remote_free(rem);
    world_close(w);
}

/* Malformed queries and answers handed to the receive path directly: no
 * crash, nothing taken, and a sane query after them is still answered. */
static void test_malformed(void **state)
{
    (void)state;
    world_t *w = world_open();
    rcoll_context_t *c1 = w->ctx[1];
    uint8_t msg[RCOLL_WIRE_HDR_SIZE + 8192 + 64];
    uint32_t ranks[80];
    for (int i = 0; i < 80; i++) {
        ranks[i] = i % 2 ? 0xffffffffu : (uint32_t)(i % 5);
    }
    static const uint64_t lens[] = { 0, 3, 4, 8, 256, 260, 320, 8192, 8196 };
    rcoll_log_enter(&c1->log);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (int type = RCOLL_MSG_WHERE_Q; type <= RCOLL_MSG_WHERE_A; type++) {
            rcoll_wire_hdr_t h = { .type = (uint8_t)type, .version = RCOLL_WIRE_VERSION,
                                   .comm_id = i % 3 ? COMM_ID : 0, .len = lens[i],
                                   .addr = i, .step = (uint32_t)i };
            size_t body = lens[i] < sizeof(msg) - RCOLL_WIRE_HDR_SIZE ? lens[i] : 0;
            rcoll_wire_encode(&h, msg);
            memset(msg + RCOLL_WIRE_HDR_SIZE, 0xa5, body);
            memcpy(msg + RCOLL_WIRE_HDR_SIZE, ranks, body < sizeof(ranks) ? body : sizeof(ranks));
            for (int peer = 0; peer < N; peer++) {
                rcoll_p2p_recv_cb(c1, peer, msg, RCOLL_WIRE_HDR_SIZE + body);
                rcoll_p2p_recv_cb(c1, peer, msg, RCOLL_WIRE_HDR_SIZE + body / 2);   /* len lies */
            }
        }
    }
    /* rank 0 received rank 1's answers to the queries it "sent": no query of
     * its own is in flight, so they are dropped; then a real one works */
    for (int i = 0; i < 64; i++) {
        rcoll_log_enter(&w->ctx[0]->log);
        rcoll_context_progress(w->ctx[0]);
    }
    double secs;
    rcoll_where_remote_t *rem = ask(w, 0, &secs);
    rcoll_where_rank_t tmp;
    char why[128];
    assert_non_null(rcoll__whereis_remote(rem, 2, &tmp, why, sizeof(why)));
    assert_int_equal(atomic_load(&tmp.comms[0].entered), ENTERED);
    rcoll__whereis_remote_free(rem);
    world_close(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neighbour_answers),
        cmocka_unit_test(test_no_answer),
        cmocka_unit_test(test_forged_answers),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
