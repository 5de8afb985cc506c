# cmocka unit tests.  Each area keeps its own fragment.
if HAVE_CMOCKA
# The unit tests reach inside every layer: RCOLL_INTERNAL_CPPFLAGS.
UNIT_CFLAGS = $(RCOLL_INTERNAL_CPPFLAGS) $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(UCX_CFLAGS) $(PMIX_CFLAGS) $(IBVERBS_CFLAGS)
# -static links librcoll.a so tests can call internal (hidden) functions.
UNIT_LDFLAGS = -static
UNIT_LDADD = librcoll.la $(CMOCKA_LIBS) $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS) -lm
include test/unit/core.mk
include test/unit/p2p.mk
include test/unit/reduce.mk
include test/unit/coll.mk
include test/unit/verbs.mk
include test/unit/api.mk
include test/unit/shm.mk
include test/unit/scale.mk
endif
