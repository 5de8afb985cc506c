# bench/: side-by-side comparison against Open MPI and MPICH (issue 5).
# The benchmark source (bench/osu_coll.c) is built against rcoll by
# examples/local.mk as examples/rcoll_osu_*; bench/compare compiles the same
# source against MPI (bench/osu_backend_mpi.c) with mpicc and mpicc.mpich in a
# build directory of its own, so automake never needs an MPI.
dist_noinst_SCRIPTS += bench/compare bench/callgrind-overhead bench/bind-rank
EXTRA_DIST += bench/osu_backend_mpi.c bench/README.md
# The memory figures that bound a shm collective (no rcoll involved).
noinst_PROGRAMS += bench/xcore_bw bench/bcast_bound bench/line_rtt bench/allgather_bound \
                   bench/splice_bound
bench_xcore_bw_SOURCES = bench/xcore_bw.c bench/two_cores.h
bench_bcast_bound_SOURCES = bench/bcast_bound.c bench/two_cores.h
bench_line_rtt_SOURCES = bench/line_rtt.c bench/two_cores.h
bench_allgather_bound_SOURCES = bench/allgather_bound.c bench/two_cores.h
bench_splice_bound_SOURCES = bench/splice_bound.c bench/two_cores.h
