/*
 * Program lookup, the ranks' environment, and fork/exec of one rank.
 * Everything the child needs is prepared before fork(): libpmix runs
 * threads in this process, so the child only calls async-signal-safe
 * functions until execve().
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Returns 0 if path is an executable regular file, else the exit code
 * (126: exists but cannot be run, 127: does not exist). */
static int check_exec(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? RCOLLRUN_EXIT_NOTFOUND
                                                   : RCOLLRUN_EXIT_NOEXEC;
    if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
        return RCOLLRUN_EXIT_NOEXEC;
    return 0;
}

int rcollrun_resolve_program(rcollrun_opts_t *o)
{
    const char *prog = o->program;
    const char *path;
    char cand[PATH_MAX];
    int rc, best = RCOLLRUN_EXIT_NOTFOUND;

    if (prog[0] == '\0') {
        rcollrun_msg("the program name is empty");
        return RCOLLRUN_EXIT_NOTFOUND;
    }
    if (strchr(prog, '/') != NULL) {
        rc = check_exec(prog);
        if (rc == RCOLLRUN_EXIT_NOTFOUND)
            rcollrun_msg("%s: program not found (no such file)", prog);
        else if (rc != 0)
            rcollrun_msg("%s: cannot execute (not a regular file with execute permission)",
                         prog);
        if (rc == 0 && (o->program_path = strdup(prog)) == NULL)
            rc = RCOLLRUN_EXIT_INTERNAL;
        return rc;
    }
    path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (;;) {
        const char *end = strchrnul(path, ':');
        int dlen = (int)(end - path);

        if (dlen == 0)
            snprintf(cand, sizeof(cand), "./%s", prog);
        else
            snprintf(cand, sizeof(cand), "%.*s/%s", dlen, path, prog);
        rc = check_exec(cand);
        if (rc == 0) {
            o->program_path = strdup(cand);
            return o->program_path != NULL ? 0 : RCOLLRUN_EXIT_INTERNAL;
        }
        if (rc == RCOLLRUN_EXIT_NOEXEC)
            best = RCOLLRUN_EXIT_NOEXEC;
        if (*end == '\0')
            break;
        path = end + 1;
    }
    if (best == RCOLLRUN_EXIT_NOEXEC)
        rcollrun_msg("%s: found in PATH but not executable", prog);
    else
        rcollrun_msg("%s: program not found in PATH (PATH=%s)", prog,
                     getenv("PATH") ? getenv("PATH") : "(unset)");
    return best;
}

void rcollrun_free_env(char **env)
{
    if (env == NULL)
        return;
    for (char **e = env; *e != NULL; e++)
        free(*e);
    free(env);
}

static bool name_matches(const char *entry, const char *name, size_t nlen)
{
    return strncmp(entry, name, nlen) == 0 && entry[nlen] == '=';
}

/* Adds or replaces "NAME=..." in env (size *n, capacity for one more). */
static int env_set(char ***env, size_t *n, const char *assignment)
{
    size_t nlen = strcspn(assignment, "=");
    char *dup = strdup(assignment);
    char **grown;

    if (dup == NULL)
        return -1;
    for (size_t i = 0; i < *n; i++) {
        if (name_matches((*env)[i], assignment, nlen)) {
            free((*env)[i]);
            (*env)[i] = dup;
            return 0;
        }
    }
    grown = realloc(*env, (*n + 2) * sizeof(char *));
    if (grown == NULL) {
        free(dup);
        return -1;
    }
    grown[(*n)++] = dup;
    grown[*n] = NULL;
    *env = grown;
    return 0;
}

/* Launcher variables of an outer PMIx job (PMIX_SERVER_URI*, PMIX_NAMESPACE,
 * PMIX_RANK, ...) would point the ranks at the wrong server.  PMIX_MCA_*
 * are user settings for libpmix and stay. */
static bool inherited_ok(const char *entry)
{
    return strncmp(entry, "PMIX_", 5) != 0 || strncmp(entry, "PMIX_MCA_", 9) == 0;
}

char **rcollrun_base_env(const rcollrun_opts_t *o)
{
    size_t n = 0;
    char **env = calloc(1, sizeof(char *));

    if (env == NULL)
        goto oom;
    for (char **e = environ; *e != NULL; e++)
        if (inherited_ok(*e) && env_set(&env, &n, *e) != 0)
            goto oom;
    /* Oversubscribed: wait by yielding at once (a -x setting still wins). */
    if (rcollrun_bind_oversubscribed() && getenv("RCOLL_SPIN_COUNT") == NULL &&
        env_set(&env, &n, "RCOLL_SPIN_COUNT=0") != 0)
        goto oom;
    for (size_t i = 0; i < o->nexports; i++) {
        const char *x = o->exports[i];
        char *buf;
        const char *val;

        if (strchr(x, '=') != NULL) {
            if (env_set(&env, &n, x) != 0)
                goto oom;
            continue;
        }
        val = getenv(x);
        if (val == NULL) {
            rcollrun_msg("warning: -x %s: not set in rcollrun's environment; not exported", x);
            continue;
        }
        if (asprintf(&buf, "%s=%s", x, val) < 0)
            goto oom;
        if (env_set(&env, &n, buf) != 0) {
            free(buf);
            goto oom;
        }
        free(buf);
    }
    return env;
oom:
    rcollrun_msg("out of memory building the ranks' environment");
    rcollrun_free_env(env);
    return NULL;
}

static void child_exec(const rcollrun_opts_t *o, int node, const cpu_set_t *bind, int in_fd,
                       int out_fd, int err_fd, int report_fd, char **env, const sigset_t *mask,
                       pid_t parent)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE };
    struct sigaction dfl;
    int e;

    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* In a virtual node's PID namespace the parent, outside it, shows as 0;
     * once it is gone the node's init (1) adopts us. */
    if (getppid() != (o->layout.isolated ? 0 : parent))
        _exit(RCOLLRUN_EXIT_INTERNAL);
    if ((o->layout.isolated && rcollrun_vnode_enter_child(node) != 0) ||
        (bind != NULL && sched_setaffinity(0, sizeof(cpu_set_t), bind) != 0)) {
        e = -errno;     /* negative: not an exec failure */
        (void)!write(report_fd, &e, sizeof(e));
        _exit(RCOLLRUN_EXIT_INTERNAL);
    }
    if ((in_fd != 0 && dup2(in_fd, 0) < 0) || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        e = errno;
        (void)!write(report_fd, &e, sizeof(e));
        _exit(RCOLLRUN_EXIT_INTERNAL);
    }
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &dfl, NULL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    execve(o->program_path, o->argv, env);
    /* report_fd is close-on-exec: the parent reads EOF on success, errno here. */
    e = errno;
    (void)!write(report_fd, &e, sizeof(e));
    _exit(e == ENOENT ? RCOLLRUN_EXIT_NOTFOUND : RCOLLRUN_EXIT_NOEXEC);
}

/* Waits for the child's exec: EOF on the report pipe means it succeeded.
 * Returns 0, or the exit code after printing why the exec failed. */
static int exec_result(const rcollrun_opts_t *o, const rcollrun_rank_t *r, int fd, pid_t pid)
{
    int e = 0;
    ssize_t n;

    do {
        n = read(fd, &e, sizeof(e));
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(e))
        return 0;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (e < 0) {
        rcollrun_msg("rank %d: cannot join the namespaces of its virtual node or apply its "
                     "binding: %s", r->rank, strerror(-e));
        return -1;
    }
    rcollrun_msg("%s: cannot execute (rank %d): %s", o->program_path, r->rank, strerror(e));
    return e == ENOENT ? RCOLLRUN_EXIT_NOTFOUND : RCOLLRUN_EXIT_NOEXEC;
}

int rcollrun_spawn_rank(const rcollrun_opts_t *o, rcollrun_rank_t *r, char **env,
                        const void *child_sigmask)
{
    int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
    int in_fd = 0, rc = -1, node = o->layout.node_of[r->rank];
    pid_t parent = getpid(), pid;

    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
        pipe2(rep, O_CLOEXEC) != 0) {
        rcollrun_msg("rank %d: pipe: %s", r->rank, strerror(errno));
        goto fail;
    }
    /* Rank 0 reads our stdin unless it is a terminal (a rank in its own
     * process group reading the terminal would be stopped). */
    if (r->rank != 0 || isatty(0)) {
        in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in_fd < 0) {
            rcollrun_msg("cannot open /dev/null: %s", strerror(errno));
            goto fail;
        }
    }
    if (o->layout.isolated) {
        char name[80];
        size_t n = 0;

        snprintf(name, sizeof(name), "PMIX_HOSTNAME=%s", o->layout.names[node]);
        while (env[n] != NULL)
            n++;
        if (env_set(&env, &n, name) != 0) {
            rcollrun_msg("out of memory building the environment of rank %d", r->rank);
            goto fail;
        }
        if (rcollrun_vnode_before_fork(node) != 0)
            goto fail;
    }
    pid = fork();
    if (pid == 0)
        child_exec(o, node, rcollrun_bind_set(r->rank), in_fd, outp[1], errp[1], rep[1], env,
                   child_sigmask, parent);
    if (o->layout.isolated)
        rcollrun_vnode_after_fork();
    if (pid < 0) {
        rcollrun_msg("rank %d: fork: %s", r->rank, strerror(errno));
        goto fail;
    }
    setpgid(pid, pid);  /* the child does it too; whichever runs first wins */
    close(rep[1]);
    rep[1] = -1;
    rc = exec_result(o, r, rep[0], pid);
    if (rc != 0)
        goto fail;
    close(rep[0]);
    r->pid = pid;
    r->running = true;
    close(outp[1]);
    close(errp[1]);
    if (in_fd != 0)
        close(in_fd);
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    rcollrun_stream_init(&r->out, outp[0], 1, r->rank);
    rcollrun_stream_init(&r->err, errp[0], 2, r->rank);
    rcollrun_free_env(env);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0)
            close(outp[i]);
        if (errp[i] >= 0)
            close(errp[i]);
        if (rep[i] >= 0)
            close(rep[i]);
    }
    if (in_fd > 0)
        close(in_fd);
    rcollrun_free_env(env);
    return rc;
}
