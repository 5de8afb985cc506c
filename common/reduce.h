/*
 * reduce.h - local reduction kernels for every datatype x op.
 *
 * Integer kernels wrap around like unsigned arithmetic (two's complement).
 * float16 and bfloat16 are converted to float, reduced, and rounded back to
 * nearest even; NaN stays NaN.  MIN/MAX on floats follow fminf/fmaxf only in
 * that a NaN operand is not propagated preferentially: they use (a < b ? a : b).
 */
#ifndef RCOLL_REDUCE_H
#define RCOLL_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"

/* 1 if op is defined on dtype (bitwise ops: integer types only). */
int  rcoll_op_valid(rcoll_datatype_t dtype, rcoll_op_t op);

/* inout[i] = inout[i] op in[i] for i < count.  Buffers may be unaligned; they
 * must not overlap unless inout == in. */
void rcoll_reduce_local(void *inout, const void *in, size_t count,
                        rcoll_datatype_t dtype, rcoll_op_t op);

/* dst[i] = a[i] op b[i]; dst may equal a or b. */
void rcoll_reduce_local3(void *dst, const void *a, const void *b, size_t count,
                         rcoll_datatype_t dtype, rcoll_op_t op);

/* dst[i] = a[i] op b[i], and copy[i] = the same value, in one pass over a
 * and b (the same bits as rcoll_reduce_local3).  dst may equal a or b; copy
 * overlaps none of them.  stream: copy is written with non-temporal stores
 * (no read for ownership; for a copy that leaves this core's caches) where
 * the CPU has them and copy is 16-byte aligned, then fenced; else, or where
 * copy is not aligned, with plain stores.  Any alignment otherwise. */
void rcoll_reduce_local3_copy(void *dst, const void *a, const void *b, void *copy, size_t count,
                              rcoll_datatype_t dtype, rcoll_op_t op, int stream);

/* IEEE binary16 and bfloat16 conversions (round to nearest even). */
float    rcoll_half_to_float(uint16_t h);
uint16_t rcoll_float_to_half(float f);
float    rcoll_bf16_to_float(uint16_t b);
uint16_t rcoll_float_to_bf16(float f);

#endif
