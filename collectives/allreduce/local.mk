# allreduce algorithms: librcoll_la_SOURCES += collectives/allreduce/allreduce_<algorithm>.c
