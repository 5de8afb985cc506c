# reduce_scatter algorithms: librcoll_coll_la_SOURCES += collectives/reduce_scatter/reduce_scatter_<algorithm>.c
librcoll_coll_la_SOURCES += \
    collectives/reduce_scatter/reduce_scatter.c \
    collectives/reduce_scatter/reduce_scatter_recursive_halving.c \
    collectives/reduce_scatter/reduce_scatter_ring.c
