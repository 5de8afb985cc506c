/*
 * coll_test.c - every collective the rcoll MPI layer takes over, x datatypes
 * x ops x in-place x sub-communicators x nonblocking completion calls, plus
 * each pass-through case.  Plain MPI: it runs the same with and without the
 * layer preloaded, checks every result itself, and prints one line per case
 * ("ok NAME" or "FAIL NAME: why") on rank 0; test/mpi/run.sh compares the
 * runs.  Exit status 1 if any case failed on any rank.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char  *name;
    MPI_Datatype dt;
    int          size, is_float, is_signed;
} type_t;

static int rank, size, failures;
static char why[256];

static void set(const type_t *t, void *buf, int i, long long v)
{
    char *p = (char *)buf + (size_t)i * t->size;
    if (t->is_float) {
        if (t->size == 4) *(float *)p = (float)v; else *(double *)p = (double)v;
        return;
    }
    switch (t->size) {
    case 1: *(int8_t *)p = (int8_t)v; break;
    case 2: *(int16_t *)p = (int16_t)v; break;
    case 4: *(int32_t *)p = (int32_t)v; break;
    default: *(int64_t *)p = (int64_t)v; break;
    }
}

static long long get(const type_t *t, const void *buf, int i)
{
    const char *p = (const char *)buf + (size_t)i * t->size;
    if (t->is_float) {
        return t->size == 4 ? (long long)*(const float *)p : (long long)*(const double *)p;
    }
    switch (t->size) {
    case 1: return t->is_signed ? *(const int8_t *)p : *(const uint8_t *)p;
    case 2: return t->is_signed ? *(const int16_t *)p : *(const uint16_t *)p;
    case 4: return t->is_signed ? *(const int32_t *)p : *(const uint32_t *)p;
    default: return *(const int64_t *)p;
    }
}

static long long val(int r, int i, MPI_Op op)
{
    if (op == MPI_PROD) return 1 + ((r + i) % 2);
    return (r * 3 + i * 5) % 7;
}

static long long combine(MPI_Op op, long long a, long long b)
{
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    return a ^ b;
}

/* op over ranks first..first+n-1 (as ranks of the communicator, values by comm rank) */
static long long expect(MPI_Op op, int n, int i)
{
    long long acc = val(0, i, op);
    for (int r = 1; r < n; r++) acc = combine(op, acc, val(r, i, op));
    return acc;
}

static void report(const char *name, int ok_local, MPI_Comm world)
{
    int ok = 0;
    MPI_Allreduce(&ok_local, &ok, 1, MPI_INT, MPI_MIN, world);
    if (!ok) failures++;
    if (rank == 0) printf("%s %s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
}

static const type_t types[] = {
    { "int", MPI_INT, 4, 0, 1 }, { "double", MPI_DOUBLE, 8, 1, 1 }, { "float", MPI_FLOAT, 4, 1, 1 },
    { "int64", MPI_INT64_T, 8, 0, 1 }, { "uint8", MPI_UINT8_T, 1, 0, 0 },
    { "long", MPI_LONG, 8, 0, 1 }, { "unsigned", MPI_UNSIGNED, 4, 0, 0 },
    { "short", MPI_SHORT, 2, 0, 1 }, { "integer", MPI_INTEGER, 4, 0, 1 },
    { "real8", MPI_REAL8, 8, 1, 1 },
};
#define NTYPES (int)(sizeof(types) / sizeof(types[0]))
static const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR };
static const char *const op_names[] = { "sum", "prod", "min", "max", "band", "bor", "bxor" };

#define N 37

static int check_reduced(const type_t *t, MPI_Op op, const void *buf, int n, int csize, int off)
{
    for (int i = 0; i < n; i++) {
        long long e = expect(op, csize, i + off), g = get(t, buf, i);
        if (t->size == 1 && !t->is_signed) e &= 0xff;
        if (g != e) {
            snprintf(why, sizeof(why), "element %d: got %lld, expected %lld", i + off, g, e);
            return 0;
        }
    }
    return 1;
}

/* Blocking or nonblocking (completion mode m) allreduce/reduce/... on comm. */
static int complete(MPI_Request *req, int mode)
{
    int flag = 0, idx = -1, outc = 0, indices[2];
    MPI_Request arr[2];
    MPI_Status st;
    switch (mode) {
    case 0: return MPI_Wait(req, MPI_STATUS_IGNORE);
    case 1: while (!flag) MPI_Test(req, &flag, MPI_STATUS_IGNORE); return 0;
    case 2: {   /* mixed with a self send/recv pair */
        int x = rank, y = -1;
        MPI_Request all[3];
        MPI_Irecv(&y, 1, MPI_INT, 0, 99, MPI_COMM_SELF, &all[0]);
        all[1] = *req;
        MPI_Isend(&x, 1, MPI_INT, 0, 99, MPI_COMM_SELF, &all[2]);
        MPI_Status sts[3];
        MPI_Waitall(3, all, sts);
        *req = all[1];
        return y == rank ? 0 : 1;
    }
    case 3: { MPI_Status st1[1]; while (!flag) MPI_Testall(1, req, &flag, st1); return 0; }
    case 4: arr[0] = MPI_REQUEST_NULL; arr[1] = *req;
        MPI_Waitany(2, arr, &idx, &st); *req = arr[1]; return idx == 1 ? 0 : 1;
    case 5: arr[0] = MPI_REQUEST_NULL; arr[1] = *req;
        while (!flag) MPI_Testany(2, arr, &idx, &flag, &st);
        *req = arr[1]; return idx == 1 ? 0 : 1;
    case 6: arr[0] = *req; { MPI_Status st1[1]; MPI_Waitsome(1, arr, &outc, indices, st1); }
        *req = arr[0]; return outc == 1 ? 0 : 1;
    case 7: arr[0] = *req;
        { MPI_Status st1[1]; while (outc == 0) MPI_Testsome(1, arr, &outc, indices, st1); }
        *req = arr[0]; return outc == 1 ? 0 : 1;
    default:
        /* Open MPI 4.1's MPI_Request_get_status does not progress: probe in between */
        while (!flag) {
            MPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
            int pf;
            if (!flag) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &pf, MPI_STATUS_IGNORE);
        }
        return MPI_Wait(req, MPI_STATUS_IGNORE);
    }
}
static const char *const mode_names[] = { "wait", "test", "waitall-mixed", "testall", "waitany",
                                          "testany", "waitsome", "testsome", "get_status" };
#define NMODES 9

static void reductions(MPI_Comm comm, const char *cname, MPI_Comm world)
{
    int me, cs;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &cs);
    char name[200];
    void *s = malloc(8 * N * 64), *r = malloc(8 * N * 64);
    for (int ti = 0; ti < NTYPES; ti++) {
        const type_t *t = &types[ti];
        for (int oi = 0; oi < 7; oi++) {
            if (t->is_float && oi >= 4) continue;
            for (int inplace = 0; inplace < 2; inplace++) {
                int ok = 1;
                for (int i = 0; i < N; i++) set(t, inplace ? r : s, i, val(me, i, ops[oi]));
                MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, N, t->dt, ops[oi], comm);
                ok = check_reduced(t, ops[oi], r, N, cs, 0);
                snprintf(name, sizeof(name), "%s allreduce %s %s%s", cname, t->name, op_names[oi],
                         inplace ? " in-place" : "");
                report(name, ok, world);
                /* reduce to the last rank */
                int root = cs - 1;
                for (int i = 0; i < N; i++) set(t, inplace && me == root ? r : s, i, val(me, i, ops[oi]));
                MPI_Reduce(inplace && me == root ? MPI_IN_PLACE : s, r, N, t->dt, ops[oi], root, comm);
                ok = me != root || check_reduced(t, ops[oi], r, N, cs, 0);
                snprintf(name, sizeof(name), "%s reduce %s %s%s", cname, t->name, op_names[oi],
                         inplace ? " in-place" : "");
                report(name, ok, world);
                /* reduce_scatter_block and reduce_scatter (equal counts) */
                for (int v = 0; v < 2; v++) {
                    int *counts = malloc(sizeof(int) * cs);
                    for (int k = 0; k < cs; k++) counts[k] = 3;
                    for (int i = 0; i < 3 * cs; i++) set(t, inplace ? r : s, i, val(me, i, ops[oi]));
                    if (v == 0) MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, 3, t->dt, ops[oi], comm);
                    else MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : s, r, counts, t->dt, ops[oi], comm);
                    ok = check_reduced(t, ops[oi], r, 3, cs, 3 * me);
                    snprintf(name, sizeof(name), "%s %s %s %s%s", cname,
                             v ? "reduce_scatter" : "reduce_scatter_block", t->name, op_names[oi],
                             inplace ? " in-place" : "");
                    report(name, ok, world);
                    free(counts);
                }
            }
        }
    }
    free(s);
    free(r);
}

static void movers(MPI_Comm comm, const char *cname, MPI_Comm world)
{
    int me, cs;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &cs);
    char name[200];
    const MPI_Datatype dts[] = { MPI_BYTE, MPI_CHAR, MPI_INT, MPI_DOUBLE };
    const char *const dn[] = { "byte", "char", "int", "double" };
    const int ds[] = { 1, 1, 4, 8 };
    for (int d = 0; d < 4; d++) {
        for (int ri = 0; ri < 2; ri++) {   /* the same number of cases on every rank */
            int root = ri ? cs - 1 : 0;
            unsigned char *b = malloc((size_t)ds[d] * N);
            for (int i = 0; i < ds[d] * N; i++) b[i] = me == root ? (unsigned char)(i * 7 + root) : 0;
            MPI_Bcast(b, N, dts[d], root, comm);
            int ok = 1;
            for (int i = 0; i < ds[d] * N; i++) ok &= b[i] == (unsigned char)(i * 7 + root);
            snprintf(why, sizeof(why), "bcast data differ");
            snprintf(name, sizeof(name), "%s bcast %s root %s", cname, dn[d], ri ? "last" : "first");
            report(name, ok, world);
            free(b);
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            size_t blk = (size_t)ds[d] * N;
            unsigned char *s = malloc(blk), *r = calloc((size_t)cs, blk);
            unsigned char *mine = inplace ? r + me * blk : s;
            for (size_t i = 0; i < blk; i++) mine[i] = (unsigned char)(me * 31 + i);
            MPI_Allgather(inplace ? MPI_IN_PLACE : s, N, dts[d], r, N, dts[d], comm);
            int ok = 1;
            for (int k = 0; k < cs; k++)
                for (size_t i = 0; i < blk; i++) ok &= r[k * blk + i] == (unsigned char)(k * 31 + i);
            snprintf(why, sizeof(why), "allgather data differ");
            snprintf(name, sizeof(name), "%s allgather %s%s", cname, dn[d], inplace ? " in-place" : "");
            report(name, ok, world);
            free(s);
            free(r);
        }
    }
    MPI_Barrier(comm);
    snprintf(name, sizeof(name), "%s barrier", cname);
    report(name, 1, world);
}

static void nonblocking(MPI_Comm comm, const char *cname, MPI_Comm world)
{
    int me, cs;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &cs);
    char name[200];
    const type_t *t = &types[0];
    int s[N], r[N * 8];
    for (int m = 0; m < NMODES; m++) {
        MPI_Request req;
        int ok;
        for (int i = 0; i < N; i++) s[i] = (int)val(me, i, MPI_SUM);
        MPI_Iallreduce(s, r, N, MPI_INT, MPI_SUM, comm, &req);
        ok = complete(&req, m) == 0 && req == MPI_REQUEST_NULL && check_reduced(t, MPI_SUM, r, N, cs, 0);
        snprintf(name, sizeof(name), "%s iallreduce %s", cname, mode_names[m]);
        report(name, ok, world);

        for (int i = 0; i < N; i++) r[i] = me == 0 ? i * 3 : -1;
        MPI_Ibcast(r, N, MPI_INT, 0, comm, &req);
        ok = complete(&req, m) == 0;
        for (int i = 0; i < N; i++) ok &= r[i] == i * 3;
        snprintf(name, sizeof(name), "%s ibcast %s", cname, mode_names[m]);
        report(name, ok, world);

        MPI_Ibarrier(comm, &req);
        ok = complete(&req, m) == 0;
        snprintf(name, sizeof(name), "%s ibarrier %s", cname, mode_names[m]);
        report(name, ok, world);

        for (int i = 0; i < N; i++) s[i] = (int)val(me, i, MPI_MAX);
        MPI_Ireduce(s, r, N, MPI_INT, MPI_MAX, 0, comm, &req);
        ok = complete(&req, m) == 0 && (me != 0 || check_reduced(t, MPI_MAX, r, N, cs, 0));
        snprintf(name, sizeof(name), "%s ireduce %s", cname, mode_names[m]);
        report(name, ok, world);

        for (int i = 0; i < 4; i++) s[i] = me * 10 + i;
        MPI_Iallgather(s, 4, MPI_INT, r, 4, MPI_INT, comm, &req);
        ok = complete(&req, m) == 0;
        for (int k = 0; k < cs; k++) for (int i = 0; i < 4; i++) ok &= r[k * 4 + i] == k * 10 + i;
        snprintf(name, sizeof(name), "%s iallgather %s", cname, mode_names[m]);
        report(name, ok, world);
    }
    /* Several outstanding at once, completed in reverse order. */
    MPI_Request reqs[3];
    int a[4], b[4], c = me;
    for (int i = 0; i < 4; i++) a[i] = me + i;
    MPI_Iallreduce(a, b, 4, MPI_INT, MPI_SUM, comm, &reqs[0]);
    MPI_Ibcast(&c, 1, MPI_INT, 0, comm, &reqs[1]);
    MPI_Ibarrier(comm, &reqs[2]);
    MPI_Wait(&reqs[2], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    int ok = c == 0;
    for (int i = 0; i < 4; i++) ok &= b[i] == cs * (cs - 1) / 2 + cs * i;
    snprintf(why, sizeof(why), "outstanding results differ");
    snprintf(name, sizeof(name), "%s three outstanding, reverse completion", cname);
    report(name, ok, world);
}

static void user_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i] + 1;
}

static void signatures_and_passthrough(MPI_Comm world)
{
    int cs = size;
    /* The same signature through different handles: 4 x MPI_INT on even
     * ranks, 1 x contiguous(4 ints) on odd ones, a strided vector on some. */
    MPI_Datatype c4, v4, v4r;
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    MPI_Type_vector(4, 1, 2, MPI_INT, &v4);
    MPI_Type_create_resized(v4, 0, 8 * sizeof(int), &v4r);
    MPI_Type_commit(&v4r);
    int s[16], r[16], ok = 1;
    for (int i = 0; i < 4; i++) r[i] = rank == 0 ? 50 + i : -1;
    MPI_Bcast(r, rank % 2 ? 1 : 4, rank % 2 ? c4 : MPI_INT, 0, world);
    for (int i = 0; i < 4; i++) ok &= r[i] == 50 + i;
    snprintf(why, sizeof(why), "mixed handles: wrong data");
    report("signature: bcast 4 x MPI_INT vs contiguous(4 x MPI_INT)", ok, world);

    int g[64];
    for (int i = 0; i < 4; i++) s[i] = rank * 4 + i;
    MPI_Allgather(s, rank % 2 ? 1 : 4, rank % 2 ? c4 : MPI_INT, g, rank % 3 ? 1 : 4,
                  rank % 3 ? c4 : MPI_INT, world);
    ok = 1;
    for (int i = 0; i < 4 * cs; i++) ok &= g[i] == i;
    snprintf(why, sizeof(why), "allgather mixed handles: wrong data");
    report("signature: allgather 4 x MPI_INT vs contiguous(4 x MPI_INT)", ok, world);

    int sv[8], rv[8];
    int gv[128];
    for (int i = 0; i < 8; i++) sv[i] = i % 2 ? -7 : rank * 4 + i / 2;
    for (int i = 0; i < 8 * cs; i++) gv[i] = -7;
    if (rank % 2) MPI_Allgather(sv, 1, v4r, gv, 1, v4r, world);
    else MPI_Allgather(sv, 1, v4r, g, 4, MPI_INT, world);
    ok = 1;
    for (int i = 0; i < 4 * cs; i++) ok &= (rank % 2 ? gv[2 * i] : g[i]) == i;
    for (int i = 0; rank % 2 && i < 4 * cs; i++) ok &= gv[2 * i + 1] == -7;
    snprintf(why, sizeof(why), "strided vector: wrong data or gaps written");
    report("signature: allgather into 4 x MPI_INT vs strided vector of 4 ints", ok, world);

    for (int i = 0; i < 8; i++) rv[i] = rank == 0 ? 100 + i : -1;
    if (rank % 2) MPI_Bcast(rv, 1, v4r, 0, world);
    else { int t[4]; for (int i = 0; i < 4; i++) t[i] = rank == 0 ? 100 + 2 * i : -1;
           MPI_Bcast(t, 4, MPI_INT, 0, world); for (int i = 0; i < 4; i++) rv[2 * i] = t[i]; }
    ok = 1;
    for (int i = 0; i < 4; i++) ok &= rv[2 * i] == 100 + 2 * i;
    snprintf(why, sizeof(why), "bcast through a vector: wrong data");
    report("signature: bcast 4 x MPI_INT vs strided vector", ok, world);

    /* Pass-through: user-defined op, MINLOC, LAND, a struct type, an inter-communicator. */
    MPI_Op uop;
    MPI_Op_create(user_op, 1, &uop);
    for (int i = 0; i < 4; i++) s[i] = 1;
    MPI_Allreduce(s, r, 4, MPI_INT, uop, world);
    /* inout += in + 1: every combination adds 1, whatever the tree */
    ok = r[0] == 2 * cs - 1;
    snprintf(why, sizeof(why), "user op result %d", r[0]);
    report("pass-through: user-defined op", ok, world);
    MPI_Op_free(&uop);

    struct { int v, i; } in = { rank % 3, rank }, out;
    MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, world);
    ok = out.v == 0 && out.i == 0;
    snprintf(why, sizeof(why), "minloc");
    report("pass-through: MPI_MINLOC on MPI_2INT", ok, world);

    int l = rank != 1, lo = -1;
    MPI_Allreduce(&l, &lo, 1, MPI_INT, MPI_LAND, world);
    ok = lo == (cs < 2);
    snprintf(why, sizeof(why), "land");
    report("pass-through: MPI_LAND", ok, world);

    struct pair { int a; double b; } pr = { rank == 0 ? 42 : 0, rank == 0 ? 2.5 : 0 };
    int bl[2] = { 1, 1 };
    MPI_Aint disp[2] = { offsetof(struct pair, a), offsetof(struct pair, b) };
    MPI_Datatype tys[2] = { MPI_INT, MPI_DOUBLE }, st;
    MPI_Type_create_struct(2, bl, disp, tys, &st);
    MPI_Type_commit(&st);
    MPI_Bcast(&pr, 1, st, 0, world);
    ok = pr.a == 42 && pr.b == 2.5;
    snprintf(why, sizeof(why), "struct bcast");
    report("pass-through: bcast of a struct {int, double}", ok, world);
    MPI_Type_free(&st);

    if (cs >= 2) {
        MPI_Comm half, inter;
        int color = rank < cs / 2;
        MPI_Comm_split(world, color, rank, &half);
        MPI_Intercomm_create(half, 0, world, color ? cs / 2 : 0, 7, &inter);
        int x = 1, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter);
        int rsize;
        MPI_Comm_remote_size(inter, &rsize);
        ok = y == rsize;
        snprintf(why, sizeof(why), "intercomm allreduce %d", y);
        report("pass-through: inter-communicator allreduce", ok, world);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    int counts[16];
    for (int k = 0; k < cs; k++) counts[k] = k + 1;
    int total = cs * (cs + 1) / 2, *sb = malloc(sizeof(int) * total), rb[16];
    for (int i = 0; i < total; i++) sb[i] = 1;
    MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, world);
    ok = 1;
    for (int i = 0; i <= rank; i++) ok &= rb[i] == cs;
    snprintf(why, sizeof(why), "unequal reduce_scatter");
    report("pass-through: reduce_scatter with unequal counts", ok, world);
    free(sb);
    MPI_Type_free(&c4);
    MPI_Type_free(&v4);
    MPI_Type_free(&v4r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;

    reductions(world, "world", world);
    movers(world, "world", world);
    nonblocking(world, "world", world);

    /* Sub-communicators: a split into halves (odd/even), a reversed-order
     * group, a cartesian one and a dup. */
    MPI_Comm split, rev, cart, dup;
    MPI_Comm_split(world, rank % 2, rank, &split);
    MPI_Group wg, rg;
    MPI_Comm_group(world, &wg);
    int *ranks = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) ranks[i] = size - 1 - i;
    MPI_Group_incl(wg, size, ranks, &rg);
    MPI_Comm_create_group(world, rg, 5, &rev);
    int dims[1] = { size }, periods[1] = { 0 };
    MPI_Cart_create(world, 1, dims, periods, 0, &cart);
    MPI_Comm_dup(world, &dup);
    if (!quick) reductions(split, "split", world);
    movers(split, "split", world);
    nonblocking(split, "split", world);
    movers(rev, "reversed", world);
    nonblocking(rev, "reversed", world);
    movers(cart, "cart", world);
    if (!quick) reductions(dup, "dup", world);
    nonblocking(dup, "dup", world);
    MPI_Comm_free(&split);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&dup);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    free(ranks);

    signatures_and_passthrough(world);
    if (rank == 0) printf("coll_test: %d failed\n", failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
