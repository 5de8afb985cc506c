# unit tests: shared-memory algorithms (collectives/shm/), simulated ranks in one process
check_PROGRAMS += test/unit/test_shm
TESTS += test/unit/test_shm
test_unit_test_shm_SOURCES = test/unit/test_shm.c
test_unit_test_shm_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_shm_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_shm_LDADD = $(UNIT_LDADD)
