# barrier algorithms: one file each, and the table (barrier.c).
librcoll_coll_la_SOURCES += \
    collectives/barrier/barrier.c \
    collectives/barrier/barrier_dissemination.c \
    collectives/barrier/barrier_node_aware.c
noinst_HEADERS += collectives/barrier/barrier_ranks.h
