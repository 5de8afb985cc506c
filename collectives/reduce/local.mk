# reduce algorithms: librcoll_la_SOURCES += collectives/reduce/reduce_<algorithm>.c
