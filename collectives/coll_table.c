/*
 * coll_table.c - the collectives' names and algorithm tables, looked up by
 * the selector, by RCOLL_<COLL>_ALGORITHM and by rcoll_algorithms().
 */
#include <stdio.h>
#include <string.h>
#include "coll.h"
#include "selector.h"

static const char *const coll_names[RCOLL_COLL_LAST] = {
    [RCOLL_COLL_ALLREDUCE]      = "allreduce",
    [RCOLL_COLL_BCAST]          = "bcast",
    [RCOLL_COLL_BARRIER]        = "barrier",
    [RCOLL_COLL_REDUCE]         = "reduce",
    [RCOLL_COLL_ALLGATHER]      = "allgather",
    [RCOLL_COLL_REDUCE_SCATTER] = "reduce_scatter",
};

static const rcoll_alg_t *const *const coll_tables[RCOLL_COLL_LAST] = {
    [RCOLL_COLL_ALLREDUCE]      = rcoll_allreduce_algs,
    [RCOLL_COLL_BCAST]          = rcoll_bcast_algs,
    [RCOLL_COLL_BARRIER]        = rcoll_barrier_algs,
    [RCOLL_COLL_REDUCE]         = rcoll_reduce_algs,
    [RCOLL_COLL_ALLGATHER]      = rcoll_allgather_algs,
    [RCOLL_COLL_REDUCE_SCATTER] = rcoll_reduce_scatter_algs,
};

const char *rcoll_coll_name(rcoll_coll_type_t coll)
{
    if ((unsigned)coll >= RCOLL_COLL_LAST)
        return "unknown";
    return coll_names[coll];
}

const rcoll_alg_t *const *rcoll_coll_algs(rcoll_coll_type_t coll)
{
    if ((unsigned)coll >= RCOLL_COLL_LAST)
        return NULL;
    return coll_tables[coll];
}

const rcoll_alg_t *rcoll_alg_find(rcoll_coll_type_t coll, const char *name)
{
    const rcoll_alg_t *const *algs = rcoll_coll_algs(coll);
    if (algs == NULL || name == NULL)
        return NULL;
    for (; *algs != NULL; algs++)
        if (strcmp((*algs)->name, name) == 0)
            return *algs;
    return NULL;
}

/* The collective named name, or RCOLL_COLL_LAST. */
rcoll_coll_type_t rcoll_coll_find(const char *name)
{
    for (int c = 0; c < RCOLL_COLL_LAST; c++)
        if (name != NULL && strcmp(coll_names[c], name) == 0)
            return (rcoll_coll_type_t)c;
    return RCOLL_COLL_LAST;
}

void rcoll_coll_alg_names(rcoll_coll_type_t coll, char *buf, size_t len)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    size_t used = 0;

    if (len == 0)
        return;
    buf[0] = '\0';
    for (; a != NULL && *a != NULL && used < len; a++) {
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", (*a)->name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

RCOLL_API int rcoll_algorithms(const char *collective, const char **names, int max)
{
    rcoll_coll_type_t coll = rcoll_coll_find(collective);
    const rcoll_alg_t *const *algs;
    int n = 0;

    if (coll == RCOLL_COLL_LAST)
        return -1;
    for (algs = rcoll_coll_algs(coll); algs[n] != NULL; n++)
        if (names != NULL && n < max)
            names[n] = algs[n]->name;
    return n;
}
