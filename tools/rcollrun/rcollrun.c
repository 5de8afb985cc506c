/*
 * rcollrun -n N [--nodes K|N1,N2,...] [--timeout SECONDS] [--tag-output] [--enable-recovery]
 *          [-x VAR[=VAL]]...
 *          [--] prog args...
 *
 * Command line and main; see rcollrun.h for the layout of the launcher.
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "rcoll_build.h"
#endif
#include "rcollrun.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define DEFAULT_GRACE_S 2.0

static void usage(FILE *f)
{
    fprintf(f,
"Usage: rcollrun -n N [OPTIONS] [--] PROGRAM [ARGS...]\n"
"\n"
"Start N ranks of PROGRAM on this node.  rcollrun is their PMIx server: the\n"
"ranks find rank, size, local peers and each other's published data through\n"
"PMIx (PMIx_Init, PMIx_Get, PMIx_Put/Commit/Fence), as under srun --mpi=pmix\n"
"or mpirun.\n"
"\n"
"Options:\n"
"  -n, -np, --np N        number of ranks (1..%d; may exceed the core count)\n"
"  --nodes K|N1,N2,...    emulate nodes on this machine: K nodes of blocks of ranks\n"
"                         (sizes differing by at most one), or N1 ranks on the\n"
"                         first node, N2 on the second... (summing to N; -n may\n"
"                         then be left out).  Each node has its own host name\n"
"                         (HOST-nK), PMIx node id and local peers, and its own\n"
"                         UTS, IPC, PID and mount namespaces with a private\n"
"                         /dev/shm: ranks of different nodes share no memory\n"
"                         and talk over TCP.  Needs root (CAP_SYS_ADMIN)\n"
"  --bind-to core|numa|none\n"
"                         bind rank r to core r (default), or to a NUMA node\n"
"                         (ranks in blocks), or not at all; with more ranks\n"
"                         than cores nothing is bound and the ranks get\n"
"                         RCOLL_SPIN_COUNT=0 (unless set): they yield at once\n"
"  --report-bindings      print each rank's binding and CPU set\n"
"  --timeout SECONDS      terminate the job if it runs longer (default: no limit)\n"
"  --tag-output           prefix each output line with [RANK]\n"
"  --enable-recovery      when a rank fails (non-zero exit, signal, no\n"
"                         PMIx_Finalize), name it on one line and let the\n"
"                         others run to their end (rcoll_comm_shrink)\n"
"  -x VAR[=VAL]           export VAR to the ranks, set to VAL if given (repeatable)\n"
"  -v, --verbose          report PMIx events (connect, fence, finalize) on stderr\n"
"  -h, --help             show this help\n"
"  --version              show the version\n"
"\n"
"The ranks' stdout and stderr are forwarded line by line.  Rank 0 reads\n"
"rcollrun's stdin unless it is a terminal; the other ranks read /dev/null.\n"
"\n"
"If a rank exits with a non-zero status, is killed by a signal, calls\n"
"PMIx_Abort, or exits without PMIx_Finalize while its peers still run, or the\n"
"job outlives --timeout, or rcollrun gets SIGINT/SIGTERM/SIGHUP, rcollrun\n"
"names the cause, sends SIGTERM to the remaining ranks and SIGKILL %g s later\n"
"(with --enable-recovery only for PMIx_Abort, --timeout and signals).\n"
"\n"
"Exit status: 0 if every rank exited 0; otherwise the status of the first\n"
"rank that failed (128+N for signal N), the PMIx_Abort status, 124 for\n"
"--timeout, 128+N when rcollrun itself got signal N, 127 (program not found),\n"
"126 (program not executable), 2 (bad arguments), 1 (launcher error).\n",
            RCOLLRUN_MAX_RANKS, DEFAULT_GRACE_S);
}

void rcollrun_msg(const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    size_t len = 10;
    int n;

    memcpy(buf, "rcollrun: ", len);
    va_start(ap, fmt);
    n = vsnprintf(buf + len, sizeof(buf) - len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    len += (size_t)n < sizeof(buf) - len - 1 ? (size_t)n : sizeof(buf) - len - 2;
    buf[len++] = '\n';
    /* One write per message, so it never interleaves with forwarded lines. */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(2, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
}

double rcollrun_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "rcollrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'rcollrun --help'.\n");
    return RCOLLRUN_EXIT_USAGE;
}

static int parse_nranks(const char *s, int *n)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > RCOLLRUN_MAX_RANKS)
        return -1;
    *n = (int)v;
    return 0;
}

static int parse_seconds(const char *s, double *t)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0 || v > 1e7)
        return -1;
    *t = v;
    return 0;
}

static bool valid_export(const char *x)
{
    size_t nlen = strcspn(x, "=");

    if (nlen == 0)
        return false;
    for (size_t i = 0; i < nlen; i++) {
        char c = x[i];
        bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* Returns -1 when parsing succeeded, else the exit code. */
static int parse_args(int argc, char **argv, rcollrun_opts_t *o)
{
    int i;
    bool have_n = false;

    o->exports = calloc((size_t)argc + 1, sizeof(char *));
    if (o->exports == NULL)
        return RCOLLRUN_EXIT_INTERNAL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;

        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--version") == 0) {
            printf("rcollrun (rcoll) %s\n", PACKAGE_VERSION);
            exit(0);
        }
        if (strcmp(a, "--tag-output") == 0) {
            o->tag_output = true;
            continue;
        }
        if (strcmp(a, "--enable-recovery") == 0) {
            o->enable_recovery = true;
            continue;
        }
        if (strcmp(a, "--report-bindings") == 0) {
            o->report_bindings = true;
            continue;
        }
        if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o->verbose = true;
            continue;
        }
        /* Options with a value: "-opt VALUE", "--opt=VALUE", "-nVALUE". */
        if (strncmp(a, "--timeout=", 10) == 0 || strncmp(a, "--np=", 5) == 0 ||
            strncmp(a, "--nodes=", 8) == 0 || strncmp(a, "--bind-to=", 10) == 0)
            val = strchr(a, '=') + 1;
        else if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0 ||
                 strcmp(a, "--timeout") == 0 || strcmp(a, "-x") == 0 ||
                 strcmp(a, "--nodes") == 0 || strcmp(a, "--bind-to") == 0) {
            if (i + 1 >= argc)
                return bad_usage("option %s needs a value", a);
            val = argv[++i];
        } else if (strncmp(a, "-n", 2) == 0 && a[2] >= '0' && a[2] <= '9')
            val = a + 2;
        else
            return bad_usage("unknown option '%s'", a);

        if (strncmp(a, "--timeout", 9) == 0) {
            if (parse_seconds(val, &o->timeout_s) != 0)
                return bad_usage("--timeout needs a number of seconds >= 0 (0: no limit), "
                                 "not '%s'", val);
        } else if (strncmp(a, "--bind-to", 9) == 0) {
            if (strcmp(val, "core") == 0)
                o->bind_to = RCOLLRUN_BIND_CORE;
            else if (strcmp(val, "numa") == 0)
                o->bind_to = RCOLLRUN_BIND_NUMA;
            else if (strcmp(val, "none") == 0)
                o->bind_to = RCOLLRUN_BIND_NONE;
            else
                return bad_usage("--bind-to takes core, numa or none, not '%s'", val);
        } else if (strncmp(a, "--nodes", 7) == 0) {
            o->nodes_spec = val;
        } else if (strcmp(a, "-x") == 0) {
            if (!valid_export(val))
                return bad_usage("-x needs VAR or VAR=VALUE with a valid variable name, "
                                 "not '%s'", val);
            o->exports[o->nexports++] = (char *)val;
        } else {
            if (parse_nranks(val, &o->nranks) != 0) {
                fprintf(stderr, "rcollrun: the rank count must be an integer from 1 to %d, "
                        "not '%s'\nTry 'rcollrun --help'.\n", RCOLLRUN_MAX_RANKS, val);
                return RCOLLRUN_EXIT_USAGE;
            }
            have_n = true;
        }
    }
    if (!have_n && o->nodes_spec != NULL && strchr(o->nodes_spec, ',') != NULL) {
        /* --nodes N1,N2,...: the sum is the rank count */
        o->nranks = 0;
        for (const char *p = o->nodes_spec; *p != '\0'; p++)
            if (*p == ',' || p == o->nodes_spec)
                o->nranks += atoi(p + (*p == ','));
        have_n = o->nranks >= 1 && o->nranks <= RCOLLRUN_MAX_RANKS;
    }
    if (!have_n)
        return bad_usage("%s", "missing -n N (the number of ranks)");
    if (o->nodes_spec != NULL) {
        o->layout.isolated = true;
        if (rcollrun_layout_parse(o->nodes_spec, o->nranks, &o->layout) != 0) {
            fprintf(stderr, "rcollrun: --nodes needs K (1..%d) or a list N1,N2,... of positive "
                    "rank counts summing to %d, not '%s'\nTry 'rcollrun --help'.\n", o->nranks,
                    o->nranks, o->nodes_spec);
            return RCOLLRUN_EXIT_USAGE;
        }
    } else if (rcollrun_layout_set(&o->layout, &o->nranks, 1, o->nranks) != 0) {
        return RCOLLRUN_EXIT_INTERNAL;
    }
    if (i >= argc)
        return bad_usage("%s", "missing the program to run");
    o->program = argv[i];
    o->argv = argv + i;
    return -1;
}

/* Two pipes per rank: make sure the descriptor limit allows them. */
static void raise_fd_limit(int nranks)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)nranks * 2 + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need)
        rcollrun_msg("warning: the open-file limit (%lu) may be too low for %d ranks",
                     (unsigned long)rl.rlim_cur, nranks);
}

int main(int argc, char **argv)
{
    rcollrun_opts_t o = { .grace_s = DEFAULT_GRACE_S };
    int rc;

    rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    rc = rcollrun_resolve_program(&o);
    if (rc == 0) {
        raise_fd_limit(o.nranks);
        rc = rcollrun_supervise(&o);
    }
    rcollrun_layout_free(&o.layout);
    free(o.program_path);
    free(o.exports);
    return rc;
}
