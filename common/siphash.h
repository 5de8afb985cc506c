/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein, 2012), a keyed 64-bit
 * MAC for short messages, written from the paper's description.  rcoll
 * uses it for the authentication of messages and connection requests
 * between the ranks of one job (src/auth.c, docs/security.md).  The
 * reference test vectors are checked in test/unit/test_auth.c; the code is
 * in src/siphash.c (common/ holds headers only).
 */
#ifndef RCOLL_SIPHASH_H
#define RCOLL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define RCOLL_SIPHASH_KEY_LEN 16

/* SipHash-2-4 of msg (len bytes) under a 128-bit key (key[0..7] is k0 and
 * key[8..15] k1, little-endian, as in the paper). */
uint64_t rcoll__siphash24(const uint8_t key[RCOLL_SIPHASH_KEY_LEN], const void *msg, size_t len);

#endif
