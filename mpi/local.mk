# mpi/: the drop-in layer for MPI programs (docs/mpi.md), one library per MPI
# found by configure, each compiled against that MPI's mpi.h and the public
# rcoll.h only, linked against librcoll and no MPI library.
RCOLL_MPI_SOURCES = mpi/layer.h mpi/layer_init.c mpi/layer_comm.c mpi/layer_types.c \
                    mpi/layer_coll.c mpi/layer_nb.c mpi/layer_wait.c mpi/layer_errors.c \
                    mpi/layer_report.c
RCOLL_MPI_LDFLAGS = -avoid-version -shared
EXTRA_DIST += mpi/configure.m4 mpi/ompi_weak.h mpi/layer_fortran.c

if HAVE_OMPI
lib_LTLIBRARIES += mpi/librcoll_mpi_ompi.la
mpi_librcoll_mpi_ompi_la_SOURCES = $(RCOLL_MPI_SOURCES) mpi/ompi_weak.h mpi/layer_fortran.c
mpi_librcoll_mpi_ompi_la_CPPFLAGS = -I$(top_srcdir)/include $(OMPI_CPPFLAGS) -DRCOLL_MPI_OMPI
mpi_librcoll_mpi_ompi_la_LIBADD = librcoll.la -ldl
mpi_librcoll_mpi_ompi_la_LDFLAGS = $(RCOLL_MPI_LDFLAGS)
endif

if HAVE_MPICH
lib_LTLIBRARIES += mpi/librcoll_mpi_mpich.la
mpi_librcoll_mpi_mpich_la_SOURCES = $(RCOLL_MPI_SOURCES)
mpi_librcoll_mpi_mpich_la_CPPFLAGS = -I$(top_srcdir)/include $(MPICH_CPPFLAGS)
mpi_librcoll_mpi_mpich_la_LIBADD = librcoll.la -ldl
mpi_librcoll_mpi_mpich_la_LDFLAGS = $(RCOLL_MPI_LDFLAGS)
endif
