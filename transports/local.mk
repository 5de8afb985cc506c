# transports/: the interface (transport.h), the list of backends, one folder per backend.
# Each backend is a library of its own, compiled with the transports'
# include path (transport.h, common/, its own headers).
noinst_LTLIBRARIES += librcoll_tl.la
librcoll_la_LIBADD += librcoll_tl.la
librcoll_tl_la_CPPFLAGS = $(RCOLL_TL_CPPFLAGS)
librcoll_tl_la_CFLAGS = $(AM_CFLAGS)
librcoll_tl_la_SOURCES = transports/transport.c
include transports/ucx/local.mk
include transports/verbs/local.mk
include transports/loop/local.mk
