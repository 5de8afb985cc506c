/*
 * layer_types.c - which calls rcoll can take, decided from what every rank
 * sees alike: the op, and the type signature (not the datatype handle: one
 * rank may pass 4 x MPI_INT where another passes one contiguous type of 4
 * ints).  A signature of one predefined type that maps onto an rcoll type
 * goes to rcoll (reductions: predefined types only, as MPI's own ops); data that does not lie contiguous in memory is packed
 * through a private self-communicator (MPI's own type engine) around it.
 */
#include <limits.h>
#include <stdlib.h>
#include "layer.h"

typedef enum { K_SINT, K_UINT, K_FLOAT, K_MOVE } kind_t;   /* K_MOVE: bcast/allgather only */

typedef struct {
    MPI_Datatype dt;
    kind_t       kind;
} predefined_t;

typedef struct {
    MPI_Datatype     dt;
    int              used;
    int              move_only;
    rcoll_datatype_t rdt;
    size_t           esize;      /* rcoll_datatype_size(rdt), kept off the per-call path */
} type_slot_t;

#define TYPE_SLOTS 128            /* power of two, well above the predefined types */
static type_slot_t type_slots[TYPE_SLOTS];

static unsigned slot_of(MPI_Datatype dt)
{
    return (unsigned)(((uint64_t)(uintptr_t)dt * 0x9E3779B97F4A7C15ull) >> 57);
}

static const type_slot_t *type_find(MPI_Datatype dt)
{
    for (unsigned i = slot_of(dt), k = 0; k < TYPE_SLOTS; i = (i + 1) & (TYPE_SLOTS - 1), k++) {
        if (!type_slots[i].used) {
            return NULL;
        }
        if (type_slots[i].dt == dt) {
            return &type_slots[i];
        }
    }
    return NULL;
}

static rcoll_datatype_t rcoll_type_for(kind_t kind, int size)
{
    switch (kind) {
    case K_SINT:
        return size == 1 ? RCOLL_INT8 : size == 2 ? RCOLL_INT16 : size == 4 ? RCOLL_INT32
             : size == 8 ? RCOLL_INT64 : RCOLL_DATATYPE_LAST;
    case K_UINT:
    case K_MOVE:
        return size == 1 ? RCOLL_UINT8 : size == 2 ? RCOLL_UINT16 : size == 4 ? RCOLL_UINT32
             : size == 8 ? RCOLL_UINT64 : RCOLL_DATATYPE_LAST;
    case K_FLOAT:
        return size == 2 ? RCOLL_FLOAT16 : size == 4 ? RCOLL_FLOAT32 : size == 8 ? RCOLL_FLOAT64
             : RCOLL_DATATYPE_LAST;
    }
    return RCOLL_DATATYPE_LAST;
}

static void type_add(MPI_Datatype dt, kind_t kind)
{
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || type_find(dt) != NULL ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS) {
        return;
    }
    rcoll_datatype_t rdt = rcoll_type_for(kind, size);
    if (rdt == RCOLL_DATATYPE_LAST) {
        return;
    }
    for (unsigned i = slot_of(dt); ; i = (i + 1) & (TYPE_SLOTS - 1)) {
        if (!type_slots[i].used) {
            type_slots[i] = (type_slot_t){ .dt = dt, .used = 1, .move_only = kind == K_MOVE,
                                           .rdt = rdt, .esize = rcoll_datatype_size(rdt) };
            return;
        }
    }
}

int rcoll__mpi_types_init(void)
{
    const predefined_t list[] = {
        { MPI_BYTE, K_MOVE }, { MPI_CHAR, K_MOVE }, { MPI_WCHAR, K_MOVE },
        { MPI_SIGNED_CHAR, K_SINT }, { MPI_UNSIGNED_CHAR, K_UINT },
        { MPI_SHORT, K_SINT }, { MPI_UNSIGNED_SHORT, K_UINT },
        { MPI_INT, K_SINT }, { MPI_UNSIGNED, K_UINT },
        { MPI_LONG, K_SINT }, { MPI_UNSIGNED_LONG, K_UINT },
        { MPI_LONG_LONG_INT, K_SINT }, { MPI_LONG_LONG, K_SINT },
        { MPI_UNSIGNED_LONG_LONG, K_UINT },
        { MPI_INT8_T, K_SINT }, { MPI_INT16_T, K_SINT }, { MPI_INT32_T, K_SINT },
        { MPI_INT64_T, K_SINT }, { MPI_UINT8_T, K_UINT }, { MPI_UINT16_T, K_UINT },
        { MPI_UINT32_T, K_UINT }, { MPI_UINT64_T, K_UINT },
        { MPI_AINT, K_SINT }, { MPI_OFFSET, K_SINT }, { MPI_COUNT, K_SINT },
        { MPI_FLOAT, K_FLOAT }, { MPI_DOUBLE, K_FLOAT },
#ifdef MPIX_C_FLOAT16
        { MPIX_C_FLOAT16, K_FLOAT },
#endif
        /* Fortran */
        { MPI_CHARACTER, K_MOVE },
        { MPI_INTEGER, K_SINT }, { MPI_INTEGER1, K_SINT }, { MPI_INTEGER2, K_SINT },
        { MPI_INTEGER4, K_SINT }, { MPI_INTEGER8, K_SINT },
        { MPI_REAL, K_FLOAT }, { MPI_REAL4, K_FLOAT }, { MPI_REAL8, K_FLOAT },
        { MPI_DOUBLE_PRECISION, K_FLOAT },
#ifdef MPIX_REAL2
        { MPIX_REAL2, K_FLOAT },
#endif
    };
    for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
        type_add(list[i].dt, list[i].kind);
    }
    return 0;
}

/* The predefined type every element of dt's signature has (*leaf), and
 * whether dt's type map lists them in memory order (*ordered).  0 when the
 * signature mixes types or cannot be read. */
static int decode(MPI_Datatype dt, MPI_Datatype *leaf, int *ordered, int depth)
{
    int ni = 0, na = 0, nd = 0, comb = 0;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS) {
        return 0;
    }
    if (comb == MPI_COMBINER_NAMED) {
        *leaf = dt;
        *ordered = 1;
        return 1;
    }
    if (depth > 16 || nd < 1) {
        return 0;
    }
    int *ints = malloc(((size_t)ni + 1) * sizeof(int));
    MPI_Aint *aints = malloc(((size_t)na + 1) * sizeof(MPI_Aint));
    MPI_Datatype *types = malloc((size_t)nd * sizeof(MPI_Datatype));
    int ok = ints && aints && types &&
             PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types) == MPI_SUCCESS;
    int nfetched = ok ? nd : 0, child_ordered = 1;
    const type_slot_t *kind = NULL;
    for (int i = 0; i < nfetched; i++) {
        MPI_Datatype l = MPI_DATATYPE_NULL;
        int o = 0, skip = comb == MPI_COMBINER_STRUCT && ints[1 + i] == 0;
        if (!skip && ok) {
            const type_slot_t *s = NULL;
            if (!decode(types[i], &l, &o, depth + 1) || (s = type_find(l)) == NULL ||
                (kind != NULL && (kind->rdt != s->rdt || kind->move_only != s->move_only))) {
                ok = 0;
            } else {
                kind = s;
                *leaf = l;
                child_ordered &= o;
            }
        }
        int tc = 0, tn = 0, ta = 0, tcomb = 0;
        if (PMPI_Type_get_envelope(types[i], &tc, &ta, &tn, &tcomb) == MPI_SUCCESS &&
            tcomb != MPI_COMBINER_NAMED) {
            PMPI_Type_free(&types[i]);
        }
    }
    free(ints);
    free(aints);
    free(types);
    *ordered = child_ordered && (comb == MPI_COMBINER_DUP || comb == MPI_COMBINER_CONTIGUOUS ||
                                 comb == MPI_COMBINER_RESIZED);
    return ok && kind != NULL;
}

layer_why_t rcoll__mpi_plan_data(layer_plan_t *p, int count, int blocks, MPI_Datatype dt,
                                 int reduce)
{
    const type_slot_t *s = type_find(dt);
    if (s != NULL) {                        /* predefined: the common case */
        if (reduce && s->move_only) {
            return WHY_TYPE;
        }
        p->dtype = s->rdt;
        p->n = (size_t)count;
        p->bytes = (size_t)count * s->esize;
        p->direct = 1;
        p->lb = 0;
        p->leaf = dt;
        p->predefined = 1;
        return WHY_RCOLL;
    }
    if (reduce) {
        return WHY_TYPE;    /* both MPIs refuse predefined ops on derived types: let them say so */
    }
    MPI_Datatype leaf = MPI_DATATYPE_NULL;
    int ordered = 0, size = 0;
    MPI_Aint lb, extent, tlb, textent;
    if (dt == MPI_DATATYPE_NULL || !decode(dt, &leaf, &ordered, 0) ||
        (s = type_find(leaf)) == NULL || (reduce && s->move_only) ||
        PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS) {
        return WHY_TYPE;
    }
    size_t esize = rcoll_datatype_size(s->rdt);
    p->dtype = s->rdt;
    p->n = (size_t)count * ((size_t)size / esize);
    p->bytes = p->n * esize;
    p->direct = ordered && textent == size && ((size_t)count * (size_t)blocks <= 1 || extent == size);
    p->lb = tlb;
    p->leaf = leaf;
    p->predefined = 0;
    if (!p->direct && p->n * (size_t)blocks > INT_MAX) {
        return WHY_TYPE;                    /* too large to pack in one MPI call */
    }
    return WHY_RCOLL;
}

static layer_why_t op_of(MPI_Op op, rcoll_op_t *rop)
{
    if (op == MPI_SUM) { *rop = RCOLL_SUM; return WHY_RCOLL; }
    if (op == MPI_MAX) { *rop = RCOLL_MAX; return WHY_RCOLL; }
    if (op == MPI_MIN) { *rop = RCOLL_MIN; return WHY_RCOLL; }
    if (op == MPI_PROD) { *rop = RCOLL_PROD; return WHY_RCOLL; }
    if (op == MPI_BAND) { *rop = RCOLL_BAND; return WHY_RCOLL; }
    if (op == MPI_BOR) { *rop = RCOLL_BOR; return WHY_RCOLL; }
    if (op == MPI_BXOR) { *rop = RCOLL_BXOR; return WHY_RCOLL; }
    if (op == MPI_MAXLOC || op == MPI_MINLOC || op == MPI_LAND || op == MPI_LOR ||
        op == MPI_LXOR || op == MPI_REPLACE || op == MPI_NO_OP || op == MPI_OP_NULL) {
        return WHY_OP;
    }
    return WHY_USER_OP;
}

static int is_float(rcoll_datatype_t t)
{
    return t == RCOLL_FLOAT16 || t == RCOLL_BFLOAT16 || t == RCOLL_FLOAT32 || t == RCOLL_FLOAT64;
}

layer_why_t rcoll__mpi_plan(layer_plan_t *p, MPI_Comm comm, int count, int blocks,
                            MPI_Datatype dt, MPI_Op op, int reduce)
{
    layer_t *L = &rcoll__mpi;
    layer_why_t why;
    if (!L->on) {
        return L->off_why;
    }
    if (comm == MPI_COMM_NULL || count < 0) {
        return WHY_ARGS;
    }
    if (reduce && (why = op_of(op, &p->op)) != WHY_RCOLL) {
        return why;
    }
    if ((why = rcoll__mpi_plan_data(p, count, blocks, dt, reduce)) != WHY_RCOLL) {
        return why;
    }
    if (reduce && p->op >= RCOLL_BAND && is_float(p->dtype)) {
        return WHY_BITWISE_FLOAT;
    }
    layer_twin_t *t = rcoll__mpi_twin(comm);
    if (t == NULL) {
        return WHY_ERROR;
    }
    p->twin = t->comm;
    return t->why;
}

int rcoll__mpi_pack(const void *buf, int count, MPI_Datatype dt, void *tmp, size_t n,
                    MPI_Datatype leaf)
{
    return PMPI_Sendrecv(buf, count, dt, 0, 0, tmp, (int)n, leaf, 0, 0, rcoll__mpi.self,
                         MPI_STATUS_IGNORE);
}

int rcoll__mpi_unpack(const void *tmp, size_t n, MPI_Datatype leaf, void *buf, int count,
                      MPI_Datatype dt)
{
    return PMPI_Sendrecv(tmp, (int)n, leaf, 0, 0, buf, count, dt, 0, 0, rcoll__mpi.self,
                         MPI_STATUS_IGNORE);
}
