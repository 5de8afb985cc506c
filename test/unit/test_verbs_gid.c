/* test_verbs_gid.c - the RoCE GID choice over tables of GIDs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "verbs/verbs_gid.h"

static rcoll_verbs_gid_entry_t gid(int index, const char *text, rcoll_verbs_gid_type_t type)
{
    rcoll_verbs_gid_entry_t e = { .index = index, .type = type };
    int ok = inet_pton(AF_INET6, text, e.gid);

    assert_int_equal(ok, 1);
    return e;
}

static int choose(const rcoll_verbs_gid_entry_t *t, size_t n, int is_ib, int override)
{
    char why[128];
    int pos = rcoll__verbs_gid_choose(t, n, is_ib, override, why, sizeof(why));

    assert_true(strlen(why) > 0);
    return pos < 0 ? -1 : t[pos].index;
}

/* The usual rxe/mlx5 table: link-local v1+v2, then IPv4-mapped v1+v2. */
static void test_prefers_v2_ipv4_mapped(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::5054:ff:fe12:3456", RCOLL_VERBS_GID_ROCE_V1),
        gid(1, "fe80::5054:ff:fe12:3456", RCOLL_VERBS_GID_ROCE_V2),
        gid(2, "::ffff:10.1.0.1", RCOLL_VERBS_GID_ROCE_V1),
        gid(3, "::ffff:10.1.0.1", RCOLL_VERBS_GID_ROCE_V2),
        gid(4, "2001:db8::1", RCOLL_VERBS_GID_ROCE_V2),
    };
    assert_int_equal(choose(t, 5, 0, -1), 3);
}

static void test_v2_global_ipv6_before_v1(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::1", RCOLL_VERBS_GID_ROCE_V2),
        gid(1, "::ffff:10.1.0.1", RCOLL_VERBS_GID_ROCE_V1),
        gid(2, "2001:db8::1", RCOLL_VERBS_GID_ROCE_V2),
    };
    assert_int_equal(choose(t, 3, 0, -1), 2);
}

static void test_v1_global_before_any_link_local(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::1", RCOLL_VERBS_GID_ROCE_V2),
        gid(1, "fe80::1", RCOLL_VERBS_GID_ROCE_V1),
        gid(5, "::ffff:192.168.1.7", RCOLL_VERBS_GID_ROCE_V1),
    };
    assert_int_equal(choose(t, 3, 0, -1), 5);
}

static void test_link_local_only_prefers_v2(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::1", RCOLL_VERBS_GID_ROCE_V1),
        gid(1, "fe80::1", RCOLL_VERBS_GID_ROCE_V2),
    };
    assert_int_equal(choose(t, 2, 0, -1), 1);
}

static void test_ties_go_to_lowest_index_and_zero_gids_skipped(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(7, "::ffff:10.2.0.1", RCOLL_VERBS_GID_ROCE_V2),
        gid(2, "::", RCOLL_VERBS_GID_ROCE_V2),
        gid(4, "::ffff:10.1.0.1", RCOLL_VERBS_GID_ROCE_V2),
    };
    assert_int_equal(choose(t, 3, 0, -1), 4);
}

static void test_override(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::1", RCOLL_VERBS_GID_ROCE_V1),
        gid(1, "::ffff:10.1.0.1", RCOLL_VERBS_GID_ROCE_V2),
        gid(2, "::", RCOLL_VERBS_GID_ROCE_V2),
    };
    assert_int_equal(choose(t, 3, 0, 0), 0);       /* even link-local when asked */
    assert_int_equal(choose(t, 3, 0, 9), -1);      /* not in the table */
    assert_int_equal(choose(t, 3, 0, 2), -1);      /* an empty entry */
}

static void test_infiniband_uses_index_0(void **state)
{
    rcoll_verbs_gid_entry_t t[] = {
        gid(0, "fe80::2:c903:0:1", RCOLL_VERBS_GID_IB),
        gid(1, "2001:db8::1", RCOLL_VERBS_GID_IB),
    };
    assert_int_equal(choose(t, 2, 1, -1), 0);
    assert_int_equal(choose(t, 2, 1, 1), 1);
}

static void test_empty_table(void **state)
{
    rcoll_verbs_gid_entry_t t[] = { gid(0, "::", RCOLL_VERBS_GID_ROCE_V2) };
    assert_int_equal(choose(t, 1, 0, -1), -1);
    assert_int_equal(choose(t, 0, 0, -1), -1);
}

static void test_classifiers(void **state)
{
    rcoll_verbs_gid_entry_t a = gid(0, "::ffff:1.2.3.4", RCOLL_VERBS_GID_ROCE_V2);
    rcoll_verbs_gid_entry_t b = gid(0, "febf::1", RCOLL_VERBS_GID_ROCE_V2);
    rcoll_verbs_gid_entry_t c = gid(0, "fec0::1", RCOLL_VERBS_GID_ROCE_V2);

    assert_true(rcoll__verbs_gid_is_ipv4_mapped(a.gid));
    assert_false(rcoll__verbs_gid_is_link_local(a.gid));
    assert_true(rcoll__verbs_gid_is_link_local(b.gid));
    assert_false(rcoll__verbs_gid_is_link_local(c.gid));
    assert_false(rcoll__verbs_gid_is_ipv4_mapped(c.gid));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefers_v2_ipv4_mapped),
        cmocka_unit_test(test_v2_global_ipv6_before_v1),
        cmocka_unit_test(test_v1_global_before_any_link_local),
        cmocka_unit_test(test_link_local_only_prefers_v2),
        cmocka_unit_test(test_ties_go_to_lowest_index_and_zero_gids_skipped),
        cmocka_unit_test(test_override),
        cmocka_unit_test(test_infiniband_uses_index_0),
        cmocka_unit_test(test_empty_table),
        cmocka_unit_test(test_classifiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
