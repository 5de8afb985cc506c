/* test_verbs_qpmap.c - the SRQ's QP number -> peer map: hits, misses, replaced
 * and removed QPs, growth, and deletions inside collision runs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>
#include "verbs/verbs_qpmap.h"

static void test_empty(void **state)
{
    rcoll_verbs_qpmap_t m;

    rcoll__verbs_qpmap_init(&m);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0), -1);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x11), -1);
    rcoll__verbs_qpmap_del(&m, 0x11);                       /* unknown: nothing */
    assert_int_equal(rcoll__verbs_qpmap_put(&m, 0x11, -1), -1);
    rcoll__verbs_qpmap_free(&m);
}

static void test_put_get_del(void **state)
{
    rcoll_verbs_qpmap_t m;

    rcoll__verbs_qpmap_init(&m);
    assert_int_equal(rcoll__verbs_qpmap_put(&m, 0x11, 3), 0);
    assert_int_equal(rcoll__verbs_qpmap_put(&m, 0x12, 0), 0);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x11), 3);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x12), 0);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x13), -1);
    /* a QP number reused for another peer's new QP */
    assert_int_equal(rcoll__verbs_qpmap_put(&m, 0x11, 7), 0);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x11), 7);
    assert_int_equal(m.count, 2);
    /* a dropped QP: its late completions find no peer */
    rcoll__verbs_qpmap_del(&m, 0x11);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x11), -1);
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 0x12), 0);
    assert_int_equal(m.count, 1);
    rcoll__verbs_qpmap_free(&m);
}

/* Many keys, deleted in a scattered order: after each deletion every key
 * still in must be found and every key out must not (a wrong backward
 * shift loses entries behind the hole). */
static void test_many(void **state)
{
    enum { N = 3000 };
    rcoll_verbs_qpmap_t m;
    static int in[N];
    uint32_t key[N];

    rcoll__verbs_qpmap_init(&m);
    for (int i = 0; i < N; i++) {
        /* QP numbers as devices hand them out: mostly sequential, some far */
        key[i] = (uint32_t)(i % 7 == 0 ? 0xffffff - i : 0x40 + i * 3);
        assert_int_equal(rcoll__verbs_qpmap_put(&m, key[i], i), 0);
        in[i] = 1;
    }
    assert_int_equal(m.count, N);
    assert_true(m.cap >= 2 * N);
    for (int step = 0; step < N; step++) {
        int i = (int)(((unsigned)step * 1237u) % N);       /* 1237 and N coprime */
        rcoll__verbs_qpmap_del(&m, key[i]);
        in[i] = 0;
        if (step % 97 == 0 || step > N - 20) {
            for (int k = 0; k < N; k++) {
                assert_int_equal(rcoll__verbs_qpmap_get(&m, key[k]), in[k] ? k : -1);
            }
        }
    }
    assert_int_equal(m.count, 0);
    rcoll__verbs_qpmap_free(&m);
}

/* Keys that all hash to one home slot: a single long run, deletions from
 * its middle and its start, wrapping past the table's end. */
static void test_collisions(void **state)
{
    rcoll_verbs_qpmap_t m;
    uint32_t k[8];

    rcoll__verbs_qpmap_init(&m);
    assert_int_equal(rcoll__verbs_qpmap_put(&m, 1, 100), 0);       /* cap 16 now */
    /* qpn * 2654435761 mod 16 depends on qpn mod 16 only: same home */
    for (int i = 0; i < 7; i++) {
        k[i] = 5 + 16u * (uint32_t)i;
        assert_int_equal(rcoll__verbs_qpmap_put(&m, k[i], i), 0);
    }
    assert_int_equal(m.cap, 16);
    rcoll__verbs_qpmap_del(&m, k[3]);
    rcoll__verbs_qpmap_del(&m, k[0]);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(rcoll__verbs_qpmap_get(&m, k[i]), i == 0 || i == 3 ? -1 : i);
    }
    assert_int_equal(rcoll__verbs_qpmap_get(&m, 1), 100);
    rcoll__verbs_qpmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_put_get_del),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_collisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
