/*
 * rcoll_info - what rcoll sees and how it is configured.
 *
 *   rcoll_info              version, settings (RCOLL_*) with current values,
 *                           algorithms, transports, topology
 *   rcoll_info --config     settings only
 *   rcoll_info --markdown   the settings as the README's markdown table
 *   rcoll_info --model      the model's figures (default vs the tune file's) and the
 *                           selector's choice per size and rank count
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

static void print_config(const rcoll_config_t *cfg)
{
    printf("# Settings (environment variable, current value, default, meaning)\n");
    for (int t = 0; rcoll_config_tables[t] != NULL; t++) {
        for (const rcoll_config_entry_t *e = rcoll_config_tables[t]; e->name != NULL; e++) {
            char value[RCOLL_CONFIG_STR_MAX];
            char envname[96];
            char rules[160];
            rcoll_config_format(cfg, e, value, sizeof(value));
            rcoll_config_describe(e, rules, sizeof(rules));
            snprintf(envname, sizeof(envname), "RCOLL_%s", e->name);
            printf("%-32s = %-12s (default: %s%s)\n    %s%s%s\n", envname, value[0] ? value : "\"\"",
                   e->defval[0] ? e->defval : "\"\"", getenv(envname) ? ", set in environment" : "",
                   e->doc, rules[0] ? ". " : "", rules);
        }
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

/* The model's figures (default vs the tune file's) and the choice per size
 * and rank count under them, the tune file's rules applied. */
static int print_model(const rcoll_config_t *cfg, int ppn)
{
    rcoll_model_t m = *rcoll_selector_model();
    rcoll_tune_t tune, *t = NULL;
    char source[RCOLL_CONFIG_STR_MAX + 64], err[512];
    const char *env = getenv("RCOLL_TUNE_FILE");

    m.eager_limit = cfg->eager_limit;
    if (cfg->tune_file[0] != '\0') {
        if (rcoll_tune_parse_file(cfg->tune_file, &tune, err, sizeof(err)) != RCOLL_OK) {
            fprintf(stderr, "rcoll_info: RCOLL_TUNE_FILE: %s\n", err);
            return 1;
        }
        t = &tune;
        snprintf(source, sizeof(source), "%s, %s", cfg->tune_file,
                 env != NULL && env[0] != '\0' ? "from RCOLL_TUNE_FILE" : "the default location");
    } else {
        snprintf(source, sizeof(source), "no tune file: RCOLL_TUNE_FILE %s, and %s %s",
                 env != NULL && env[0] != '\0' ? "is none" : "is empty", rcoll_tune_default_path(),
                 env != NULL && env[0] != '\0' ? "is not read" : "does not exist");
    }
    rcoll_selector_print_figures(stdout, &m, t, source);
    rcoll_tune_apply_model(t, &m);
    rcoll_selector_print_model_tune(stdout, &m, t, ppn);
    if (t != NULL)
        rcoll_tune_free(t);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: rcoll_info [--config | --markdown | --model [--ppn N] | --devices | --help]\n");
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
        int ppn = (argc > 3 && strcmp(argv[2], "--ppn") == 0) ? atoi(argv[3]) : 0;
        return print_model(&cfg, ppn > 0 ? ppn : 16);
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
