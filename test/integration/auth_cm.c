/*
 * auth_cm.c - auth_check --verbs: a process without the job's secret asks a
 * rank's rdma_cm listener for a connection, claiming a lower rank of the
 * job, with a proof made up without the secret (verbs_cm.c's private-data
 * layout).  The listener must refuse it (REJECTED, or the connection never
 * establishing); auth_check then checks the log and that the job went on.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include "auth_cm.h"

#define ADDR_FIXED 52                  /* transports/verbs/verbs_addr.c */
#define CM_MAGIC   0x52434d32u

/* The next event on ch within ms milliseconds; -1 if none. */
static int next_event(struct rdma_event_channel *ch, int ms, enum rdma_cm_event_type *type,
                      int *status)
{
    struct pollfd p = { .fd = ch->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    if (poll(&p, 1, ms) <= 0 || rdma_get_cm_event(ch, &ev) != 0) {
        return -1;
    }
    *type = ev->event;
    *status = ev->status;
    rdma_ack_cm_event(ev);
    return 0;
}

static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
    enum rdma_cm_event_type t = RDMA_CM_EVENT_ADDR_ERROR;
    int status;
    if (next_event(ch, 5000, &t, &status) != 0 || t != want) {
        fprintf(stderr, "FAIL auth_check --verbs: waiting for %s, got %s\n", rdma_event_str(want),
                rdma_event_str(t));
        return -1;
    }
    return 0;
}

int auth_cm_forge(const uint8_t *vaddr, size_t len, uint32_t claimed, uint32_t target)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (len < ADDR_FIXED + 20 || vaddr[2] != 2) {
        fprintf(stderr, "FAIL auth_check --verbs: the target's verbs address names no rdma_cm "
                "listener (set RCOLL_VERBS_CM=rdmacm or use an iWARP device)\n");
        return -1;
    }
    const uint8_t *a = vaddr + ADDR_FIXED;
    if (a[0] == 6) {
        struct sockaddr_in6 *s6 = (void *)&ss;
        s6->sin6_family = AF_INET6;
        memcpy(&s6->sin6_port, a + 2, 2);
        memcpy(&s6->sin6_addr, a + 4, 16);
    } else {
        struct sockaddr_in *s4 = (void *)&ss;
        s4->sin_family = AF_INET;
        memcpy(&s4->sin_port, a + 2, 2);
        memcpy(&s4->sin_addr, a + 4, 4);
    }
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id = NULL;
    if (ch == NULL || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
        rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) != 0 ||
        expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED) != 0 || rdma_resolve_route(id, 2000) != 0 ||
        expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0) {
        fprintf(stderr, "FAIL auth_check --verbs: cannot reach the listener\n");
        return -1;
    }
    struct ibv_cq *cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
    if (cq == NULL || rdma_create_qp(id, NULL, &qa) != 0) {
        fprintf(stderr, "FAIL auth_check --verbs: cannot create the forger's QP\n");
        return -1;
    }
    /* magic, src, dst, nonce, credit slot (address, rkey), mac: the layout of
     * verbs_cm.c with a made-up mac */
    uint8_t priv[40] = { 0 };
    uint32_t v32[3] = { CM_MAGIC, claimed, target };
    uint64_t nonce = 0x1122334455667788ULL, mac = 0xdeadbeefcafef00dULL;
    memcpy(priv, v32, 12);
    memcpy(priv + 12, &nonce, 8);
    memcpy(priv + 32, &mac, 8);
    struct rdma_conn_param p = { .private_data = priv, .private_data_len = sizeof(priv),
                                 .responder_resources = 1, .initiator_depth = 1,
                                 .retry_count = 6, .rnr_retry_count = 3 };
    int refused = -1;
    if (rdma_connect(id, &p) != 0) {
        refused = 0;                   /* refused at once */
    } else {
        enum rdma_cm_event_type t;
        int status;
        if (next_event(ch, 10000, &t, &status) != 0) {
            refused = 0;               /* never established */
        } else if (t == RDMA_CM_EVENT_ESTABLISHED) {
            fprintf(stderr, "FAIL auth_check --verbs: the listener ESTABLISHED a connection from a "
                    "forged rank %u\n", claimed);
        } else {
            printf("auth_check --verbs: the forged request ended with %s (status %d)\n",
                   rdma_event_str(t), status);
            refused = 0;
        }
    }
    rdma_disconnect(id);
    rdma_destroy_qp(id);
    ibv_destroy_cq(cq);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return refused;
}
