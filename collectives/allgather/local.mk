# allgather algorithms: one file each, and the table (allgather.c).
librcoll_coll_la_SOURCES += \
    collectives/allgather/allgather.c \
    collectives/allgather/allgather_recursive_doubling.c \
    collectives/allgather/allgather_bruck.c \
    collectives/allgather/allgather_ring.c \
    collectives/allgather/allgather_node_aware.c
noinst_HEADERS += collectives/allgather/allgather_ranks.h
