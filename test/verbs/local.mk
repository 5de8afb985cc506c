# The raw verbs backend's own tests (transports/verbs), run on an RDMA device
# (the soft-RDMA guest: test/softrdma/guest-suite.sh).
#   test/verbs/verbs_lazy_check   connections on first use, a fixed-size address
noinst_PROGRAMS += test/verbs/verbs_lazy_check
test_verbs_verbs_lazy_check_SOURCES = test/verbs/verbs_lazy_check.c
test_verbs_verbs_lazy_check_CPPFLAGS = $(RCOLL_INTERNAL_CPPFLAGS) -I$(srcdir)/transports/verbs
test_verbs_verbs_lazy_check_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) $(RDMACM_CFLAGS)
# -static links librcoll.a: the test opens the (hidden) verbs ops table and
# reads the instance's counters (verbs_int.h).
test_verbs_verbs_lazy_check_LDFLAGS = -static
test_verbs_verbs_lazy_check_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) \
    $(IBVERBS_LIBS) $(RDMACM_LIBS) -lm -lpthread
