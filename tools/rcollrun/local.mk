# tools/rcollrun/: rcoll's single-node launcher, a PMIx server (libpmix server API).
bin_PROGRAMS += tools/rcollrun/rcollrun
tools_rcollrun_rcollrun_SOURCES = tools/rcollrun/rcollrun.h tools/rcollrun/rcollrun.c \
                                  tools/rcollrun/pmix_host.c tools/rcollrun/spawn.c \
                                  tools/rcollrun/iofwd.c tools/rcollrun/supervise.c \
                                  tools/rcollrun/vnode.c tools/rcollrun/bind.c \
                                  tools/rcollrun/whereis.c
tools_rcollrun_rcollrun_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(HWLOC_CFLAGS) -pthread
tools_rcollrun_rcollrun_LDADD = $(PMIX_LIBS) $(HWLOC_LIBS) -lpthread -lm
