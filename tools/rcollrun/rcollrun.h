/*
 * rcollrun: rcoll's single-node launcher.  It is a PMIx server (libpmix's
 * server API): it registers one namespace, forks N ranks with the PMIx
 * environment, answers their fences, forwards their output and supervises
 * them (first failure, --timeout, signals).
 *
 * Files:
 *   rcollrun.c   command line, main
 *   pmix_host.c  PMIx server init/finalize, job registration, host upcalls
 *   spawn.c      program lookup, rank environment, fork/exec
 *   iofwd.c      line-buffered forwarding of the ranks' stdout/stderr
 *   supervise.c  event loop: reaping, failure detection, termination
 *   vnode.c      --nodes: rank layout, one set of namespaces per virtual node
 *   bind.c       --bind-to, --report-bindings (hwloc)
 *   whereis.c    the job's one-line summary of the ranks' "where is everyone" reports
 */
#ifndef RCOLLRUN_H
#define RCOLLRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RCOLLRUN_MAX_RANKS 1024

/* Exit codes of rcollrun itself (a failing rank's own status wins otherwise). */
#define RCOLLRUN_EXIT_USAGE      2
#define RCOLLRUN_EXIT_NOEXEC     126
#define RCOLLRUN_EXIT_NOTFOUND   127
#define RCOLLRUN_EXIT_TIMEOUT    124
#define RCOLLRUN_EXIT_INTERNAL   1

/* Where the ranks run: nnodes nodes, node k holds ranks first[k] ..
 * first[k+1]-1.  Without --nodes, one node named after the host. */
typedef struct {
    int          nnodes;
    int         *first;         /* nnodes + 1 entries */
    int         *node_of;       /* per rank */
    char       (*names)[64];    /* host name of each node */
    bool         isolated;      /* --nodes: each node in its own namespaces */
} rcollrun_layout_t;

typedef enum { RCOLLRUN_BIND_CORE, RCOLLRUN_BIND_NUMA, RCOLLRUN_BIND_NONE } rcollrun_bind_t;

typedef struct {
    int          nranks;
    rcollrun_layout_t layout;
    rcollrun_bind_t bind_to;    /* default: core */
    bool         report_bindings;
    double       timeout_s;     /* 0: none */
    double       grace_s;       /* SIGTERM -> SIGKILL */
    bool         tag_output;
    bool         verbose;
    bool         enable_recovery; /* --enable-recovery: a failed rank does not end the others */
    char       **exports;       /* -x VAR or VAR=VAL, NULL-terminated */
    size_t       nexports;
    const char  *nodes_spec;    /* --nodes, NULL: one node */
    const char  *program;       /* as given */
    char        *program_path;  /* resolved */
    char *const *argv;          /* program and its arguments */
} rcollrun_opts_t;

/* One forwarded output stream of one rank. */
typedef struct {
    int    fd;          /* read end of the pipe, -1 once closed */
    int    dest;        /* 1 or 2 */
    int    rank;
    char  *buf;
    size_t len;
    size_t cap;
    bool   midline;     /* the last thing written for this stream ended mid-line */
} rcollrun_stream_t;

typedef struct {
    int               rank;
    pid_t             pid;        /* also its process group id */
    bool              running;
    int               wstatus;
    rcollrun_stream_t out;
    rcollrun_stream_t err;
} rcollrun_rank_t;

/* ---- pmix_host.c ---- */
/* Starts the PMIx server in a fresh private directory under $TMPDIR and
 * registers the job namespace and its n clients.  On failure prints why. */
int  rcollrun_pmix_start(int nranks, const rcollrun_layout_t *layout, bool verbose);
/* Fills *env (a malloc'ed NULL-terminated array of malloc'ed strings) with
 * the PMIx variables for rank r.  Returns 0 or -1 (message printed). */
int  rcollrun_pmix_setup_fork(int rank, char ***env);
/* Releases pending upcalls, finalizes the server, removes its directory. */
void rcollrun_pmix_stop(void);
/* Read end of the pipe the PMIx thread writes to when an upcall needs the
 * supervisor's attention (abort). */
int  rcollrun_pmix_wake_fd(void);
bool rcollrun_pmix_connected(int rank);
bool rcollrun_pmix_finalized(int rank);
/* If a rank called PMIx_Abort, returns true once and fills the details;
 * msg must be freed by the caller. */
bool rcollrun_pmix_take_abort(int *rank, int *status, char **msg);
/* Lets the aborting client(s) return from PMIx_Abort. */
void rcollrun_pmix_release_aborts(void);
/* Tells the other ranks (a PMIx event, PMIX_EVENT_PROC_TERMINATED with the
 * rank as affected proc) that rank ended abnormally with code (128 + signal
 * or the exit status): they mark it failed (rcoll's liveness.h). */
void rcollrun_pmix_notify_ended(int rank, int code);

/* ---- spawn.c ---- */
/* Resolves opts->program through PATH.  Returns 0, or the exit code to use
 * (126/127) after printing why. */
int  rcollrun_resolve_program(rcollrun_opts_t *opts);
/* Builds the base environment: ours minus launcher PMIx variables, plus -x. */
char **rcollrun_base_env(const rcollrun_opts_t *opts);
/* Forks rank r with environment env (consumed: freed here) and waits until
 * its execve() succeeded.  Fills r->pid and r's stream fds.  Returns 0, -1
 * (launcher error) or 126/127 (the program cannot be executed); a message
 * has been printed. */
int  rcollrun_spawn_rank(const rcollrun_opts_t *opts, rcollrun_rank_t *r, char **env,
                         const void *child_sigmask);
void rcollrun_free_env(char **env);

/* ---- vnode.c ---- */
/* "K" (K blocks, sizes differing by at most one) or "N1,N2,..." (summing to
 * nranks) into *L (L->isolated set by the caller first).  0, or -1 when the
 * spec does not fit nranks. */
int  rcollrun_layout_parse(const char *spec, int nranks, rcollrun_layout_t *L);
/* nnodes nodes with counts[k] ranks each, in rank order.  0 or -1 (no memory). */
int  rcollrun_layout_set(rcollrun_layout_t *L, const int *counts, int nnodes, int nranks);
/* Frees what rcollrun_layout_set allocated. */
void rcollrun_layout_free(rcollrun_layout_t *L);
/* Creates each node's namespaces (L->isolated).  0, or -1 after a message. */
int  rcollrun_vnodes_start(const rcollrun_layout_t *L, bool verbose);
bool rcollrun_vnodes_active(void);
/* Around the fork of a rank of node k (forking thread): the child is born in
 * node k's PID namespace.  before: 0 or -1 after a message. */
int  rcollrun_vnode_before_fork(int node);
void rcollrun_vnode_after_fork(void);
/* In the child before execve (async-signal-safe): join node k's UTS, IPC and
 * mount namespaces and return to the working directory.  0 or -1 (errno). */
int  rcollrun_vnode_enter_child(int node);
/* Ends every node's init (and with it whatever is left in the node). */
void rcollrun_vnodes_stop(void);

/* ---- bind.c ---- */
/* Plans each rank's CPU set (and prints it with --report-bindings).  0 or
 * -1 after a message. */
int  rcollrun_bind_plan(const rcollrun_opts_t *opts);
/* Rank r's set (a cpu_set_t *) for sched_setaffinity, or NULL: not bound. */
const void *rcollrun_bind_set(int rank);
/* More ranks than cores: nothing bound, and the ranks should yield early. */
bool rcollrun_bind_oversubscribed(void);
void rcollrun_bind_free(void);

/* ---- iofwd.c ---- */
void rcollrun_stream_init(rcollrun_stream_t *s, int fd, int dest, int rank);
/* Reads what is available; forwards complete lines.  Returns false at EOF
 * or error (the stream is then flushed and closed). */
bool rcollrun_stream_read(rcollrun_stream_t *s, bool tag);
void rcollrun_stream_close(rcollrun_stream_t *s, bool tag);

/* ---- whereis.c ---- */
/* Every forwarded line of rank `rank` (without its tag). */
void rcollrun_where_scan(int rank, const char *line, size_t len);
/* At the end of the job: one line naming the ranks the reports named. */
void rcollrun_where_summary(int nranks);

/* ---- supervise.c ---- */
/* Runs the job to completion; returns rcollrun's exit code. */
int  rcollrun_supervise(const rcollrun_opts_t *opts);

/* ---- helpers (rcollrun.c) ---- */
double rcollrun_now(void);
void   rcollrun_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
