/* test_verbs_credit.c - credit accounting: never more in flight than posted buffers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "verbs/verbs_credit.h"

static void test_window(void **state)
{
    rcoll_verbs_credit_t c;

    rcoll__verbs_credit_init(&c, 4);
    assert_int_equal(rcoll__verbs_credit_avail(&c), 4);
    for (int i = 0; i < 4; i++) {
        assert_true(rcoll__verbs_credit_take(&c));
    }
    assert_int_equal(rcoll__verbs_credit_avail(&c), 0);
    assert_false(rcoll__verbs_credit_take(&c));
    assert_int_equal(rcoll__verbs_credit_update(&c, 3), 0);
    assert_int_equal(rcoll__verbs_credit_avail(&c), 3);
    assert_int_equal(rcoll__verbs_credit_update(&c, 2), 0);     /* older report: ignored */
    assert_int_equal(rcoll__verbs_credit_avail(&c), 3);
    assert_int_equal(rcoll__verbs_credit_update(&c, 5), -1);    /* more than we sent */
    assert_int_equal(rcoll__verbs_credit_avail(&c), 3);
}

static void test_report_due(void **state)
{
    rcoll_verbs_credit_t c;

    rcoll__verbs_credit_init(&c, 8);
    for (int i = 0; i < 3; i++) {
        rcoll__verbs_credit_freed(&c);
    }
    assert_false(rcoll__verbs_credit_report_due(&c));
    rcoll__verbs_credit_freed(&c);
    assert_true(rcoll__verbs_credit_report_due(&c));             /* half the window */
    assert_int_equal(rcoll__verbs_credit_report(&c), 4);
    assert_false(rcoll__verbs_credit_report_due(&c));

    rcoll__verbs_credit_init(&c, 1);
    rcoll__verbs_credit_freed(&c);
    assert_true(rcoll__verbs_credit_report_due(&c));             /* depth 1: every buffer */
}

static void test_wraparound(void **state)
{
    rcoll_verbs_credit_t c;

    rcoll__verbs_credit_init(&c, 16);
    c.sent = c.peer_freed = UINT32_MAX - 5;
    for (int i = 0; i < 16; i++) {
        assert_true(rcoll__verbs_credit_take(&c));
    }
    assert_false(rcoll__verbs_credit_take(&c));
    assert_int_equal(rcoll__verbs_credit_update(&c, (uint32_t)(UINT32_MAX - 5 + 10)), 0);
    assert_int_equal(rcoll__verbs_credit_avail(&c), 10);
}

/*
 * Two endpoints exchanging messages through simulated receive queues: the
 * receiver's posted buffers never run out (no RNR), and a one-way stream
 * keeps flowing on explicit reports alone.
 */
static void test_simulated_stream(void **state)
{
    enum { DEPTH = 6, MSGS = 1000 };
    rcoll_verbs_credit_t snd, rcv;
    int posted = DEPTH, inflight = 0, delivered = 0, sent = 0, explicit_reports = 0;
    uint32_t wire_slot = 0;

    rcoll__verbs_credit_init(&snd, DEPTH);
    rcoll__verbs_credit_init(&rcv, DEPTH);
    for (int tick = 0; delivered < MSGS && tick < 100000; tick++) {
        rcoll__verbs_credit_update(&snd, wire_slot);
        while (sent < MSGS && rcoll__verbs_credit_take(&snd)) {
            sent++;
            inflight++;
        }
        if (inflight > 0 && tick % 3 == 0) {   /* the receiver is slower */
            assert_true(posted > 0);           /* a SEND always finds a buffer */
            posted--;
            inflight--;
            delivered++;
            posted++;                          /* re-posted after the upcall */
            rcoll__verbs_credit_freed(&rcv);
            if (rcoll__verbs_credit_report_due(&rcv)) {
                wire_slot = rcoll__verbs_credit_report(&rcv);
                explicit_reports++;
            }
        }
        assert_true(inflight <= DEPTH);
    }
    assert_int_equal(delivered, MSGS);
    assert_true(explicit_reports >= MSGS / DEPTH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_report_due),
        cmocka_unit_test(test_wraparound),
        cmocka_unit_test(test_simulated_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
