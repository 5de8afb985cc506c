# bcast algorithms: librcoll_la_SOURCES += collectives/bcast/bcast_<algorithm>.c
