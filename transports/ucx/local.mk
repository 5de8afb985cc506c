# UCX backend (UCP active messages + ucp_put_nbx).
noinst_LTLIBRARIES += librcoll_tl_ucx.la
librcoll_la_LIBADD += librcoll_tl_ucx.la
librcoll_tl_ucx_la_CPPFLAGS = $(RCOLL_TL_CPPFLAGS)
librcoll_tl_ucx_la_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS)
librcoll_tl_ucx_la_SOURCES = transports/ucx/ucx_tl.c
