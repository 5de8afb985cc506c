/*
 * node_check - rcoll_comm_split_node: on the world, on a node communicator
 * itself, and on sub-communicators that span some of the nodes; then
 * collectives on the node communicators beside the world's, and, with each
 * node-aware algorithm forced (allreduce and reduce node_aware /
 * node_leader; bcast, allgather and barrier node_aware), on the
 * sub-communicator that spans some nodes beside the world's collective with
 * the same algorithm, and on the world with the nodes' ranks interleaved.
 *
 *   rcollrun -n 4 --nodes 2 test/integration/node_check [--layout 2,2] [-v]
 *   srun -N 2 -n 4 --mpi=pmix test/integration/node_check [-v]
 *
 * The expected node of every rank comes from outside rcoll: --layout N1,N2,...
 * (ranks in blocks, as rcollrun --nodes places them), else this process's
 * node name as the environment shows it (SLURMD_NODENAME under Slurm, else
 * the host name, which rcollrun --nodes sets per virtual node), gathered
 * over the world.  rcoll's own node numbering must agree with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define NAME_LEN 64
#define MAX_RANKS 256

typedef struct {
    int  wrank, wsize, verbose;
    long nfail;
    int  node_of[MAX_RANKS];   /* expected node index of each world rank */
    int  nnodes;
} node_run_t;

#define FAILF(R, ...) do { (R)->nfail++; fprintf(stderr, "FAIL node_check rank %d: ", (R)->wrank); \
                           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define fatal(R, what, st) check_fatal("node_check", (R)->wrank, (what), (st))

/* "2,2" -> node of each rank in blocks; 0 on success. */
static int layout_nodes(node_run_t *R, const char *spec)
{
    int r = 0;
    R->nnodes = 0;
    for (const char *p = spec; *p != '\0';) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || r + n > R->wsize || (*end != ',' && *end != '\0'))
            return -1;
        for (long i = 0; i < n; i++)
            R->node_of[r++] = R->nnodes;
        R->nnodes++;
        p = *end == ',' ? end + 1 : end;
    }
    return r == R->wsize ? 0 : -1;
}

/* Node names from the environment, gathered; numbered by first appearance. */
static void env_nodes(node_run_t *R, rcoll_comm_t *world)
{
    static char all[MAX_RANKS][NAME_LEN];
    char mine[NAME_LEN] = { 0 };
    const char *slurm = getenv("SLURMD_NODENAME");
    if (slurm != NULL)
        snprintf(mine, sizeof(mine), "%s", slurm);
    else
        gethostname(mine, sizeof(mine) - 1);
    rcoll_status_t st = rcoll_allgather(mine, all, NAME_LEN, RCOLL_UINT8, world);
    if (st != RCOLL_OK)
        fatal(R, "allgather of node names", st);
    R->nnodes = 0;
    for (int r = 0; r < R->wsize; r++) {
        int k = 0;
        while (k < r && strcmp(all[k], all[r]) != 0)
            k++;
        R->node_of[r] = k < r ? R->node_of[k] : R->nnodes++;
    }
}

/* Split parent (group pg) by node and compare with the expectation. */
static void split_node(node_run_t *R, rcoll_comm_t *parent, const check_group_t *pg,
                       const char *name, check_group_t *g)
{
    int colors[MAX_RANKS], keys[MAX_RANKS];
    for (int r = 0; r < R->wsize; r++) {
        colors[r] = -1;
        keys[r] = 0;
    }
    for (int i = 0; i < pg->n; i++) {
        colors[pg->members[i]] = R->node_of[pg->members[i]];
        keys[pg->members[i]] = i;
    }
    check_group_expect(g, name, R->wsize, R->wrank, colors, keys);
    g->comm = (rcoll_comm_t *)R;     /* a sentinel: must be overwritten */
    rcoll_status_t st = rcoll_comm_split_node(parent, &g->comm);
    if (st != RCOLL_OK)
        fatal(R, name, st);
    if (g->comm == NULL || g->comm == (rcoll_comm_t *)R) {
        FAILF(R, "%s: no communicator", name);
        _exit(1);
    }
    if (rcoll_comm_size(g->comm) != g->n || rcoll_comm_rank(g->comm) != g->me) {
        /* the collectives below would size buffers for the wrong group */
        FAILF(R, "%s: rank %d of %d, expected rank %d of %d (%d node(s) expected)", name,
              rcoll_comm_rank(g->comm), rcoll_comm_size(g->comm), g->me, g->n, R->nnodes);
        _exit(1);
    }
}

static void run_op(node_run_t *R, check_op_t *o, int blocking)
{
    char why[512];
    rcoll_status_t st = check_op_post(o, blocking);
    if (st == RCOLL_OK && !blocking)
        st = rcoll_wait(o->req);
    if (st != RCOLL_OK)
        fatal(R, check_kind_name(o->kind), st);
    if (check_op_verify(o, why, sizeof(why)) != 0)
        FAILF(R, "%s", why);
    check_op_free(o);
}

/* Every collective on g, some concurrently with one on the world. */
static void collectives(node_run_t *R, check_group_t *g, check_group_t *gw, uint64_t salt)
{
    check_op_t ops[] = {
        {CHECK_ALLREDUCE, g, RCOLL_INT32, RCOLL_SUM, 1000, 0, 0, salt + 1},
        {CHECK_BCAST, g, RCOLL_FLOAT64, RCOLL_SUM, 5000, g->n - 1, 0, salt + 2},
        {CHECK_REDUCE, g, RCOLL_INT64, RCOLL_MAX, 777, 0, 0, salt + 3},
        {CHECK_ALLGATHER, g, RCOLL_UINT16, RCOLL_SUM, 129, 0, 0, salt + 4},
        {CHECK_REDUCE_SCATTER, g, RCOLL_FLOAT32, RCOLL_SUM, 300, 0, 0, salt + 5},
        {CHECK_BARRIER, g, RCOLL_UINT8, RCOLL_SUM, 0, 0, 0, salt + 6},
        {CHECK_ALLREDUCE, g, RCOLL_FLOAT32, RCOLL_SUM, 70000, 0, 1, salt + 7},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        run_op(R, &ops[i], (int)(i % 2));
    /* The node communicator and the world at once, waited in reverse order. */
    check_op_t a = {CHECK_ALLREDUCE, g, RCOLL_INT64, RCOLL_SUM, 4097, 0, 0, salt + 8};
    check_op_t b = {CHECK_ALLREDUCE, gw, RCOLL_INT64, RCOLL_SUM, 4097, 0, 0, salt + 9};
    char why[512];
    rcoll_status_t st = check_op_post(&a, 0);
    if (st == RCOLL_OK)
        st = check_op_post(&b, 0);
    if (st == RCOLL_OK)
        st = rcoll_wait(b.req);
    if (st == RCOLL_OK)
        st = rcoll_wait(a.req);
    if (st != RCOLL_OK)
        fatal(R, "concurrent allreduce", st);
    if (check_op_verify(&a, why, sizeof(why)) != 0)
        FAILF(R, "%s", why);
    if (check_op_verify(&b, why, sizeof(why)) != 0)
        FAILF(R, "%s", why);
    check_op_free(&a);
    check_op_free(&b);
}

/* The collectives on g with each node-aware algorithm forced, then the
 * selector's choice again. */
static void node_aware_forced(node_run_t *R, rcoll_context_t *ctx, check_group_t *g,
                              check_group_t *gw)
{
    static const char *const keys[] = {
        "RCOLL_ALLREDUCE_ALGORITHM", "RCOLL_BCAST_ALGORITHM", "RCOLL_REDUCE_ALGORITHM",
        "RCOLL_ALLGATHER_ALGORITHM", "RCOLL_BARRIER_ALGORITHM",
    };
    static const char *const forced[][5] = {
        {"node_aware", "node_aware", "node_aware", "node_aware", "node_aware"},
        {"node_leader", "node_aware", "node_leader", "node_aware", "node_aware"},
        {"", "", "", "", ""},
    };
    for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++) {
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            rcoll_status_t st = rcoll_config_set(ctx, keys[k], forced[i][k]);
            if (st != RCOLL_OK)
                fatal(R, "rcoll_config_set", st);
        }
        collectives(R, g, gw, 400 + 10 * i);
    }
}

static void free_comm(node_run_t *R, check_group_t *g)
{
    rcoll_status_t st = rcoll_comm_free(g->comm);
    if (st != RCOLL_OK)
        fatal(R, "rcoll_comm_free", st);
    g->comm = NULL;
}

static int run(node_run_t *R, rcoll_context_t *ctx, const char *layout)
{
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    double t0 = check_now();
    if (layout != NULL)
        layout_nodes(R, layout);
    else
        env_nodes(R, world);
    int local = 0;
    for (int r = 0; r < R->wsize; r++)
        local += R->node_of[r] == R->node_of[R->wrank];
    if (rcoll_context_local_size(ctx) != local)
        FAILF(R, "rcoll_context_local_size says %d, expected %d", rcoll_context_local_size(ctx),
              local);

    int colors[MAX_RANKS], keys[MAX_RANKS];
    check_group_t gw, node, node2, half, halfnode;
    for (int r = 0; r < R->wsize; r++) { colors[r] = 0; keys[r] = r; }
    check_group_expect(&gw, "world", R->wsize, R->wrank, colors, keys);
    gw.comm = world;

    /* world -> node, and the node's own node split (the same ranks) */
    split_node(R, world, &gw, "node of world", &node);
    split_node(R, node.comm, &node, "node of node", &node2);
    collectives(R, &node, &gw, 100);
    collectives(R, &node2, &gw, 200);

    /* A sub-communicator spanning some nodes: the world in reverse order
     * without its last rank (when there are several), then its node split. */
    for (int r = 0; r < R->wsize; r++) {
        colors[r] = R->wsize > 1 && r == R->wsize - 1 ? -1 : 0;
        keys[r] = -r;
    }
    int in_half = check_group_expect(&half, "reversed, last rank left out", R->wsize, R->wrank,
                                     colors, keys) == 0;
    rcoll_comm_t *hc = NULL;
    rcoll_status_t st = rcoll_comm_split(world, colors[R->wrank], keys[R->wrank], &hc);
    if (st != RCOLL_OK)
        fatal(R, "rcoll_comm_split", st);
    if (in_half) {
        half.comm = hc;
        node_aware_forced(R, ctx, &half, &half);
        split_node(R, hc, &half, "node of reversed part", &halfnode);
        collectives(R, &halfnode, &half, 300);
        free_comm(R, &halfnode);
        free_comm(R, &half);
    }
    /* The world with the nodes' ranks interleaved (by local index, then
     * node): on more than one node, no node's ranks are contiguous in comm
     * order, which the node-aware allgather must put back in comm order. */
    int seen[MAX_RANKS] = {0};
    check_group_t inter;
    for (int r = 0; r < R->wsize; r++) {
        colors[r] = 0;
        keys[r] = seen[R->node_of[r]]++ * R->wsize + R->node_of[r];
    }
    check_group_expect(&inter, "nodes interleaved", R->wsize, R->wrank, colors, keys);
    if ((st = rcoll_comm_split(world, 0, keys[R->wrank], &inter.comm)) != RCOLL_OK)
        fatal(R, "rcoll_comm_split", st);
    node_aware_forced(R, ctx, &inter, &inter);
    free_comm(R, &inter);
    free_comm(R, &node2);
    free_comm(R, &node);

    int32_t mine = R->nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal(R, "summary allreduce", st);
    if (R->wrank == 0) {
        if (any == 0)
            printf("node_check: %d ranks on %d node(s) ok (%.1f s)\n", R->wsize, R->nnodes,
                   check_now() - t0);
        else
            printf("node_check: %d ranks on %d node(s): FAILED on %d rank(s)\n", R->wsize,
                   R->nnodes, any);
    }
    fflush(stdout);
    return any == 0 && !mine ? 0 : 1;
}

int main(int argc, char **argv)
{
    static node_run_t run_state;
    node_run_t *R = &run_state;
    const char *layout = NULL;
    char *rest[3] = { argv[0], NULL, NULL };
    int nrest = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
            layout = argv[++i];
        } else if (strcmp(argv[i], "-v") == 0) {
            rest[nrest++] = argv[i];
        } else {
            fprintf(stderr, "usage: %s [--layout N1,N2,...] [-v]\n", argv[0]);
            return 2;
        }
    }
    rcoll_context_t *ctx;
    int rc = check_start("node_check", nrest, rest, NULL, &ctx, &R->wrank, &R->wsize,
                         &R->verbose);
    if (rc != 0)
        return rc;
    if (R->wsize > MAX_RANKS) {
        fprintf(stderr, "node_check: at most %d ranks\n", MAX_RANKS);
        return 2;
    }
    if (layout != NULL && layout_nodes(R, layout) != 0) {
        fprintf(stderr, "node_check: --layout %s does not add up to %d ranks\n", layout,
                R->wsize);
        return 2;
    }
    rc = run(R, ctx, layout);
    rcoll_status_t st = rcoll_finalize(ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL node_check rank %d: rcoll_finalize returned %s\n", R->wrank,
                rcoll_strerror(st));
        return 1;
    }
    return rc;
}
