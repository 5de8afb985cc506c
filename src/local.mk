# src/: the core (context, config, log, bootstrap, point-to-point protocol,
# requests and progress, communicators) and the reduction kernels.
noinst_LTLIBRARIES += librcoll_core.la
librcoll_la_LIBADD += librcoll_core.la
librcoll_core_la_CPPFLAGS = $(RCOLL_CORE_CPPFLAGS)
librcoll_core_la_CFLAGS = $(AM_CFLAGS) $(RCOLL_EXT_CFLAGS)
librcoll_core_la_SOURCES = \
    src/api.c \
    src/config.c \
    src/config_table.c \
    src/config_api.c \
    src/spin.c \
    src/context.c \
    src/addr_blob.c \
    src/bootstrap_pmix.c \
    src/bootstrap_oob.c \
    src/binding.c \
    src/comm.c \
    src/coll_support.c \
    src/comm_group.c \
    src/comm_shrink.c \
    src/comm_node.c \
    src/datatype.c \
    src/log.c \
    src/p2p.c \
    src/p2p_flow.c \
    src/revoke.c \
    src/progress.c \
    src/task.c \
    src/task_child.c \
    src/whereis.c \
    src/whereis_table.c \
    src/whereis_remote.c \
    src/liveness.c \
    src/fault.c \
    src/wire.c \
    src/auth.c \
    src/siphash.c \
    src/reduce.c \
    src/reduce_half.c \
    src/reduce_half.h
noinst_HEADERS = src/bootstrap.h src/core.h src/ft.h src/fault.h common/fault_hook.h src/liveness.h src/wire.h src/addr_blob.h common/auth.h common/siphash.h \
    src/p2p_flow.h \
    common/binding.h common/config.h common/list.h common/log.h common/reduce.h common/status.h common/stream_min.h \
    transports/transport.h collectives/coll.h
