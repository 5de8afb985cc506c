# allreduce algorithms: librcoll_coll_la_SOURCES += collectives/allreduce/allreduce_<algorithm>.c
# reduction_math.c / reduction_engine.c are shared by allreduce, reduce and
# reduce_scatter (rank arithmetic; ring, binomial reduce and bcast engines).
librcoll_coll_la_SOURCES += \
    collectives/allreduce/allreduce.c \
    collectives/allreduce/allreduce_recursive_doubling.c \
    collectives/allreduce/allreduce_ring.c \
    collectives/allreduce/allreduce_rabenseifner.c \
    collectives/allreduce/allreduce_reduce_bcast.c \
    collectives/allreduce/reduction_math.c \
    collectives/allreduce/reduction_engine.c
noinst_HEADERS += collectives/allreduce/reduction_math.h collectives/allreduce/reduction_engine.h
