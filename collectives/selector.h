/*
 * selector.h - choosing an algorithm: forced by RCOLL_<COLL>_ALGORITHM, a
 * rule of the RCOLL_TUNE_FILE, or the cheapest under the cost model.
 * rcoll_select() itself is declared in coll.h.  See docs/algorithms.md.
 */
#ifndef RCOLL_SELECTOR_H
#define RCOLL_SELECTOR_H

#include <stdio.h>
#include "coll.h"

/* The collective called name ("bcast"), or RCOLL_COLL_LAST. */
rcoll_coll_type_t rcoll_coll_find(const char *name);

/* "binomial, scatter_allgather, chain": the names of coll's algorithms, for
 * error messages (truncated to len). */
void rcoll_coll_alg_names(rcoll_coll_type_t coll, char *buf, size_t len);

/* ---- cost model ---- */

/* The default model parameters (measured on the development machine; see
 * docs/algorithms.md for how). */
const rcoll_model_t *rcoll_selector_model(void);

/* The model a context selects with: the defaults with the context's agreed
 * eager limit and segment size. */
void rcoll_selector_model_for(const rcoll_context_t *ctx, rcoll_model_t *m);

/* The cheapest algorithm of coll under m for bytes per rank (see
 * rcoll_alg_t.cost) on nranks ranks, ppn per node.  Ties go to the earlier
 * table entry, so the choice is the same on every rank. */
const rcoll_alg_t *rcoll_select_by_cost(rcoll_coll_type_t coll, const rcoll_model_t *m,
                                        size_t bytes, int nranks, int ppn);

/* Ranks per node of a communicator: the most ranks it has on any one node,
 * so that every member computes the same value. */
int rcoll_selector_comm_ppn(const rcoll_comm_t *comm);

/* Print, per collective, the algorithm chosen for sizes 8 B .. 256 MiB and
 * 2 .. 4096 ranks, with ppn = min(ranks, ppn) (print_model: ppn 16). */
void rcoll_selector_print_model(FILE *out, const rcoll_model_t *m);
void rcoll_selector_print_model_ppn(FILE *out, const rcoll_model_t *m, int ppn);

/* rcoll_selector_init / fini: declared in coll.h (the core calls them). */

/* ---- tune files ---- */

typedef struct rcoll_tune_rule {
    rcoll_coll_type_t  coll;
    size_t             min_bytes, max_bytes;   /* inclusive */
    int                min_ranks, max_ranks;   /* inclusive */
    const rcoll_alg_t *alg;
    int                line;
} rcoll_tune_rule_t;

typedef struct rcoll_tune {
    rcoll_tune_rule_t *rules;
    int                nrules;
} rcoll_tune_t;

/* Parse tune-file text; name is used in error messages ("name:line: why").
 * On error *out is untouched and err holds the message. */
rcoll_status_t rcoll_tune_parse_text(const char *text, const char *name, rcoll_tune_t *out,
                                     char *err, size_t errlen);
rcoll_status_t rcoll_tune_parse_file(const char *path, rcoll_tune_t *out, char *err, size_t errlen);

/* The algorithm of the first rule matching, or NULL. */
const rcoll_alg_t *rcoll_tune_lookup(const rcoll_tune_t *t, rcoll_coll_type_t coll,
                                     size_t bytes, int nranks);
void rcoll_tune_free(rcoll_tune_t *t);

#endif
