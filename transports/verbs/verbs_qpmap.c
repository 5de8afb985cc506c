/*
 * verbs_qpmap.c - QP number -> peer (verbs_qpmap.h).
 */
#include <stdlib.h>
#include "verbs_qpmap.h"

static uint32_t slot_of(uint32_t qpn, uint32_t cap)
{
    return (qpn * 2654435761u) & (cap - 1);     /* Knuth's multiplicative hash */
}

void rcoll__verbs_qpmap_init(rcoll_verbs_qpmap_t *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

void rcoll__verbs_qpmap_free(rcoll_verbs_qpmap_t *m)
{
    free(m->slots);
    rcoll__verbs_qpmap_init(m);
}

static int grow(rcoll_verbs_qpmap_t *m)
{
    uint32_t cap = m->cap == 0 ? 16 : m->cap * 2;
    rcoll_verbs_qpmap_slot_t *s = malloc((size_t)cap * sizeof(*s));
    rcoll_verbs_qpmap_slot_t *old = m->slots;
    uint32_t ocap = m->cap;

    if (s == NULL || cap < m->cap) {
        free(s);
        return -1;
    }
    for (uint32_t i = 0; i < cap; i++) {
        s[i].peer = -1;
    }
    m->slots = s;
    m->cap = cap;
    m->count = 0;
    for (uint32_t i = 0; i < ocap; i++) {
        if (old[i].peer >= 0) {
            rcoll__verbs_qpmap_put(m, old[i].qpn, old[i].peer);
        }
    }
    free(old);
    return 0;
}

int rcoll__verbs_qpmap_put(rcoll_verbs_qpmap_t *m, uint32_t qpn, int peer)
{
    if (peer < 0) {
        return -1;
    }
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0) {
        return -1;
    }
    for (uint32_t i = slot_of(qpn, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].peer < 0) {
            m->slots[i].qpn = qpn;
            m->slots[i].peer = peer;
            m->count++;
            return 0;
        }
        if (m->slots[i].qpn == qpn) {
            m->slots[i].peer = peer;
            return 0;
        }
    }
}

static int find(const rcoll_verbs_qpmap_t *m, uint32_t qpn)
{
    if (m->cap == 0) {
        return -1;
    }
    for (uint32_t i = slot_of(qpn, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].peer < 0) {
            return -1;
        }
        if (m->slots[i].qpn == qpn) {
            return (int)i;
        }
    }
}

int rcoll__verbs_qpmap_get(const rcoll_verbs_qpmap_t *m, uint32_t qpn)
{
    int i = find(m, qpn);

    return i < 0 ? -1 : m->slots[i].peer;
}

void rcoll__verbs_qpmap_del(rcoll_verbs_qpmap_t *m, uint32_t qpn)
{
    int at = find(m, qpn);
    uint32_t mask = m->cap - 1, hole, j;

    if (at < 0) {
        return;
    }
    hole = (uint32_t)at;
    m->slots[hole].peer = -1;
    m->count--;
    /* Backward shift: move up every later entry of the run whose home slot
     * is not between the hole and it (cyclically), so lookups never stop
     * early at the hole. */
    for (j = (hole + 1) & mask; m->slots[j].peer >= 0; j = (j + 1) & mask) {
        uint32_t home = slot_of(m->slots[j].qpn, m->cap);
        int between = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!between) {
            m->slots[hole] = m->slots[j];
            m->slots[j].peer = -1;
            hole = j;
        }
    }
}
