/*
 * api.c - the public collective entry points: validate arguments at the
 * edge (nothing is touched when they are bad), then post a task; blocking
 * calls are post + wait.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core.h"
#include "reduce.h"


static rcoll_status_t check_comm(const char *fn, const rcoll_comm_t *comm)
{
    if (comm == NULL) {
        rcoll_error("%s: invalid argument: communicator is NULL", fn);
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_log_enter(&comm->ctx->log);    /* this thread now logs as comm's context */
    return RCOLL_OK;
}

static rcoll_status_t check_dtype(const char *fn, rcoll_datatype_t dtype)
{
    if ((unsigned)dtype >= RCOLL_DATATYPE_LAST) {
        rcoll_error("%s: invalid argument: unknown datatype %d", fn, (int)dtype);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

static rcoll_status_t check_op(const char *fn, rcoll_datatype_t dtype, rcoll_op_t op)
{
    if ((unsigned)op >= RCOLL_OP_LAST) {
        rcoll_error("%s: invalid argument: unknown reduction op %d", fn, (int)op);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (!rcoll_op_valid(dtype, op)) {
        rcoll_error("%s: invalid argument: op %s is not defined on %s (bitwise ops take integer "
                    "types only)", fn, rcoll_op_name(op), rcoll_datatype_name(dtype));
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

static rcoll_status_t check_root(const char *fn, const rcoll_comm_t *comm, int root)
{
    if (root < 0 || root >= comm->size) {
        rcoll_error("%s: invalid argument: root %d is outside the communicator's ranks 0..%d",
                    fn, root, comm->size - 1);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

/* count elements of dtype, times `blocks`, must fit in size_t and ssize_t. */
static rcoll_status_t check_bytes(const char *fn, size_t count, rcoll_datatype_t dtype, size_t blocks)
{
    size_t esize = rcoll_datatype_size(dtype);
    if (count > (SIZE_MAX / 2) / esize / (blocks ? blocks : 1)) {
        rcoll_error("%s: invalid argument: count %zu x %zu bytes x %zu blocks overflows", fn,
                    count, esize, blocks);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

static rcoll_status_t check_buf(const char *fn, const char *what, const void *buf, size_t count)
{
    if (count > 0 && buf == NULL) {
        rcoll_error("%s: invalid argument: %s is NULL with count %zu", fn, what, count);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

/* A buffer written by the collective: never RCOLL_IN_PLACE (a send buffer
 * only), whatever the count. */
static inline rcoll_status_t check_outbuf(const char *fn, const char *what, const void *buf, size_t count)
{
    if (buf == RCOLL_IN_PLACE) {
        rcoll_error("%s: invalid argument: %s is RCOLL_IN_PLACE, which only a send buffer may be",
                    fn, what);
        return RCOLL_ERR_INVALID_ARG;
    }
    return check_buf(fn, what, buf, count);
}

static rcoll_status_t check_req(const char *fn, rcoll_request_t **req)
{
    if (req == NULL) {
        rcoll_error("%s: invalid argument: request pointer is NULL", fn);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

#define CHECK(_call) do { rcoll_status_t _st = (_call); if (_st != RCOLL_OK) return _st; } while (0)

/* Post the task; *req gets its handle (see rcoll__task_handle). */
static inline rcoll_status_t post_task(rcoll_comm_t *comm, const rcoll_coll_args_t *a, rcoll_request_t **req)
{
    rcoll_task_t *task;
    rcoll_status_t st = rcoll_task_post(comm, a, &task);
    if (st == RCOLL_OK) {
        *req = rcoll__task_handle(task);
    }
    return st;
}

static inline rcoll_status_t post(rcoll_comm_t *comm, rcoll_coll_args_t *a, rcoll_request_t **req)
{
    if (a->sendbuf == RCOLL_IN_PLACE) {
        a->in_place = 1;
        a->sendbuf = a->recvbuf;
    } else if (a->sendbuf != NULL && a->sendbuf == a->recvbuf) {
        a->in_place = 1;
    }
    return post_task(comm, a, req);
}

/* Post, then wait: a blocking collective is its nonblocking twin + wait
 * (on the handle just made: no need to check it). */
#define RUN_BLOCKING(_post_call) \
    do { \
        rcoll_request_t *req = NULL; \
        rcoll_status_t _st = (_post_call); \
        return _st == RCOLL_OK ? rcoll_task_wait(rcoll__task_of(req)) : _st; \
    } while (0)

RCOLL_API rcoll_status_t rcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                          rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm,
                                          rcoll_request_t **req)
{
    static const char fn[] = "rcoll_allreduce";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    CHECK(check_dtype(fn, dtype));
    CHECK(check_op(fn, dtype, op));
    CHECK(check_bytes(fn, count, dtype, 1));
    CHECK(check_buf(fn, "sendbuf", sendbuf, count));
    CHECK(check_outbuf(fn, "recvbuf", recvbuf, count));
    rcoll_coll_args_t a = { .type = RCOLL_COLL_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
                            .count = count, .dtype = dtype, .op = op };
    return post(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                         rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_iallreduce(sendbuf, recvbuf, count, dtype, op, comm, &req));
}

RCOLL_API rcoll_status_t rcoll_ibcast(void *buf, size_t count, rcoll_datatype_t dtype, int root,
                                      rcoll_comm_t *comm, rcoll_request_t **req)
{
    static const char fn[] = "rcoll_bcast";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    CHECK(check_dtype(fn, dtype));
    CHECK(check_root(fn, comm, root));
    CHECK(check_bytes(fn, count, dtype, 1));
    CHECK(check_outbuf(fn, "buf", buf, count));
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BCAST, .sendbuf = buf, .recvbuf = buf,
                            .count = count, .dtype = dtype, .root = root, .in_place = 1 };
    return post_task(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_bcast(void *buf, size_t count, rcoll_datatype_t dtype, int root,
                                     rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_ibcast(buf, count, dtype, root, comm, &req));
}

RCOLL_API rcoll_status_t rcoll_ibarrier(rcoll_comm_t *comm, rcoll_request_t **req)
{
    static const char fn[] = "rcoll_barrier";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BARRIER, .dtype = RCOLL_UINT8 };
    return post_task(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_barrier(rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_ibarrier(comm, &req));
}

RCOLL_API rcoll_status_t rcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                       rcoll_datatype_t dtype, rcoll_op_t op, int root,
                                       rcoll_comm_t *comm, rcoll_request_t **req)
{
    static const char fn[] = "rcoll_reduce";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    CHECK(check_dtype(fn, dtype));
    CHECK(check_op(fn, dtype, op));
    CHECK(check_root(fn, comm, root));
    CHECK(check_bytes(fn, count, dtype, 1));
    CHECK(check_buf(fn, "sendbuf", sendbuf, count));
    if (comm->rank == root || sendbuf == RCOLL_IN_PLACE || recvbuf == RCOLL_IN_PLACE) {
        CHECK(check_outbuf(fn, "recvbuf", recvbuf, count));
    }
    rcoll_coll_args_t a = { .type = RCOLL_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
                            .count = count, .dtype = dtype, .op = op, .root = root };
    if (comm->rank != root && sendbuf != RCOLL_IN_PLACE) {
        a.recvbuf = NULL;     /* not significant off the root */
    }
    return post(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                      rcoll_datatype_t dtype, rcoll_op_t op, int root, rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_ireduce(sendbuf, recvbuf, count, dtype, op, root, comm, &req));
}

RCOLL_API rcoll_status_t rcoll_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                          rcoll_datatype_t dtype, rcoll_comm_t *comm,
                                          rcoll_request_t **req)
{
    static const char fn[] = "rcoll_allgather";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    CHECK(check_dtype(fn, dtype));
    CHECK(check_bytes(fn, count, dtype, (size_t)comm->size));
    CHECK(check_buf(fn, "sendbuf", sendbuf, count));
    CHECK(check_outbuf(fn, "recvbuf", recvbuf, count));
    rcoll_coll_args_t a = { .type = RCOLL_COLL_ALLGATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
                            .count = count, .dtype = dtype };
    if (sendbuf == RCOLL_IN_PLACE) {
        /* This rank's block is already in place. */
        a.in_place = 1;
        a.sendbuf = (char *)recvbuf + (size_t)comm->rank * count * rcoll_datatype_size(dtype);
    }
    return post_task(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                         rcoll_datatype_t dtype, rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_iallgather(sendbuf, recvbuf, count, dtype, comm, &req));
}

RCOLL_API rcoll_status_t rcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                               rcoll_datatype_t dtype, rcoll_op_t op,
                                               rcoll_comm_t *comm, rcoll_request_t **req)
{
    static const char fn[] = "rcoll_reduce_scatter";
    CHECK(check_req(fn, req));
    CHECK(check_comm(fn, comm));
    CHECK(check_dtype(fn, dtype));
    CHECK(check_op(fn, dtype, op));
    CHECK(check_bytes(fn, recvcount, dtype, (size_t)comm->size));
    CHECK(check_buf(fn, "sendbuf", sendbuf, recvcount));
    CHECK(check_outbuf(fn, "recvbuf", recvbuf, recvcount));
    rcoll_coll_args_t a = { .type = RCOLL_COLL_REDUCE_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
                            .count = recvcount, .dtype = dtype, .op = op };
    return post(comm, &a, req);
}

RCOLL_API rcoll_status_t rcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                              rcoll_datatype_t dtype, rcoll_op_t op, rcoll_comm_t *comm)
{
    RUN_BLOCKING(rcoll_ireduce_scatter(sendbuf, recvbuf, recvcount, dtype, op, comm, &req));
}

/* The task of a request handle the user passed, or NULL (logged). */
static rcoll_task_t *live_task(const char *fn, rcoll_request_t *req)
{
    rcoll_task_t *task = rcoll__task_from_handle(req);
    if (task == NULL) {
        rcoll_error("%s: invalid argument: the request was already completed (by rcoll_wait, or "
                    "rcoll_test reporting it done) or is not a request", fn);
    }
    return task;
}

RCOLL_API rcoll_status_t rcoll_test(rcoll_request_t *req, int *done)
{
    if (req == NULL || done == NULL) {
        rcoll_error("rcoll_test: invalid argument: %s is NULL", req == NULL ? "request" : "done");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_task_t *task = live_task("rcoll_test", req);
    if (task == NULL) {
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_log_enter(&task->ctx->log);
    if (!task->done) {
        rcoll_context_backoff(task->ctx, rcoll_context_progress(task->ctx));
        if (!task->done) {
            rcoll_task_check_deadline(task);
        }
    }
    *done = task->done;
    if (!task->done) {
        return RCOLL_OK;
    }
    rcoll_status_t st = task->status;
    rcoll_task_release(task);
    return st;
}

RCOLL_API rcoll_status_t rcoll_wait(rcoll_request_t *req)
{
    if (req == NULL) {
        rcoll_error("rcoll_wait: invalid argument: request is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_task_t *task = live_task("rcoll_wait", req);
    if (task == NULL) {
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_log_enter(&task->ctx->log);
    return rcoll_task_wait(task);
}

RCOLL_API rcoll_status_t rcoll_progress(rcoll_context_t *ctx)
{
    if (ctx == NULL) {
        rcoll_error("rcoll_progress: invalid argument: context is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_log_enter(&ctx->log);
    rcoll_context_progress(ctx);
    return RCOLL_OK;
}
