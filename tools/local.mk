# tools/: rcoll_info, rcoll_tune and the rcollrun launcher.
bin_PROGRAMS += tools/rcoll_info
tools_rcoll_info_SOURCES = tools/rcoll_info.c
tools_rcoll_info_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS) $(UCX_CFLAGS)
tools_rcoll_info_CPPFLAGS = $(RCOLL_INTERNAL_CPPFLAGS)
# -static: rcoll_info reads the internal settings tables and the selector.
tools_rcoll_info_LDFLAGS = -static
tools_rcoll_info_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS)
# rcoll_tune: the calibration command (docs/tuning.md); reads the selector's
# tables and the reduction kernels, hence static like rcoll_info.
bin_PROGRAMS += tools/rcoll_tune
tools_rcoll_tune_SOURCES = tools/rcoll_tune.c tools/rcoll_tune_time.c tools/rcoll_tune_model.c tools/rcoll_tune_cma.c \
    tools/rcoll_tune_stream.c tools/rcoll_tune_flat.c tools/rcoll_tune_modes.c \
    tools/rcoll_tune.h
tools_rcoll_tune_CPPFLAGS = $(RCOLL_INTERNAL_CPPFLAGS)
tools_rcoll_tune_LDFLAGS = -static
tools_rcoll_tune_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) $(IBVERBS_LIBS) $(RDMACM_LIBS) -lm -lrt
# the cost model's tables in docs/scaling.md are current
TESTS += tools/check-scaling-tables
dist_noinst_SCRIPTS += tools/check-scaling-tables docs/scaling-tables.sh
include tools/rcollrun/local.mk
include tools/rcoll_sim/local.mk
