# unit tests: coll (bcast, allgather, barrier and the selector); the other
# collectives' tests live in coll_a.mk.
#   test_coll_ranks  the algorithms' rank arithmetic (pure functions)
#   test_coll_sim    the algorithms on simulated ranks over the shared simulator
#                    harness (sim_harness.c); built from the algorithm sources,
#                    not librcoll, since the harness replaces rcoll_task_send/
#                    recv/test/scratch
#   test_selector    cost-model crossovers, forced names, ppn, tune rules
#   test_tune        the tune-file parser
#   test_coll_engines  the engines' steps (collectives/engines/), simulated
#                    per byte for p = 2..40
check_PROGRAMS += test/unit/test_coll_ranks test/unit/test_coll_sim \
                  test/unit/test_selector test/unit/test_tune
TESTS += test/unit/test_coll_ranks test/unit/test_coll_sim \
         test/unit/test_selector test/unit/test_tune

test_unit_test_coll_ranks_SOURCES = test/unit/test_coll_ranks.c
test_unit_test_coll_ranks_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_ranks_LDADD = $(CMOCKA_LIBS)

test_unit_test_coll_sim_SOURCES = test/unit/test_coll_sim.c \
    test/unit/sim_harness.c test/unit/sim_harness.h src/datatype.c \
    collectives/bcast/bcast.c collectives/bcast/bcast_binomial.c \
    collectives/bcast/bcast_scatter_allgather.c collectives/bcast/bcast_chain.c \
    collectives/allgather/allgather.c collectives/allgather/allgather_recursive_doubling.c \
    collectives/allgather/allgather_bruck.c collectives/allgather/allgather_ring.c \
    collectives/barrier/barrier.c collectives/barrier/barrier_dissemination.c \
    collectives/engines/engine.c collectives/engines/ring.c collectives/engines/binomial.c \
    collectives/engines/fold.c collectives/engines/recursive.c \
    collectives/allreduce/reduction_math.c src/reduce.c src/reduce_half.c
test_unit_test_coll_sim_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_sim_LDADD = $(CMOCKA_LIBS) -lm

test_unit_test_selector_SOURCES = test/unit/test_selector.c
test_unit_test_selector_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_selector_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_selector_LDADD = $(UNIT_LDADD)

test_unit_test_tune_SOURCES = test/unit/test_tune.c
test_unit_test_tune_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_tune_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_tune_LDADD = $(UNIT_LDADD)

check_PROGRAMS += test/unit/test_coll_engines
TESTS += test/unit/test_coll_engines
test_unit_test_coll_engines_SOURCES = test/unit/test_coll_engines.c
test_unit_test_coll_engines_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_engines_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_coll_engines_LDADD = $(UNIT_LDADD)

include test/unit/coll_a.mk
