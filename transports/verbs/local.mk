# Raw verbs backend (libibverbs + librdmacm): owned by the verbs work (issue 3).
# One file per object; verbs_int.h says which is which.
noinst_LTLIBRARIES += librcoll_tl_verbs.la
librcoll_la_LIBADD += librcoll_tl_verbs.la
librcoll_tl_verbs_la_CPPFLAGS = $(RCOLL_TL_CPPFLAGS)
librcoll_tl_verbs_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) $(RDMACM_CFLAGS)
librcoll_tl_verbs_la_SOURCES = \
    transports/verbs/verbs_tl.c \
    transports/verbs/verbs_device.c \
    transports/verbs/verbs_info.c \
    transports/verbs/verbs_gid.c \
    transports/verbs/verbs_addr.c \
    transports/verbs/verbs_qp.c \
    transports/verbs/verbs_cm.c \
    transports/verbs/verbs_send.c \
    transports/verbs/verbs_credit.c \
    transports/verbs/verbs_put.c \
    transports/verbs/verbs_rkey.c \
    transports/verbs/verbs_mr.c \
    transports/verbs/verbs_rcache.c \
    transports/verbs/verbs_pagemap.c \
    transports/verbs/verbs_cq.c \
    transports/verbs/verbs_cqset.c \
    transports/verbs/verbs_qpmap.c \
    transports/verbs/verbs_srq.c \
    transports/verbs/verbs_close.c
noinst_HEADERS += \
    transports/verbs/verbs.h \
    transports/verbs/verbs_int.h \
    transports/verbs/verbs_gid.h \
    transports/verbs/verbs_credit.h \
    transports/verbs/verbs_qpmap.h \
    transports/verbs/verbs_rkey.h \
    transports/verbs/verbs_rcache.h
