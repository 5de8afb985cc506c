# tools/: rcoll_info and the rcollrun launcher.
bin_PROGRAMS += tools/rcoll_info
tools_rcoll_info_SOURCES = tools/rcoll_info.c
tools_rcoll_info_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS)
tools_rcoll_info_LDADD = librcoll.la $(HWLOC_LIBS) $(IBVERBS_LIBS)
include tools/rcollrun/local.mk
