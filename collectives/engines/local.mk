# engines/: the schedules that algorithms compose (fold, recursive halving /
# doubling / gather, ring, binomial, dissemination rounds, child collectives
# on sub-communicators); see engines/engine.h and engines/compose.h.
librcoll_coll_la_SOURCES += \
    collectives/engines/engine.c \
    collectives/engines/fold.c \
    collectives/engines/recursive.c \
    collectives/engines/ring.c \
    collectives/engines/binomial.c \
    collectives/engines/shm_pipe.c \
    collectives/engines/compose.c
noinst_HEADERS += collectives/engines/engine.h collectives/engines/fold.h \
    collectives/engines/recursive.h collectives/engines/ring.h collectives/engines/binomial.h \
    collectives/engines/shm_pipe.h collectives/engines/dissemination.h \
    collectives/engines/compose.h collectives/engines/compose_cost.h
