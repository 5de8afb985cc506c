/*
 * net_profiles.c - named inter-node network figures for `rcoll_info --model
 * --net NAME`: a per-message latency added to rcoll's own software alpha,
 * and the node link's bandwidth.  The bandwidths are the nominal line rates
 * of the vendor / trade-association specifications (data rate / 8; measured
 * large-message bandwidth sits a few per cent below it); the latencies are
 * round figures of published small-message osu_latency results, rounded up.
 * They are inputs for predictions, not measurements of rcoll.
 */
#include <string.h>
#include "selector_scale.h"

const rcoll_net_profile_t rcoll_net_profiles[] = {
    { "hdr", "HDR InfiniBand, 4x 200 Gb/s (e.g. ConnectX-6)", 1.0e-6, 200e9 / 8,
      "rate: InfiniBand Trade Association roadmap (HDR 4x = 200 Gb/s) and the NVIDIA "
      "ConnectX-6 product brief; latency: MVAPICH/OSU micro-benchmark published osu_latency "
      "over HDR, about 1 us for small messages" },
    { "ndr", "NDR InfiniBand, 4x 400 Gb/s (e.g. ConnectX-7)", 1.0e-6, 400e9 / 8,
      "rate: InfiniBand Trade Association roadmap (NDR 4x = 400 Gb/s) and the NVIDIA "
      "ConnectX-7 product brief; latency: taken equal to HDR's (published osu_latency "
      "over NDR is of the same order, about 1 us)" },
    { "roce100", "RoCE v2 over 100 Gb Ethernet (e.g. ConnectX-5/6 Dx)", 2.0e-6, 100e9 / 8,
      "rate: IEEE 802.3 100GBASE line rate; latency: published osu_latency over RoCE v2 "
      "through one switch, about 1.5-2 us, rounded up to 2 us" },
    { "roce400", "RoCE v2 over 400 Gb Ethernet (e.g. ConnectX-7)", 2.0e-6, 400e9 / 8,
      "rate: IEEE 802.3 400GBASE line rate; latency: as roce100 (the NIC and switch "
      "latency, not the rate, dominates a small message)" },
    { "tcp", "kernel TCP over 25 Gb Ethernet (rcoll's UCX tcp path)", 20.0e-6, 25e9 / 8,
      "rate: IEEE 802.3 25GBASE line rate; latency: one-way small-message time through "
      "the kernel socket stack, typically 10-25 us (netperf TCP_RR halves), 20 us taken; "
      "not measured on rcoll: rcoll_tune's alpha_inter / beta_inter in RCOLL_TUNE_FILE "
      "replace the default figures with measured ones" },
    { NULL, NULL, 0, 0, NULL },
};

const rcoll_net_profile_t *rcoll_net_profile_find(const char *name)
{
    for (const rcoll_net_profile_t *p = rcoll_net_profiles; name != NULL && p->name != NULL; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

void rcoll_net_profile_apply(const rcoll_net_profile_t *p, rcoll_model_t *m)
{
    m->alpha_inter = m->alpha + p->latency;
    m->beta_inter = 1.0 / p->bandwidth;
}

void rcoll_net_profiles_print(FILE *out)
{
    fprintf(out, "# network profiles for --net (alpha_inter = the model's alpha, rcoll's own\n"
            "# per-message cost, + latency; beta_inter = 1 / rate); without --net: the\n"
            "# model's inter-node figures (default or RCOLL_TUNE_FILE's)\n");
    fprintf(out, "# %-8s %10s %10s  %s\n", "name", "latency", "rate", "network");
    for (const rcoll_net_profile_t *p = rcoll_net_profiles; p->name != NULL; p++)
        fprintf(out, "  %-8s %8.1fus %6.2fGB/s  %s\n           source: %s\n", p->name,
                p->latency * 1e6, p->bandwidth * 1e-9, p->what, p->source);
}
