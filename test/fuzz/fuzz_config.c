/*
 * fuzz_config.c - the settings parser (src/config.c): one value for one
 * setting (rcoll_config_entry_set, what RCOLL_* environment variables and
 * rcoll_config_set go through), and a whole override list (rcoll_config_load,
 * rcoll_init's config argument).
 *
 * Input: byte 0 picks the mode, byte 1 the setting; the rest is the value,
 * or for a list, lines of KEY=VALUE.  Oracles: a rejected value leaves the
 * settings untouched and says why; an accepted one changes no byte outside
 * its own field, lies inside the setting's range (exactly, not through a
 * double), and formatting it and parsing that again gives the same text.
 */
#include "fuzz_util.h"
#include "config.h"
#include "log.h"

#define MAX_ENTRIES 128
#define MAX_LINES   16

static const rcoll_config_entry_t *entries[MAX_ENTRIES];
static int nentries;
static rcoll_config_t defaults;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_clear_env();
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            if (nentries < MAX_ENTRIES) {
                entries[nentries++] = e;
            }
        }
    }
    if (rcoll_config_load(NULL, &defaults) != RCOLL_OK) {
        fprintf(stderr, "fuzz_config: the defaults do not load (RCOLL_* set in the environment?)\n");
        abort();
    }
    return 0;
}

static size_t field_size(const rcoll_config_entry_t *e)
{
    switch (e->type) {
    case RCOLL_CONFIG_SIZE:   return sizeof(size_t);
    case RCOLL_CONFIG_DOUBLE: return sizeof(double);
    case RCOLL_CONFIG_UINT:   return sizeof(unsigned);
    case RCOLL_CONFIG_ENUM:
    case RCOLL_CONFIG_STRING: return RCOLL_CONFIG_STR_MAX;
    default:                  return sizeof(int);
    }
}

static void one_value(const rcoll_config_entry_t *e, const char *value)
{
    rcoll_config_t cfg = defaults, cfg2 = defaults;
    char err[256] = "", s1[RCOLL_CONFIG_STR_MAX + 64], s2[RCOLL_CONFIG_STR_MAX + 64];

    if (rcoll_config_entry_set(&cfg, e, value, err, sizeof(err)) != RCOLL_OK) {
        FUZZ_CHECK(err[0] != '\0', "RCOLL_%s rejected without a reason", e->name);
        FUZZ_CHECK(memcmp(&cfg, &defaults, sizeof(cfg)) == 0, "RCOLL_%s='%s' rejected, yet the "
                   "settings changed", e->name, value);
        return;
    }
    size_t off = e->offset, n = field_size(e);
    FUZZ_CHECK(off + n <= sizeof(cfg), "RCOLL_%s: field outside the settings", e->name);
    FUZZ_CHECK(memcmp(&cfg, &defaults, off) == 0 &&
               memcmp((char *)&cfg + off + n, (char *)&defaults + off + n,
                      sizeof(cfg) - off - n) == 0,
               "RCOLL_%s='%s' changed bytes outside its field", e->name, value);
    long double v = 0;
    int numeric = 1;
    switch (e->type) {
    case RCOLL_CONFIG_INT:    v = *(const int *)((char *)&cfg + off); break;
    case RCOLL_CONFIG_UINT:
        v = *(const unsigned *)((char *)&cfg + off);
        /* "auto", where the entry offers it: exactly that word, nothing else */
        if (v == RCOLL_CONFIG_UINT_AUTO) {
            FUZZ_CHECK(e->choices != NULL && strcmp(value, "auto") == 0,
                       "RCOLL_%s='%s' accepted as auto", e->name, value);
            numeric = 0;
        }
        break;
    case RCOLL_CONFIG_SIZE: {
        size_t z = *(const size_t *)((char *)&cfg + off);
        v = z;   /* exact: 64-bit mantissa */
        /* "auto" / "off", where the entry offers them: exactly that word */
        if (z == RCOLL_CONFIG_SIZE_AUTO || z == RCOLL_CONFIG_SIZE_OFF) {
            FUZZ_CHECK(e->choices != NULL &&
                       strcmp(value, z == RCOLL_CONFIG_SIZE_AUTO ? "auto" : "off") == 0,
                       "RCOLL_%s='%s' accepted as %s", e->name, value,
                       z == RCOLL_CONFIG_SIZE_AUTO ? "auto" : "off");
            numeric = 0;
        }
        break;
    }
    case RCOLL_CONFIG_DOUBLE: v = *(const double *)((char *)&cfg + off); break;
    default:                  numeric = 0; break;
    }
    FUZZ_CHECK(!numeric || (v >= (long double)e->min && v <= (long double)e->max),
               "RCOLL_%s='%s' accepted as %Lg, outside its range %g to %g", e->name, value, v,
               e->min, e->max);
    rcoll_config_format(&cfg, e, s1, sizeof(s1));
    FUZZ_CHECK(rcoll_config_entry_set(&cfg2, e, s1, err, sizeof(err)) == RCOLL_OK,
               "RCOLL_%s='%s' accepted, but its formatted value '%s' is not: %s", e->name, value,
               s1, err);
    rcoll_config_format(&cfg2, e, s2, sizeof(s2));
    FUZZ_CHECK(strcmp(s1, s2) == 0, "RCOLL_%s='%s' reads back as '%s', then as '%s'", e->name,
               value, s1, s2);
}

static void override_list(char *text)
{
    const char *lines[MAX_LINES + 1];
    int n = 0;
    for (char *p = text; n < MAX_LINES && p != NULL && *p != '\0';) {
        char *nl = strchr(p, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        lines[n++] = p;
        p = nl ? nl + 1 : NULL;
    }
    lines[n] = NULL;
    rcoll_config_t cfg;
    (void)rcoll_config_load(lines, &cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    uint8_t mode = fuzz_u8(&in), which = fuzz_u8(&in);
    char *value = malloc(in.left + 1);

    FUZZ_CHECK(value != NULL, "out of memory");
    memcpy(value, in.p, in.left);
    value[in.left] = '\0';
    if (mode & 1) {
        override_list(value);
    } else {
        one_value(entries[which % nentries], value);
    }
    free(value);
    return 0;
}
