# tools/rcoll_sim/: the schedule simulator (docs/scaling.md, "Simulated
# schedules").  Linked from the collectives' library (the very algorithm
# objects librcoll is made of) and a fake core (sim_core.c, sim_net.c) in
# place of src/; of the core only the settings table, logging and the
# datatype sizes are compiled in.
noinst_PROGRAMS += tools/rcoll_sim/rcoll_sim
tools_rcoll_sim_rcoll_sim_SOURCES = tools/rcoll_sim/rcoll_sim.c tools/rcoll_sim/sim_net.c \
    tools/rcoll_sim/sim_core.c tools/rcoll_sim/sim_selftest.c tools/rcoll_sim/sim.h tools/rcoll_sim/sim_int.h \
    src/config.c src/config_table.c src/log.c src/datatype.c
tools_rcoll_sim_rcoll_sim_CPPFLAGS = $(RCOLL_COLL_CPPFLAGS) -I$(top_srcdir)/tools/rcoll_sim
tools_rcoll_sim_rcoll_sim_CFLAGS = $(AM_CFLAGS)
tools_rcoll_sim_rcoll_sim_LDADD = librcoll_coll.la -lm
# The check: simulation and model agree within a stated factor on a set of
# layouts, and a skewed model parameter makes it fail.
TESTS += tools/rcoll_sim/check-sim
dist_noinst_SCRIPTS += tools/rcoll_sim/check-sim tools/rcoll_sim/sim-tables.sh
