# transports/: the interface (transport.h), the list of backends, one folder per backend.
librcoll_la_SOURCES += transports/transport.c
include transports/ucx/local.mk
include transports/verbs/local.mk
include transports/loop/local.mk
