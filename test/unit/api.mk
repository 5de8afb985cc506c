# unit tests: the public API at its edge (singleton mode, no PMIx server)
check_PROGRAMS += test/unit/test_api
TESTS += test/unit/test_api
test_unit_test_api_SOURCES = test/unit/test_api.c
test_unit_test_api_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_api_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_api_LDADD = $(UNIT_LDADD)
# bad input on several ranks (threads over rcoll_init_oob and the loop transport)
check_PROGRAMS += test/unit/test_badinput
TESTS += test/unit/test_badinput
test_unit_test_badinput_SOURCES = test/unit/test_badinput.c
test_unit_test_badinput_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_badinput_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_badinput_LDADD = $(UNIT_LDADD) -lpthread
