/*
 * selector_print.c - the table of the selector's choices under a model
 * and a tune file's rules, and the model's figures default vs measured, for
 * `rcoll_info --model`; and, for one layout of nodes x ranks per node, every
 * algorithm's predicted time next to the lower bound (--model --nodes N).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "selector.h"
#include "selector_scale.h"

#define PRINT_MIN_BYTES  ((size_t)8)
#define PRINT_MAX_BYTES  ((size_t)256 << 20)
#define PRINT_MAX_RANKS  4096
#define PRINT_PPN        16

static void print_size(FILE *out, size_t b)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        fprintf(out, "%6zuM", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        fprintf(out, "%6zuK", b >> 10);
    else
        fprintf(out, "%6zuB", b);
}

static int alg_index(rcoll_coll_type_t coll, const rcoll_alg_t *alg)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    for (int i = 0; a != NULL && a[i] != NULL; i++)
        if (a[i] == alg)
            return i;
    return -1;
}

static void print_coll(FILE *out, const rcoll_model_t *m, const rcoll_tune_t *t,
                       rcoll_coll_type_t coll, int ppn)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    size_t max_bytes = coll == RCOLL_COLL_BARRIER ? 0 : PRINT_MAX_BYTES;

    if (a == NULL || a[0] == NULL) {
        fprintf(out, "%s: no algorithms\n\n", rcoll_coll_name(coll));
        return;
    }
    fprintf(out, "%s (", rcoll_coll_name(coll));
    for (int i = 0; a[i] != NULL; i++)
        fprintf(out, "%s%d = %s", i ? ", " : "", i, a[i]->name);
    fprintf(out, ")\n  %s \\ ranks", coll == RCOLL_COLL_ALLGATHER ||
            coll == RCOLL_COLL_REDUCE_SCATTER ? "block" : "bytes");
    for (int p = 2; p <= PRINT_MAX_RANKS; p *= 2)
        fprintf(out, "%5d", p);
    fputc('\n', out);
    for (size_t b = coll == RCOLL_COLL_BARRIER ? 0 : PRINT_MIN_BYTES; b <= max_bytes;
         b = b ? b * 2 : 1) {
        fprintf(out, "    ");
        print_size(out, b);
        fprintf(out, "      ");
        for (int p = 2; p <= PRINT_MAX_RANKS; p *= 2) {
            const rcoll_alg_t *rule = rcoll_tune_lookup(t, coll, b, p);
            if (rule != NULL)
                fprintf(out, "%4d*", alg_index(coll, rule));
            else
                fprintf(out, "%5d", alg_index(coll, rcoll_select_by_cost(coll, m, b, p,
                                                                         p < ppn ? p : ppn)));
        }
        fputc('\n', out);
        if (b == 0)
            break;
    }
    fputc('\n', out);
}

void rcoll_selector_print_model_ppn(FILE *out, const rcoll_model_t *m, int ppn)
{
    rcoll_selector_print_model_tune(out, m, NULL, ppn);
}

void rcoll_selector_print_model_tune(FILE *out, const rcoll_model_t *m, const rcoll_tune_t *t,
                                     int ppn)
{
    if (ppn < 1)
        ppn = 1;
    fprintf(out, "# cost model: alpha %.3g s, alpha_inter %.3g s, beta %.3g s/B (%.2f GB/s), "
            "beta_inter %.3g s/B (%.2f GB/s),\n#   gamma %.3g s/B, rndv_extra %.3g s, "
            "eager_limit %zu B, segment %zu B; ranks per node = min(ranks, %d)\n\n",
            m->alpha, m->alpha_inter, m->beta, 1e-9 / m->beta, m->beta_inter,
            1e-9 / m->beta_inter, m->gamma, m->rndv_extra, m->eager_limit, m->segment_size, ppn);
    if (t != NULL && t->nrules > 0)
        fprintf(out, "# N* = chosen by a rule of the tune file, N = by the cost model\n\n");
    for (int c = 0; c < RCOLL_COLL_LAST; c++)
        print_coll(out, m, t, (rcoll_coll_type_t)c, ppn);
}

void rcoll_selector_print_figures(FILE *out, const rcoll_model_t *defaults,
                                  const rcoll_tune_t *t, const char *source)
{
    fprintf(out, "# model figures: default (compiled in) and measured (%s)\n", source);
    fprintf(out, "#   %-14s %-5s %12s %12s  %s\n", "key", "unit", "default", "measured", "used");
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++) {
        double def = rcoll_tune_model_value(defaults, k);
        int given = t != NULL && t->model_line[k] > 0;
        char dbuf[32], mbuf[32];
        if (k < RCOLL_TUNE_NMODEL)
            snprintf(dbuf, sizeof(dbuf), "%.4g", def);
        else
            snprintf(dbuf, sizeof(dbuf), "-");
        if (given)
            snprintf(mbuf, sizeof(mbuf), "%.4g", t->model[k]);
        else
            snprintf(mbuf, sizeof(mbuf), "-");
        fprintf(out, "#   %-14s %-5s %12s %12s  %s\n", rcoll_tune_key_name(k),
                rcoll_tune_key_unit(k), dbuf, mbuf,
                k >= RCOLL_TUNE_NMODEL ? "recorded only" : given ? "measured" : "default");
    }
    fprintf(out, "# shm single-copy sizes (RCOLL_SHM_CMA=auto, bytes; see docs/tuning.md)\n");
    fprintf(out, "#   %-14s %-18s %-18s %s\n", "path", "default", "tune file", "used");
    for (int w = 0; w < RCOLL_TUNE_NCMA; w++) {
        size_t lo, hi;
        char dbuf[40], tbuf[48] = "-";
        rcoll_tune_cma_range(NULL, w, &lo, &hi);
        rcoll_tune_cma_format(lo, hi, dbuf, sizeof(dbuf));
        int line = rcoll_tune_cma_range(t, w, &lo, &hi);
        if (line > 0)
            rcoll_tune_cma_format(lo, hi, tbuf, sizeof(tbuf));
        fprintf(out, "#   %-14s %-18s %-18s %s\n", rcoll_tune_cma_name(w), dbuf, tbuf,
                line > 0 ? "tune file" : "default");
    }
    fprintf(out, "#   with RCOLL_SHM_ADAPT=auto (the default), allgather blocks from 16 KiB choose their "
                 "path at run time,\n#   starting from the cma_allgather sizes used above "
                 "(docs/shm.md, \"Adaptive single copy\")\n");
    fputc('\n', out);
}

void rcoll_selector_print_model(FILE *out, const rcoll_model_t *m)
{
    rcoll_selector_print_model_ppn(out, m, PRINT_PPN);
}

/* ---- one layout: every algorithm's time, the choice and the bound ---- */

#define SCALE_MAX_BYTES ((size_t)1 << 30)

static int scale_width(const char *name)
{
    int w = (int)strlen(name) + 2;
    return w < 10 ? 10 : w;
}

static void print_us(FILE *out, int w, double t)
{
    if (isinf(t) || isnan(t))
        fprintf(out, "%*s", w, "-");
    else
        fprintf(out, "%*.4g", w, t * 1e6);
}

/* One row: every algorithm's time at b, the choice, the bound. */
static void print_scale_row(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                            rcoll_coll_type_t coll, size_t b)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    int p = nodes * ppn;

    fprintf(out, "  ");
    print_size(out, b);
    for (int i = 0; a[i] != NULL; i++)
        print_us(out, scale_width(a[i]->name), a[i]->cost != NULL ? a[i]->cost(m, b, p, ppn) : 0);
    const rcoll_alg_t *sel = rcoll_select_by_cost(coll, m, b, p, ppn);
    double ts = sel != NULL && sel->cost != NULL ? sel->cost(m, b, p, ppn) : 0;
    double lb = rcoll_coll_lower_bound(coll, m, b, nodes, ppn);
    fprintf(out, "  %-18s", sel != NULL ? sel->name : "?");
    print_us(out, 11, lb);
    if (lb > 0)
        fprintf(out, "%10.2f\n", ts / lb);
    else
        fprintf(out, "%10s\n", "-");
}

static void print_scale_coll(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                             rcoll_coll_type_t coll, const size_t *sizes, int nsizes)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    int p = nodes * ppn, block = coll == RCOLL_COLL_ALLGATHER ||
                                 coll == RCOLL_COLL_REDUCE_SCATTER;

    if (a == NULL || a[0] == NULL)
        return;
    fprintf(out, "%s, %d nodes x %d ranks per node = %d ranks; predicted us\n",
            rcoll_coll_name(coll), nodes, ppn, p);
    fprintf(out, "  %7s", block ? "block" : "bytes");
    for (int i = 0; a[i] != NULL; i++)
        fprintf(out, "%*s", scale_width(a[i]->name), a[i]->name);
    fprintf(out, "  %-18s %10s %9s\n", "selected", "bound", "sel/bound");
    if (coll == RCOLL_COLL_BARRIER) {
        print_scale_row(out, m, nodes, ppn, coll, 0);
    } else if (nsizes > 0) {
        for (int i = 0; i < nsizes; i++)
            print_scale_row(out, m, nodes, ppn, coll, sizes[i]);
    } else {
        for (size_t b = PRINT_MIN_BYTES; b <= SCALE_MAX_BYTES; b *= 8)
            print_scale_row(out, m, nodes, ppn, coll, b);
    }
    fputc('\n', out);
}

void rcoll_selector_print_scale(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                                const char *net_label, rcoll_coll_type_t only)
{
    rcoll_selector_print_scale_sizes(out, m, nodes, ppn, net_label, only, NULL, 0);
}

void rcoll_selector_print_scale_sizes(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                                      const char *net_label, rcoll_coll_type_t only,
                                      const size_t *sizes, int nsizes)
{
    fprintf(out, "# PREDICTIONS of the alpha-beta-gamma cost model, not measurements.\n"
            "# inter-node: %s: alpha_inter %.3g us, beta_inter %.3g s/B (%.2f GB/s)\n"
            "# on node: alpha %.3g us, beta %.3g s/B (%.2f GB/s); gamma %.3g s/B; "
            "rndv_extra %.3g us;\n#   eager_limit %zu B, segment %zu B\n"
            "# per algorithm: its cost() in us, \"-\" where it does not apply; selected: the\n"
            "# cheapest (the tune file's rules are not applied); bytes: the vector\n"
            "# (allgather, reduce_scatter: one rank's block)\n",
            net_label, m->alpha_inter * 1e6, m->beta_inter, 1e-9 / m->beta_inter,
            m->alpha * 1e6, m->beta, 1e-9 / m->beta, m->gamma, m->rndv_extra * 1e6,
            m->eager_limit, m->segment_size);
    rcoll_coll_lower_bound_legend(out);
    fputc('\n', out);
    for (int c = 0; c < RCOLL_COLL_LAST; c++)
        if (only == RCOLL_COLL_LAST || only == (rcoll_coll_type_t)c)
            print_scale_coll(out, m, nodes, ppn, (rcoll_coll_type_t)c, sizes, nsizes);
}
