# test/launchers/: a plain PMIx client (pmix_probe) and the launcher tests
# (test-launchers.sh: rcollrun, Open MPI's mpirun, srun --mpi=pmix on a
# single-node Slurm that slurm-up/slurm-down start and stop).
noinst_PROGRAMS += test/launchers/pmix_probe
test_launchers_pmix_probe_SOURCES = test/launchers/pmix_probe.c
test_launchers_pmix_probe_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS)
test_launchers_pmix_probe_LDADD = $(PMIX_LIBS)
dist_noinst_SCRIPTS += test/launchers/test-launchers.sh test/launchers/slurm-up \
                       test/launchers/slurm-down
