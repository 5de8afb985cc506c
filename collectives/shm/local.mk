# shm/: intra-node shared-memory algorithms (allreduce, bcast, barrier, reduce,
# allgather, reduce_scatter "shm")
# over one segment per communicator; see docs/shm.md.
librcoll_coll_la_SOURCES += \
    collectives/shm/shm.h \
    collectives/shm/shm_reduction.h \
    collectives/shm/shm_cma.h \
    collectives/shm/shm_adapt.h \
    collectives/shm/shm_copy.h \
    collectives/shm/shm_copy.c \
    collectives/shm/shm_segment.c \
    collectives/shm/shm_cma.c \
    collectives/shm/shm_adapt.c \
    collectives/shm/shm_enter.c \
    collectives/shm/shm_reduction.c \
    collectives/shm/shm_allreduce.c \
    collectives/shm/shm_reduce.c \
    collectives/shm/shm_reduce_cma.c \
    collectives/shm/shm_allgather.c \
    collectives/shm/shm_reduce_scatter.c \
    collectives/shm/shm_bcast.c \
    collectives/shm/shm_bcast_store.c \
    collectives/shm/shm_bcast_path.c \
    collectives/shm/shm_barrier.c
