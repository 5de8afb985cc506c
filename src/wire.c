/* wire.c - encode and validate message headers (layout in wire.h). */
#include <endian.h>
#include <stdio.h>
#include <string.h>
#include "wire.h"
#include "transport.h"

/* Little-endian fields through memcpy: one load or store each on the
 * usual hosts, byte order fixed on any. */
static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, sizeof(v)); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, sizeof(v)); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, sizeof(v)); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, sizeof(v)); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, sizeof(v)); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, sizeof(v)); return le64toh(v); }

void rcoll_wire_encode(const rcoll_wire_hdr_t *h, void *buf)
{
    uint8_t *p = buf;
    p[0] = h->type;
    p[1] = h->version;
    put16(p + 2, h->rkey_len);
    put32(p + 4, h->seq);
    put64(p + 8, h->comm_id);
    put32(p + 16, h->step);
    put32(p + 20, h->src);
    put64(p + 24, h->len);
    put64(p + 32, h->addr);
    put32(p + 40, h->sig);
    put32(p + 44, 0);
}

const char *rcoll_msg_type_name(int type)
{
    switch (type) {
    case RCOLL_MSG_EAGER: return "EAGER";
    case RCOLL_MSG_RTR:   return "RTR";
    case RCOLL_MSG_FIN:   return "FIN";
    case RCOLL_MSG_RTS:   return "RTS";
    case RCOLL_MSG_DONE:  return "DONE";
    case RCOLL_MSG_WITHDRAW: return "WITHDRAW";
    case RCOLL_MSG_DECLINE:  return "DECLINE";
    case RCOLL_MSG_WHERE_Q:  return "WHERE_Q";
    case RCOLL_MSG_WHERE_A:  return "WHERE_A";
    case RCOLL_MSG_HOLD:     return "HOLD";
    case RCOLL_MSG_PULL:     return "PULL";
    case RCOLL_MSG_PULLED:   return "PULLED";
    case RCOLL_MSG_CREDIT:   return "CREDIT";
    case RCOLL_MSG_REVOKE:   return "REVOKE";
    case RCOLL_MSG_SHRINK:   return "SHRINK";
    default:              return "unknown";
    }
}

rcoll_status_t rcoll_wire_decode(const void *msg, size_t msg_len, rcoll_wire_hdr_t *h,
                                 const void **body, size_t *body_len, char *err, size_t errlen)
{
    const uint8_t *p = msg;
    if (msg == NULL || msg_len < RCOLL_WIRE_HDR_SIZE) {
        snprintf(err, errlen, "message of %zu bytes is shorter than a header", msg_len);
        return RCOLL_ERR_PROTOCOL;
    }
    h->type = p[0];
    h->version = p[1];
    h->rkey_len = get16(p + 2);
    h->seq = get32(p + 4);
    h->comm_id = get64(p + 8);
    h->step = get32(p + 16);
    h->src = get32(p + 20);
    h->len = get64(p + 24);
    h->addr = get64(p + 32);
    h->sig = get32(p + 40);
    if (h->version != RCOLL_WIRE_VERSION) {
        snprintf(err, errlen, "wire version %u, expected %u (mixed rcoll versions?)",
                 h->version, RCOLL_WIRE_VERSION);
        return RCOLL_ERR_PROTOCOL;
    }
    uint32_t reserved = get32(p + 44);
    if (reserved != 0) {
        /* Never meaningful today: a peer that sets them is broken, hostile or
         * speaks a later protocol whose meaning this rank would miss. */
        snprintf(err, errlen, "%s with reserved header bytes 0x%08x, not 0",
                 rcoll_msg_type_name(h->type), reserved);
        return RCOLL_ERR_PROTOCOL;
    }
    size_t rest = msg_len - RCOLL_WIRE_HDR_SIZE;
    switch (h->type) {
    case RCOLL_MSG_EAGER:
    case RCOLL_MSG_PULLED:
    case RCOLL_MSG_SHRINK:
        if (h->len != rest || h->rkey_len != 0) {
            snprintf(err, errlen, "%s says %llu payload bytes, carries %zu",
                     rcoll_msg_type_name(h->type), (unsigned long long)h->len, rest);
            return RCOLL_ERR_PROTOCOL;
        }
        break;
    case RCOLL_MSG_RTR:
    case RCOLL_MSG_RTS:
        if (h->rkey_len == 0 || h->rkey_len > RCOLL_TL_RKEY_MAX || h->rkey_len != rest) {
            snprintf(err, errlen, "%s with a %u-byte key carries %zu bytes",
                     rcoll_msg_type_name(h->type), h->rkey_len, rest);
            return RCOLL_ERR_PROTOCOL;
        }
        break;
    case RCOLL_MSG_FIN:
    case RCOLL_MSG_DONE:
    case RCOLL_MSG_WITHDRAW:
    case RCOLL_MSG_DECLINE:
    case RCOLL_MSG_HOLD:
    case RCOLL_MSG_PULL:
    case RCOLL_MSG_CREDIT:
    case RCOLL_MSG_REVOKE:
        if (rest != 0 || h->rkey_len != 0) {
            snprintf(err, errlen, "%s with %zu trailing bytes", rcoll_msg_type_name(h->type), rest);
            return RCOLL_ERR_PROTOCOL;
        }
        break;
    case RCOLL_MSG_WHERE_Q:
    case RCOLL_MSG_WHERE_A:
        if (h->len != rest || rest > RCOLL_WIRE_WHERE_MAX || h->rkey_len != 0) {
            snprintf(err, errlen, "%s says %llu bytes, carries %zu (at most %d)",
                     rcoll_msg_type_name(h->type), (unsigned long long)h->len, rest,
                     RCOLL_WIRE_WHERE_MAX);
            return RCOLL_ERR_PROTOCOL;
        }
        break;
    default:
        snprintf(err, errlen, "unknown message type %u", h->type);
        return RCOLL_ERR_PROTOCOL;
    }
    *body = p + RCOLL_WIRE_HDR_SIZE;
    *body_len = rest;
    return RCOLL_OK;
}
