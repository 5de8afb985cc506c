# unit tests: reduction collectives (allreduce, reduce, reduce_scatter) rank arithmetic
check_PROGRAMS += test/unit/test_coll_reduction_math
TESTS += test/unit/test_coll_reduction_math
test_unit_test_coll_reduction_math_SOURCES = test/unit/test_coll_reduction_math.c
test_unit_test_coll_reduction_math_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_reduction_math_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_coll_reduction_math_LDADD = $(UNIT_LDADD)
