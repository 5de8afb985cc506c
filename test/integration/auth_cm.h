/* auth_cm.h - auth_check's forged rdma_cm connection request (auth_cm.c). */
#ifndef AUTH_CM_H
#define AUTH_CM_H
#include <stddef.h>
#include <stdint.h>
/* Connect to the rdma_cm listener in a verbs address blob claiming rank
 * `claimed`, addressed to `target`, without a valid proof: 0 if refused. */
int auth_cm_forge(const uint8_t *verbs_addr, size_t len, uint32_t claimed, uint32_t target);
#endif
