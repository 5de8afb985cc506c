/*
 * rcoll_sim - simulated schedules: the real algorithm code of every
 * point-to-point algorithm, flat and node-aware (composed), run on nodes x
 * ppn ranks over the fake network of sim.h, timed, and printed next to the
 * cost model's prediction for the same algorithm (its cost(), as
 * `rcoll_info --model` prints it).  The node-aware algorithms' node-local
 * steps run the point-to-point algorithms (shared memory is not simulated),
 * and their prediction prices them so (the model's shm_node = 0: what
 * `RCOLL_SHM=0` runs); they are offered only on layouts of 2+ nodes of 2+
 * ranks.
 *
 *   rcoll_sim --nodes N --ppn P [--net NAME] [--coll C] [--alg A] [--kind flat|node|all]
 *             [--bytes 8,4k,...] [--max-tests N] [--check F] [--skew PARAM=X] [--trace]
 *
 * --kind: the flat algorithms only, the node-aware (composed) ones only, or
 * both (the default).
 * --trace prints every message as the network times it (for small layouts).
 * rcoll_sim [--net NAME] --self-test: the simulator's own checks
 * (sim_selftest.c).
 * --check F: exit 1 unless every simulated / predicted ratio lies within
 * [1/F, F].  --skew PARAM=X multiplies one of the model's figures (alpha,
 * alpha_inter, beta, beta_inter, gamma, rndv_extra) by X for the
 * prediction only, so a check can be shown to fail.  The figures are the
 * model's defaults with the configured eager limit and the --net profile's
 * inter-node figures (the tune file is not read).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"
#include "selector.h"

typedef struct {
    int               nodes, ppn;
    const char       *net, *alg;
    int               kind;          /* 0 all, 1 flat, 2 node-aware */
    rcoll_coll_type_t only;
    size_t            bytes[32];
    int               nbytes;
    long              max_tests;
    double            check;
    const char       *skew_name;
    double            skew;
    int               trace, self_test;
} opts_t;

static int parse_bytes(opts_t *o, const char *v)
{
    char buf[512], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", v);
    o->nbytes = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (o->nbytes == 32 || rcoll_parse_size(tok, &o->bytes[o->nbytes]) != 0 || o->bytes[o->nbytes] == 0)
            return -1;
        o->nbytes++;
    }
    return o->nbytes > 0 ? 0 : -1;
}

static double *model_field(rcoll_model_t *m, const char *name)
{
    if (strcmp(name, "alpha") == 0)
        return &m->alpha;
    if (strcmp(name, "alpha_inter") == 0)
        return &m->alpha_inter;
    if (strcmp(name, "beta") == 0)
        return &m->beta;
    if (strcmp(name, "beta_inter") == 0)
        return &m->beta_inter;
    if (strcmp(name, "gamma") == 0)
        return &m->gamma;
    if (strcmp(name, "rndv_extra") == 0)
        return &m->rndv_extra;
    return NULL;
}

static int parse_skew(opts_t *o, const char *v)
{
    static char name[32];
    const char *eq = strchr(v, '=');
    rcoll_model_t probe;
    char *end;

    if (eq == NULL || (size_t)(eq - v) >= sizeof(name))
        return -1;
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = '\0';
    o->skew = strtod(eq + 1, &end);
    o->skew_name = name;
    return model_field(&probe, name) != NULL && *end == '\0' && o->skew > 0 ? 0 : -1;
}

static int parse_opts(opts_t *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->only = RCOLL_COLL_LAST;
    o->max_tests = 200000000L;
    parse_bytes(o, "8,512,32k,2m");
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (strcmp(k, "--trace") == 0 || strcmp(k, "--self-test") == 0) {
            *(k[2] == 't' ? &o->trace : &o->self_test) = 1;
            i--;
            continue;
        }
        if (!ok)
            ;
        else if (strcmp(k, "--nodes") == 0)
            ok = (o->nodes = atoi(v)) >= 1;
        else if (strcmp(k, "--ppn") == 0)
            ok = (o->ppn = atoi(v)) >= 1;
        else if (strcmp(k, "--net") == 0)
            ok = (o->net = v, rcoll_net_profile_find(v) != NULL);
        else if (strcmp(k, "--coll") == 0)
            ok = (o->only = rcoll_coll_find(v)) != RCOLL_COLL_LAST;
        else if (strcmp(k, "--alg") == 0)
            o->alg = v;
        else if (strcmp(k, "--kind") == 0)
            ok = (o->kind = !strcmp(v, "all") ? 0 : !strcmp(v, "flat") ? 1 : !strcmp(v, "node") ? 2 : -1) >= 0;
        else if (strcmp(k, "--bytes") == 0)
            ok = parse_bytes(o, v) == 0;
        else if (strcmp(k, "--max-tests") == 0)
            ok = (o->max_tests = atol(v)) > 0;
        else if (strcmp(k, "--check") == 0)
            ok = (o->check = strtod(v, NULL)) >= 1;
        else if (strcmp(k, "--skew") == 0)
            ok = parse_skew(o, v) == 0;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "rcoll_sim: bad option or value: %s %s\n", k, v != NULL ? v : "");
            return -1;
        }
    }
    if (o->self_test)
        return 0;
    if (o->nodes < 1 || o->ppn < 1 || (long)o->nodes * o->ppn < 2 || (long)o->nodes * o->ppn > (1L << 20)) {
        fprintf(stderr, "usage: rcoll_sim --nodes N --ppn P (2 .. 2^20 ranks) [--net NAME] [--coll C] "
                "[--alg A] [--kind flat|node|all] [--bytes 8,4k,...] [--max-tests N] [--check F] "
                "[--skew PARAM=X] [--trace]\n");
        return -1;
    }
    return 0;
}

/* The point-to-point algorithms, flat or composed of them: not shared memory. */
static int simulable(const rcoll_alg_t *a)
{
    return strncmp(a->name, "shm", 3) != 0 && a->cost != NULL;
}

/* Buffers are shared by all ranks but allgather's and reduce_scatter's hold
 * p blocks: keep them under 1 GiB. */
static int too_big(rcoll_coll_type_t coll, size_t bytes, long p)
{
    int per_rank = coll == RCOLL_COLL_ALLGATHER || coll == RCOLL_COLL_REDUCE_SCATTER;

    return (double)bytes * (per_rank ? (double)p : 1.0) > (double)(1u << 30);
}

/* Per size, of the algorithms simulated: the fastest in simulation and
 * the fastest by the model's prediction; DIFFERENT where the model's pick
 * simulates more than 1% slower than the fastest. */
typedef struct {
    const rcoll_alg_t *sim_alg, *pred_alg;
    double             sim, pred, pred_alg_sim;   /* the model's pick, simulated */
} best_t;

static void best_note(best_t *b, const rcoll_alg_t *a, double sim, double pred)
{
    if (b->sim_alg == NULL || sim < b->sim) {
        b->sim_alg = a;
        b->sim = sim;
    }
    if (b->pred_alg == NULL || pred < b->pred) {
        b->pred_alg = a;
        b->pred = pred;
        b->pred_alg_sim = sim;
    }
}

static void best_print(const best_t *best, const opts_t *o, rcoll_coll_type_t coll)
{
    for (int i = 0; i < o->nbytes; i++) {
        const best_t *b = &best[i];
        if (b->sim_alg == NULL)
            continue;
        printf("# %s %zu B: fastest simulated %s (%.4g us); the model's fastest of these %s "
               "(%.4g us predicted, %.4g simulated)%s\n", rcoll_coll_name(coll), o->bytes[i],
               b->sim_alg->name, b->sim * 1e6, b->pred_alg->name, b->pred * 1e6, b->pred_alg_sim * 1e6,
               b->pred_alg_sim > 1.01 * b->sim ? "  DIFFERENT" : "");
    }
}

/* One algorithm at one size: a line; returns 1 if it breaks the check. */
static int run_one(const opts_t *o, const rcoll_sim_params_t *sp, const rcoll_model_t *mpred,
                   const rcoll_alg_t *a, size_t bytes, int *failures, best_t *best)
{
    long p = (long)o->nodes * o->ppn;
    double pred = a->cost(mpred, bytes, (int)p, o->ppn), ratio;
    rcoll_sim_result_t res;
    char head[64];
    int rc, bad;

    snprintf(head, sizeof(head), "%-15s %-19s %9zu", rcoll_coll_name(a->coll), a->name, bytes);
    if ((a->flags & RCOLL_ALG_COMPOSED) && isinf(pred)) {
        printf("%s %12s %12s %8s  not offered on this layout (one node, or one rank per node)\n", head,
               "-", "-", "-");
        return 0;
    }
    if (too_big(a->coll, bytes, p)) {
        printf("%s %12s %12.4g %8s  not run: buffers over 1 GiB\n", head, "-", pred * 1e6, "-");
        return 0;
    }
    rc = rcoll_sim_run(sp, a, bytes, &res);
    if (rc == 1) {
        printf("%s %12s %12.4g %8s  not run: over %ld tests\n", head, "-", pred * 1e6, "-", o->max_tests);
        return 0;
    }
    if (rc != 0) {
        printf("%s %12s %12.4g %8s  FAILED: %s\n", head, "-", pred * 1e6, "-", res.failure);
        (*failures)++;
        return 1;
    }
    best_note(best, a, res.time, pred);
    ratio = pred > 0 ? res.time / pred : 0;
    bad = o->check > 0 && (ratio > o->check || ratio < 1 / o->check);
    printf("%s %12.4g %12.4g %8.3f  %ld msgs%s\n", head, res.time * 1e6, pred * 1e6, ratio, res.messages,
           bad ? "  OUTSIDE THE FACTOR" : "");
    return bad;
}

int main(int argc, char **argv)
{
    opts_t o;
    rcoll_config_t cfg;
    rcoll_model_t m, mpred;
    rcoll_sim_params_t sp;
    int bad = 0, failures = 0, lines = 0;

    if (parse_opts(&o, argc, argv) != 0)
        return 2;
    if (rcoll_config_load(NULL, &cfg) != RCOLL_OK)
        return 2;
    m = *rcoll_selector_model();
    m.shm = m.shm_node = 0;          /* shared memory is not simulated */
    m.eager_limit = cfg.eager_limit;
    m.segment_size = cfg.segment_size;
    if (o.net != NULL)
        rcoll_net_profile_apply(rcoll_net_profile_find(o.net), &m);
    if (o.self_test)
        return rcoll_sim_self_test(&m, &cfg) ? 1 : 0;
    mpred = m;
    if (o.skew_name != NULL)
        *model_field(&mpred, o.skew_name) *= o.skew;
    sp = (rcoll_sim_params_t){ o.nodes, o.ppn, &m, &cfg, o.max_tests, o.trace ? stdout : NULL };
    printf("# SIMULATION (rcoll_sim): the real schedules on %d nodes x %d ranks per node = %ld ranks\n"
           "# over a fake network (tools/rcoll_sim/sim.h), next to the cost model's prediction.\n"
           "# network: %s; alpha %.3g us, beta %.3g s/B, alpha_inter %.3g us, beta_inter %.3g s/B,\n"
           "#   gamma %.3g s/B, rndv_extra %.3g us, eager_limit %zu B, segment %zu B\n",
           o.nodes, o.ppn, (long)o.nodes * o.ppn, o.net != NULL ? o.net : "the model's own inter-node figures",
           m.alpha * 1e6, m.beta, m.alpha_inter * 1e6, m.beta_inter, m.gamma, m.rndv_extra * 1e6,
           m.eager_limit, cfg.segment_size);
    if (o.skew_name != NULL)
        printf("# the prediction's %s is skewed x%g (the simulation's is not)\n", o.skew_name, o.skew);
    printf("%-15s %-19s %9s %12s %12s %8s\n", "# collective", "algorithm", "bytes", "sim_us", "model_us",
           "sim/model");
    for (int c = 0; c < RCOLL_COLL_LAST; c++) {
        best_t best[32];
        if (o.only != RCOLL_COLL_LAST && c != (int)o.only)
            continue;
        memset(best, 0, sizeof(best));
        for (const rcoll_alg_t *const *a = rcoll_coll_algs((rcoll_coll_type_t)c); *a != NULL; a++) {
            int composed = ((*a)->flags & RCOLL_ALG_COMPOSED) != 0;
            if (!simulable(*a) || (o.alg != NULL && strcmp(o.alg, (*a)->name) != 0) ||
                (o.kind == 1 && composed) || (o.kind == 2 && !composed))
                continue;
            for (int i = 0; i < o.nbytes; i++, lines++)
                bad += run_one(&o, &sp, &mpred, *a, o.bytes[i], &failures, &best[i]);
        }
        if (o.alg == NULL)
            best_print(best, &o, (rcoll_coll_type_t)c);
    }
    if (lines == 0) {
        fprintf(stderr, "rcoll_sim: no point-to-point or node-aware algorithm matches\n");
        return 2;
    }
    if (o.check > 0)
        printf("# check: sim/model within a factor %g: %s (%d of %d outside, %d failed)\n", o.check,
               bad ? "NO" : "yes", bad - failures, lines, failures);
    return bad || failures ? 1 : 0;
}
