# unit tests: shared-memory algorithms (collectives/shm/), simulated ranks in one process
check_PROGRAMS += test/unit/test_shm
TESTS += test/unit/test_shm
test_unit_test_shm_SOURCES = test/unit/test_shm.c
test_unit_test_shm_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_shm_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_shm_LDADD = $(UNIT_LDADD)
# the same with the ranks as real threads (a slot read while it fills)
check_PROGRAMS += test/unit/test_shm_threads
TESTS += test/unit/test_shm_threads
test_unit_test_shm_threads_SOURCES = test/unit/test_shm_threads.c
test_unit_test_shm_threads_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_shm_threads_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_shm_threads_LDADD = $(UNIT_LDADD) -lpthread
