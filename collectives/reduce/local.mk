# reduce algorithms: librcoll_coll_la_SOURCES += collectives/reduce/reduce_<algorithm>.c
librcoll_coll_la_SOURCES += \
    collectives/reduce/reduce.c \
    collectives/reduce/reduce_binomial.c \
    collectives/reduce/reduce_scatter_gather.c \
    collectives/reduce/reduce_node_aware.c \
    collectives/reduce/reduce_node_leader.c
noinst_HEADERS += collectives/reduce/reduce_node.h
