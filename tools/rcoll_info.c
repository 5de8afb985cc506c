/*
 * rcoll_info - what rcoll sees and how it is configured.
 *
 *   rcoll_info              version, settings (RCOLL_*) with current values,
 *                           algorithms, transports, topology
 *   rcoll_info --config     settings only
 *   rcoll_info --markdown   the settings as the README's markdown table
 *   rcoll_info --model      the model's figures (default vs the tune file's) and the
 *                           selector's choice per size and rank count
 *   rcoll_info --model --nodes N --ppn P [--net NAME] [--coll C] [--bytes LIST]
 *                           for N x P ranks: each algorithm's predicted time, the
 *                           choice and the lower bound (--net list: the profiles;
 *                           --bytes: at those sizes instead of 8 B .. 1 GiB x8)
 *   rcoll_info --devices    RDMA devices and ports: kind, state, MTU, speed, GID
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hwloc.h>
#include <ucp/api/ucp.h>
#include "rcoll.h"
#include "config.h"
#include "coll.h"
#include "log.h"
#include "binding.h"
#include "selector.h"
#include "transport.h"
#include "verbs/verbs.h"
#include "stream_min.h"

/* A size setting whose auto comes from the tune file, as "auto (VALUE)" or
 * "auto (VALUE: tune file line N)"; get: the tune file's getter (t may be
 * NULL: no file, or one that does not parse), SIZE_MAX shown as off. */
typedef int (*tune_size_fn)(const rcoll_tune_t *t, size_t *v);

static void format_auto(const rcoll_tune_t *tune, tune_size_fn get, char *value, size_t len)
{
    char v[32];
    size_t x;
    int line = get(tune, &x);

    if (x == SIZE_MAX) {
        snprintf(v, sizeof(v), "off");
    } else {
        snprintf(v, sizeof(v), "%zu", x);
    }
    if (line > 0) {
        snprintf(value, len, "auto (%s: tune file line %d)", v, line);
    } else {
        snprintf(value, len, "auto (%s)", v);
    }
}

static void print_config(const rcoll_config_t *cfg)
{
    static const struct {
        size_t       offset;   /* the setting in rcoll_config_t */
        tune_size_fn get;      /* its auto value from the tune file */
    } from_tune[] = {
        { offsetof(rcoll_config_t, shm_stream_min), rcoll_tune_stream_min },
        { offsetof(rcoll_config_t, shm_pair_flat_max), rcoll_tune_pair_flat_max },
    };
    rcoll_tune_t tune;
    char err[256];
    int ok = cfg->tune_file[0] != '\0' &&
             rcoll_tune_parse_file(cfg->tune_file, &tune, err, sizeof(err)) == RCOLL_OK;

    printf("# Settings (environment variable, current value, default, meaning)\n");
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            char value[RCOLL_CONFIG_STR_MAX];
            char envname[96];
            char rules[160];
            rcoll_config_format(cfg, e, value, sizeof(value));
            for (size_t i = 0; i < sizeof(from_tune) / sizeof(from_tune[0]); i++) {
                if (e->offset == from_tune[i].offset &&
                    *(const size_t *)(const void *)((const char *)cfg + e->offset) ==
                        RCOLL_CONFIG_SIZE_AUTO) {
                    format_auto(ok ? &tune : NULL, from_tune[i].get, value, sizeof(value));
                }
            }
            rcoll_config_describe(e, rules, sizeof(rules));
            snprintf(envname, sizeof(envname), "RCOLL_%s", e->name);
            printf("%-32s = %-12s (default: %s%s)\n    %s%s%s\n", envname, value[0] ? value : "\"\"",
                   e->defval[0] ? e->defval : "\"\"", getenv(envname) ? ", set in environment" : "",
                   e->doc, rules[0] ? ". " : "", rules);
        }
    }
    if (ok) {
        rcoll_tune_free(&tune);
    }
}

static void print_markdown(void)
{
    printf("| Variable | Default | Meaning |\n|---|---|---|\n");
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            char rules[160];
            rcoll_config_describe(e, rules, sizeof(rules));
            printf("| `RCOLL_%s` | %s | %s%s%s%s |\n", e->name, e->defval[0] ? e->defval : "(empty)",
                   e->doc, rules[0] ? ". " : "", rules,
                   e->runtime ? " (also settable with `rcoll_config_set`)" : "");
        }
    }
}

static void print_algorithms(void)
{
    printf("\n# Algorithms (force with RCOLL_<COLLECTIVE>_ALGORITHM)\n");
    for (int c = 0; c < RCOLL_COLL_LAST; c++) {
        char names[256];
        rcoll_coll_alg_names((rcoll_coll_type_t)c, names, sizeof(names));
        printf("%-16s %s\n", rcoll_coll_name((rcoll_coll_type_t)c), names);
    }
}

static void print_transports(void)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    printf("\n# Transports\n");
    for (int i = 0; rcoll_tl_backends[i] != NULL; i++) {
        printf("%s\n", rcoll_tl_backends[i]->name);
    }
    printf("UCX library %u.%u.%u\n", major, minor, release);
}

static void print_topology(void)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        printf("\n# Topology: hwloc could not load the topology\n");
        return;
    }
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    char *bound = NULL;
    if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_list_asprintf(&bound, set);
    }
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    char binding[160];
    rcoll_binding_describe(binding, sizeof(binding));
    printf("\n# Topology (hwloc %s)\nhost %s: %d NUMA nodes, %d cores, %d hardware threads; "
           "this process may run on PUs %s\nbinding: %s\n", HWLOC_VERSION, host, numa, cores, pus,
           bound ? bound : "?", binding);
    free(bound);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}

/* The model as rcoll_info sees it: the defaults with the configured eager
 * limit and the tune file's figures (*t: its rules, or NULL). */
static int load_model(const rcoll_config_t *cfg, rcoll_model_t *m, rcoll_tune_t *tune,
                      rcoll_tune_t **t, char *source, size_t slen)
{
    char err[512];
    const char *env = getenv("RCOLL_TUNE_FILE");

    *m = *rcoll_selector_model();
    *t = NULL;
    m->eager_limit = cfg->eager_limit;
    if (cfg->tune_file[0] != '\0') {
        if (rcoll_tune_parse_file(cfg->tune_file, tune, err, sizeof(err)) != RCOLL_OK) {
            fprintf(stderr, "rcoll_info: RCOLL_TUNE_FILE: %s\n", err);
            return 1;
        }
        *t = tune;
        snprintf(source, slen, "%s, %s", cfg->tune_file,
                 env != NULL && env[0] != '\0' ? "from RCOLL_TUNE_FILE" : "the default location");
    } else {
        snprintf(source, slen, "no tune file: RCOLL_TUNE_FILE %s, and %s %s",
                 env != NULL && env[0] != '\0' ? "is none" : "is empty", rcoll_tune_default_path(),
                 env != NULL && env[0] != '\0' ? "is not read" : "does not exist");
    }
    return 0;
}

/* The model's figures (default vs the tune file's) and the choice per size
 * and rank count under them, the tune file's rules applied. */
static int print_model(const rcoll_config_t *cfg, int ppn)
{
    rcoll_model_t m;
    rcoll_tune_t tune, *t;
    char source[RCOLL_CONFIG_STR_MAX + 64];

    if (load_model(cfg, &m, &tune, &t, source, sizeof(source)) != 0)
        return 1;
    rcoll_selector_print_figures(stdout, &m, t, source);
    rcoll_tune_apply_model(t, &m);
    rcoll_selector_print_model_tune(stdout, &m, t, ppn);
    if (t != NULL)
        rcoll_tune_free(t);
    return 0;
}

/* One layout (--nodes): every algorithm's time, the choice, the bound; the
 * tune file's figures apply, then the --net profile's, not its rules. */
static int print_scale(const rcoll_config_t *cfg, int nodes, int ppn, const char *net,
                       rcoll_coll_type_t only, const size_t *sizes, int nsizes)
{
    rcoll_model_t m;
    rcoll_tune_t tune, *t;
    char source[RCOLL_CONFIG_STR_MAX + 64], label[RCOLL_CONFIG_STR_MAX + 128];
    const rcoll_net_profile_t *prof = net != NULL ? rcoll_net_profile_find(net) : NULL;

    if (net != NULL && prof == NULL) {
        fprintf(stderr, "rcoll_info: --net %s: no such profile (--net list shows them)\n", net);
        return 2;
    }
    if (load_model(cfg, &m, &tune, &t, source, sizeof(source)) != 0)
        return 1;
    rcoll_tune_apply_model(t, &m);
    if (prof != NULL) {
        rcoll_net_profile_apply(prof, &m);
        snprintf(label, sizeof(label), "profile %s (%s; alpha_inter = alpha + %.3g us)",
                 prof->name, prof->what, prof->latency * 1e6);
    } else {
        snprintf(label, sizeof(label), "the model's own figures (%s)", source);
    }
    rcoll_selector_print_scale_sizes(stdout, &m, nodes, ppn, label, only, sizes, nsizes);
    if (t != NULL)
        rcoll_tune_free(t);
    return 0;
}

/* "B1,B2,...": sizes in bytes (1 .. 1 GiB), at most max; their count, or -1. */
static int parse_sizes(const char *v, size_t *sizes, int max)
{
    int n = 0;
    for (const char *p = v; *p != '\0'; n++) {
        char *end = NULL;
        unsigned long long b = strtoull(p, &end, 10);
        if (end == p || b < 1 || b > (1ULL << 30) || n == max || (*end != ',' && *end != '\0'))
            return -1;
        sizes[n] = (size_t)b;
        p = *end == ',' ? end + 1 : end;
    }
    return n > 0 ? n : -1;
}

/* --model [--ppn P] [--nodes N] [--net NAME|list] [--coll C] [--bytes LIST] */
static int model_main(const rcoll_config_t *cfg, int argc, char **argv)
{
    int ppn = 0, nodes = 0, nsizes = 0;
    size_t sizes[32];
    const char *net = NULL;
    rcoll_coll_type_t only = RCOLL_COLL_LAST;

    for (int i = 0; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        long n = v != NULL ? strtol(v, &end, 10) : 0;
        int num_ok = v != NULL && end != v && *end == '\0' && n >= 1 && n <= (1L << 20);
        if (v == NULL) {
            fprintf(stderr, "rcoll_info: %s needs a value\n", argv[i]);
            return 2;
        } else if (strcmp(argv[i], "--ppn") == 0 && num_ok) {
            ppn = (int)n;
        } else if (strcmp(argv[i], "--nodes") == 0 && num_ok) {
            nodes = (int)n;
        } else if (strcmp(argv[i], "--net") == 0) {
            net = v;
        } else if (strcmp(argv[i], "--bytes") == 0 && (nsizes = parse_sizes(v, sizes, 32)) > 0) {
            continue;
        } else if (strcmp(argv[i], "--coll") == 0 && rcoll_coll_find(v) != RCOLL_COLL_LAST) {
            only = rcoll_coll_find(v);
        } else {
            fprintf(stderr, "rcoll_info: --model: bad option or value: %s %s\n", argv[i], v);
            return 2;
        }
    }
    if (net != NULL && strcmp(net, "list") == 0) {
        rcoll_net_profiles_print(stdout);
        return 0;
    }
    if (nodes == 0) {
        if (net != NULL || only != RCOLL_COLL_LAST || nsizes > 0) {
            fprintf(stderr, "rcoll_info: --net, --coll and --bytes need --nodes N\n");
            return 2;
        }
        return print_model(cfg, ppn > 0 ? ppn : 16);
    }
    if (ppn == 0)
        ppn = 1;
    if ((long)nodes * ppn > (1L << 24)) {
        fprintf(stderr, "rcoll_info: --nodes x --ppn: at most %ld ranks\n", 1L << 24);
        return 2;
    }
    return print_scale(cfg, nodes, ppn, net, only, sizes, nsizes);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: rcoll_info [--config | --markdown | --model [--ppn N] | --devices | --help]\n"
            "       rcoll_info --model --nodes N [--ppn P] [--net NAME] [--coll C] [--bytes B1,B2,...]\n"
            "       rcoll_info --model --net list\n");
}

int main(int argc, char **argv)
{
    rcoll_config_t cfg;
    const char *mode = argc > 1 ? argv[1] : "";

    if (strcmp(mode, "--help") == 0 || strcmp(mode, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "--markdown") == 0) {
        print_markdown();
        return 0;
    }
    if (rcoll_config_load(NULL, &cfg) != RCOLL_OK) {
        fprintf(stderr, "rcoll_info: the RCOLL_* environment has an invalid value (see above)\n");
        return 1;
    }
    rcoll_log_set_level(cfg.log_level);
    if (strcmp(mode, "--model") == 0) {
        return model_main(&cfg, argc - 2, argv + 2);
    }
    if (strcmp(mode, "--devices") == 0) {
        rcoll_verbs_print_devices(stdout, &cfg);
        return 0;
    }
    if (mode[0] != '\0' && strcmp(mode, "--config") != 0) {
        usage(stderr);
        return 2;
    }
    printf("rcoll %d.%d.%d\n\n", RCOLL_VERSION_MAJOR, RCOLL_VERSION_MINOR, RCOLL_VERSION_PATCH);
    print_config(&cfg);
    if (mode[0] == '\0') {
        print_algorithms();
        print_transports();
        print_topology();
    }
    return 0;
}
