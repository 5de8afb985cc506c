# unit tests: verbs.  The pure-logic tests build from the backend's sources
# directly (no device, no library); test_verbs_device needs an RDMA device
# and exits 77 (automake SKIP) with "verbs: no RDMA device, skipped" when
# there is none.
VERBS_UNIT_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/transports
check_PROGRAMS += test/unit/test_verbs_gid test/unit/test_verbs_credit test/unit/test_verbs_qpmap \
                  test/unit/test_verbs_rkey test/unit/test_verbs_rcache \
                  test/unit/test_verbs_device
TESTS += test/unit/test_verbs_gid test/unit/test_verbs_credit test/unit/test_verbs_qpmap \
         test/unit/test_verbs_rkey test/unit/test_verbs_rcache \
         test/unit/test_verbs_device

test_unit_test_verbs_gid_SOURCES = test/unit/test_verbs_gid.c transports/verbs/verbs_gid.c
test_unit_test_verbs_gid_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_gid_LDADD = $(CMOCKA_LIBS)

test_unit_test_verbs_credit_SOURCES = test/unit/test_verbs_credit.c transports/verbs/verbs_credit.c
test_unit_test_verbs_credit_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_credit_LDADD = $(CMOCKA_LIBS)

test_unit_test_verbs_qpmap_SOURCES = test/unit/test_verbs_qpmap.c transports/verbs/verbs_qpmap.c
test_unit_test_verbs_qpmap_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_qpmap_LDADD = $(CMOCKA_LIBS)

test_unit_test_verbs_rkey_SOURCES = test/unit/test_verbs_rkey.c transports/verbs/verbs_rkey.c
test_unit_test_verbs_rkey_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_rkey_LDADD = $(CMOCKA_LIBS)

test_unit_test_verbs_rcache_SOURCES = test/unit/test_verbs_rcache.c \
    transports/verbs/verbs_rcache.c transports/verbs/verbs_pagemap.c
test_unit_test_verbs_rcache_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_rcache_LDADD = $(CMOCKA_LIBS)

test_unit_test_verbs_device_SOURCES = test/unit/test_verbs_device.c
test_unit_test_verbs_device_CFLAGS = $(VERBS_UNIT_CFLAGS)
test_unit_test_verbs_device_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_verbs_device_LDADD = $(UNIT_LDADD) $(IBVERBS_LIBS) $(RDMACM_LIBS)
