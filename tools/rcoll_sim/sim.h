/*
 * sim.h - rcoll_sim: times the real algorithm code (collectives/, linked
 * from librcoll_coll, the same objects librcoll is made of) on p = nodes x
 * ppn simulated ranks in one process, over a discrete-event fake network
 * that moves no data (docs/scaling.md, "Simulated schedules").
 *
 * The seam is the collectives' contract (coll.h): sim_core.c supplies the
 * core's side of it -- rcoll_task_send/recv/test/scratch, the reduction
 * kernels, the few context queries and the node-aware algorithms' child
 * tasks on the node and rail sub-communicators -- so each rank's progress() runs
 * unchanged, with its real peer, offset and size arithmetic, and every
 * message it posts becomes an event with a time.  What the fake network
 * charges (all figures from the rcoll_model_t, i.e. the cost model's):
 *
 *  - every rank has one send port: its sends leave one after the other;
 *    a send on the node holds it alpha + b*beta, one off the node alpha
 *    (the software's share), then the bytes go on the node's link;
 *  - every node has one outgoing and one incoming link: a message between
 *    nodes holds the sender node's out-link and the receiver node's
 *    in-link for b*beta_inter, first come first served, and arrives
 *    alpha_inter + b*beta_inter after it got both;
 *  - a message above the eager limit waits for its receive to be posted
 *    and adds rndv_extra (rendezvous); below, it is delivered at once and
 *    the receive completes when both are there;
 *  - a send completes when its message arrives, a receive at
 *    max(arrival, posted); a reduction of b bytes costs the reducing rank
 *    b*gamma; local copies and everything else cost nothing.
 *
 * Memory: a task (about 0.5 KB) and a few words per rank, a few words per
 * message in flight, one buffer of each kind shared by all ranks (their
 * contents are never looked at): 131072 ranks fit in well under 200 MB.
 */
#ifndef RCOLL_SIM_H
#define RCOLL_SIM_H

#include <stddef.h>
#include <stdio.h>
#include "coll.h"

typedef struct rcoll_sim_params {
    int                  nodes, ppn;
    const rcoll_model_t *model;       /* the network's figures */
    const rcoll_config_t *cfg;        /* the settings the algorithms read */
    long                 max_tests;   /* give up after this many rcoll_task_test calls */
    FILE                *trace;       /* non-NULL: one line per message */
} rcoll_sim_params_t;

typedef struct rcoll_sim_result {
    double time;          /* s: the last rank's finish */
    long   messages;
    long   tests;
    size_t peak_inflight; /* most messages in the network at once */
    int    over_budget;   /* 1: gave up after max_tests */
    char   failure[256];  /* why rcoll_sim_run failed (not over_budget) */
} rcoll_sim_result_t;

/* Run alg for coll with bytes per rank (as rcoll_alg_t.cost counts them:
 * allgather / reduce_scatter one rank's block) of float64 sum.  Returns 0
 * (res->time set), 1 over budget, -1 on failure (a deadlock, an unmatched
 * or mismatched message, an algorithm error; res->failure says). */
int rcoll_sim_run(const rcoll_sim_params_t *sp, const rcoll_alg_t *alg, size_t bytes,
                  rcoll_sim_result_t *res);

/* sim_selftest.c: time one message, refuse broken schedules; the number
 * of failed cases (0: all good), one line each on stdout. */
int rcoll_sim_self_test(const rcoll_model_t *m, const rcoll_config_t *cfg);

#endif
