# collectives/: one algorithm per file, a table per collective, the selector.
# Each collective's folder lists its algorithm files in its own local.mk.
librcoll_la_SOURCES += \
    collectives/coll_table.c \
    collectives/selector.c \
    collectives/selector_tune.c \
    collectives/selector_print.c
noinst_HEADERS += collectives/selector.h collectives/selector_cost.h
include collectives/engines/local.mk
include collectives/allreduce/local.mk
include collectives/bcast/local.mk
include collectives/barrier/local.mk
include collectives/reduce/local.mk
include collectives/allgather/local.mk
include collectives/reduce_scatter/local.mk
include collectives/shm/local.mk
