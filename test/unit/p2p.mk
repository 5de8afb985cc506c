# unit tests: point-to-point matching, protocols and the task lifecycle over the loop transport
check_PROGRAMS += test/unit/test_p2p
TESTS += test/unit/test_p2p
test_unit_test_p2p_SOURCES = test/unit/test_p2p.c
test_unit_test_p2p_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/transports/loop
test_unit_test_p2p_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_p2p_LDADD = $(UNIT_LDADD) -lpthread
# where is everyone across nodes (src/whereis_remote.c): queries over the loop transport
check_PROGRAMS += test/unit/test_whereis
TESTS += test/unit/test_whereis
test_unit_test_whereis_SOURCES = test/unit/test_whereis.c
test_unit_test_whereis_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_whereis_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_whereis_LDADD = $(UNIT_LDADD) -lpthread
# the node's where table: made without a name, found through /proc, hostile offers refused
check_PROGRAMS += test/unit/test_whereis_table
TESTS += test/unit/test_whereis_table
test_unit_test_whereis_table_SOURCES = test/unit/test_whereis_table.c
test_unit_test_whereis_table_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_whereis_table_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_whereis_table_LDADD = $(UNIT_LDADD)

# revoke, rcoll_comm_failed and rcoll_comm_shrink over the loop transport
check_PROGRAMS += test/unit/test_shrink
TESTS += test/unit/test_shrink
test_unit_test_shrink_SOURCES = test/unit/test_shrink.c
test_unit_test_shrink_CFLAGS = $(UNIT_CFLAGS) -I$(top_srcdir)/transports/loop
test_unit_test_shrink_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_shrink_LDADD = $(UNIT_LDADD) -lpthread
