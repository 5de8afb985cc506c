# allgather algorithms: librcoll_la_SOURCES += collectives/allgather/allgather_<algorithm>.c
