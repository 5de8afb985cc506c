/*
 * selector_scale.h - the cost model at scale, for `rcoll_info --model
 * --nodes N --ppn P [--net NAME]`: named network profiles (inter-node
 * figures with their sources), the alpha-beta-gamma lower bound of each
 * collective, and the table of every algorithm's predicted time.  Rank
 * arithmetic only: nothing here runs on the per-collective path.
 */
#ifndef RCOLL_SELECTOR_SCALE_H
#define RCOLL_SELECTOR_SCALE_H

#include <stdio.h>
#include "coll.h"

typedef struct rcoll_net_profile {
    const char *name;          /* as given to --net */
    const char *what;          /* the network, in words */
    double      latency;       /* s: the network's share of a small message,
                                * added to the model's software alpha */
    double      bandwidth;     /* B/s per node link (beta_inter = 1 / this) */
    const char *source;        /* where the figures come from */
} rcoll_net_profile_t;

/* The profiles, ended by an entry whose name is NULL. */
extern const rcoll_net_profile_t rcoll_net_profiles[];

/* The profile called name, or NULL. */
const rcoll_net_profile_t *rcoll_net_profile_find(const char *name);

/* m with the profile's inter-node figures: alpha_inter = m->alpha (rcoll's
 * own per-message software cost, as the default model counts it) plus the
 * profile's latency; beta_inter = 1 / bandwidth.  Nothing else changes. */
void rcoll_net_profile_apply(const rcoll_net_profile_t *p, rcoll_model_t *m);

/* Print the profiles and their sources (`--net list`). */
void rcoll_net_profiles_print(FILE *out);

/*
 * The lower bound, in seconds, on coll of `bytes` (per rank as in
 * rcoll_alg_t.cost) on nodes x ppn ranks under m: the largest of the
 * latency, bandwidth and computation bounds of Chan et al. 2007 applied to
 * nodes joined by one link each (see docs/scaling.md and the legend that
 * rcoll_selector_print_scale prints).  0 where nothing bounds it (one node,
 * no reduction).
 */
double rcoll_coll_lower_bound(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nodes, int ppn);

/* The legend of the bound's formulas, one "# " line each. */
void rcoll_coll_lower_bound_legend(FILE *out);

/* For nodes x ppn ranks: per collective (only `only` unless it is
 * RCOLL_COLL_LAST) and size 8 B .. 1 GiB in x8 steps, every algorithm's
 * predicted time in us ("-" where it does not apply), the one selected, the
 * lower bound and selected / bound.  net_label names the inter-node figures
 * in the header. */
void rcoll_selector_print_scale(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                                const char *net_label, rcoll_coll_type_t only);
/* The same at the nsizes sizes given (nsizes 0: the x8 ladder). */
void rcoll_selector_print_scale_sizes(FILE *out, const rcoll_model_t *m, int nodes, int ppn,
                                      const char *net_label, rcoll_coll_type_t only,
                                      const size_t *sizes, int nsizes);

#endif
