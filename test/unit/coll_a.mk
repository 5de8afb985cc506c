# unit tests: reduction collectives (allreduce, reduce, reduce_scatter) rank arithmetic
check_PROGRAMS += test/unit/test_coll_reduction_math
TESTS += test/unit/test_coll_reduction_math
test_unit_test_coll_reduction_math_SOURCES = test/unit/test_coll_reduction_math.c
test_unit_test_coll_reduction_math_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_reduction_math_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_coll_reduction_math_LDADD = $(UNIT_LDADD)

# The reduction algorithms run for p = 1..17 simulated ranks over the shared
# simulator harness (sim_harness.c replaces the core's p2p calls), so it links
# the algorithm and kernel sources directly instead of librcoll.
check_PROGRAMS += test/unit/test_coll_reduction_sim
TESTS += test/unit/test_coll_reduction_sim
test_unit_test_coll_reduction_sim_SOURCES = test/unit/test_coll_reduction_sim.c \
    test/unit/sim_harness.c test/unit/sim_harness.h \
    collectives/allreduce/allreduce_recursive_doubling.c \
    collectives/allreduce/allreduce_ring.c \
    collectives/allreduce/allreduce_rabenseifner.c \
    collectives/allreduce/allreduce_reduce_bcast.c \
    collectives/allreduce/reduction_math.c \
    collectives/engines/engine.c collectives/engines/fold.c \
    collectives/engines/recursive.c collectives/engines/ring.c collectives/engines/binomial.c \
    collectives/reduce/reduce_binomial.c \
    collectives/reduce/reduce_scatter_gather.c \
    collectives/reduce_scatter/reduce_scatter_recursive_halving.c \
    collectives/reduce_scatter/reduce_scatter_ring.c \
    src/reduce.c src/reduce_half.c src/datatype.c
test_unit_test_coll_reduction_sim_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_reduction_sim_LDADD = $(CMOCKA_LIBS) -lm

check_PROGRAMS += test/unit/test_coll_node_cost
TESTS += test/unit/test_coll_node_cost
test_unit_test_coll_node_cost_SOURCES = test/unit/test_coll_node_cost.c
test_unit_test_coll_node_cost_CFLAGS = $(UNIT_CFLAGS)
test_unit_test_coll_node_cost_LDFLAGS = $(UNIT_LDFLAGS)
test_unit_test_coll_node_cost_LDADD = $(UNIT_LDADD)
