# reduce_scatter algorithms: librcoll_la_SOURCES += collectives/reduce_scatter/reduce_scatter_<algorithm>.c
librcoll_la_SOURCES += \
    collectives/reduce_scatter/reduce_scatter.c \
    collectives/reduce_scatter/reduce_scatter_recursive_halving.c \
    collectives/reduce_scatter/reduce_scatter_ring.c
