# unit tests: core (wire format, settings)
check_PROGRAMS += test/unit/test_core
TESTS += test/unit/test_core
test_unit_test_core_SOURCES = test/unit/test_core.c
test_unit_test_core_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_core_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_core_LDADD = $(UNIT_LDADD)
# communicators: ids, creation-time properties, rcoll_comm_create_group (singleton)
check_PROGRAMS += test/unit/test_comm
TESTS += test/unit/test_comm
test_unit_test_comm_SOURCES = test/unit/test_comm.c
test_unit_test_comm_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_comm_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_comm_LDADD = $(UNIT_LDADD)
# point-to-point matching when a peer fails (src/p2p.c), without a transport
check_PROGRAMS += test/unit/test_p2p_failed
TESTS += test/unit/test_p2p_failed
test_unit_test_p2p_failed_SOURCES = test/unit/test_p2p_failed.c
test_unit_test_p2p_failed_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_p2p_failed_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_p2p_failed_LDADD = $(UNIT_LDADD)
# the dead-rank inbox and communicator check (src/liveness.c), without a launcher
check_PROGRAMS += test/unit/test_liveness
TESTS += test/unit/test_liveness
test_unit_test_liveness_SOURCES = test/unit/test_liveness.c
test_unit_test_liveness_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_liveness_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_liveness_LDADD = $(UNIT_LDADD) -lpthread

# the job's secret: SipHash vectors, replay window, derived keys, shm token (src/auth.c)
check_PROGRAMS += test/unit/test_auth
TESTS += test/unit/test_auth
test_unit_test_auth_SOURCES = test/unit/test_auth.c
test_unit_test_auth_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_auth_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_auth_LDADD = $(UNIT_LDADD)
