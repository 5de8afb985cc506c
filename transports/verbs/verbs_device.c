/*
 * verbs_device.c - finding and classifying RDMA ports, choosing one.
 *
 * Kinds: iWARP (transport type iWARP), InfiniBand (link layer IB), RoCE
 * (link layer Ethernet) v1 or v2 by the type of the GID chosen for it.
 * Choice: RCOLL_NET_DEVICES=dev[:port][,...] in order of preference (an
 * explicit list that names nothing usable is an error, never a silent
 * fallback); otherwise every active port, the device nearest to this
 * process's CPU binding (hwloc PCI locality) first, ties in device order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include <hwloc/openfabrics-verbs.h>
#include "verbs_int.h"
#include "verbs.h"

#define GID_TABLE_MAX 256

const char *rcoll__verbs_kind_name(rcoll_verbs_kind_t kind)
{
    switch (kind) {
    case RCOLL_VERBS_KIND_IB:      return "IB";
    case RCOLL_VERBS_KIND_ROCE_V1: return "RoCE v1";
    case RCOLL_VERBS_KIND_ROCE_V2: return "RoCE v2";
    case RCOLL_VERBS_KIND_IWARP:   return "iWARP";
    default:                       return "unknown";
    }
}

static size_t read_gid_table(struct ibv_context *ctx, int port, int len,
                             rcoll_verbs_gid_entry_t *t)
{
    size_t n = 0;

    for (int i = 0; i < len && i < GID_TABLE_MAX; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)i, &e, 0) != 0) {
            continue;                   /* empty entry (ENODATA) */
        }
        t[n].index = i;
        memcpy(t[n].gid, e.gid.raw, 16);
        t[n].type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? RCOLL_VERBS_GID_ROCE_V2 :
                    e.gid_type == IBV_GID_TYPE_ROCE_V1 ? RCOLL_VERBS_GID_ROCE_V1 :
                                                         RCOLL_VERBS_GID_IB;
        n++;
    }
    return n;
}

rcoll_status_t rcoll__verbs_port_query(struct ibv_context *ctx, int port, int gid_override,
                                       rcoll_verbs_port_t *out)
{
    rcoll_verbs_gid_entry_t table[GID_TABLE_MAX];
    const char *dev = ibv_get_device_name(ctx->device);
    size_t n;
    int pos;

    memset(out, 0, sizeof(*out));
    snprintf(out->dev, sizeof(out->dev), "%s", dev);
    out->port = port;
    out->gid_index = -1;
    if (ibv_query_port(ctx, (uint8_t)port, &out->attr) != 0) {
        rcoll_error("verbs: ibv_query_port(%s:%d) failed: %s", dev, port, strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    if (ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
        out->kind = RCOLL_VERBS_KIND_IWARP;
        if (ibv_query_gid(ctx, (uint8_t)port, 0, &out->gid) == 0) {
            out->gid_index = 0;
        }
        snprintf(out->gid_why, sizeof(out->gid_why), "iWARP: peers are reached by IP through rdma_cm");
        return RCOLL_OK;
    }
    int is_ib = out->attr.link_layer != IBV_LINK_LAYER_ETHERNET;
    n = read_gid_table(ctx, port, out->attr.gid_tbl_len, table);
    pos = rcoll__verbs_gid_choose(table, n, is_ib, gid_override, out->gid_why, sizeof(out->gid_why));
    if (pos >= 0) {
        out->gid_index = table[pos].index;
        memcpy(out->gid.raw, table[pos].gid, 16);
    }
    if (is_ib) {
        out->kind = RCOLL_VERBS_KIND_IB;
    } else {
        out->kind = pos >= 0 && table[pos].type == RCOLL_VERBS_GID_ROCE_V1 ?
                    RCOLL_VERBS_KIND_ROCE_V1 : RCOLL_VERBS_KIND_ROCE_V2;
    }
    return RCOLL_OK;
}

struct ibv_context *rcoll__verbs_open_by_name(const char *name)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = NULL;

    for (int i = 0; list != NULL && i < n; i++) {
        if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
            ctx = ibv_open_device(list[i]);
            if (ctx == NULL) {
                rcoll_error("verbs: ibv_open_device(%s) failed: %s", name, strerror(errno));
            }
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return ctx;
}

static int port_usable(const rcoll_verbs_port_t *p)
{
    return p->attr.state == IBV_PORT_ACTIVE &&
           (p->kind == RCOLL_VERBS_KIND_IWARP || p->gid_index >= 0);
}

/* 2: the device is local to all of our CPUs, 1: to some, 0: unknown or remote. */
static int locality(hwloc_topology_t topo, hwloc_const_bitmap_t mine, struct ibv_device *dev)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int score = 0;

    if (set != NULL && hwloc_ibv_get_device_cpuset(topo, dev, set) == 0 &&
        !hwloc_bitmap_iszero(set) && !hwloc_bitmap_isequal(set, hwloc_topology_get_complete_cpuset(topo))) {
        score = hwloc_bitmap_isincluded(mine, set) ? 2 : hwloc_bitmap_intersects(mine, set) ? 1 : 0;
    }
    hwloc_bitmap_free(set);
    return score;
}

/* Try dev (port 0 = any) for the list; 1 if out was filled with a usable port. */
static int try_device(struct ibv_device *dev, int want_port, int gid_override,
                      rcoll_verbs_port_t *out, char *why, size_t len)
{
    struct ibv_context *ctx = ibv_open_device(dev);
    struct ibv_device_attr da;
    int found = 0;

    if (ctx == NULL) {
        snprintf(why, len, "%s: ibv_open_device failed: %s", ibv_get_device_name(dev), strerror(errno));
        return 0;
    }
    if (ibv_query_device(ctx, &da) != 0) {
        snprintf(why, len, "%s: ibv_query_device failed: %s", ibv_get_device_name(dev), strerror(errno));
        ibv_close_device(ctx);
        return 0;
    }
    for (int p = 1; p <= da.phys_port_cnt && !found; p++) {
        rcoll_verbs_port_t info;
        if (want_port > 0 && p != want_port) {
            continue;
        }
        if (rcoll__verbs_port_query(ctx, p, gid_override, &info) != RCOLL_OK) {
            continue;
        }
        if (port_usable(&info)) {
            *out = info;
            found = 1;
        } else {
            snprintf(why, len, "%s:%d is %s%s%s", info.dev, p, ibv_port_state_str(info.attr.state),
                     info.gid_index < 0 ? ", no usable GID: " : "",
                     info.gid_index < 0 ? info.gid_why : "");
        }
    }
    if (!found && want_port > da.phys_port_cnt) {
        snprintf(why, len, "%s has no port %d", ibv_get_device_name(dev), want_port);
    }
    ibv_close_device(ctx);
    return found;
}

static rcoll_status_t select_listed(struct ibv_device **list, int n, const rcoll_config_t *cfg,
                                    rcoll_verbs_port_t *out, char *why, size_t len)
{
    char spec[RCOLL_CONFIG_STR_MAX], *save = NULL;

    snprintf(spec, sizeof(spec), "%s", cfg->net_devices);
    snprintf(why, len, "RCOLL_NET_DEVICES=%s names no device", cfg->net_devices);
    for (char *tok = strtok_r(spec, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':'), *end = NULL;
        int port = 0;
        if (colon != NULL) {
            *colon = '\0';
            port = (int)strtol(colon + 1, &end, 10);
            if (*end != '\0' || port <= 0) {
                snprintf(why, len, "RCOLL_NET_DEVICES: bad port in '%s:%s' (expected dev:port)", tok, colon + 1);
                return RCOLL_ERR_INVALID_ARG;
            }
        }
        for (int i = 0; i < n; i++) {
            if (strcmp(ibv_get_device_name(list[i]), tok) == 0 &&
                try_device(list[i], port, cfg->ib_gid_index, out, why, len)) {
                return RCOLL_OK;
            }
        }
    }
    return RCOLL_ERR_NOT_SUPPORTED;
}

static rcoll_status_t select_nearest(struct ibv_device **list, int n, const rcoll_config_t *cfg,
                                     rcoll_verbs_port_t *out, char *why, size_t len)
{
    hwloc_topology_t topo = NULL;
    hwloc_bitmap_t mine = NULL;
    int best_score = -1;

    snprintf(why, len, "no RDMA device has an active port");
    if (n > 1 && hwloc_topology_init(&topo) == 0) {
        mine = hwloc_bitmap_alloc();
        if (hwloc_topology_load(topo) != 0 || mine == NULL ||
            hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) != 0) {
            hwloc_bitmap_free(mine);
            mine = NULL;              /* no locality: device order decides */
        }
    }
    for (int i = 0; i < n; i++) {
        rcoll_verbs_port_t info;
        int score = mine != NULL ? locality(topo, mine, list[i]) : 0;
        if (score > best_score && try_device(list[i], 0, cfg->ib_gid_index, &info, why, len)) {
            *out = info;
            best_score = score;
        }
    }
    hwloc_bitmap_free(mine);
    if (topo != NULL) {
        hwloc_topology_destroy(topo);
    }
    return best_score >= 0 ? RCOLL_OK : RCOLL_ERR_NOT_SUPPORTED;
}

rcoll_status_t rcoll__verbs_select(const rcoll_config_t *cfg, rcoll_verbs_port_t *out,
                                   char *why, size_t len)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    rcoll_status_t st;

    if (list == NULL || n == 0) {
        snprintf(why, len, "no RDMA device (ibv_get_device_list: %s)",
                 list == NULL ? strerror(errno) : "empty");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    if (cfg->net_devices[0] != '\0' && strcmp(cfg->net_devices, "all") != 0) {
        st = select_listed(list, n, cfg, out, why, len);
    } else {
        st = select_nearest(list, n, cfg, out, why, len);
    }
    ibv_free_device_list(list);
    return st;
}

RCOLL_API int rcoll_verbs_available(const rcoll_config_t *cfg, char *why, size_t len)
{
    rcoll_verbs_port_t p;

    if (rcoll__verbs_select(cfg, &p, why, len) != RCOLL_OK) {
        return 0;
    }
    snprintf(why, len, "%s:%d %s", p.dev, p.port, rcoll__verbs_kind_name(p.kind));
    return 1;
}

RCOLL_API int rcoll_verbs_is_iwarp(const rcoll_config_t *cfg)
{
    rcoll_verbs_port_t p;
    char why[256];

    return rcoll__verbs_select(cfg, &p, why, sizeof(why)) == RCOLL_OK &&
           p.kind == RCOLL_VERBS_KIND_IWARP;
}
