# shm/: intra-node shared-memory algorithms (allreduce, bcast, barrier "shm")
# over one segment per communicator; see docs/shm.md.
librcoll_la_SOURCES += \
    collectives/shm/shm.h \
    collectives/shm/shm_segment.c \
    collectives/shm/shm_enter.c \
    collectives/shm/shm_allreduce.c \
    collectives/shm/shm_bcast.c \
    collectives/shm/shm_barrier.c
