# barrier algorithms: librcoll_la_SOURCES += collectives/barrier/barrier_<algorithm>.c
