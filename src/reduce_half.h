/*
 * reduce_half.h - float16 / bfloat16 reduction (internal to the kernels).
 *
 * Both convert blocks of elements to float, reduce in float and round back to
 * nearest even.  Rounding the exact float result once more is innocuous: float
 * has at least 2p+2 significand bits for both formats (p = 11 and p = 8).
 */
#ifndef RCOLL_REDUCE_HALF_H
#define RCOLL_REDUCE_HALF_H

#include <stddef.h>
#include "rcoll.h"

/* dst[i] = a[i] op b[i]; dst may equal a and/or b; any alignment. */
void rcoll__reduce_f16(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op);
void rcoll__reduce_bf16(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op);

/* The float16 code without CPU-specific instructions (rcoll__reduce_f16 uses
 * F16C where the CPU has it); exposed for the unit tests. */
void rcoll__reduce_f16_portable(void *dst, const void *a, const void *b, size_t count,
                                rcoll_op_t op);

#endif
