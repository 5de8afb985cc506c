# The transport contract suite (transports/transport.h as cases) for any backend:
#   test/contract/tl_contract [BACKEND [CASE...]]   one backend (default loop)
#   test/contract/run.sh                             loop, UCX over shm and tcp, verbs
# `make check` runs it on loop; the "contract" stage of test/run-suite runs run.sh.
noinst_PROGRAMS += test/contract/tl_contract
TESTS += test/contract/tl_contract
test_contract_tl_contract_SOURCES = test/contract/tl_contract.c test/contract/harness.c \
    test/contract/cases.c test/contract/get_cases.c test/contract/dead_peer.c test/contract/first_use.c \
    test/contract/contract.h
test_contract_tl_contract_CPPFLAGS = $(RCOLL_INTERNAL_CPPFLAGS)
test_contract_tl_contract_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS) $(PMIX_CFLAGS) $(IBVERBS_CFLAGS)
# -static links librcoll.a: the test calls the (hidden) ops tables directly.
test_contract_tl_contract_LDFLAGS = -static
test_contract_tl_contract_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) \
    $(IBVERBS_LIBS) $(RDMACM_LIBS) -lm -lpthread
dist_noinst_SCRIPTS += test/contract/run.sh
