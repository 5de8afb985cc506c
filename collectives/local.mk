# collectives/: one algorithm per file, a table per collective, the selector.
librcoll_la_SOURCES += \
    collectives/coll_table.c \
    collectives/selector.c \
    collectives/allreduce/allreduce_recursive_doubling.c \
    collectives/allreduce/allreduce_ring.c \
    collectives/allreduce/allreduce_rabenseifner.c \
    collectives/bcast/bcast_binomial.c \
    collectives/bcast/bcast_scatter_allgather.c \
    collectives/bcast/bcast_chain.c \
    collectives/barrier/barrier_dissemination.c
