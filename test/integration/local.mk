# Multi-process integration tests, launched by test/integration/run.sh under
# rcollrun, mpirun or srun.  Built by plain `make` (noinst) so the suite can
# run right after a build.  -no-install: real binaries, not libtool wrapper
# scripts, so every launcher starts them directly.
INTEG_COMMON = test/integration/check_common.c test/integration/check_common.h \
               test/integration/check_suites.h
INTEG_LDADD = librcoll.la -lm
INTEG_LINKOPTS = -no-install

noinst_PROGRAMS += test/integration/coll_check test/integration/comm_check \
                   test/integration/nb_check test/integration/timeout_check \
                   test/integration/oob_threads test/integration/group_check \
                   test/integration/node_check test/integration/mismatch_check \
                   test/integration/wedge_check test/integration/where_check \
                   test/integration/late_write_check test/integration/shm_leftover_check \
                   test/integration/dead_check test/integration/flood_check \
                   test/integration/shrink_check test/integration/fault_check \
                   test/integration/scale_check
test_integration_coll_check_SOURCES = test/integration/coll_check.c \
    test/integration/coll_cases.c $(INTEG_COMMON)
test_integration_coll_check_LDADD = $(INTEG_LDADD)
test_integration_coll_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_comm_check_SOURCES = test/integration/comm_check.c \
    test/integration/comm_cases.c $(INTEG_COMMON)
test_integration_comm_check_LDADD = $(INTEG_LDADD)
test_integration_comm_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_nb_check_SOURCES = test/integration/nb_check.c $(INTEG_COMMON)
test_integration_nb_check_LDADD = $(INTEG_LDADD)
test_integration_nb_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_timeout_check_SOURCES = test/integration/timeout_check.c $(INTEG_COMMON)
test_integration_timeout_check_LDADD = $(INTEG_LDADD)
test_integration_timeout_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_node_check_SOURCES = test/integration/node_check.c $(INTEG_COMMON)
test_integration_node_check_LDADD = $(INTEG_LDADD)
test_integration_node_check_LDFLAGS = $(INTEG_LINKOPTS)
# The checks' bodies, each thread with its own rcoll_init_oob context.
test_integration_oob_threads_SOURCES = test/integration/oob_threads.c \
    test/integration/coll_cases.c test/integration/comm_cases.c $(INTEG_COMMON)
test_integration_oob_threads_LDADD = $(INTEG_LDADD) -lpthread
test_integration_oob_threads_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_late_write_check_SOURCES = test/integration/late_write_check.c $(INTEG_COMMON)
test_integration_late_write_check_LDADD = $(INTEG_LDADD)
test_integration_late_write_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_flood_check_SOURCES = test/integration/flood_check.c $(INTEG_COMMON)
test_integration_flood_check_LDADD = $(INTEG_LDADD)
test_integration_flood_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_group_check_SOURCES = test/integration/group_check.c $(INTEG_COMMON)
test_integration_group_check_LDADD = $(INTEG_LDADD)
test_integration_group_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_dead_check_SOURCES = test/integration/dead_check.c $(INTEG_COMMON)
test_integration_dead_check_LDADD = $(INTEG_LDADD)
test_integration_dead_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_wedge_check_SOURCES = test/integration/wedge_check.c $(INTEG_COMMON)
test_integration_wedge_check_LDADD = $(INTEG_LDADD)
test_integration_wedge_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_where_check_SOURCES = test/integration/where_check.c $(INTEG_COMMON)
test_integration_where_check_LDADD = $(INTEG_LDADD)
test_integration_where_check_LDFLAGS = $(INTEG_LINKOPTS)
dist_noinst_SCRIPTS += test/integration/run.sh test/integration/tune_check.sh \
                       test/integration/scale_check.sh test/integration/model_check.sh \
                       test/integration/bind_check.sh
test_integration_mismatch_check_SOURCES = test/integration/mismatch_check.c $(INTEG_COMMON)
test_integration_mismatch_check_LDADD = $(INTEG_LDADD)
test_integration_mismatch_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_shm_leftover_check_SOURCES = test/integration/shm_leftover_check.c $(INTEG_COMMON)
test_integration_shm_leftover_check_LDADD = $(INTEG_LDADD)
test_integration_shm_leftover_check_LDFLAGS = $(INTEG_LINKOPTS)
# Forged and replayed UCX messages from a worker outside the job (docs/security.md).
# Internal headers and a static link: it builds messages as ucx_tl.c frames them.
noinst_PROGRAMS += test/integration/auth_check
test_integration_auth_check_SOURCES = test/integration/auth_check.c test/integration/auth_cm.c \
    test/integration/auth_cm.h
test_integration_auth_check_CFLAGS = $(RCOLL_INTERNAL_CPPFLAGS) $(AM_CFLAGS) $(UCX_CFLAGS) \
    $(IBVERBS_CFLAGS) $(RDMACM_CFLAGS)
test_integration_auth_check_LDADD = librcoll.la $(UCX_LIBS) $(PMIX_LIBS) $(HWLOC_LIBS) \
    $(IBVERBS_LIBS) $(RDMACM_LIBS) -lm -lpthread
test_integration_auth_check_LDFLAGS = $(INTEG_LINKOPTS) -static
test_integration_fault_check_SOURCES = test/integration/fault_check.c $(INTEG_COMMON)
test_integration_fault_check_LDADD = $(INTEG_LDADD)
test_integration_fault_check_LDFLAGS = $(INTEG_LINKOPTS)
test_integration_shrink_check_SOURCES = test/integration/shrink_check.c
test_integration_shrink_check_LDADD = $(INTEG_LDADD)
test_integration_shrink_check_LDFLAGS = $(INTEG_LINKOPTS)
# Resident memory and init time per rank (docs/scaling.md); needs no check_common.
test_integration_scale_check_SOURCES = test/integration/scale_check.c
test_integration_scale_check_LDADD = $(INTEG_LDADD)
test_integration_scale_check_LDFLAGS = $(INTEG_LINKOPTS)
