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
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "selector.h"

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

static rcoll_status_t tune_parse_line(tune_ctx_t *tc, char *line, rcoll_tune_rule_t *rule, int *empty)
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
    rcoll_tune_t t = { NULL, 0 };
    int cap = 0;
    rcoll_status_t s = RCOLL_OK;

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
        s = tune_parse_line(&tc, line, &rule, &empty);
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
    t->rules = NULL;
    t->nrules = 0;
}
