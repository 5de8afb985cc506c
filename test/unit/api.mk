# unit tests: the public API at its edge (singleton mode, no PMIx server)
check_PROGRAMS += test/unit/test_api
TESTS += test/unit/test_api
test_unit_test_api_SOURCES = test/unit/test_api.c
test_unit_test_api_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_api_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_api_LDADD = $(UNIT_LDADD)
