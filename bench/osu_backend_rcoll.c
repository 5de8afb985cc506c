/*
 * osu_backend_rcoll.c - the OSU-style benchmark's back-end for librcoll.
 * See osu_backend.h for the contract.
 */
#include "osu_backend.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <rcoll.h>

static rcoll_context_t *ctx;
static rcoll_comm_t    *world;

int osu_be_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rcoll_status_t rc = rcoll_init(NULL, &ctx);
    if (rc != RCOLL_OK)
        return (int)rc;
    world = rcoll_comm_world(ctx);
    return 0;
}

int osu_be_finalize(void)
{
    rcoll_status_t rc = rcoll_finalize(ctx);
    ctx = NULL;
    world = NULL;
    return (int)rc;
}

int osu_be_rank(void) { return rcoll_comm_rank(world); }
int osu_be_size(void) { return rcoll_comm_size(world); }

const char *osu_be_name(void)
{
    static char name[64];
    snprintf(name, sizeof(name), "rcoll %d.%d.%d", RCOLL_VERSION_MAJOR, RCOLL_VERSION_MINOR,
             RCOLL_VERSION_PATCH);
    return name;
}

const char *osu_be_strerror(int rc) { return rcoll_strerror((rcoll_status_t)rc); }

/* "reduce_scatter" -> "RCOLL_REDUCE_SCATTER_ALGORITHM" */
static void algorithm_key(const char *collective, char *key, size_t len)
{
    size_t n = (size_t)snprintf(key, len, "RCOLL_");
    for (const char *c = collective; *c && n + 1 < len; c++)
        key[n++] = (char)toupper((unsigned char)*c);
    key[n] = '\0';
    strncat(key, "_ALGORITHM", len - strlen(key) - 1);
}

int osu_be_force_algorithm(const char *collective, const char *algo, const char **why)
{
    const char *names[64];
    int n = rcoll_algorithms(collective, names, 64);
    int known = 0;
    for (int i = 0; i < n && i < 64; i++)
        known |= strcmp(names[i], algo) == 0;
    if (!known) {
        *why = "unknown algorithm for this collective (-a list shows the names)";
        return (int)RCOLL_ERR_INVALID_ARG;
    }
    char key[80];
    algorithm_key(collective, key, sizeof(key));
    rcoll_status_t rc = rcoll_config_set(ctx, key, algo);
    if (rc != RCOLL_OK)
        *why = rcoll_strerror(rc);
    return (int)rc;
}

int osu_be_list_algorithms(const char *collective)
{
    const char *names[64];
    int n = rcoll_algorithms(collective, names, 64);
    for (int i = 0; i < n && i < 64; i++)
        printf("%s\n", names[i]);
    return n;
}

int osu_be_barrier(void) { return (int)rcoll_barrier(world); }

int osu_be_allreduce_f32(const float *sendbuf, float *recvbuf, size_t count)
{
    return (int)rcoll_allreduce(sendbuf, recvbuf, count, RCOLL_FLOAT32, RCOLL_SUM, world);
}

static rcoll_op_t to_rcoll_op(osu_op_t op)
{
    switch (op) {
    case OSU_OP_MIN: return RCOLL_MIN;
    case OSU_OP_MAX: return RCOLL_MAX;
    case OSU_OP_SUM: break;
    }
    return RCOLL_SUM;
}

int osu_be_allreduce_f64(const double *sendbuf, double *recvbuf, size_t count, osu_op_t op)
{
    return (int)rcoll_allreduce(sendbuf, recvbuf, count, RCOLL_FLOAT64, to_rcoll_op(op), world);
}

int osu_be_bcast(void *buf, size_t bytes, int root)
{
    return (int)rcoll_bcast(buf, bytes, RCOLL_UINT8, root, world);
}

int osu_be_reduce_f32(const float *sendbuf, float *recvbuf, size_t count, int root)
{
    return (int)rcoll_reduce(sendbuf, recvbuf, count, RCOLL_FLOAT32, RCOLL_SUM, root, world);
}

int osu_be_allgather(const void *sendbuf, void *recvbuf, size_t bytes_per_rank)
{
    return (int)rcoll_allgather(sendbuf, recvbuf, bytes_per_rank, RCOLL_UINT8, world);
}

int osu_be_reduce_scatter_f32(const float *sendbuf, float *recvbuf, size_t recvcount)
{
    return (int)rcoll_reduce_scatter(sendbuf, recvbuf, recvcount, RCOLL_FLOAT32, RCOLL_SUM, world);
}

int osu_be_iallreduce_f32(const float *sendbuf, float *recvbuf, size_t count, osu_req_t *req)
{
    rcoll_request_t *r = NULL;
    rcoll_status_t rc = rcoll_iallreduce(sendbuf, recvbuf, count, RCOLL_FLOAT32, RCOLL_SUM, world, &r);
    if (rc == RCOLL_OK)
        req->u.ptr = r;
    return (int)rc;
}

/* rcoll_test and rcoll_wait free the request when it completes. */
int osu_be_test(osu_req_t *req, int *done)
{
    rcoll_status_t rc = rcoll_test((rcoll_request_t *)req->u.ptr, done);
    if (*done)
        req->u.ptr = NULL;
    return (int)rc;
}

int osu_be_wait(osu_req_t *req)
{
    rcoll_status_t rc = rcoll_wait((rcoll_request_t *)req->u.ptr);
    req->u.ptr = NULL;
    return (int)rc;
}
