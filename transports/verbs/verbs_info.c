/* verbs_info.c - `rcoll_info --devices`: every port, its kind and chosen GID. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "status.h"
#include "verbs_int.h"
#include "verbs.h"

/* Gb/s per lane for ibv_port_attr.active_speed, and lanes for active_width. */
static double lane_gbps(uint8_t speed)
{
    switch (speed) {
    case 1:   return 2.5;
    case 2:   return 5.0;
    case 4:   return 10.0;
    case 8:   return 10.3125;
    case 16:  return 14.0625;
    case 32:  return 25.78125;
    case 64:  return 53.125;
    case 128: return 106.25;
    default:  return 0.0;
    }
}

static int lanes(uint8_t width)
{
    switch (width) {
    case 1:  return 1;
    case 2:  return 4;
    case 4:  return 8;
    case 8:  return 12;
    case 16: return 2;
    default: return 0;
    }
}

static void print_port(FILE *out, struct ibv_context *ctx, int port, const rcoll_config_t *cfg,
                       const rcoll_verbs_port_t *chosen)
{
    rcoll_verbs_port_t p;
    char gid[INET6_ADDRSTRLEN] = "-";

    if (rcoll__verbs_port_query(ctx, port, cfg->ib_gid_index, &p) != RCOLL_OK) {
        fprintf(out, "  %s:%d  (query failed)\n", ibv_get_device_name(ctx->device), port);
        return;
    }
    if (p.gid_index >= 0) {
        inet_ntop(AF_INET6, p.gid.raw, gid, sizeof(gid));
    }
    int mark = chosen != NULL && strcmp(chosen->dev, p.dev) == 0 && chosen->port == port;
    fprintf(out, "%c %s:%d  kind %-7s  state %-6s  mtu %4d (max %d)  speed %g Gb/s  gid[%d] %s (%s)\n",
            mark ? '*' : ' ', p.dev, port, rcoll__verbs_kind_name(p.kind),
            ibv_port_state_str(p.attr.state), 128 << p.attr.active_mtu, 128 << p.attr.max_mtu,
            lanes(p.attr.active_width) * lane_gbps(p.attr.active_speed), p.gid_index, gid, p.gid_why);
}

RCOLL_API void rcoll_verbs_print_devices(FILE *out, const rcoll_config_t *cfg)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    rcoll_verbs_port_t chosen;
    char why[256];
    int have = rcoll__verbs_select(cfg, &chosen, why, sizeof(why)) == RCOLL_OK;

    if (list == NULL || n == 0) {
        fprintf(out, "verbs: no RDMA device\n");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return;
    }
    fprintf(out, "verbs devices (* = the port rcoll uses%s%s):\n",
            cfg->net_devices[0] ? ", RCOLL_NET_DEVICES=" : "", cfg->net_devices);
    for (int i = 0; i < n; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        struct ibv_device_attr da;
        if (ctx == NULL || ibv_query_device(ctx, &da) != 0) {
            fprintf(out, "  %s: cannot open: %s\n", ibv_get_device_name(list[i]), strerror(errno));
            if (ctx != NULL) {
                ibv_close_device(ctx);
            }
            continue;
        }
        for (int p = 1; p <= da.phys_port_cnt; p++) {
            print_port(out, ctx, p, cfg, have ? &chosen : NULL);
        }
        ibv_close_device(ctx);
    }
    if (!have) {
        fprintf(out, "  none usable: %s\n", why);
    }
    ibv_free_device_list(list);
}
