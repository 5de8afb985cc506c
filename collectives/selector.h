/*
 * selector.h - choosing an algorithm: forced by RCOLL_<COLL>_ALGORITHM, a
 * rule of the RCOLL_TUNE_FILE, or the cheapest under the cost model.
 * rcoll_select() itself is declared in coll.h.  See docs/algorithms.md.
 */
#ifndef RCOLL_SELECTOR_H
#define RCOLL_SELECTOR_H

#include <stdio.h>
#include "coll.h"
/* the model at scale (network profiles, lower bound, the --nodes table):
 * part of the selector's interface to tools/rcoll_info */
#include "selector_scale.h"

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

/* The cost of that cheapest algorithm (INFINITY if none applies): how a
 * composed algorithm prices its children on the node and rail
 * sub-communicators. */
double rcoll_select_best_cost(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nranks, int ppn);

/* The same algorithm's port() on one node of nranks ranks (its cost()
 * where it has none): engines/compose_cost.h. */
double rcoll_select_best_port(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nranks);

/* Both at once, from one selection (one node of nranks ranks): the cost,
 * and its port in *port. */
double rcoll_select_best_cost_port(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                                   int nranks, double *port);

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

/* The keys of `model KEY VALUE` lines (measured by rcoll_tune).  The first
 * ones replace the compiled-in rcoll_model_t figures; the others are
 * recorded for rcoll_info --model (the selector does not price them). */
typedef enum {
    RCOLL_TUNE_ALPHA,          /* s per message, same node */
    RCOLL_TUNE_ALPHA_INTER,    /* s per message between nodes */
    RCOLL_TUNE_BETA,           /* s per byte, same node */
    RCOLL_TUNE_BETA_INTER,     /* s per byte between nodes */
    RCOLL_TUNE_GAMMA,          /* s per byte reduced (float32 sum) */
    RCOLL_TUNE_RNDV_EXTRA,     /* s added by a rendezvous message */
    RCOLL_TUNE_NMODEL,         /* ---- the rest are recorded only ---- */
    RCOLL_TUNE_MEMCPY_BETA = RCOLL_TUNE_NMODEL,   /* s per byte of memcpy, 4 MiB */
    RCOLL_TUNE_XCORE_BETA,     /* s per byte copied from another core's cache/memory */
    RCOLL_TUNE_GAMMA_FLOAT64,  /* s per byte reduced, float64 sum */
    RCOLL_TUNE_GAMMA_INT32,    /* s per byte reduced, int32 sum */
    RCOLL_TUNE_NKEYS
} rcoll_tune_key_t;

/* The shared-memory single-copy paths whose sizes a tune file can set
 * (`shm cma_bcast RANGE|none`, collectives/shm/shm_cma.c): the sizes that
 * read the owner's buffer with process_vm_readv under RCOLL_SHM_CMA=auto. */
typedef enum {
    RCOLL_TUNE_CMA_BCAST,      /* bcast vectors */
    RCOLL_TUNE_CMA_ALLGATHER,  /* allgather blocks (one rank's) */
    RCOLL_TUNE_CMA_REDUCE,     /* reduce vectors */
    RCOLL_TUNE_NCMA
} rcoll_tune_cma_t;

typedef struct rcoll_tune {
    rcoll_tune_rule_t *rules;
    int                nrules;
    double             model[RCOLL_TUNE_NKEYS];       /* value of each key given */
    int                model_line[RCOLL_TUNE_NKEYS];  /* its line; 0: not given */
    size_t             cma_lo[RCOLL_TUNE_NCMA];       /* inclusive; none: lo > hi */
    size_t             cma_hi[RCOLL_TUNE_NCMA];
    int                cma_line[RCOLL_TUNE_NCMA];     /* its line; 0: not given */
    size_t             stream_min;     /* `shm stream_min`: SIZE_MAX = off */
    int                stream_line;    /* its line; 0: not given */
    size_t             pair_flat_max;  /* `shm pair_flat_max` */
    int                pair_flat_line; /* its line; 0: not given */
} rcoll_tune_t;

/* Name ("alpha"), unit ("s", "s/B") and accepted range of a key; find: the
 * key called name, or -1. */
const char *rcoll_tune_key_name(int key);
const char *rcoll_tune_key_unit(int key);
void        rcoll_tune_key_range(int key, double *min, double *max);
int         rcoll_tune_key_find(const char *name);

/* A model key's value in m (key < RCOLL_TUNE_NMODEL); the recorded-only
 * keys have no value in a model: NAN. */
double rcoll_tune_model_value(const rcoll_model_t *m, int key);

/* "cma_bcast", "cma_allgather", "cma_reduce"; find: the index, or -1. */
const char *rcoll_tune_cma_name(int which);
int         rcoll_tune_cma_find(const char *name);

/* The sizes of a single-copy path under RCOLL_SHM_CMA=auto: t's `shm`
 * line where it has one (returns its line), else the compiled-in default
 * (returns 0; t may be NULL).  None: *lo > *hi. */
int rcoll_tune_cma_range(const rcoll_tune_t *t, int which, size_t *lo, size_t *hi);

/* "32768-65536", "16384-*", "none", "*" (for files and rcoll_info). */
void rcoll_tune_cma_format(size_t lo, size_t hi, char *buf, size_t len);

/* Replace m's figures by t's model lines (t may be NULL: no change). */
void rcoll_tune_apply_model(const rcoll_tune_t *t, rcoll_model_t *m);

/* The tune file the context's RCOLL_TUNE_FILE names, read (once) if it
 * was not yet; NULL: none configured, or it cannot be read (logged). */
const rcoll_tune_t *rcoll_selector_tune(rcoll_context_t *ctx);

/* The single-copy sizes (lo > hi: none) of path `which` that a shm segment
 * set up now takes under RCOLL_SHM_CMA=auto: those set with
 * rcoll_selector_set_cma (returns -1), else the tune file's (returns its
 * line), else the compiled-in defaults (returns 0). */
int rcoll_selector_cma_range(rcoll_context_t *ctx, int which, size_t *lo, size_t *hi);

/* RCOLL_SHM_STREAM_MIN=auto's value from tune file t (may be NULL): its
 * `shm stream_min` line (returns the line; *v: SIZE_MAX = off), else half
 * the L2 cache (returns 0; common/stream_min.h). */
int rcoll_tune_stream_min(const rcoll_tune_t *t, size_t *v);

/* RCOLL_SHM_STREAM_MIN=auto's value from the context's tune file (its
 * `shm stream_min SIZE|off` line, which rcoll_tune measures): the line
 * number, *v set (SIZE_MAX: off); 0 where the file has none (or there is
 * no file): auto is then half the L2 cache (common/stream_min.h). */
int rcoll_selector_stream_min(rcoll_context_t *ctx, size_t *v);

/* RCOLL_SHM_PAIR_FLAT_MAX=auto's value from tune file t (may be NULL): its
 * `shm pair_flat_max SIZE` line (returns the line), else
 * RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT (returns 0). */
#define RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT 4096
int rcoll_tune_pair_flat_max(const rcoll_tune_t *t, size_t *v);

/* The same from the context's tune file (none: the default, 0). */
int rcoll_selector_pair_flat_max(rcoll_context_t *ctx, size_t *v);

/* For rcoll_tune, which times the crossovers with the single-copy sizes it
 * has just measured: they replace the tune file's and the defaults on this
 * context.  Every rank must set the same. */
void rcoll_selector_set_cma(rcoll_context_t *ctx, int which, size_t lo, size_t hi);

/* The tune file a context reads when RCOLL_TUNE_FILE is empty:
 * $sysconfdir/rcoll/tune of the build's prefix. */
const char *rcoll_tune_default_path(void);

/* Parse tune-file text; name is used in error messages ("name:line: why").
 * Lines are rules or `model KEY VALUE` (a key at most once, the value a
 * finite number within the key's range).
 * On error *out is untouched and err holds the message. */
rcoll_status_t rcoll_tune_parse_text(const char *text, const char *name, rcoll_tune_t *out,
                                     char *err, size_t errlen);
rcoll_status_t rcoll_tune_parse_file(const char *path, rcoll_tune_t *out, char *err, size_t errlen);

/* The algorithm of the first rule matching, or NULL. */
const rcoll_alg_t *rcoll_tune_lookup(const rcoll_tune_t *t, rcoll_coll_type_t coll,
                                     size_t bytes, int nranks);
void rcoll_tune_free(rcoll_tune_t *t);

/* The table above with t's rules applied where one matches (marked "N*");
 * t may be NULL. */
void rcoll_selector_print_model_tune(FILE *out, const rcoll_model_t *m, const rcoll_tune_t *t,
                                     int ppn);

/* Each model key: its default in defaults, its value in t (NULL: none),
 * which the selector uses; source says where t came from. */
void rcoll_selector_print_figures(FILE *out, const rcoll_model_t *defaults,
                                  const rcoll_tune_t *t, const char *source);

#endif
