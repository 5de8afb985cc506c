# unit tests: reduce (the local reduction kernels, float16/bfloat16 codecs)
check_PROGRAMS += test/unit/test_reduce
TESTS += test/unit/test_reduce
test_unit_test_reduce_SOURCES = test/unit/test_reduce.c
test_unit_test_reduce_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_reduce_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_reduce_LDADD = $(UNIT_LDADD)
