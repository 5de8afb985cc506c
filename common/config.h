/*
 * config.h - every RCOLL_* setting, resolved once per context.
 *
 * Each module owns a table of rcoll_config_entry_t {name, default, doc,
 * parser, offset into rcoll_config_t}; rcoll_config_tables[] in config.c lists
 * the tables.  rcoll_info prints them with their current values and the README
 * table is generated from them (tools/rcoll_info --markdown), so the two never
 * drift.  Values come from, in order of precedence: the config array passed to
 * rcoll_init(), the environment, the default.
 */
#ifndef RCOLL_CONFIG_H
#define RCOLL_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"

#define RCOLL_CONFIG_STR_MAX 256
/* An unsigned setting whose value is "auto" (only where its entry lists "auto"). */
#define RCOLL_CONFIG_UINT_AUTO 0xffffffffu
/* A size setting whose value is "auto" or "off" (only where its entry lists the word). */
#define RCOLL_CONFIG_SIZE_AUTO ((size_t)-1)
#define RCOLL_CONFIG_SIZE_OFF  ((size_t)-2)

typedef struct rcoll_config {
    /* core */
    int      log_level;            /* RCOLL_LOG_LEVEL */
    double   timeout;              /* RCOLL_TIMEOUT, seconds; 0 = wait forever */
    size_t   eager_limit;          /* RCOLL_EAGER_LIMIT, bytes */
    unsigned spin_count;           /* RCOLL_SPIN_COUNT: idle polls before sched_yield, or auto */
    size_t   wait_sleep_min;       /* RCOLL_WAIT_SLEEP_MIN: bytes, or SIZE_AUTO / SIZE_OFF */
    size_t   unexpected_max;       /* RCOLL_UNEXPECTED_MAX: bytes of eager messages kept unexpected */
    int      revoke_on_timeout;    /* RCOLL_REVOKE_ON_TIMEOUT: a timed-out collective revokes */
    char     transport[RCOLL_CONFIG_STR_MAX];   /* RCOLL_TRANSPORT: auto|ucx|verbs */
    /* algorithm choice; "" = let the selector choose */
    char     allreduce_alg[RCOLL_CONFIG_STR_MAX];
    char     bcast_alg[RCOLL_CONFIG_STR_MAX];
    char     barrier_alg[RCOLL_CONFIG_STR_MAX];
    char     reduce_alg[RCOLL_CONFIG_STR_MAX];
    char     allgather_alg[RCOLL_CONFIG_STR_MAX];
    char     reduce_scatter_alg[RCOLL_CONFIG_STR_MAX];
    char     tune_file[RCOLL_CONFIG_STR_MAX];  /* RCOLL_TUNE_FILE */
    size_t   segment_size;         /* RCOLL_SEGMENT_SIZE: pipelining unit */
    /* verbs */
    char     net_devices[RCOLL_CONFIG_STR_MAX]; /* RCOLL_NET_DEVICES: dev:port[,...] */
    int      ib_gid_index;         /* RCOLL_IB_GID_INDEX, -1 = choose */
    char     verbs_cm[RCOLL_CONFIG_STR_MAX];    /* RCOLL_VERBS_CM: auto|rdmacm|oob */
    int      rcache;               /* RCOLL_RCACHE: 0/1 */
    size_t   rcache_max;           /* RCOLL_RCACHE_MAX: bytes */
    int      verbs_cq_peers;       /* RCOLL_VERBS_CQ_PEERS: connections per completion queue */
    char     verbs_srq[RCOLL_CONFIG_STR_MAX];   /* RCOLL_VERBS_SRQ: auto|on|off */
    int      verbs_srq_size;       /* RCOLL_VERBS_SRQ_SIZE: receive buffers in the shared pool */
    char     ucx_lazy_eps[RCOLL_CONFIG_STR_MAX]; /* RCOLL_UCX_LAZY_EPS: auto|on|off */
    /* shared memory */
    int      shm;                  /* RCOLL_SHM: 0/1 */
    char     shm_cma[RCOLL_CONFIG_STR_MAX];     /* RCOLL_SHM_CMA: auto|on|off */
    char     shm_adapt[RCOLL_CONFIG_STR_MAX];   /* RCOLL_SHM_ADAPT: auto|off|random */
    size_t   shm_stream_min;       /* RCOLL_SHM_STREAM_MIN: bytes, or SIZE_AUTO / SIZE_OFF */
    size_t   shm_pair_flat_max;    /* RCOLL_SHM_PAIR_FLAT_MAX: bytes, or SIZE_AUTO */
    char     fault[RCOLL_CONFIG_STR_MAX];       /* RCOLL_FAULT: test-only kill point (fault_hook.h) */
    /* dead ranks (src/liveness.c) */
    char     liveness[RCOLL_CONFIG_STR_MAX];    /* RCOLL_LIVENESS: all|transport */
    double   probe_s;              /* RCOLL_PROBE_S: probe a silent peer after; 0 = never */
    /* the MPI drop-in layer (mpi/) reads these itself */
    int      mpi;                  /* RCOLL_MPI: 0/1 */
    int      mpi_report;           /* RCOLL_MPI_REPORT: 0/1 */
    /* not a setting: bumped by rcoll_config_set, so that what was derived
     * from the settings (the selector's remembered choices) is redone */
    unsigned gen;
} rcoll_config_t;

typedef enum {
    RCOLL_CONFIG_INT,      /* int */
    RCOLL_CONFIG_UINT,     /* unsigned */
    RCOLL_CONFIG_SIZE,     /* size_t; accepts k/K/m/M/g/G suffixes (powers of 1024) */
    RCOLL_CONFIG_DOUBLE,   /* double */
    RCOLL_CONFIG_BOOL,     /* int 0/1; accepts 0/1/y/n/yes/no/true/false/on/off */
    RCOLL_CONFIG_STRING,   /* char[RCOLL_CONFIG_STR_MAX] */
    RCOLL_CONFIG_LOGLEVEL, /* int; error|warn|info|debug|trace */
    RCOLL_CONFIG_ENUM      /* char[]; one of the '|'-separated words in 'choices' */
} rcoll_config_type_t;

/* Settings that must be equal on every rank are compared at init (a hash of
 * each, exchanged with the addresses); a mismatch fails init on every rank
 * and names the setting. */
typedef enum {
    RCOLL_CONFIG_MATCH_NONE = 0,   /* may differ between ranks */
    RCOLL_CONFIG_MATCH_VALUE,      /* the value must be equal */
    RCOLL_CONFIG_MATCH_FILE        /* the contents of the file it names must be equal */
} rcoll_config_match_t;

typedef struct rcoll_config_entry {
    const char          *name;     /* without the RCOLL_ prefix, e.g. "EAGER_LIMIT" */
    const char          *defval;   /* default, as text */
    const char          *doc;      /* one line for the table */
    rcoll_config_type_t  type;
    size_t               offset;   /* offsetof(rcoll_config_t, field) */
    const char          *choices;  /* RCOLL_CONFIG_ENUM: "auto|ucx|verbs" */
    int                  runtime;  /* 1: may be changed by rcoll_config_set() */
    /* INT, UINT, SIZE, DOUBLE: the accepted range [min, max]; a value
     * outside it is rejected with RCOLL_ERR_INVALID_ARG naming the setting
     * (every numeric entry has one; rcoll_info prints it). */
    double               min, max;
    rcoll_config_match_t match;    /* must it be equal on every rank? */
} rcoll_config_entry_t;

/* The tables, each ended by an entry with name == NULL; the list ends with NULL. */
extern const rcoll_config_entry_t *const rcoll_config_tables[];

/*
 * Resolve every entry: overrides (NULL or "KEY=VALUE" strings ended by NULL,
 * KEY with or without the RCOLL_ prefix), then the environment, then the
 * default.  Fails with RCOLL_ERR_INVALID_ARG (and logs which variable and why)
 * on a bad value or an unknown override key.  Warns about RCOLL_* environment
 * variables that are not in any table (likely typos).
 */
rcoll_status_t rcoll_config_load(const char *const *overrides, rcoll_config_t *cfg);

/* Parse one value into cfg; errbuf gets a reason on failure. */
rcoll_status_t rcoll_config_entry_set(rcoll_config_t *cfg, const rcoll_config_entry_t *e,
                                const char *value, char *errbuf, size_t errlen);

/* Format an entry's current value in cfg as text. */
void rcoll_config_format(const rcoll_config_t *cfg, const rcoll_config_entry_t *e,
                         char *buf, size_t len);

/* Find an entry by name ("RCOLL_X" or "X"); NULL if unknown. */
const rcoll_config_entry_t *rcoll_config_find(const char *name);

/* The range and agreement rules of e as one sentence for rcoll_info and the
 * README ("Range 0 to 1048576. Must be equal on every rank."); "" if none. */
void rcoll_config_describe(const rcoll_config_entry_t *e, char *buf, size_t len);

/* RCOLL_TIMEOUT (seconds, 0 = forever) for an API that takes whole seconds
 * in an int (PMIx): 0 stays 0, anything else is rounded to the nearest
 * second but at least 1 (not "forever") and at most INT_MAX, so no cast of
 * an out-of-range double is ever made. */
static inline int rcoll_config_timeout_int(double seconds)
{
    if (!(seconds > 0)) {
        return 0;
    }
    if (seconds >= 2147483647.0) {
        return 2147483647;
    }
    int s = (int)(seconds + 0.5);
    return s > 0 ? s : 1;
}

/* The settings that must be equal on every rank (match != NONE), in table
 * order: how many, the i-th, and a 64-bit hash of each one's value in cfg
 * (MATCH_FILE: of the named file's contents) into hashes[0..count-1].
 * Ranks exchange the hashes at init and name the first that differs. */
int rcoll_config_match_count(void);
const rcoll_config_entry_t *rcoll_config_match_entry(int i);
void rcoll_config_match_hashes(const rcoll_config_t *cfg, uint64_t *hashes);

/* Parse a size with an optional k/m/g suffix; returns 0 on success. */
int rcoll_parse_size(const char *s, size_t *out);

#endif
