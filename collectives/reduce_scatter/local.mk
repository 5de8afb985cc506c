# reduce_scatter algorithms: librcoll_la_SOURCES += collectives/reduce_scatter/reduce_scatter_<algorithm>.c
