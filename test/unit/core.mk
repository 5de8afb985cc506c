# unit tests: core (wire format, settings)
check_PROGRAMS += test/unit/test_core
TESTS += test/unit/test_core
test_unit_test_core_SOURCES = test/unit/test_core.c
test_unit_test_core_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_core_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_core_LDADD = $(UNIT_LDADD)
