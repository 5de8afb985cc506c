/*
 * fuzz_tune.c - the RCOLL_TUNE_FILE parser (collectives/selector_tune.c).
 *
 * Input: the file's text (up to its first NUL byte, as the file reader
 * refuses NULs).  Oracles: a rejection names "fuzz:LINE:"; every accepted
 * rule is well formed (a known collective, an algorithm of that collective,
 * non-empty size and rank ranges, ranks from 1) and lookup finds a rule for
 * the smallest call each rule covers; every model figure accepted is within
 * its key's range.
 */
#include "fuzz_util.h"
#include "selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char err[512] = "";
    rcoll_tune_t t;

    FUZZ_CHECK(text != NULL, "out of memory");
    memcpy(text, data, size);
    text[size] = '\0';
    if (rcoll_tune_parse_text(text, "fuzz", &t, err, sizeof(err)) != RCOLL_OK) {
        FUZZ_CHECK(strncmp(err, "fuzz:", 5) == 0, "rejection without its place: '%s'", err);
        free(text);
        return 0;
    }
    FUZZ_CHECK(t.nrules >= 0 && (t.nrules == 0 || t.rules != NULL), "%d rules", t.nrules);
    for (int i = 0; i < t.nrules; i++) {
        const rcoll_tune_rule_t *r = &t.rules[i];
        FUZZ_CHECK(r->coll >= 0 && r->coll < RCOLL_COLL_LAST, "rule %d: collective %d", i, r->coll);
        FUZZ_CHECK(r->alg != NULL && r->alg->coll == r->coll, "rule %d: algorithm of another "
                   "collective", i);
        FUZZ_CHECK(r->min_bytes <= r->max_bytes, "rule %d: empty size range", i);
        FUZZ_CHECK(r->min_ranks >= 1 && r->min_ranks <= r->max_ranks, "rule %d: ranks %d-%d", i,
                   r->min_ranks, r->max_ranks);
        FUZZ_CHECK(r->line >= 1, "rule %d: line %d", i, r->line);
        FUZZ_CHECK(rcoll_tune_lookup(&t, r->coll, r->min_bytes, r->min_ranks) != NULL,
                   "rule %d (line %d) matches nothing", i, r->line);
    }
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++) {
        double lo, hi;
        rcoll_tune_key_range(k, &lo, &hi);
        FUZZ_CHECK(t.model_line[k] >= 0, "key %d: line %d", k, t.model_line[k]);
        FUZZ_CHECK(t.model_line[k] == 0 || (t.model[k] >= lo && t.model[k] <= hi),
                   "model %s %g accepted outside [%g, %g]", rcoll_tune_key_name(k), t.model[k],
                   lo, hi);
    }
    rcoll_tune_free(&t);
    FUZZ_CHECK(t.rules == NULL && t.nrules == 0, "free left rules behind");
    free(text);
    return 0;
}
