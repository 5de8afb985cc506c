/*
 * The supervisor: forks the ranks, then one poll() loop over the ranks'
 * output pipes, a signalfd (SIGCHLD and the signals that stop rcollrun) and
 * the PMIx upcall wake-up pipe.  The first abnormal end (a rank's non-zero
 * exit or signal, a PMIx_Abort, --timeout, a signal to rcollrun) is
 * reported once and terminates the rest: SIGTERM to each rank's process
 * group, SIGKILL after the grace period.  With --enable-recovery a rank's
 * own end (exit, signal) is reported and the others run on; the exit status
 * is still the first failed rank's.
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define DRAIN_AFTER_EXIT_S  2.0   /* output still in flight after the last exit */
#define DRAIN_AFTER_KILL_S  0.5
#define GIVE_UP_AFTER_KILL_S 5.0

typedef struct {
    const rcollrun_opts_t *o;
    rcollrun_rank_t       *ranks;
    int                    n;
    int                    nrunning;
    int                    sfd;
    bool                   terminating;
    bool                   killed;       /* SIGKILL sent */
    int                    exit_code;    /* -1: none decided yet */
    double                 deadline;     /* --timeout, 0: none */
    double                 kill_at;
    double                 give_up_at;
    double                 drain_until;
} sv_t;

static const char *ranks_word(int n)
{
    return n == 1 ? "rank" : "ranks";
}

static void signal_groups(sv_t *sv, int sig)
{
    for (int i = 0; i < sv->n; i++) {
        rcollrun_rank_t *r = &sv->ranks[i];

        if (!r->running)
            continue;
        /* The group holds the rank and anything it started. */
        if (kill(-r->pid, sig) != 0)
            kill(r->pid, sig);
    }
}

static void begin_termination(sv_t *sv)
{
    if (sv->terminating)
        return;
    sv->terminating = true;
    signal_groups(sv, SIGTERM);
    sv->kill_at = rcollrun_now() + sv->o->grace_s;
    rcollrun_pmix_release_aborts();
}

static void set_exit(sv_t *sv, int code)
{
    if (sv->exit_code < 0)
        sv->exit_code = code;
}

/* "; terminating the other 4 ranks" or "" when nobody else runs. */
static void others_suffix(const sv_t *sv, char *buf, size_t len)
{
    if (sv->nrunning == 0)
        buf[0] = '\0';
    else
        snprintf(buf, len, "; terminating the other %d %s", sv->nrunning,
                 ranks_word(sv->nrunning));
}

/*
 * A test-only switch, until --enable-recovery (issue 14 item 3) replaces it:
 * RCOLLRUN_KEEP_GOING=1 in rcollrun's own environment lets the other ranks
 * run on when one ends abnormally (they are told through a PMIx event either
 * way); the exit status is still the first failed rank's.
 */
static bool keep_going(void)
{
    const char *v = getenv("RCOLLRUN_KEEP_GOING");

    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

static void rank_ended(sv_t *sv, rcollrun_rank_t *r, int st)
{
    char how[128], tail[64];
    int code = 0;

    r->running = false;
    r->wstatus = st;
    sv->nrunning--;
    if (sv->terminating)
        return;  /* the job is already failing; this is the aftermath */
    if (WIFSIGNALED(st)) {
        snprintf(how, sizeof(how), "killed by signal %d (%s)%s", WTERMSIG(st),
                 strsignal(WTERMSIG(st)), WCOREDUMP(st) ? ", core dumped" : "");
        code = 128 + WTERMSIG(st);
    } else if (WEXITSTATUS(st) != 0) {
        snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(st));
        code = WEXITSTATUS(st);
    } else if (sv->nrunning > 0 && rcollrun_pmix_connected(r->rank) &&
               !rcollrun_pmix_finalized(r->rank)) {
        /* Its peers would wait for it forever in their next fence. */
        snprintf(how, sizeof(how), "exited with status 0 without calling PMIx_Finalize");
        code = 1;
    } else {
        return;
    }
    rcollrun_pmix_notify_ended(r->rank, code);
    set_exit(sv, code);
    if (sv->o->enable_recovery || keep_going()) {
        /* The survivors find out themselves (rcoll: PEER_FAILED, revoke,
         * rcoll_comm_shrink); the job's status stays the first failure's.
         * RCOLLRUN_KEEP_GOING=1 in rcollrun's environment does the same. */
        rcollrun_msg("rank %d (pid %ld) %s; --enable-recovery: the other %d %s go on", r->rank,
                     (long)r->pid, how, sv->nrunning, ranks_word(sv->nrunning));
        return;
    }
    others_suffix(sv, tail, sizeof(tail));
    rcollrun_msg("rank %d (pid %ld) %s%s", r->rank, (long)r->pid, how, tail);
    begin_termination(sv);
}

static void reap(sv_t *sv)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);

        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        for (int i = 0; i < sv->n; i++) {
            if (sv->ranks[i].running && sv->ranks[i].pid == pid) {
                rank_ended(sv, &sv->ranks[i], st);
                break;
            }
        }
    }
}

static void on_signal(sv_t *sv, int sig)
{
    if (sig == SIGCHLD) {
        reap(sv);
        return;
    }
    if (!sv->terminating) {
        rcollrun_msg("received SIG%s; terminating %d running %s",
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", sv->nrunning,
                     ranks_word(sv->nrunning));
        set_exit(sv, 128 + sig);
        begin_termination(sv);
    } else if (!sv->killed) {
        rcollrun_msg("received SIG%s again; killing the remaining ranks now",
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
        sv->kill_at = rcollrun_now();
    }
}

static void drain_signals(sv_t *sv)
{
    struct signalfd_siginfo si;

    while (read(sv->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        on_signal(sv, (int)si.ssi_signo);
    reap(sv);  /* SIGCHLDs coalesce; reaping is cheap */
}

static void check_abort(sv_t *sv)
{
    int rank, status;
    char *msg = NULL, tail[64];

    if (!rcollrun_pmix_take_abort(&rank, &status, &msg))
        return;
    if (!sv->terminating) {
        int others = sv->nrunning - (rank >= 0 && sv->ranks[rank].running ? 1 : 0);
        if (others > 0)
            snprintf(tail, sizeof(tail), "; terminating the other %d %s", others,
                     ranks_word(others));
        else
            tail[0] = '\0';
        rcollrun_msg("rank %d (pid %ld) called PMIx_Abort with status %d: \"%s\"%s", rank,
                     rank >= 0 ? (long)sv->ranks[rank].pid : -1L, status, msg ? msg : "",
                     tail);
        set_exit(sv, (status & 0xff) != 0 ? (status & 0xff) : 1);
        begin_termination(sv);
    }
    free(msg);
    rcollrun_pmix_release_aborts();
}

static void running_list(const sv_t *sv, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < sv->n && used + 16 < len; i++)
        if (sv->ranks[i].running)
            used += (size_t)snprintf(buf + used, len - used, " %d", i);
    if (used + 16 >= len)
        snprintf(buf + used, len - used, " ...");
}

static void check_deadlines(sv_t *sv, double now)
{
    char list[256];

    if (!sv->terminating && sv->deadline > 0 && now >= sv->deadline && sv->nrunning > 0) {
        running_list(sv, list, sizeof(list));
        rcollrun_msg("job exceeded --timeout %g s; terminating %d running %s:%s",
                     sv->o->timeout_s, sv->nrunning, ranks_word(sv->nrunning), list);
        set_exit(sv, RCOLLRUN_EXIT_TIMEOUT);
        begin_termination(sv);
    }
    if (sv->terminating && !sv->killed && sv->nrunning > 0 && now >= sv->kill_at) {
        running_list(sv, list, sizeof(list));
        rcollrun_msg("%d %s still running after SIGTERM; sending SIGKILL to:%s", sv->nrunning,
                     ranks_word(sv->nrunning), list);
        signal_groups(sv, SIGKILL);
        sv->killed = true;
        sv->give_up_at = now + GIVE_UP_AFTER_KILL_S;
    }
}

static int poll_timeout_ms(const sv_t *sv, double now)
{
    double t = -1;
    double cand[4] = { 0, 0, 0, 0 };

    if (!sv->terminating && sv->deadline > 0)
        cand[0] = sv->deadline;
    if (sv->terminating && !sv->killed)
        cand[1] = sv->kill_at;
    if (sv->killed)
        cand[2] = sv->give_up_at;
    if (sv->nrunning == 0)
        cand[3] = sv->drain_until;
    for (int i = 0; i < 4; i++)
        if (cand[i] > 0 && (t < 0 || cand[i] < t))
            t = cand[i];
    if (t < 0)
        return -1;
    t = (t - now) * 1000.0 + 1;
    return t < 0 ? 0 : (int)t;
}

static bool streams_open(const sv_t *sv)
{
    for (int i = 0; i < sv->n; i++)
        if (sv->ranks[i].out.fd >= 0 || sv->ranks[i].err.fd >= 0)
            return true;
    return false;
}

static int loop(sv_t *sv, struct pollfd *pfd, rcollrun_stream_t **pstream)
{
    bool tag = sv->o->tag_output;

    for (;;) {
        double now = rcollrun_now();
        int np = 0, rc;

        if (sv->nrunning == 0) {
            if (sv->drain_until == 0)
                sv->drain_until = now + (sv->terminating ? DRAIN_AFTER_KILL_S
                                                         : DRAIN_AFTER_EXIT_S);
            if (!streams_open(sv) || now >= sv->drain_until)
                break;
        }
        if (sv->killed && sv->nrunning > 0 && now >= sv->give_up_at) {
            rcollrun_msg("%d %s did not die after SIGKILL; giving up on them", sv->nrunning,
                         ranks_word(sv->nrunning));
            break;
        }
        pfd[np].fd = sv->sfd;
        pfd[np++].events = POLLIN;
        pfd[np].fd = rcollrun_pmix_wake_fd();
        pfd[np++].events = POLLIN;
        for (int i = 0; i < sv->n; i++) {
            rcollrun_stream_t *s[2] = { &sv->ranks[i].out, &sv->ranks[i].err };
            for (int k = 0; k < 2; k++) {
                if (s[k]->fd < 0)
                    continue;
                pstream[np] = s[k];
                pfd[np].fd = s[k]->fd;
                pfd[np++].events = POLLIN;
            }
        }
        rc = poll(pfd, (nfds_t)np, poll_timeout_ms(sv, now));
        if (rc < 0 && errno != EINTR) {
            rcollrun_msg("poll: %s", strerror(errno));
            set_exit(sv, RCOLLRUN_EXIT_INTERNAL);
            begin_termination(sv);
            return -1;
        }
        for (int i = 2; rc > 0 && i < np; i++)
            if (pfd[i].revents != 0)
                rcollrun_stream_read(pstream[i], tag);
        if (rc > 0 && pfd[1].revents != 0)
            check_abort(sv);
        if (rc > 0 && pfd[0].revents != 0)
            drain_signals(sv);
        check_deadlines(sv, rcollrun_now());
    }
    return 0;
}

/* Returns 0, or the exit code to use when not every rank could start. */
static int spawn_all(sv_t *sv, const sigset_t *child_mask)
{
    int rc = RCOLLRUN_EXIT_INTERNAL;
    char **base = rcollrun_base_env(sv->o);

    if (base == NULL)
        return RCOLLRUN_EXIT_INTERNAL;
    for (int i = 0; i < sv->n; i++) {
        rcollrun_rank_t *r = &sv->ranks[i];
        size_t cnt = 0;
        char **env;

        r->rank = i;
        rcollrun_stream_init(&r->out, -1, 1, i);
        rcollrun_stream_init(&r->err, -1, 2, i);
        while (base[cnt] != NULL)
            cnt++;
        env = calloc(cnt + 1, sizeof(char *));
        for (size_t k = 0; env != NULL && k < cnt; k++) {
            if ((env[k] = strdup(base[k])) == NULL) {
                rcollrun_free_env(env);
                env = NULL;
            }
        }
        if (env == NULL) {
            rcollrun_msg("out of memory building the environment of rank %d", i);
            goto fail;
        }
        if (rcollrun_pmix_setup_fork(i, &env) != 0) {
            rcollrun_free_env(env);
            goto fail;
        }
        rc = rcollrun_spawn_rank(sv->o, r, env, child_mask);
        if (rc != 0) {
            rc = rc > 0 ? rc : RCOLLRUN_EXIT_INTERNAL;
            goto fail;
        }
        sv->nrunning++;
    }
    rcollrun_free_env(base);
    return 0;
fail:
    rcollrun_free_env(base);
    return rc;
}

int rcollrun_supervise(const rcollrun_opts_t *o)
{
    sv_t sv = { .o = o, .n = o->nranks, .exit_code = -1, .sfd = -1 };
    sigset_t mask, old;
    struct pollfd *pfd = NULL;
    rcollrun_stream_t **pstream = NULL;
    int rc;

    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    /* Blocked before libpmix starts its threads, so they inherit the mask
     * and every one of these arrives through the signalfd. */
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    signal(SIGPIPE, SIG_IGN);
    sv.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    sv.ranks = calloc((size_t)sv.n, sizeof(*sv.ranks));
    pfd = calloc((size_t)sv.n * 2 + 2, sizeof(*pfd));
    pstream = calloc((size_t)sv.n * 2 + 2, sizeof(*pstream));
    if (sv.sfd < 0 || sv.ranks == NULL || pfd == NULL || pstream == NULL) {
        rcollrun_msg("cannot set up the supervisor: %s", strerror(errno));
        free(sv.ranks);
        free(pfd);
        free(pstream);
        return RCOLLRUN_EXIT_INTERNAL;
    }
    for (int i = 0; i < sv.n; i++) {
        sv.ranks[i].out.fd = -1;
        sv.ranks[i].err.fd = -1;
    }
    if (rcollrun_bind_plan(o) != 0 ||
        (o->layout.isolated && rcollrun_vnodes_start(&o->layout, o->verbose) != 0) ||
        rcollrun_pmix_start(o->nranks, &o->layout, o->verbose) != 0) {
        set_exit(&sv, RCOLLRUN_EXIT_INTERNAL);
        goto out;
    }
    if (o->timeout_s > 0)
        sv.deadline = rcollrun_now() + o->timeout_s;
    rc = spawn_all(&sv, &old);
    if (rc != 0) {
        if (sv.nrunning > 0)
            rcollrun_msg("could not start all %d ranks; terminating the %d started", sv.n,
                         sv.nrunning);
        set_exit(&sv, rc);
        begin_termination(&sv);
    }
    loop(&sv, pfd, pstream);
    if (sv.terminating)  /* leftovers of the ranks' process groups */
        for (int i = 0; i < sv.n; i++)
            if (sv.ranks[i].pid > 0)
                kill(-sv.ranks[i].pid, SIGKILL);
    for (int i = 0; i < sv.n; i++) {
        rcollrun_stream_close(&sv.ranks[i].out, o->tag_output);
        rcollrun_stream_close(&sv.ranks[i].err, o->tag_output);
    }
    rcollrun_where_summary(sv.n);
out:
    rcollrun_pmix_stop();
    rcollrun_vnodes_stop();
    rcollrun_bind_free();
    close(sv.sfd);
    free(sv.ranks);
    free(pfd);
    free(pstream);
    return sv.exit_code < 0 ? 0 : sv.exit_code;
}
