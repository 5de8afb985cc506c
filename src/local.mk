# src/: the core (context, config, log, bootstrap, point-to-point protocol,
# requests and progress, communicators) and the reduction kernels.
librcoll_la_SOURCES += \
    src/api.c \
    src/config.c \
    src/config_table.c \
    src/config_api.c \
    src/context.c \
    src/bootstrap_pmix.c \
    src/bootstrap_oob.c \
    src/comm.c \
    src/comm_group.c \
    src/datatype.c \
    src/log.c \
    src/p2p.c \
    src/progress.c \
    src/task.c \
    src/wire.c \
    src/reduce.c \
    src/reduce_half.c \
    src/reduce_half.h
noinst_HEADERS = src/bootstrap.h src/config.h src/core.h src/list.h src/log.h src/reduce.h \
    src/status.h src/wire.h transports/transport.h collectives/coll.h
