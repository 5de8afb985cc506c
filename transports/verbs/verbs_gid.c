/* verbs_gid.c - the RoCE GID choice, a pure function over a GID table. */
#include <stdio.h>
#include <string.h>
#include "verbs_gid.h"

int rcoll__verbs_gid_is_zero(const uint8_t gid[16])
{
    for (int i = 0; i < 16; i++) {
        if (gid[i] != 0) {
            return 0;
        }
    }
    return 1;
}

int rcoll__verbs_gid_is_ipv4_mapped(const uint8_t gid[16])
{
    for (int i = 0; i < 10; i++) {
        if (gid[i] != 0) {
            return 0;
        }
    }
    return gid[10] == 0xff && gid[11] == 0xff;
}

int rcoll__verbs_gid_is_link_local(const uint8_t gid[16])
{
    return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;   /* fe80::/10 */
}

const char *rcoll__verbs_gid_type_name(rcoll_verbs_gid_type_t t)
{
    switch (t) {
    case RCOLL_VERBS_GID_ROCE_V2: return "RoCE v2";
    case RCOLL_VERBS_GID_ROCE_V1: return "RoCE v1";
    default:                      return "IB";
    }
}

/* Lower is better; -1 for entries never chosen automatically. */
static int gid_rank(const rcoll_verbs_gid_entry_t *e)
{
    int ll = rcoll__verbs_gid_is_link_local(e->gid);

    if (rcoll__verbs_gid_is_zero(e->gid)) {
        return -1;
    }
    if (e->type == RCOLL_VERBS_GID_ROCE_V2) {
        if (ll) {
            return 3;
        }
        return rcoll__verbs_gid_is_ipv4_mapped(e->gid) ? 0 : 1;
    }
    if (e->type == RCOLL_VERBS_GID_ROCE_V1) {
        return ll ? 4 : 2;
    }
    return 5;   /* an IB-type GID on an Ethernet port: last resort */
}

static const char *const rank_reason[] = {
    "RoCE v2, IPv4-mapped", "RoCE v2, global IPv6", "RoCE v1, global",
    "RoCE v2, link-local (no global GID)", "RoCE v1, link-local (no global GID)",
    "IB-type GID on an Ethernet port"
};

int rcoll__verbs_gid_choose(const rcoll_verbs_gid_entry_t *table, size_t n, int is_ib,
                            int override, char *why, size_t whylen)
{
    int best = -1, best_rank = 0;

    if (override >= 0) {
        for (size_t i = 0; i < n; i++) {
            if (table[i].index == override && !rcoll__verbs_gid_is_zero(table[i].gid)) {
                snprintf(why, whylen, "RCOLL_IB_GID_INDEX=%d", override);
                return (int)i;
            }
        }
        snprintf(why, whylen, "RCOLL_IB_GID_INDEX=%d names no valid GID of this port", override);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int r = is_ib ? (table[i].index == 0 && !rcoll__verbs_gid_is_zero(table[i].gid) ? 0 : -1)
                      : gid_rank(&table[i]);
        if (r < 0) {
            continue;
        }
        if (best < 0 || r < best_rank || (r == best_rank && table[i].index < table[best].index)) {
            best = (int)i;
            best_rank = r;
        }
    }
    if (best < 0) {
        snprintf(why, whylen, "the port has no usable GID");
        return -1;
    }
    snprintf(why, whylen, "%s", is_ib ? "InfiniBand: index 0" : rank_reason[best_rank]);
    return best;
}
