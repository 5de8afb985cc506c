# In-memory backend: ranks are contexts in one process (tests, RCOLL_TRANSPORT=loop).
noinst_LTLIBRARIES += librcoll_tl_loop.la
librcoll_la_LIBADD += librcoll_tl_loop.la
librcoll_tl_loop_la_CPPFLAGS = $(RCOLL_TL_CPPFLAGS)
librcoll_tl_loop_la_CFLAGS = $(AM_CFLAGS)
librcoll_tl_loop_la_SOURCES = \
    transports/loop/loop_tl.c \
    transports/loop/loop_port.c \
    transports/loop/loop_mr.c
noinst_HEADERS += transports/loop/loop_int.h
