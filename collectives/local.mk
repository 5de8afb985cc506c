# collectives/: one algorithm per file, a table per collective, the selector.
# Each collective's folder lists its algorithm files in its own local.mk.
# Compiled with the collectives' include path: coll.h, common/, their own.
noinst_LTLIBRARIES += librcoll_coll.la
librcoll_la_LIBADD += librcoll_coll.la
librcoll_coll_la_CPPFLAGS = $(RCOLL_COLL_CPPFLAGS)
librcoll_coll_la_CFLAGS = $(AM_CFLAGS)
librcoll_coll_la_SOURCES = \
    collectives/coll_table.c \
    collectives/coll_comm.c \
    collectives/selector.c \
    collectives/selector_tune.c \
    collectives/selector_print.c \
    collectives/net_profiles.c \
    collectives/selector_bound.c
noinst_HEADERS += collectives/selector.h collectives/selector_cost.h collectives/selector_scale.h \
    collectives/coll_comm.h
include collectives/engines/local.mk
include collectives/allreduce/local.mk
include collectives/bcast/local.mk
include collectives/barrier/local.mk
include collectives/reduce/local.mk
include collectives/allgather/local.mk
include collectives/reduce_scatter/local.mk
include collectives/shm/local.mk
