# UCX backend (UCP active messages + ucp_put_nbx).
librcoll_la_SOURCES += transports/ucx/ucx_tl.c
