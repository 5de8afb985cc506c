/* test_core.c - wire header encode/decode and settings parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "config.h"
#include "wire.h"
#include "transport.h"
#include "core.h"
#include <unistd.h>

static size_t make_msg(uint8_t *buf, const rcoll_wire_hdr_t *h, const void *body, size_t len)
{
    rcoll_wire_encode(h, buf);
    memcpy(buf + RCOLL_WIRE_HDR_SIZE, body, len);
    return RCOLL_WIRE_HDR_SIZE + len;
}

static void test_wire_roundtrip(void **state)
{
    uint8_t buf[256];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_EAGER, .version = RCOLL_WIRE_VERSION, .seq = 0xdeadbeef,
                           .comm_id = 0x0123456789abcdefULL, .step = 77, .src = 5, .len = 3,
                           .addr = 0, .sig = 0xa1b2c3d4 }, out;
    const void *body;
    size_t body_len;
    char err[128];
    size_t n = make_msg(buf, &h, "abc", 3);
    /* Fixed little-endian layout, whatever the host. */
    assert_int_equal(buf[0], RCOLL_MSG_EAGER);
    assert_int_equal(buf[4], 0xef);
    assert_int_equal(buf[8], 0xef);
    assert_int_equal(buf[15], 0x01);
    assert_int_equal(rcoll_wire_decode(buf, n, &out, &body, &body_len, err, sizeof(err)), RCOLL_OK);
    assert_int_equal(out.seq, h.seq);
    assert_true(out.comm_id == h.comm_id);
    assert_int_equal(out.step, 77);
    assert_int_equal(out.src, 5);
    assert_int_equal(buf[40], 0xd4);              /* the call's signature at 40 */
    assert_int_equal(out.sig, 0xa1b2c3d4);
    assert_int_equal(body_len, 3);
    assert_memory_equal(body, "abc", 3);

    rcoll_wire_hdr_t rtr = { .type = RCOLL_MSG_RTR, .version = RCOLL_WIRE_VERSION, .rkey_len = 4,
                             .len = 1 << 20, .addr = 0x7fff00001000ULL };
    n = make_msg(buf, &rtr, "KEY!", 4);
    assert_int_equal(rcoll_wire_decode(buf, n, &out, &body, &body_len, err, sizeof(err)), RCOLL_OK);
    assert_true(out.addr == rtr.addr);
    assert_int_equal(out.rkey_len, 4);
}

static void expect_reject(const uint8_t *buf, size_t n)
{
    rcoll_wire_hdr_t out;
    const void *body;
    size_t body_len;
    char err[128] = "";
    assert_int_equal(rcoll_wire_decode(buf, n, &out, &body, &body_len, err, sizeof(err)),
                     RCOLL_ERR_PROTOCOL);
    assert_true(strlen(err) > 0);
}

static void test_wire_hostile(void **state)
{
    uint8_t buf[256];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_EAGER, .version = RCOLL_WIRE_VERSION, .len = 100 };
    /* EAGER claiming more payload than it carries. */
    size_t n = make_msg(buf, &h, "abc", 3);
    expect_reject(buf, n);
    /* Too short for a header, and NULL. */
    expect_reject(buf, RCOLL_WIRE_HDR_SIZE - 1);
    expect_reject(NULL, 0);
    /* Unknown type and wrong version. */
    h.len = 3;
    h.type = 9;
    n = make_msg(buf, &h, "abc", 3);
    expect_reject(buf, n);
    h.type = RCOLL_MSG_EAGER;
    h.version = RCOLL_WIRE_VERSION + 1;
    n = make_msg(buf, &h, "abc", 3);
    expect_reject(buf, n);
    /* RTR whose key length disagrees with the bytes, or is 0, or too large. */
    rcoll_wire_hdr_t r = { .type = RCOLL_MSG_RTR, .version = RCOLL_WIRE_VERSION, .rkey_len = 8 };
    n = make_msg(buf, &r, "abc", 3);
    expect_reject(buf, n);
    r.rkey_len = 0;
    n = make_msg(buf, &r, "", 0);
    expect_reject(buf, n);
    r.rkey_len = 3;
    n = make_msg(buf, &r, "abc", 3);
    rcoll_wire_hdr_t out;
    const void *body;
    size_t bl;
    char err[64];
    assert_int_equal(rcoll_wire_decode(buf, n, &out, &body, &bl, err, sizeof(err)), RCOLL_OK);
    /* FIN with trailing bytes. */
    rcoll_wire_hdr_t f = { .type = RCOLL_MSG_FIN, .version = RCOLL_WIRE_VERSION };
    n = make_msg(buf, &f, "x", 1);
    expect_reject(buf, n);
}

static void test_parse_size(void **state)
{
    size_t v;
    assert_int_equal(rcoll_parse_size("8192", &v), 0);
    assert_int_equal(v, 8192);
    assert_int_equal(rcoll_parse_size("64k", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(rcoll_parse_size("2M", &v), 0);
    assert_int_equal(v, 2u << 20);
    assert_int_equal(rcoll_parse_size("1gb", &v), 0);
    assert_int_equal(v, 1u << 30);
    assert_int_equal(rcoll_parse_size("-1", &v), -1);
    assert_int_equal(rcoll_parse_size("12x", &v), -1);
    assert_int_equal(rcoll_parse_size("", &v), -1);
    assert_int_equal(rcoll_parse_size("99999999999999999999", &v), -1);
}

static void test_config_defaults_env_overrides(void **state)
{
    rcoll_config_t cfg;
    unsetenv("RCOLL_EAGER_LIMIT");
    unsetenv("RCOLL_TIMEOUT");
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_OK);
    assert_int_equal(cfg.eager_limit, 16384);
    assert_string_equal(cfg.transport, "auto");

    setenv("RCOLL_EAGER_LIMIT", "16k", 1);
    setenv("RCOLL_TIMEOUT", "2.5", 1);
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_OK);
    assert_int_equal(cfg.eager_limit, 16384);
    assert_true(cfg.timeout == 2.5);

    /* rcoll_init's config beats the environment; the prefix is optional. */
    const char *const over[] = { "RCOLL_EAGER_LIMIT=1024", "TRANSPORT=ucx", "LOG_LEVEL=debug", NULL };
    assert_int_equal(rcoll_config_load(over, &cfg), RCOLL_OK);
    assert_int_equal(cfg.eager_limit, 1024);
    assert_string_equal(cfg.transport, "ucx");
    assert_int_equal(cfg.log_level, 3);
    unsetenv("RCOLL_EAGER_LIMIT");
    unsetenv("RCOLL_TIMEOUT");
}

/* RCOLL_SPIN_COUNT=auto spins unless the node's ranks outnumber its CPUs;
 * a number is kept as given, also when oversubscribed. */
static void test_spin_count_auto(void **state)
{
    (void)state;
    rcoll_config_t cfg;
    unsetenv("RCOLL_SPIN_COUNT");
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_OK);
    assert_int_equal(cfg.spin_count, RCOLL_CONFIG_UINT_AUTO);
    char buf[32];
    rcoll_config_format(&cfg, rcoll_config_find("SPIN_COUNT"), buf, sizeof(buf));
    assert_string_equal(buf, "auto");

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(cpus > 0);
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ctx->config = cfg;
    ctx->local_size = (int)cpus;
    rcoll__spin_resolve(ctx);
    assert_int_equal(ctx->spin_limit, 1000);
    ctx->local_size = (int)cpus + 1;
    rcoll__spin_resolve(ctx);
    assert_int_equal(ctx->spin_limit, 0);

    const char *const fixed[] = { "SPIN_COUNT=77", NULL };
    assert_int_equal(rcoll_config_load(fixed, &ctx->config), RCOLL_OK);
    rcoll__spin_resolve(ctx);
    assert_int_equal(ctx->spin_limit, 77);
    const char *const bad[] = { "SPIN_COUNT=autox", NULL };
    assert_int_equal(rcoll_config_load(bad, &cfg), RCOLL_ERR_INVALID_ARG);
    free(ctx);
}

/* RCOLL_WAIT_SLEEP_MIN=auto: a bcast's readers sleep from 256 KiB only
 * while the node's ranks outnumber its CPUs; off never; a size is kept. */
static void test_wait_sleep_min(void **state)
{
    (void)state;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(cpus > 0);
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    unsetenv("RCOLL_WAIT_SLEEP_MIN");
    assert_int_equal(rcoll_config_load(NULL, &ctx->config), RCOLL_OK);
    char buf[32];
    rcoll_config_format(&ctx->config, rcoll_config_find("WAIT_SLEEP_MIN"), buf, sizeof(buf));
    assert_string_equal(buf, "auto");
    ctx->local_size = (int)cpus;
    rcoll__spin_resolve(ctx);
    assert_true(ctx->sleep_min == SIZE_MAX);
    ctx->local_size = (int)cpus + 1;
    rcoll__spin_resolve(ctx);
    assert_int_equal(ctx->sleep_min, 256 * 1024);

    const char *const off[] = { "WAIT_SLEEP_MIN=off", NULL };
    assert_int_equal(rcoll_config_load(off, &ctx->config), RCOLL_OK);
    rcoll__spin_resolve(ctx);
    assert_true(ctx->sleep_min == SIZE_MAX);
    const char *const fixed[] = { "WAIT_SLEEP_MIN=64k", NULL };
    assert_int_equal(rcoll_config_load(fixed, &ctx->config), RCOLL_OK);
    ctx->local_size = 1;
    rcoll__spin_resolve(ctx);
    assert_int_equal(ctx->sleep_min, 64 * 1024);
    free(ctx);
}

static void test_config_errors(void **state)
{
    rcoll_config_t cfg;
    const char *const bad_enum[] = { "RCOLL_TRANSPORT=infiniband", NULL };
    const char *const bad_key[] = { "RCOLL_NO_SUCH_THING=1", NULL };
    const char *const no_eq[] = { "RCOLL_TIMEOUT", NULL };
    const char *const bad_bool[] = { "RCOLL_RCACHE=maybe", NULL };
    const char *const bad_num[] = { "RCOLL_TIMEOUT=-3", NULL };
    assert_int_equal(rcoll_config_load(bad_enum, &cfg), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_load(bad_key, &cfg), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_load(no_eq, &cfg), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_load(bad_bool, &cfg), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_config_load(bad_num, &cfg), RCOLL_ERR_INVALID_ARG);
    setenv("RCOLL_SPIN_COUNT", "lots", 1);
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_ERR_INVALID_ARG);
    /* An overridden environment value is not even parsed. */
    const char *const fix[] = { "SPIN_COUNT=7", NULL };
    assert_int_equal(rcoll_config_load(fix, &cfg), RCOLL_OK);
    assert_int_equal(cfg.spin_count, 7);
    unsetenv("RCOLL_SPIN_COUNT");
}

static void test_config_table_consistent(void **state)
{
    rcoll_config_t cfg;
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_OK);
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            char value[RCOLL_CONFIG_STR_MAX], err[128];
            /* Every default parses, formats, and parses back to the same text. */
            rcoll_config_format(&cfg, e, value, sizeof(value));
            rcoll_config_t copy = cfg;
            assert_int_equal(rcoll_config_entry_set(&copy, e, value, err, sizeof(err)), RCOLL_OK);
            assert_ptr_equal(rcoll_config_find(e->name), e);
            assert_true(strlen(e->doc) > 10);
        }
    }
    assert_null(rcoll_config_find("RCOLL_NOPE"));
    assert_non_null(rcoll_config_find("RCOLL_EAGER_LIMIT"));
}

/* RCOLL_TIMEOUT as PMIx's int seconds: never an out-of-range cast (issue
 * 12: above INT_MAX it was undefined behaviour), never 0 unless it is 0. */
static void test_timeout_int(void **state)
{
    (void)state;
    assert_int_equal(rcoll_config_timeout_int(0), 0);
    assert_int_equal(rcoll_config_timeout_int(-3), 0);
    assert_int_equal(rcoll_config_timeout_int(0.2), 1);
    assert_int_equal(rcoll_config_timeout_int(2.4), 2);
    assert_int_equal(rcoll_config_timeout_int(2.5), 3);
    assert_int_equal(rcoll_config_timeout_int(300), 300);
    assert_int_equal(rcoll_config_timeout_int(2147483646.4), 2147483646);
    assert_int_equal(rcoll_config_timeout_int(2147483647.0), 2147483647);
    assert_int_equal(rcoll_config_timeout_int(3e9), 2147483647);
    assert_int_equal(rcoll_config_timeout_int(1e300), 2147483647);
}

/* Every numeric setting has a range, and its default lies inside it. */
static void test_config_ranges(void **state)
{
    (void)state;
    rcoll_config_t cfg;
    char err[160], desc[160];
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            int numeric = e->type == RCOLL_CONFIG_INT || e->type == RCOLL_CONFIG_UINT ||
                          e->type == RCOLL_CONFIG_SIZE || e->type == RCOLL_CONFIG_DOUBLE;
            if (!numeric)
                continue;
            if (!(e->min < e->max))
                fail_msg("RCOLL_%s has no range", e->name);
            memset(&cfg, 0, sizeof(cfg));
            if (rcoll_config_entry_set(&cfg, e, e->defval, err, sizeof(err)) != RCOLL_OK)
                fail_msg("RCOLL_%s: default '%s' refused: %s", e->name, e->defval, err);
            rcoll_config_describe(e, desc, sizeof(desc));
            assert_non_null(strstr(desc, "Range "));
        }
    }
    /* a refused value leaves the field as it was */
    const rcoll_config_entry_t *e = rcoll_config_find("EAGER_LIMIT");
    cfg.eager_limit = 77;
    assert_int_equal(rcoll_config_entry_set(&cfg, e, "9223372036854775808", err, sizeof(err)),
                     RCOLL_ERR_INVALID_ARG);
    assert_int_equal(cfg.eager_limit, 77);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_roundtrip),
        cmocka_unit_test(test_wire_hostile),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_config_defaults_env_overrides),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_spin_count_auto),
        cmocka_unit_test(test_wait_sleep_min),
        cmocka_unit_test(test_config_table_consistent),
        cmocka_unit_test(test_config_ranges),
        cmocka_unit_test(test_timeout_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
