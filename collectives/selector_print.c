/*
 * selector_print.c - the table of the selector's choices under a model
 * and a tune file's rules, and the model's figures default vs measured, for
 * `rcoll_info --model`.
 */
#include <stdio.h>
#include "selector.h"

#define PRINT_MIN_BYTES  ((size_t)8)
#define PRINT_MAX_BYTES  ((size_t)256 << 20)
#define PRINT_MAX_RANKS  4096
#define PRINT_PPN        16

static void print_size(FILE *out, size_t b)
{
    if (b >= (1u << 20))
        fprintf(out, "%6zuM", b >> 20);
    else if (b >= 1024)
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
    fputc('\n', out);
}

void rcoll_selector_print_model(FILE *out, const rcoll_model_t *m)
{
    rcoll_selector_print_model_ppn(out, m, PRINT_PPN);
}
