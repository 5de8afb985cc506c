# In-memory backend: ranks are contexts in one process (tests, RCOLL_TRANSPORT=loop).
librcoll_la_SOURCES += \
    transports/loop/loop_tl.c \
    transports/loop/loop_port.c \
    transports/loop/loop_mr.c
noinst_HEADERS += transports/loop/loop_int.h
