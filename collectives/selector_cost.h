/*
 * selector_cost.h - building blocks of the alpha-beta-gamma cost formulas
 * that every algorithm's cost() is written with (see docs/algorithms.md).
 *
 * A step of an algorithm is a set of messages sent at the same time; its
 * time is that of its slowest message.  On one node (ppn >= nranks) a
 * message of b bytes costs alpha + b*beta.  Across nodes it costs
 * alpha_inter + b*beta_inter*ncross, where ncross is the number of ranks of
 * one node whose messages leave the node in that step: they share the node's
 * network link.  The node's other ppn - ncross ranks send on the node in
 * the same step, at alpha + b*beta each, so a step with both kinds costs
 * the larger of the two.  A message above the eager limit adds rndv_extra
 * (the ready-to-receive and the completion notice).
 */
#ifndef RCOLL_SELECTOR_COST_H
#define RCOLL_SELECTOR_COST_H

#include <stddef.h>
#include "coll.h"

static inline int rcoll_cost_multinode(int nranks, int ppn)
{
    return ppn > 0 && ppn < nranks;
}

/* One message of b bytes in a step where ncross ranks per node send off
 * node (ncross = 0: the step stays on the node). */
static inline double rcoll_cost_msg(const rcoll_model_t *m, double b, int nranks, int ppn,
                                    int ncross)
{
    double t;
    if (b <= 0)
        b = 0;
    if (rcoll_cost_multinode(nranks, ppn) && ncross > 0) {
        t = m->alpha_inter + b * m->beta_inter * ncross;
        if (ncross < ppn) {              /* the rest of the node's messages stay on it */
            double on = m->alpha + b * m->beta;
            t = on > t ? on : t;
        }
    } else {
        t = m->alpha + b * m->beta;
    }
    if (b > (double)m->eager_limit)
        t += m->rndv_extra;
    return t;
}

/* Ranks of one node whose partner at distance d (rank + d mod p, ranks laid
 * out node by node) is on another node. */
static inline int rcoll_cost_cross_shift(int d, int ppn)
{
    return d < ppn ? d : ppn;
}

/* Same for the partner rank ^ d (recursive doubling): with ppn a power of
 * two, distances below ppn stay on the node and larger ones all leave it. */
static inline int rcoll_cost_cross_xor(int d, int ppn)
{
    if (d >= ppn)
        return ppn;
    return (ppn & (ppn - 1)) == 0 ? 0 : rcoll_cost_cross_shift(d, ppn);
}

static inline int rcoll_cost_ceil_log2(int p)
{
    int k = 0;
    while ((1L << k) < p)
        k++;
    return k;
}

/* For port() (coll.h): the time one message of b bytes on a node holds its
 * sender's port (a rendezvous's handshake is waiting, not sending). */
static inline double rcoll_cost_port_msg(const rcoll_model_t *m, double b)
{
    return m->alpha + (b > 0 ? b : 0) * m->beta;
}

/* port() of a binomial tree moving n bytes along each edge (bcast,
 * reduce): p - 1 messages among p ranks. */
static inline double rcoll_cost_port_tree(const rcoll_model_t *m, double n, int p)
{
    return p > 1 ? (p - 1) / (double)p * rcoll_cost_port_msg(m, n) : 0;
}

/* port() of a binomial scatter or gather of n bytes: p - 1 messages, and
 * n/2 bytes per round leave the ranks that hold them. */
static inline double rcoll_cost_port_scatter(const rcoll_model_t *m, double n, int p)
{
    if (p < 2)
        return 0;
    return (p - 1) / (double)p * m->alpha + rcoll_cost_ceil_log2(p) * n / 2 / p * m->beta;
}

#endif
