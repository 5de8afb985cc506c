# Raw verbs backend (libibverbs + librdmacm): owned by the verbs work (issue 3).
librcoll_la_SOURCES += transports/verbs/verbs_tl.c
