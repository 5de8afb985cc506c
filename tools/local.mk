# tools/: rcoll_info and the rcollrun launcher.
bin_PROGRAMS += tools/rcoll_info
tools_rcoll_info_SOURCES = tools/rcoll_info.c
tools_rcoll_info_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS) $(UCX_CFLAGS)
tools_rcoll_info_CPPFLAGS = $(RCOLL_INTERNAL_CPPFLAGS)
# -static: rcoll_info reads the internal settings tables and the selector.
tools_rcoll_info_LDFLAGS = -static
tools_rcoll_info_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS)
include tools/rcollrun/local.mk
