/*
 * sim_selftest.c - `rcoll_sim --self-test`: the simulator must time a known
 * message exactly and must refuse broken schedules.  Four tiny algorithms
 * on 2 nodes x 1 rank (and 2 x 2 for the deadlock):
 *   one_message   rank 0 sends 8 B to rank 1: the time must be
 *                 alpha_inter + 8*beta_inter, and 64 KiB must add
 *                 rndv_extra (rendezvous)
 *   unmatched     rank 0 sends, nobody receives: "unmatched"
 *   deadlock      every rank receives from its right before sending to
 *                 its left: "deadlock"
 *   length        rank 1 receives 16 B of an 8 B send: refused
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "sim.h"

enum { ST_ONE, ST_UNMATCHED, ST_DEADLOCK, ST_LENGTH };

static rcoll_status_t st_progress(rcoll_task_t *task, int kind)
{
    int r = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t n = task->args.count * 8;
    char buf[16] = { 0 };    /* never read or written: nothing moves */
    rcoll_status_t st;

    if (task->phase == 0) {
        st = RCOLL_OK;
        if (kind == ST_DEADLOCK)
            st = rcoll_task_recv(task, (r + 1) % p, 0, buf, n);
        else if (r == 0)
            st = rcoll_task_send(task, 1, 0, buf, n);
        else if (r == 1 && kind != ST_UNMATCHED)
            st = rcoll_task_recv(task, 0, 0, buf, kind == ST_LENGTH ? n + 8 : n);
        if (st != RCOLL_OK)
            return st;
        task->phase = 1;
    }
    if (task->phase == 1) {
        if ((st = rcoll_task_test(task)) != RCOLL_OK)
            return st;
        if (kind == ST_DEADLOCK && (st = rcoll_task_send(task, (r + p - 1) % p, 0, buf, n)) != RCOLL_OK)
            return st;
        task->phase = 2;
    }
    return rcoll_task_test(task);
}

static rcoll_status_t st_one(rcoll_task_t *t) { return st_progress(t, ST_ONE); }
static rcoll_status_t st_unmatched(rcoll_task_t *t) { return st_progress(t, ST_UNMATCHED); }
static rcoll_status_t st_deadlock(rcoll_task_t *t) { return st_progress(t, ST_DEADLOCK); }
static rcoll_status_t st_length(rcoll_task_t *t) { return st_progress(t, ST_LENGTH); }

static int expect_failure(const rcoll_sim_params_t *sp, rcoll_status_t (*progress)(rcoll_task_t *),
                          const char *name, const char *why)
{
    rcoll_alg_t a = { .name = name, .coll = RCOLL_COLL_BCAST, .progress = progress };
    rcoll_sim_result_t res;
    int rc = rcoll_sim_run(sp, &a, 8, &res);
    int ok = rc == -1 && strstr(res.failure, why) != NULL;

    printf("%s self-test %s: %s\n", ok ? "ok  " : "FAIL", name, rc == -1 ? res.failure : "not refused");
    return ok ? 0 : 1;
}

static int expect_time(const rcoll_sim_params_t *sp, size_t bytes, double want)
{
    rcoll_alg_t a = { .name = "one_message", .coll = RCOLL_COLL_BCAST, .progress = st_one };
    rcoll_sim_result_t res;
    int rc = rcoll_sim_run(sp, &a, bytes, &res);
    int ok = rc == 0 && fabs(res.time - want) <= 1e-9 * want;

    printf("%s self-test one_message %zu B: %.6g us, want %.6g us%s%s\n", ok ? "ok  " : "FAIL", bytes,
           rc == 0 ? res.time * 1e6 : -1, want * 1e6, rc != 0 ? ": " : "", rc != 0 ? res.failure : "");
    return ok ? 0 : 1;
}

int rcoll_sim_self_test(const rcoll_model_t *m, const rcoll_config_t *cfg)
{
    rcoll_sim_params_t sp = { 2, 1, m, cfg, 1000, NULL }, sp4 = { 2, 2, m, cfg, 1000, NULL };
    int bad = 0;

    bad += expect_time(&sp, 8, m->alpha_inter + 8 * m->beta_inter);
    bad += expect_time(&sp, 65536, m->rndv_extra + m->alpha_inter + 65536 * m->beta_inter);
    bad += expect_failure(&sp, st_unmatched, "unmatched", "unmatched");
    bad += expect_failure(&sp4, st_deadlock, "deadlock", "deadlock");
    bad += expect_failure(&sp, st_length, "length", "receive of");
    return bad;
}
