/*
 * selector_bound.c - the alpha-beta-gamma lower bound of each collective on
 * nodes x ppn ranks, for `rcoll_info --model --nodes N --ppn P`.
 *
 * The bounds are those of Chan, Heimlich, Purkayastha and van de Geijn,
 * "Collective communication: theory, practice, and experience" (Concurrency
 * and Computation: Practice and Experience 19(13), 2007, table 1), applied
 * to what the model lets cross between nodes: each node has one link
 * (alpha_inter per message, beta_inter per byte, shared by the node's ranks
 * that send off node at once, as selector_cost.h prices it).  With p = N*P
 * ranks on N nodes, n the vector (allgather, reduce_scatter: the whole
 * vector p*b, b one rank's block):
 *
 *   latency   ceil(log_{P+1} N) * alpha_inter: a node's P ranks can reach P
 *             other nodes per step, so the nodes that hold (or have
 *             contributed) the data grow at most (P+1)-fold per step; with
 *             P = 1 this is Chan's ceil(log2 p) alpha
 *   bandwidth bcast, reduce: n beta_inter (a node other than the root's
 *             receives, the root's node takes in, n bytes through its link);
 *             allreduce: 2 (N-1)/N n beta_inter; allgather, reduce_scatter:
 *             (N-1)/N n beta_inter (Chan's bounds with the nodes as the
 *             processes); barrier: none
 *   compute   allreduce, reduce, reduce_scatter: (p-1)/p n gamma (p-1 vectors
 *             of n bytes reduced, shared by p ranks at best)
 *
 * Chan et al. bound each term separately; the bound here is their largest
 * (max, not sum, so it is a bound under any overlap).  One node (N = 1):
 * only the compute term.
 */
#include <math.h>
#include "selector_scale.h"

static double latency_bound(const rcoll_model_t *m, int nodes, int ppn)
{
    double steps = 0, reach = 1;
    while (reach < nodes) {
        reach *= (double)ppn + 1;
        steps++;
    }
    return steps * m->alpha_inter;
}

static double bandwidth_bound(rcoll_coll_type_t coll, const rcoll_model_t *m, double n,
                              int nodes)
{
    double frac = (double)(nodes - 1) / nodes;
    switch (coll) {
    case RCOLL_COLL_BCAST:
    case RCOLL_COLL_REDUCE:
        return n * m->beta_inter;
    case RCOLL_COLL_ALLREDUCE:
        return 2 * frac * n * m->beta_inter;
    case RCOLL_COLL_ALLGATHER:
    case RCOLL_COLL_REDUCE_SCATTER:
        return frac * n * m->beta_inter;
    default:
        return 0;
    }
}

static double compute_bound(rcoll_coll_type_t coll, const rcoll_model_t *m, double n, double p)
{
    if (coll != RCOLL_COLL_ALLREDUCE && coll != RCOLL_COLL_REDUCE &&
        coll != RCOLL_COLL_REDUCE_SCATTER)
        return 0;
    return (p - 1) / p * n * m->gamma;
}

double rcoll_coll_lower_bound(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nodes, int ppn)
{
    if (nodes < 1 || ppn < 1)
        return 0;
    double p = (double)nodes * ppn;
    double n = coll == RCOLL_COLL_BARRIER ? 0 : (double)bytes;
    if (coll == RCOLL_COLL_ALLGATHER || coll == RCOLL_COLL_REDUCE_SCATTER)
        n *= p;
    double t = compute_bound(coll, m, n, p);
    if (nodes > 1) {
        t = fmax(t, latency_bound(m, nodes, ppn));
        t = fmax(t, bandwidth_bound(coll, m, n, nodes));
    }
    return t;
}

void rcoll_coll_lower_bound_legend(FILE *out)
{
    fprintf(out,
        "# bound: the alpha-beta-gamma lower bound of Chan et al. 2007 (\"Collective\n"
        "#   communication: theory, practice, and experience\", table 1) with the N nodes\n"
        "#   as its processes (one link each), p = N*P ranks, n the vector (allgather,\n"
        "#   reduce_scatter: p * block): max of\n"
        "#   latency   ceil(log_{P+1} N) * alpha_inter    (Chan: ceil(log2 p) alpha; a node's\n"
        "#             P ranks reach P nodes per step)\n"
        "#   bandwidth bcast, reduce n*beta_inter; allreduce 2(N-1)/N*n*beta_inter;\n"
        "#             allgather, reduce_scatter (N-1)/N*n*beta_inter; barrier none\n"
        "#   compute   allreduce, reduce, reduce_scatter (p-1)/p*n*gamma\n"
        "#   one node (N = 1): the compute term only\n");
}
