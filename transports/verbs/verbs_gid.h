/*
 * verbs_gid.h - choosing the GID a RoCE port uses (pure logic, no device).
 *
 * The rule (the most common RoCE support question): prefer a RoCE v2 GID
 * that is an IPv4-mapped address (::ffff:a.b.c.d), then a RoCE v2 global
 * IPv6 GID, then RoCE v1 (global before link-local); never a link-local GID
 * when a global one exists.  An explicit index (RCOLL_IB_GID_INDEX) wins if
 * the table has it.  InfiniBand ports route by LID: they use index 0 unless
 * overridden.  Ties go to the lowest index.
 */
#ifndef RCOLL_VERBS_GID_H
#define RCOLL_VERBS_GID_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    RCOLL_VERBS_GID_IB      = 0,
    RCOLL_VERBS_GID_ROCE_V1 = 1,
    RCOLL_VERBS_GID_ROCE_V2 = 2
} rcoll_verbs_gid_type_t;

typedef struct rcoll_verbs_gid_entry {
    int                    index;
    uint8_t                gid[16];
    rcoll_verbs_gid_type_t type;
} rcoll_verbs_gid_entry_t;

int rcoll__verbs_gid_is_zero(const uint8_t gid[16]);
int rcoll__verbs_gid_is_ipv4_mapped(const uint8_t gid[16]);
int rcoll__verbs_gid_is_link_local(const uint8_t gid[16]);

/*
 * Choose from n entries (empty entries, all-zero GIDs, are ignored).
 * is_ib: the port's link layer is InfiniBand.  override: RCOLL_IB_GID_INDEX
 * or -1.  Returns the position in `table` of the choice, or -1 with the
 * reason in why.  On success why says which rule picked it.
 */
int rcoll__verbs_gid_choose(const rcoll_verbs_gid_entry_t *table, size_t n, int is_ib,
                            int override, char *why, size_t whylen);

/* "RoCE v2", "RoCE v1", "IB" */
const char *rcoll__verbs_gid_type_name(rcoll_verbs_gid_type_t t);

#endif
