/* test_verbs_rkey.c - packed remote keys and the put range check. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "verbs/verbs_rkey.h"

static void test_roundtrip(void **state)
{
    rcoll_verbs_rkey_t k = { .rkey = 0xdeadbeef, .addr = 0x7f0012345000ull, .len = 65536 }, out;
    uint8_t buf[RCOLL_VERBS_RKEY_SIZE];
    char err[128];

    rcoll__verbs_rkey_pack(&k, buf);
    assert_int_equal(buf[0], RCOLL_VERBS_RKEY_VERSION);
    assert_int_equal(buf[4], 0xef);                 /* little-endian on the wire */
    assert_int_equal(rcoll__verbs_rkey_unpack(buf, sizeof(buf), &out, err, sizeof(err)), 0);
    assert_int_equal(out.rkey, k.rkey);
    assert_int_equal(out.addr, k.addr);
    assert_int_equal(out.len, k.len);
}

static void test_bad_blobs(void **state)
{
    rcoll_verbs_rkey_t k = { .rkey = 1, .addr = 0x1000, .len = 10 }, out;
    uint8_t buf[RCOLL_VERBS_RKEY_SIZE];
    char err[128];

    rcoll__verbs_rkey_pack(&k, buf);
    assert_int_equal(rcoll__verbs_rkey_unpack(buf, sizeof(buf) - 1, &out, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "expected"));
    assert_int_equal(rcoll__verbs_rkey_unpack(NULL, 0, &out, err, sizeof(err)), -1);
    buf[0] = 9;
    assert_int_equal(rcoll__verbs_rkey_unpack(buf, sizeof(buf), &out, err, sizeof(err)), -1);
    k.addr = UINT64_MAX - 4;                        /* region wraps */
    rcoll__verbs_rkey_pack(&k, buf);
    assert_int_equal(rcoll__verbs_rkey_unpack(buf, sizeof(buf), &out, err, sizeof(err)), -1);
}

static void test_range(void **state)
{
    rcoll_verbs_rkey_t k = { .rkey = 1, .addr = 0x10000, .len = 4096 };
    char err[160];

    assert_true(rcoll__verbs_rkey_check_range(&k, 0x10000, 4096, err, sizeof(err)));
    assert_true(rcoll__verbs_rkey_check_range(&k, 0x10800, 2048, err, sizeof(err)));
    assert_true(rcoll__verbs_rkey_check_range(&k, 0x11000, 0, err, sizeof(err)));
    assert_false(rcoll__verbs_rkey_check_range(&k, 0x10000, 4097, err, sizeof(err)));
    assert_non_null(strstr(err, "outside the advertised region"));
    assert_false(rcoll__verbs_rkey_check_range(&k, 0xffff, 2, err, sizeof(err)));
    assert_false(rcoll__verbs_rkey_check_range(&k, 0x10fff, 2, err, sizeof(err)));
    assert_false(rcoll__verbs_rkey_check_range(&k, UINT64_MAX - 1, 4, err, sizeof(err)));
    assert_false(rcoll__verbs_rkey_check_range(&k, 0x10001, UINT64_MAX, err, sizeof(err)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_bad_blobs),
        cmocka_unit_test(test_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
