/*
 * Virtual nodes (rcollrun --nodes): the rank layout, and one set of Linux
 * namespaces per node so that nothing but the network joins two nodes.
 *
 * Each virtual node k is a small "init" process made with clone(2) in new
 * UTS, IPC, mount and PID namespaces.  It sets the node's host name, makes
 * its mounts private and mounts a fresh tmpfs on /dev/shm and its own /proc,
 * then only reaps orphans.  A rank of node k joins those namespaces: the PID
 * namespace through the forking thread (setns before fork, so the child is
 * born in it), the others in the child before execve.  So the ranks of one
 * node share /dev/shm, System V IPC and PIDs (shared memory and CMA work
 * inside the node), and ranks of different nodes share none of them: rcoll's
 * shm segments, UCX's posix/sysv/cma cannot reach across, and the network
 * namespace, shared by all, leaves TCP.
 *
 * Creating namespaces needs CAP_SYS_ADMIN (root); without it --nodes fails
 * with a message saying so.
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define INIT_STACK_SIZE (64 * 1024)

/* What the init process of a node reports: 0, or the failed step and errno. */
typedef struct {
    int step;
    int err;
} init_report_t;

typedef struct {
    const char *name;
    int         report_fd;
} init_arg_t;

static const char *const init_steps[] = {
    "ok", "making mounts private", "setting the host name", "mounting a tmpfs on /dev/shm",
    "mounting /proc",
};

static struct {
    int    n;
    pid_t *init_pid;       /* host PID of each node's init, 0 once reaped */
    int  (*fd)[4];         /* pid, uts, ipc, mnt namespace of each node */
    int    self_pid_ns;    /* ours, to return to after each fork */
    char   cwd[PATH_MAX];
} vn = { .self_pid_ns = -1 };

/* ------------------------------------------------------------------ */
/* Layout.                                                             */

int rcollrun_layout_parse(const char *spec, int nranks, rcollrun_layout_t *L)
{
    int counts[RCOLLRUN_MAX_RANKS];
    int k = 0, sum = 0;
    const char *p = spec;

    if (strchr(spec, ',') == NULL) {
        char *end;
        long K = strtol(spec, &end, 10);

        if (end == spec || *end != '\0' || K < 1 || K > nranks)
            return -1;
        for (k = 0; k < K; k++)   /* blocks whose sizes differ by at most one */
            counts[k] = nranks / (int)K + (k < nranks % (int)K);
        sum = nranks;
    } else {
        while (*p != '\0') {
            char *end;
            long c = strtol(p, &end, 10);

            if (end == p || c < 1 || c > nranks || k >= RCOLLRUN_MAX_RANKS ||
                (*end != ',' && *end != '\0'))
                return -1;
            counts[k++] = (int)c;
            sum += (int)c;
            p = *end == ',' ? end + 1 : end;
        }
    }
    if (sum != nranks)
        return -1;
    return rcollrun_layout_set(L, counts, k, nranks);
}

int rcollrun_layout_set(rcollrun_layout_t *L, const int *counts, int nnodes, int nranks)
{
    char host[HOST_NAME_MAX + 1] = "localhost";

    L->nnodes = nnodes;
    L->first = calloc((size_t)nnodes + 1, sizeof(int));
    L->node_of = calloc((size_t)nranks, sizeof(int));
    L->names = calloc((size_t)nnodes, sizeof(*L->names));
    if (L->first == NULL || L->node_of == NULL || L->names == NULL)
        return -1;
    gethostname(host, sizeof(host) - 1);
    for (int k = 0, r = 0; k < nnodes; k++) {
        L->first[k] = r;
        for (int i = 0; i < counts[k]; i++)
            L->node_of[r++] = k;
        L->first[k + 1] = r;
        if (L->isolated)  /* "<host>-n<k>", the host part cut to fit 63 bytes */
            snprintf(L->names[k], sizeof(L->names[k]), "%.*s-n%d", 50, host, k);
        else
            snprintf(L->names[k], sizeof(L->names[k]), "%s", host);
    }
    return 0;
}

void rcollrun_layout_free(rcollrun_layout_t *L)
{
    free(L->first);
    free(L->node_of);
    free(L->names);
    L->first = L->node_of = NULL;
    L->names = NULL;
}

/* ------------------------------------------------------------------ */
/* A node's init process (runs in the new namespaces).                 */

static void on_sigchld(int sig)
{
    (void)sig;
}

static int init_report(int fd, int step, int err)
{
    init_report_t rep = { step, err };

    return write(fd, &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : -1;
}

static int node_init(void *p)
{
    const init_arg_t *a = p;
    struct sigaction sa;
    sigset_t block, wait_mask;
    int step = 0;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        step = 1;
    else if (sethostname(a->name, strlen(a->name)) != 0)
        step = 2;
    else if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
        step = 3;
    else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        step = 4;
    /* A failed write means rcollrun is gone (SIGPIPE is ignored there). */
    if (init_report(a->report_fd, step, step ? errno : 0) != 0 || step != 0)
        _exit(1);
    close(a->report_fd);

    /* PID 1 of the node: reap whatever a rank leaves orphaned. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigchld;
    sigaction(SIGCHLD, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigdelset(&wait_mask, SIGCHLD);
    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        sigsuspend(&wait_mask);
    }
    return 0;
}

static int open_ns(pid_t pid, const char *which)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%ld/ns/%s", (long)pid, which);
    return open(path, O_RDONLY | O_CLOEXEC);
}

static int start_node(int k, const char *name, char *stack)
{
    static const char *const ns[4] = { "pid", "uts", "ipc", "mnt" };
    int pfd[2];
    init_arg_t arg;
    init_report_t rep;
    ssize_t got;
    pid_t pid;

    if (pipe2(pfd, O_CLOEXEC) != 0) {
        rcollrun_msg("pipe: %s", strerror(errno));
        return -1;
    }
    arg.name = name;
    arg.report_fd = pfd[1];
    pid = clone(node_init, stack + INIT_STACK_SIZE,
                CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNS | SIGCHLD, &arg);
    close(pfd[1]);
    if (pid < 0) {
        int e = errno;

        close(pfd[0]);
        rcollrun_msg("--nodes: cannot create the namespaces of virtual node %d: clone: %s%s", k,
                     strerror(e), e == EPERM ? " (creating UTS/IPC/PID/mount namespaces needs "
                     "CAP_SYS_ADMIN: run rcollrun --nodes as root)" : "");
        return -1;
    }
    vn.init_pid[k] = pid;
    do {
        got = read(pfd[0], &rep, sizeof(rep));
    } while (got < 0 && errno == EINTR);
    close(pfd[0]);
    if (got != (ssize_t)sizeof(rep) || rep.step != 0) {
        if (got == (ssize_t)sizeof(rep))
            rcollrun_msg("--nodes: virtual node %d (%s): %s failed: %s", k, name,
                         init_steps[rep.step], strerror(rep.err));
        else
            rcollrun_msg("--nodes: virtual node %d (%s): its init process ended early", k, name);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if ((vn.fd[k][i] = open_ns(pid, ns[i])) < 0) {
            rcollrun_msg("--nodes: cannot open the %s namespace of virtual node %d: %s", ns[i],
                         k, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int rcollrun_vnodes_start(const rcollrun_layout_t *L, bool verbose)
{
    char *stack;

    vn.n = L->nnodes;
    vn.init_pid = calloc((size_t)vn.n, sizeof(pid_t));
    vn.fd = malloc((size_t)vn.n * sizeof(*vn.fd));
    stack = malloc(INIT_STACK_SIZE);
    if (vn.init_pid == NULL || vn.fd == NULL || stack == NULL) {
        free(stack);
        rcollrun_msg("out of memory");
        return -1;
    }
    for (int k = 0; k < vn.n; k++)
        for (int i = 0; i < 4; i++)
            vn.fd[k][i] = -1;
    if (getcwd(vn.cwd, sizeof(vn.cwd)) == NULL)
        strcpy(vn.cwd, "/");
    vn.self_pid_ns = open_ns(getpid(), "pid");
    if (vn.self_pid_ns < 0) {
        rcollrun_msg("--nodes: cannot open /proc/self/ns/pid: %s", strerror(errno));
        free(stack);
        return -1;
    }
    for (int k = 0; k < vn.n; k++) {
        /* the child runs on its own copy of the stack memory (no CLONE_VM) */
        if (start_node(k, L->names[k], stack) != 0) {
            free(stack);
            return -1;
        }
        if (verbose)
            rcollrun_msg("virtual node %d: %s, ranks %d-%d, init pid %ld", k, L->names[k],
                         L->first[k], L->first[k + 1] - 1, (long)vn.init_pid[k]);
    }
    free(stack);
    return 0;
}

bool rcollrun_vnodes_active(void)
{
    return vn.n > 0;
}

int rcollrun_vnode_before_fork(int node)
{
    if (vn.n == 0)
        return 0;
    if (setns(vn.fd[node][0], CLONE_NEWPID) != 0) {
        rcollrun_msg("--nodes: cannot enter the PID namespace of virtual node %d: %s", node,
                     strerror(errno));
        return -1;
    }
    return 0;
}

void rcollrun_vnode_after_fork(void)
{
    if (vn.n > 0 && setns(vn.self_pid_ns, CLONE_NEWPID) != 0)
        rcollrun_msg("warning: cannot return to rcollrun's PID namespace: %s", strerror(errno));
}

int rcollrun_vnode_enter_child(int node)
{
    if (vn.n == 0)
        return 0;
    for (int i = 1; i < 4; i++) {
        static const int types[4] = { CLONE_NEWPID, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNS };

        if (setns(vn.fd[node][i], types[i]) != 0)
            return -1;
    }
    /* joining a mount namespace moves the working directory to its root */
    return chdir(vn.cwd);
}

void rcollrun_vnodes_stop(void)
{
    for (int k = 0; k < vn.n; k++) {
        for (int i = 0; i < 4; i++)
            if (vn.fd[k][i] >= 0)
                close(vn.fd[k][i]);
        if (vn.init_pid[k] > 0) {
            kill(vn.init_pid[k], SIGKILL);   /* ends every process left in the node */
            while (waitpid(vn.init_pid[k], NULL, 0) < 0 && errno == EINTR)
                ;
        }
    }
    if (vn.self_pid_ns >= 0)
        close(vn.self_pid_ns);
    free(vn.init_pid);
    free(vn.fd);
    vn.n = 0;
    vn.self_pid_ns = -1;
}
