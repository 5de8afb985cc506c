/*
 * test_p2p_failed.c - matching against failed peers (src/p2p.c): a peer that sent
 * its eager message and then exited is reported failed by some transports
 * as soon as it closes (UCX under srun -N 2, at finalize); a receive posted
 * after that must still take the message that arrived, and only a receive
 * with nothing to take fails.  No transport: messages go in through
 * rcoll_p2p_recv_cb and failures through rcoll_p2p_peer_error_cb.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core.h"
#include "wire.h"

enum { ME = 0, PEER = 1, SEQ = 7 };
static const uint64_t COMM_ID = 0x42;

typedef struct {
    struct rcoll_context ctx;
    rcoll_comm_t         comm;
    int                  world_ranks[2];
    int                  failed[2];
    rcoll_tl_t          *peer_tl[2];
    const rcoll_tl_ops_t *peer_ops[2];
    rcoll_task_block_t   block;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    rcoll_context_t *ctx = &f->ctx;
    ctx->rank = ME;
    ctx->size = 2;
    ctx->eager_limit = 4096;
    ctx->peer_failed = f->failed;
    ctx->peer_tl = f->peer_tl;
    ctx->peer_ops = f->peer_ops;
    rcoll_list_init(&ctx->posted_recvs);
    rcoll_list_init(&ctx->sends_wait_rtr);
    rcoll_list_init(&ctx->unexpected);
    ctx->config.unexpected_max = 1 << 20;
    assert_int_equal(rcoll__p2p_flow_init(ctx), RCOLL_OK);
    f->world_ranks[0] = 0;
    f->world_ranks[1] = 1;
    f->comm = (rcoll_comm_t){ .ctx = ctx, .id = COMM_ID, .rank = ME, .size = 2,
                              .world_ranks = f->world_ranks };
    rcoll_task_t *task = &f->block.task;
    task->args.type = RCOLL_COLL_BARRIER;
    task->comm = &f->comm;
    task->ctx = ctx;
    task->seq = SEQ;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    rcoll_p2p_cleanup(&f->ctx);
    rcoll__p2p_flow_fini(&f->ctx);
    free(f);
    return 0;
}

/* PEER's eager message of step `step` with `len` bytes of `fill`. */
static void deliver(fixture_t *f, uint32_t step, size_t len, uint8_t fill)
{
    uint8_t msg[RCOLL_WIRE_HDR_SIZE + 64];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_EAGER, .version = RCOLL_WIRE_VERSION, .seq = SEQ,
                           .comm_id = COMM_ID, .step = step, .src = PEER, .len = len };
    assert_true(len <= 64);
    rcoll_wire_encode(&h, msg);
    memset(msg + RCOLL_WIRE_HDR_SIZE, fill, len);
    rcoll_p2p_recv_cb(&f->ctx, PEER, msg, RCOLL_WIRE_HDR_SIZE + len);
}

static void fail_peer(fixture_t *f)
{
    rcoll_p2p_peer_error_cb(&f->ctx, PEER, RCOLL_ERR_PEER_FAILED, "test: peer closed");
    assert_int_equal(f->ctx.peer_failed[PEER], RCOLL_ERR_PEER_FAILED);
}

/* The message arrived, then the peer failed: the receive completes with it. */
static void test_arrived_then_failed(void **state)
{
    fixture_t *f = *state;
    uint8_t buf[16] = { 0 }, want[16];
    deliver(f, 2, sizeof(buf), 0xab);
    fail_peer(f);
    assert_int_equal(rcoll_task_recv(&f->block.task, PEER, 2, buf, sizeof(buf)), RCOLL_OK);
    assert_int_equal(rcoll_task_test(&f->block.task), RCOLL_OK);
    memset(want, 0xab, sizeof(want));
    assert_memory_equal(buf, want, sizeof(buf));
    assert_int_equal(f->ctx.unexpected_count, 0);
}

/* A zero-byte message (a barrier's) counts as arrived too. */
static void test_empty_arrived_then_failed(void **state)
{
    fixture_t *f = *state;
    deliver(f, 0, 0, 0);
    fail_peer(f);
    assert_int_equal(rcoll_task_recv(&f->block.task, PEER, 0, NULL, 0), RCOLL_OK);
    assert_int_equal(rcoll_task_test(&f->block.task), RCOLL_OK);
}

/* Nothing arrived: the receive fails at once, it does not wait. */
static void test_failed_nothing_arrived(void **state)
{
    fixture_t *f = *state;
    uint8_t buf[8];
    fail_peer(f);
    assert_int_equal(rcoll_task_recv(&f->block.task, PEER, 1, buf, sizeof(buf)),
                     RCOLL_ERR_PEER_FAILED);
}

/* Only the message of this (comm, seq, step) counts: another step's does not. */
static void test_failed_other_step_arrived(void **state)
{
    fixture_t *f = *state;
    uint8_t buf[8];
    deliver(f, 3, sizeof(buf), 1);
    fail_peer(f);
    assert_int_equal(rcoll_task_recv(&f->block.task, PEER, 1, buf, sizeof(buf)),
                     RCOLL_ERR_PEER_FAILED);
    assert_int_equal(f->ctx.unexpected_count, 1);
}

/* A receive posted before the failure, still waiting, fails with the peer. */
static void test_posted_then_failed(void **state)
{
    fixture_t *f = *state;
    uint8_t buf[8];
    assert_int_equal(rcoll_task_recv(&f->block.task, PEER, 1, buf, sizeof(buf)), RCOLL_OK);
    assert_int_equal(rcoll_task_test(&f->block.task), RCOLL_INPROGRESS);
    fail_peer(f);
    assert_int_equal(rcoll_task_test(&f->block.task), RCOLL_ERR_PEER_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_arrived_then_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_arrived_then_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_nothing_arrived, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_other_step_arrived, setup, teardown),
        cmocka_unit_test_setup_teardown(test_posted_then_failed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
