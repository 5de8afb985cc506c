# examples/: hello, a minimal allreduce, and the OSU-style benchmarks.
# hello and allreduce install under $(pkglibexecdir)/examples: names that
# generic do not belong in bin/.
rcollexamplesdir = $(pkglibexecdir)/examples
rcollexamples_PROGRAMS = examples/hello examples/allreduce
examples_hello_SOURCES = examples/hello.c
examples_hello_LDADD = librcoll.la
examples_allreduce_SOURCES = examples/allreduce.c
examples_allreduce_LDADD = librcoll.la

# The OSU-style benchmarks: one source (bench/osu_coll.c) compiled once per
# collective against the rcoll back-end.  bench/compare compiles the same
# source against MPI (bench/osu_backend_mpi.c) with mpicc, outside automake.
OSU_RCOLL_SOURCES = bench/osu_coll.c bench/osu_backend.h bench/osu_backend_rcoll.c
bin_PROGRAMS += examples/rcoll_osu_allreduce examples/rcoll_osu_bcast \
                examples/rcoll_osu_reduce examples/rcoll_osu_allgather \
                examples/rcoll_osu_reduce_scatter examples/rcoll_osu_iallreduce \
                examples/rcoll_osu_barrier

examples_rcoll_osu_allreduce_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_allreduce_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_ALLREDUCE
examples_rcoll_osu_allreduce_LDADD = librcoll.la -lm

examples_rcoll_osu_bcast_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_bcast_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_BCAST
examples_rcoll_osu_bcast_LDADD = librcoll.la -lm

examples_rcoll_osu_reduce_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_reduce_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_REDUCE
examples_rcoll_osu_reduce_LDADD = librcoll.la -lm

examples_rcoll_osu_allgather_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_allgather_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_ALLGATHER
examples_rcoll_osu_allgather_LDADD = librcoll.la -lm

examples_rcoll_osu_reduce_scatter_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_reduce_scatter_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_REDUCE_SCATTER
examples_rcoll_osu_reduce_scatter_LDADD = librcoll.la -lm

examples_rcoll_osu_iallreduce_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_iallreduce_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_IALLREDUCE
examples_rcoll_osu_iallreduce_LDADD = librcoll.la -lm

examples_rcoll_osu_barrier_SOURCES = $(OSU_RCOLL_SOURCES)
examples_rcoll_osu_barrier_CPPFLAGS = $(AM_CPPFLAGS) -DOSU_COLL=OSU_BARRIER
examples_rcoll_osu_barrier_LDADD = librcoll.la -lm
