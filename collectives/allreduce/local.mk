# allreduce algorithms: librcoll_coll_la_SOURCES += collectives/allreduce/allreduce_<algorithm>.c
# reduction_math.c is the rank arithmetic of the engines (collectives/engines/)
# that allreduce, reduce, reduce_scatter, bcast and allgather compose.
librcoll_coll_la_SOURCES += \
    collectives/allreduce/allreduce.c \
    collectives/allreduce/allreduce_recursive_doubling.c \
    collectives/allreduce/allreduce_ring.c \
    collectives/allreduce/allreduce_rabenseifner.c \
    collectives/allreduce/allreduce_reduce_bcast.c \
    collectives/allreduce/allreduce_node_aware.c \
    collectives/allreduce/allreduce_node_leader.c \
    collectives/allreduce/reduction_math.c
noinst_HEADERS += collectives/allreduce/reduction_math.h collectives/allreduce/allreduce_node.h
