# bcast algorithms: one file each, and the table (bcast.c).
librcoll_coll_la_SOURCES += \
    collectives/bcast/bcast.c \
    collectives/bcast/bcast_binomial.c \
    collectives/bcast/bcast_scatter_allgather.c \
    collectives/bcast/bcast_chain.c \
    collectives/bcast/bcast_node_aware.c
noinst_HEADERS += collectives/bcast/bcast_ranks.h
