/*
 * selector_tune.c - RCOLL_TUNE_FILE: rules that override the cost model.
 *
 * One rule per line, '#' starts a comment, blank lines are ignored:
 *
 *     COLLECTIVE  SIZES  ALGORITHM  [ranks=RANKS]
 *
 * SIZES is bytes per rank as the cost model counts them (bcast, allreduce,
 * reduce: the whole vector; allgather, reduce_scatter: one rank's block;
 * barrier: 0): "*" (any), "N", "MIN-MAX" or "MIN-*", inclusive, each with an
 * optional k, m or g suffix (powers of 1024).  RANKS is "N", "MIN-MAX" or
 * "MIN-*".  The first rule that matches a call wins.
 *
 * A line may instead give a measured figure of the cost model (rcoll_tune
 * writes them; docs/tuning.md lists the keys):
 *
 *     model  KEY  VALUE
 *
 * KEY one of the keys below, at most once per file; VALUE a finite number in
 * the key's range (seconds, or seconds per byte).
 *
 * Or the sizes a shared-memory single-copy path takes under
 * RCOLL_SHM_CMA=auto (rcoll_tune measures them; collectives/shm/shm_cma.c):
 *
 *     shm  cma_bcast|cma_allgather|cma_reduce  SIZES|none
 *
 * SIZES as in a rule (bytes as the cost model counts them), at most once
 * per path per file.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rcoll_build.h"
#include "selector.h"
#include "stream_min.h"

#define TUNE_MAX_FILE  (1 << 20)
#define TUNE_MAX_LINE  1024

typedef struct {
    const char *name;
    int         line;
    char       *err;
    size_t      errlen;
} tune_ctx_t;

__attribute__((format(printf, 2, 3)))
static rcoll_status_t tune_fail(const tune_ctx_t *tc, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(tc->err, tc->errlen, "%s:%d: ", tc->name, tc->line);
    if (n < 0 || (size_t)n >= tc->errlen)
        return RCOLL_ERR_INVALID_ARG;
    va_start(ap, fmt);
    vsnprintf(tc->err + n, tc->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return RCOLL_ERR_INVALID_ARG;
}

/* ---- the model keys ---- */

typedef struct {
    const char *name, *unit;
    double      min, max;
    size_t      offset;     /* in rcoll_model_t (model keys only) */
} tune_key_t;

#define MODEL_OFF(f) offsetof(rcoll_model_t, f)
/* Ranges: anything a real machine could measure, with room on both sides
 * (1 ns .. 10 ms per message; 10 TB/s .. 1 MB/s per byte). */
static const tune_key_t tune_keys[RCOLL_TUNE_NKEYS] = {
    [RCOLL_TUNE_ALPHA]         = { "alpha",         "s",   1e-9,  1e-2, MODEL_OFF(alpha) },
    [RCOLL_TUNE_ALPHA_INTER]   = { "alpha_inter",   "s",   1e-9,  1e-2, MODEL_OFF(alpha_inter) },
    [RCOLL_TUNE_BETA]          = { "beta",          "s/B", 1e-13, 1e-6, MODEL_OFF(beta) },
    [RCOLL_TUNE_BETA_INTER]    = { "beta_inter",    "s/B", 1e-13, 1e-6, MODEL_OFF(beta_inter) },
    [RCOLL_TUNE_GAMMA]         = { "gamma",         "s/B", 1e-13, 1e-6, MODEL_OFF(gamma) },
    [RCOLL_TUNE_RNDV_EXTRA]    = { "rndv_extra",    "s",   0,     1e-2, MODEL_OFF(rndv_extra) },
    [RCOLL_TUNE_MEMCPY_BETA]   = { "memcpy_beta",   "s/B", 1e-13, 1e-6, 0 },
    [RCOLL_TUNE_XCORE_BETA]    = { "xcore_beta",    "s/B", 1e-13, 1e-6, 0 },
    [RCOLL_TUNE_GAMMA_FLOAT64] = { "gamma_float64", "s/B", 1e-13, 1e-6, 0 },
    [RCOLL_TUNE_GAMMA_INT32]   = { "gamma_int32",   "s/B", 1e-13, 1e-6, 0 },
};

const char *rcoll_tune_key_name(int key)
{
    return key >= 0 && key < RCOLL_TUNE_NKEYS ? tune_keys[key].name : "?";
}

const char *rcoll_tune_key_unit(int key)
{
    return key >= 0 && key < RCOLL_TUNE_NKEYS ? tune_keys[key].unit : "?";
}

void rcoll_tune_key_range(int key, double *min, double *max)
{
    *min = key >= 0 && key < RCOLL_TUNE_NKEYS ? tune_keys[key].min : NAN;
    *max = key >= 0 && key < RCOLL_TUNE_NKEYS ? tune_keys[key].max : NAN;
}

int rcoll_tune_key_find(const char *name)
{
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++)
        if (strcmp(tune_keys[k].name, name) == 0)
            return k;
    return -1;
}

double rcoll_tune_model_value(const rcoll_model_t *m, int key)
{
    if (key < 0 || key >= RCOLL_TUNE_NMODEL)
        return NAN;
    double v;
    memcpy(&v, (const char *)m + tune_keys[key].offset, sizeof(v));
    return v;
}

void rcoll_tune_apply_model(const rcoll_tune_t *t, rcoll_model_t *m)
{
    for (int k = 0; t != NULL && k < RCOLL_TUNE_NMODEL; k++)
        if (t->model_line[k] > 0)
            memcpy((char *)m + tune_keys[k].offset, &t->model[k], sizeof(double));
}

const char *rcoll_tune_default_path(void)
{
    return RCOLL_TUNE_DEFAULT_PATH;
}

/* `model KEY VALUE` (tok[0] is "model"). */
static rcoll_status_t tune_parse_model(tune_ctx_t *tc, char **tok, int ntok, rcoll_tune_t *t)
{
    char names[256] = "", *end = NULL;
    size_t used = 0;

    if (ntok != 3)
        return tune_fail(tc, "expected model KEY VALUE, got %d field%s", ntok, ntok == 1 ? "" : "s");
    int k = rcoll_tune_key_find(tok[1]);
    if (k < 0) {
        for (int i = 0; i < RCOLL_TUNE_NKEYS && used < sizeof(names); i++) {
            int n = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                             tune_keys[i].name);
            used += n > 0 ? (size_t)n : 0;
        }
        return tune_fail(tc, "unknown model key '%s' (valid: %s)", tok[1], names);
    }
    if (t->model_line[k] > 0)
        return tune_fail(tc, "model %s given twice (first on line %d)", tok[1], t->model_line[k]);
    errno = 0;
    double v = strtod(tok[2], &end);
    if (end == tok[2] || *end != '\0' || errno != 0 || !isfinite(v))
        return tune_fail(tc, "model %s: '%s' is not a number", tok[1], tok[2]);
    if (v < tune_keys[k].min || v > tune_keys[k].max)
        return tune_fail(tc, "model %s %s out of range [%g, %g] %s", tok[1], tok[2],
                         tune_keys[k].min, tune_keys[k].max, tune_keys[k].unit);
    t->model[k] = v;
    t->model_line[k] = tc->line;
    return RCOLL_OK;
}

/* ---- the shm single-copy sizes ---- */

/* RCOLL_SHM_CMA=auto without a tune file line: what an A/B on the Intel
 * Xeon VM of issue 15 found (docs/shm.md "Single copy"): bcast from 64 KiB
 * (up to 4 MiB until 2026-12-06; above, the two-copy pipeline lost 1.5-2x
 * on the AMD EPYC Zen 4 VM, 9x in its slow phase, and 1.2-1.3x on the
 * Xeon's rcoll_tune of 2026-12-03; 15% ahead on one earlier VM only; with
 * few calls of that size the run-time path choice has no time to
 * correct a wrong start) (with the root writing a share into each reader, both cores copy at
 * once and beat the two-copy pipeline there; 32 KiB was even on the Xeon
 * and 3.5x slower single copy on the AMD EPYC Zen 5 VM, whose
 * process_vm_readv pays ~2 us before a byte moves), allgather blocks from
 * 24 KiB (rcoll_tune put the crossover at 23171 on that Xeon, and on the
 * AMD EPYC VM two copies won at 16-20 KB: docs/shm.md); reduce never (the
 * root reducing alone was 10-40% slower than the pipeline at 16 KiB-4 MiB,
 * 2 ranks; shared, it still lost to the two copies on the AMD VM's fast
 * phase).  rcoll_tune measures this machine's. */
static const struct {
    const char *name;
    size_t      lo, hi;
} tune_cma[RCOLL_TUNE_NCMA] = {
    [RCOLL_TUNE_CMA_BCAST]     = { "cma_bcast",     64 * 1024, SIZE_MAX },
    [RCOLL_TUNE_CMA_ALLGATHER] = { "cma_allgather", 24 * 1024, SIZE_MAX },
    [RCOLL_TUNE_CMA_REDUCE]    = { "cma_reduce",    SIZE_MAX,  0 },
};

const char *rcoll_tune_cma_name(int which)
{
    return which >= 0 && which < RCOLL_TUNE_NCMA ? tune_cma[which].name : "?";
}

int rcoll_tune_cma_find(const char *name)
{
    for (int i = 0; i < RCOLL_TUNE_NCMA; i++)
        if (strcmp(tune_cma[i].name, name) == 0)
            return i;
    return -1;
}

int rcoll_tune_cma_range(const rcoll_tune_t *t, int which, size_t *lo, size_t *hi)
{
    if (which < 0 || which >= RCOLL_TUNE_NCMA) {
        *lo = SIZE_MAX;
        *hi = 0;
        return 0;
    }
    if (t != NULL && t->cma_line[which] > 0) {
        *lo = t->cma_lo[which];
        *hi = t->cma_hi[which];
        return t->cma_line[which];
    }
    *lo = tune_cma[which].lo;
    *hi = tune_cma[which].hi;
    return 0;
}

int rcoll_tune_stream_min(const rcoll_tune_t *t, size_t *v)
{
    if (t != NULL && t->stream_line > 0) {
        *v = t->stream_min;
        return t->stream_line;
    }
    *v = rcoll_stream_min_auto();
    return 0;
}

int rcoll_tune_pair_flat_max(const rcoll_tune_t *t, size_t *v)
{
    if (t != NULL && t->pair_flat_line > 0) {
        *v = t->pair_flat_max;
        return t->pair_flat_line;
    }
    *v = RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT;
    return 0;
}

void rcoll_tune_cma_format(size_t lo, size_t hi, char *buf, size_t len)
{
    if (lo > hi)
        snprintf(buf, len, "none");
    else if (lo == 0 && hi == SIZE_MAX)
        snprintf(buf, len, "*");
    else if (hi == SIZE_MAX)
        snprintf(buf, len, "%zu-*", lo);
    else
        snprintf(buf, len, "%zu-%zu", lo, hi);
}

static int tune_parse_range(const char *s, uint64_t max, uint64_t *lo, uint64_t *hi);
static int tune_parse_num(const char *s, size_t len, uint64_t max, uint64_t *out);

/* `shm PATH SIZES|none` (tok[0] is "shm"). */
static rcoll_status_t tune_parse_shm(tune_ctx_t *tc, char **tok, int ntok, rcoll_tune_t *t)
{
    uint64_t lo, hi;

    if (ntok != 3)
        return tune_fail(tc, "expected shm cma_bcast|cma_allgather|cma_reduce SIZES|none, shm "
                         "stream_min SIZE|off or shm pair_flat_max SIZE, got %d field%s", ntok,
                         ntok == 1 ? "" : "s");
    if (strcmp(tok[1], "pair_flat_max") == 0) {
        uint64_t v;
        if (t->pair_flat_line > 0)
            return tune_fail(tc, "shm pair_flat_max given twice (first on line %d)",
                             t->pair_flat_line);
        if (tune_parse_num(tok[2], strlen(tok[2]), (uint64_t)1 << 40, &v) != 0)
            return tune_fail(tc, "shm pair_flat_max: bad size '%s' (expected bytes with an "
                             "optional k/m/g suffix)", tok[2]);
        t->pair_flat_max = (size_t)v;
        t->pair_flat_line = tc->line;
        return RCOLL_OK;
    }
    if (strcmp(tok[1], "stream_min") == 0) {
        uint64_t v;
        if (t->stream_line > 0)
            return tune_fail(tc, "shm stream_min given twice (first on line %d)", t->stream_line);
        if (strcmp(tok[2], "off") == 0) {
            v = SIZE_MAX;
        } else if (tune_parse_num(tok[2], strlen(tok[2]), SIZE_MAX - 1, &v) != 0) {
            return tune_fail(tc, "shm stream_min: bad size '%s' (expected off, or bytes with an "
                             "optional k/m/g suffix)", tok[2]);
        }
        t->stream_min = (size_t)v;
        t->stream_line = tc->line;
        return RCOLL_OK;
    }
    int w = rcoll_tune_cma_find(tok[1]);
    if (w < 0)
        return tune_fail(tc, "unknown shm setting '%s' (valid: cma_bcast, cma_allgather, "
                         "cma_reduce, stream_min, pair_flat_max)", tok[1]);
    if (t->cma_line[w] > 0)
        return tune_fail(tc, "shm %s given twice (first on line %d)", tok[1], t->cma_line[w]);
    if (strcmp(tok[2], "none") == 0) {
        lo = SIZE_MAX;
        hi = 0;
    } else if (tune_parse_range(tok[2], SIZE_MAX, &lo, &hi) != 0 || lo > hi) {
        return tune_fail(tc, "shm %s: bad size range '%s' (expected none, *, N, MIN-MAX or "
                         "MIN-*, MIN <= MAX, sizes with an optional k/m/g suffix)", tok[1], tok[2]);
    }
    t->cma_lo[w] = (size_t)lo;
    t->cma_hi[w] = (size_t)hi;
    t->cma_line[w] = tc->line;
    return RCOLL_OK;
}

/* A non-negative number with an optional k/m/g suffix, whole token. */
static int tune_parse_num(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0, mult = 1;
    size_t i = 0;

    if (len == 0)
        return -1;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (i == 0)
        return -1;
    if (i + 1 == len) {
        switch (s[i]) {
        case 'k': case 'K': mult = 1ull << 10; break;
        case 'm': case 'M': mult = 1ull << 20; break;
        case 'g': case 'G': mult = 1ull << 30; break;
        default: return -1;
        }
    } else if (i != len) {
        return -1;
    }
    if (v > max / mult)
        return -1;
    *out = v * mult;
    return 0;
}

/* "*", "N", "MIN-MAX", "MIN-*" -> [lo, hi]. */
static int tune_parse_range(const char *s, uint64_t max, uint64_t *lo, uint64_t *hi)
{
    const char *dash = strchr(s, '-');

    if (strcmp(s, "*") == 0) {
        *lo = 0;
        *hi = max;
        return 0;
    }
    if (dash == NULL) {
        if (tune_parse_num(s, strlen(s), max, lo) != 0)
            return -1;
        *hi = *lo;
        return 0;
    }
    if (tune_parse_num(s, (size_t)(dash - s), max, lo) != 0)
        return -1;
    if (strcmp(dash + 1, "*") == 0) {
        *hi = max;
        return 0;
    }
    return tune_parse_num(dash + 1, strlen(dash + 1), max, hi);
}

/* One line: *empty = 1 for a blank line, comment or model line (stored in
 * t), else *rule is the rule it gives. */
static rcoll_status_t tune_parse_line(tune_ctx_t *tc, char *line, rcoll_tune_rule_t *rule,
                                      int *empty, rcoll_tune_t *t)
{
    char *tok[5], *save = NULL, *hash = strchr(line, '#');
    int ntok = 0;
    uint64_t lo, hi;

    if (hash != NULL)
        *hash = '\0';
    for (char *t = strtok_r(line, " \t\r", &save); t != NULL; t = strtok_r(NULL, " \t\r", &save)) {
        if (ntok == 4)
            return tune_fail(tc, "too many fields after '%s' (expected COLLECTIVE SIZES ALGORITHM "
                             "[ranks=MIN-MAX])", tok[3]);
        tok[ntok++] = t;
    }
    *empty = ntok == 0;
    if (ntok == 0)
        return RCOLL_OK;
    if (strcmp(tok[0], "model") == 0) {
        *empty = 1;
        return tune_parse_model(tc, tok, ntok, t);
    }
    if (strcmp(tok[0], "shm") == 0) {
        *empty = 1;
        return tune_parse_shm(tc, tok, ntok, t);
    }
    if (ntok < 3)
        return tune_fail(tc, "expected COLLECTIVE SIZES ALGORITHM [ranks=MIN-MAX], got %d field%s",
                         ntok, ntok == 1 ? "" : "s");

    memset(rule, 0, sizeof(*rule));
    rule->line = tc->line;
    rule->coll = rcoll_coll_find(tok[0]);
    if (rule->coll == RCOLL_COLL_LAST)
        return tune_fail(tc, "unknown collective '%s' (expected allreduce, bcast, barrier, reduce, "
                         "allgather or reduce_scatter)", tok[0]);
    if (tune_parse_range(tok[1], SIZE_MAX, &lo, &hi) != 0)
        return tune_fail(tc, "bad size range '%s' (expected *, N, MIN-MAX or MIN-*, sizes with an "
                         "optional k/m/g suffix)", tok[1]);
    if (lo > hi)
        return tune_fail(tc, "empty size range '%s': %llu > %llu", tok[1],
                         (unsigned long long)lo, (unsigned long long)hi);
    rule->min_bytes = (size_t)lo;
    rule->max_bytes = (size_t)hi;
    rule->alg = rcoll_alg_find(rule->coll, tok[2]);
    if (rule->alg == NULL) {
        char names[256];
        rcoll_coll_alg_names(rule->coll, names, sizeof(names));
        return tune_fail(tc, "unknown %s algorithm '%s' (valid: %s)", tok[0], tok[2], names);
    }
    rule->min_ranks = 1;
    rule->max_ranks = INT32_MAX;
    if (ntok == 4) {
        if (strncmp(tok[3], "ranks=", 6) != 0)
            return tune_fail(tc, "unexpected '%s' (the optional fourth field is ranks=MIN-MAX)", tok[3]);
        if (tune_parse_range(tok[3] + 6, INT32_MAX, &lo, &hi) != 0 || lo > hi || lo == 0)
            return tune_fail(tc, "bad rank range '%s' (expected N, MIN-MAX or MIN-*, MIN >= 1, "
                             "MIN <= MAX)", tok[3] + 6);
        rule->min_ranks = (int)lo;
        rule->max_ranks = (int)hi;
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll_tune_parse_text(const char *text, const char *name, rcoll_tune_t *out,
                                     char *err, size_t errlen)
{
    tune_ctx_t tc = { .name = name, .line = 0, .err = err, .errlen = errlen };
    rcoll_tune_t t;
    int cap = 0;
    rcoll_status_t s = RCOLL_OK;

    memset(&t, 0, sizeof(t));
    while (*text != '\0') {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        char line[TUNE_MAX_LINE];
        rcoll_tune_rule_t rule;
        int empty;

        tc.line++;
        if (len >= sizeof(line)) {
            s = tune_fail(&tc, "line longer than %d characters", TUNE_MAX_LINE - 1);
            break;
        }
        memcpy(line, text, len);
        line[len] = '\0';
        text += len + (nl ? 1 : 0);
        s = tune_parse_line(&tc, line, &rule, &empty, &t);
        if (s != RCOLL_OK)
            break;
        if (empty)
            continue;
        if (t.nrules == cap) {
            int ncap = cap ? 2 * cap : 16;
            rcoll_tune_rule_t *r = realloc(t.rules, (size_t)ncap * sizeof(*r));
            if (r == NULL) {
                tune_fail(&tc, "out of memory for %d rules", ncap);
                s = RCOLL_ERR_NO_MEMORY;
                break;
            }
            t.rules = r;
            cap = ncap;
        }
        t.rules[t.nrules++] = rule;
    }
    if (s != RCOLL_OK) {
        free(t.rules);
        return s;
    }
    *out = t;
    return RCOLL_OK;
}

rcoll_status_t rcoll_tune_parse_file(const char *path, rcoll_tune_t *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *text;
    size_t n;
    rcoll_status_t s;

    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return RCOLL_ERR_INVALID_ARG;
    }
    text = malloc(TUNE_MAX_FILE + 1);
    if (text == NULL) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return RCOLL_ERR_NO_MEMORY;
    }
    n = fread(text, 1, TUNE_MAX_FILE + 1, f);
    if (ferror(f) || n > TUNE_MAX_FILE) {
        snprintf(err, errlen, "%s: %s", path, ferror(f) ? "read error" : "larger than 1 MiB");
        fclose(f);
        free(text);
        return RCOLL_ERR_INVALID_ARG;
    }
    fclose(f);
    text[n] = '\0';
    if (memchr(text, '\0', n) != NULL) {
        snprintf(err, errlen, "%s: contains a NUL byte (not a text file?)", path);
        free(text);
        return RCOLL_ERR_INVALID_ARG;
    }
    s = rcoll_tune_parse_text(text, path, out, err, errlen);
    free(text);
    return s;
}

const rcoll_alg_t *rcoll_tune_lookup(const rcoll_tune_t *t, rcoll_coll_type_t coll,
                                     size_t bytes, int nranks)
{
    for (int i = 0; t != NULL && i < t->nrules; i++) {
        const rcoll_tune_rule_t *r = &t->rules[i];
        if (r->coll == coll && bytes >= r->min_bytes && bytes <= r->max_bytes &&
            nranks >= r->min_ranks && nranks <= r->max_ranks)
            return r->alg;
    }
    return NULL;
}

void rcoll_tune_free(rcoll_tune_t *t)
{
    if (t == NULL)
        return;
    free(t->rules);
    memset(t, 0, sizeof(*t));
}
