/* config.c - parse, validate and format RCOLL_* settings. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "rcoll_build.h"

extern char **environ;

static const char *strip_prefix(const char *name)
{
    return strncmp(name, "RCOLL_", 6) == 0 ? name + 6 : name;
}

const rcoll_config_entry_t *rcoll_config_find(const char *name)
{
    const char *key = strip_prefix(name);
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            if (strcmp(e->name, key) == 0) {
                return e;
            }
        }
    }
    return NULL;
}

int rcoll_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s)) {
        s++;
    }
    if (*s == '-' || *s == '\0') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if ((*end == 'b' || *end == 'B') && shift != 0) {
        end++;
    }
    if (*end != '\0' || (shift && v > (~0ULL >> shift))) {
        return -1;
    }
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "y", "yes", "true", "on" };
    static const char *const no[] = { "0", "n", "no", "false", "off" };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int enum_has(const char *choices, const char *word)
{
    size_t n = strlen(word);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, word, n) == 0) {
            return 1;
        }
        if (!bar) {
            break;
        }
        p = bar + 1;
    }
    return 0;
}

/* An unsigned setting that also takes the word "auto" (its choices say so). */
static int uint_takes_auto(const rcoll_config_entry_t *e)
{
    return e->choices != NULL && enum_has(e->choices, "auto");
}

/* value within e's range?  If not, err says which range. */
static int in_range(const rcoll_config_entry_t *e, double value, char *err, size_t errlen)
{
    if (value >= e->min && value <= e->max) {
        return 1;
    }
    char range[96];
    rcoll_config_describe(e, range, sizeof(range));
    snprintf(err, errlen, "out of range (%s)", range);
    return 0;
}

rcoll_status_t rcoll_config_entry_set(rcoll_config_t *cfg, const rcoll_config_entry_t *e,
                                      const char *value, char *err, size_t errlen)
{
    void *field = (char *)cfg + e->offset;
    char *end;
    long l;

    errno = 0;
    switch (e->type) {
    case RCOLL_CONFIG_INT:
        l = strtol(value, &end, 10);
        if (errno || end == value || *end || l < -2147483647L || l > 2147483647L) {
            snprintf(err, errlen, "expected an integer");
            return RCOLL_ERR_INVALID_ARG;
        }
        if (!in_range(e, (double)l, err, errlen)) {
            return RCOLL_ERR_INVALID_ARG;
        }
        *(int *)field = (int)l;
        break;
    case RCOLL_CONFIG_UINT:
        /* "auto" where the entry offers it: resolved later (RCOLL_CONFIG_UINT_AUTO) */
        if (uint_takes_auto(e) && strcmp(value, "auto") == 0) {
            *(unsigned *)field = RCOLL_CONFIG_UINT_AUTO;
            break;
        }
        l = strtol(value, &end, 10);
        if (errno || end == value || *end || l < 0 || l > 2147483647L) {
            snprintf(err, errlen, "expected a non-negative integer%s",
                     uint_takes_auto(e) ? " or auto" : "");
            return RCOLL_ERR_INVALID_ARG;
        }
        if (!in_range(e, (double)l, err, errlen)) {
            return RCOLL_ERR_INVALID_ARG;
        }
        *(unsigned *)field = (unsigned)l;
        break;
    case RCOLL_CONFIG_SIZE: {
        size_t v;
        /* "auto" / "off" where the entry offers them: resolved by its reader */
        if (e->choices != NULL && enum_has(e->choices, value)) {
            *(size_t *)field = strcmp(value, "auto") == 0 ? RCOLL_CONFIG_SIZE_AUTO
                                                          : RCOLL_CONFIG_SIZE_OFF;
            break;
        }
        if (rcoll_parse_size(value, &v) != 0) {
            snprintf(err, errlen, "expected a size in bytes (suffix k, m or g allowed)%s%s",
                     e->choices ? ", or " : "", e->choices ? e->choices : "");
            return RCOLL_ERR_INVALID_ARG;
        }
        if (!in_range(e, (double)v, err, errlen)) {
            return RCOLL_ERR_INVALID_ARG;
        }
        *(size_t *)field = v;
        break;
    }
    case RCOLL_CONFIG_DOUBLE: {
        double d = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(d) || d < 0) {
            snprintf(err, errlen, "expected a non-negative number");
            return RCOLL_ERR_INVALID_ARG;
        }
        if (!in_range(e, d, err, errlen)) {
            return RCOLL_ERR_INVALID_ARG;
        }
        *(double *)field = d;
        break;
    }
    case RCOLL_CONFIG_BOOL:
        if (parse_bool(value, (int *)field) != 0) {
            snprintf(err, errlen, "expected 0/1, yes/no, true/false or on/off");
            return RCOLL_ERR_INVALID_ARG;
        }
        break;
    case RCOLL_CONFIG_LOGLEVEL: {
        int lvl = rcoll_log_level_parse(value);
        if (lvl < 0) {
            snprintf(err, errlen, "expected error, warn, info, debug or trace");
            return RCOLL_ERR_INVALID_ARG;
        }
        *(int *)field = lvl;
        break;
    }
    case RCOLL_CONFIG_ENUM:
        if (!enum_has(e->choices, value)) {
            snprintf(err, errlen, "expected one of %s", e->choices);
            return RCOLL_ERR_INVALID_ARG;
        }
        /* fall through */
    case RCOLL_CONFIG_STRING:
        if (strlen(value) >= RCOLL_CONFIG_STR_MAX) {
            snprintf(err, errlen, "longer than %d characters", RCOLL_CONFIG_STR_MAX - 1);
            return RCOLL_ERR_INVALID_ARG;
        }
        strcpy((char *)field, value);
        break;
    }
    return RCOLL_OK;
}

void rcoll_config_describe(const rcoll_config_entry_t *e, char *buf, size_t len)
{
    int numeric = e->type == RCOLL_CONFIG_INT || e->type == RCOLL_CONFIG_UINT ||
                  e->type == RCOLL_CONFIG_SIZE || e->type == RCOLL_CONFIG_DOUBLE;
    int n = 0;
    buf[0] = '\0';
    if (numeric) {
        n = snprintf(buf, len, "Range %.15g to %.15g.", e->min, e->max);
    }
    if (n < 0 || (size_t)n >= len) {
        return;
    }
    if (e->match == RCOLL_CONFIG_MATCH_VALUE) {
        snprintf(buf + n, len - (size_t)n, "%sMust be equal on every rank.", n ? " " : "");
    } else if (e->match == RCOLL_CONFIG_MATCH_FILE) {
        snprintf(buf + n, len - (size_t)n, "%sThe file's contents must be equal on every rank.",
                 n ? " " : "");
    }
}

void rcoll_config_format(const rcoll_config_t *cfg, const rcoll_config_entry_t *e,
                         char *buf, size_t len)
{
    const void *field = (const char *)cfg + e->offset;
    switch (e->type) {
    case RCOLL_CONFIG_INT:      snprintf(buf, len, "%d", *(const int *)field); break;
    case RCOLL_CONFIG_UINT:
        if (*(const unsigned *)field == RCOLL_CONFIG_UINT_AUTO) snprintf(buf, len, "auto");
        else snprintf(buf, len, "%u", *(const unsigned *)field);
        break;
    case RCOLL_CONFIG_SIZE:
        if (*(const size_t *)field == RCOLL_CONFIG_SIZE_AUTO) snprintf(buf, len, "auto");
        else if (*(const size_t *)field == RCOLL_CONFIG_SIZE_OFF) snprintf(buf, len, "off");
        else snprintf(buf, len, "%zu", *(const size_t *)field);
        break;
    case RCOLL_CONFIG_DOUBLE:   snprintf(buf, len, "%g", *(const double *)field); break;
    case RCOLL_CONFIG_BOOL:     snprintf(buf, len, "%d", *(const int *)field); break;
    case RCOLL_CONFIG_LOGLEVEL: snprintf(buf, len, "%s", rcoll_log_level_name(*(const int *)field)); break;
    case RCOLL_CONFIG_ENUM:
    case RCOLL_CONFIG_STRING:   snprintf(buf, len, "%s", (const char *)field); break;
    }
}

static rcoll_status_t set_or_complain(rcoll_config_t *cfg, const rcoll_config_entry_t *e,
                                      const char *value, const char *from)
{
    char err[160];
    rcoll_status_t st = rcoll_config_entry_set(cfg, e, value, err, sizeof(err));
    if (st != RCOLL_OK) {
        rcoll_error("RCOLL_%s='%s' (%s) is invalid: %s", e->name, value, from, err);
    }
    return st;
}

static void warn_unknown_env(void)
{
    for (char **env = environ; env && *env; env++) {
        if (strncmp(*env, "RCOLL_", 6) != 0) {
            continue;
        }
        char name[128];
        const char *eq = strchr(*env, '=');
        size_t n = eq ? (size_t)(eq - *env) : strlen(*env);
        if (n >= sizeof(name)) {
            n = sizeof(name) - 1;
        }
        memcpy(name, *env, n);
        name[n] = '\0';
        /* Variables of rcoll's test and launcher tools are not library settings. */
        if (strncmp(name, "RCOLL_SOFTRDMA_", 15) == 0 || strncmp(name, "RCOLL_TEST_", 11) == 0 ||
            strncmp(name, "RCOLL_SLURM_", 12) == 0 || strncmp(name, "RCOLL_BENCH_", 12) == 0 ||
            strncmp(name, "RCOLLRUN_", 9) == 0) {
            continue;
        }
        if (rcoll_config_find(name) == NULL) {
            rcoll_warn("%s is set but is not an rcoll setting (rcoll_info lists them)", name);
        }
    }
}

/* The value an override array gives for e, or NULL. */
static const char *override_for(const char *const *overrides, const rcoll_config_entry_t *e)
{
    const char *found = NULL;
    for (; overrides && *overrides; overrides++) {
        const char *eq = strchr(*overrides, '=');
        if (eq == NULL) {
            continue;
        }
        const char *key = *overrides;
        size_t n = (size_t)(eq - key);
        if (n > 6 && strncmp(key, "RCOLL_", 6) == 0) {
            key += 6;
            n -= 6;
        }
        if (strlen(e->name) == n && strncmp(e->name, key, n) == 0) {
            found = eq + 1;     /* the last one wins */
        }
    }
    return found;
}

/* RCOLL_TUNE_FILE: empty means the installed default file if there is one
 * (docs/tuning.md), "none" no file at all.  Resolved here, so that the file
 * the selector reads is the one whose contents every rank compares. */
static void resolve_tune_file(rcoll_config_t *cfg)
{
    if (strcmp(cfg->tune_file, "none") == 0) {
        cfg->tune_file[0] = '\0';
    } else if (cfg->tune_file[0] == '\0' && access(RCOLL_TUNE_DEFAULT_PATH, F_OK) == 0) {
        snprintf(cfg->tune_file, sizeof(cfg->tune_file), "%s", RCOLL_TUNE_DEFAULT_PATH);
    }
}

rcoll_status_t rcoll_config_load(const char *const *overrides, rcoll_config_t *cfg)
{
    rcoll_status_t st;
    memset(cfg, 0, sizeof(*cfg));

    /* Every override must name a known setting. */
    for (const char *const *o = overrides; o && *o; o++) {
        const char *eq = strchr(*o, '=');
        char key[128];
        if (eq == NULL || (size_t)(eq - *o) >= sizeof(key)) {
            rcoll_error("rcoll_init: config entry '%s' is not of the form KEY=VALUE", *o);
            return RCOLL_ERR_INVALID_ARG;
        }
        memcpy(key, *o, (size_t)(eq - *o));
        key[eq - *o] = '\0';
        if (rcoll_config_find(key) == NULL) {
            rcoll_error("rcoll_init: unknown setting '%s' (rcoll_info lists them)", key);
            return RCOLL_ERR_INVALID_ARG;
        }
    }
    /* Precedence: rcoll_init's config, then the environment, then the default.
     * An environment value that is overridden is not parsed at all. */
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            char envname[128];
            snprintf(envname, sizeof(envname), "RCOLL_%s", e->name);
            const char *ov = override_for(overrides, e);
            const char *env = getenv(envname);
            if (ov != NULL) {
                st = set_or_complain(cfg, e, ov, "rcoll_init config");
            } else if (env != NULL) {
                st = set_or_complain(cfg, e, env, "environment");
            } else {
                st = set_or_complain(cfg, e, e->defval, "default");
            }
            if (st != RCOLL_OK) {
                return st;
            }
        }
    }
    resolve_tune_file(cfg);
    warn_unknown_env();
    return RCOLL_OK;
}

/* ---- settings that must be equal on every rank ---- */

int rcoll_config_match_count(void)
{
    int n = 0;
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            n += e->match != RCOLL_CONFIG_MATCH_NONE;
        }
    }
    return n;
}

const rcoll_config_entry_t *rcoll_config_match_entry(int i)
{
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            if (e->match != RCOLL_CONFIG_MATCH_NONE && i-- == 0) {
                return e;
            }
        }
    }
    return NULL;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * FNV_PRIME;
    }
    return h;
}

/* The contents of the file at path ("" : no file); an unreadable file
 * hashes by its name, so ranks that cannot read the same file still agree
 * and the selector's own error says why. */
static uint64_t hash_file(const char *path)
{
    uint64_t h = fnv1a(FNV_OFFSET, "file:", 5);
    if (path[0] == '\0') {
        return h;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return fnv1a(fnv1a(h, "unreadable:", 11), path, strlen(path));
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        h = fnv1a(h, buf, n);
    }
    fclose(f);
    return h;
}

void rcoll_config_match_hashes(const rcoll_config_t *cfg, uint64_t *hashes)
{
    int i = 0;
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            if (e->match == RCOLL_CONFIG_MATCH_NONE) {
                continue;
            }
            char value[RCOLL_CONFIG_STR_MAX];
            rcoll_config_format(cfg, e, value, sizeof(value));
            hashes[i++] = e->match == RCOLL_CONFIG_MATCH_FILE
                          ? hash_file(value) : fnv1a(FNV_OFFSET, value, strlen(value));
        }
    }
}
