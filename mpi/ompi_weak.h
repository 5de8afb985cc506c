/*
 * ompi_weak.h - Open MPI's predefined handles are addresses of ompi_mpi_*
 * objects.  Referenced weakly, they let librcoll_mpi_ompi.so load into a
 * process of another MPI (where they are NULL: see right_mpi() in
 * layer_init.c) instead of failing at load time.  Every such object the
 * layer uses must be listed here; test/mpi/run.sh checks that the library
 * has no strong undefined ompi_* symbol.
 */
#ifndef RCOLL_MPI_OMPI_WEAK_H
#define RCOLL_MPI_OMPI_WEAK_H
#pragma weak OMPI_C_MPI_COMM_NULL_COPY_FN
#pragma weak ompi_mpi_aint
#pragma weak ompi_mpi_byte
#pragma weak ompi_mpi_char
#pragma weak ompi_mpi_character
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_comm_self
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_count
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_mpi_dblprec
#pragma weak ompi_mpi_double
#pragma weak ompi_mpi_float
#pragma weak ompi_mpi_group_null
#pragma weak ompi_mpi_int
#pragma weak ompi_mpi_int16_t
#pragma weak ompi_mpi_int32_t
#pragma weak ompi_mpi_int64_t
#pragma weak ompi_mpi_int8_t
#pragma weak ompi_mpi_integer
#pragma weak ompi_mpi_integer1
#pragma weak ompi_mpi_integer2
#pragma weak ompi_mpi_integer4
#pragma weak ompi_mpi_integer8
#pragma weak ompi_mpi_long
#pragma weak ompi_mpi_long_long_int
#pragma weak ompi_mpi_offset
#pragma weak ompi_mpi_op_band
#pragma weak ompi_mpi_op_bor
#pragma weak ompi_mpi_op_bxor
#pragma weak ompi_mpi_op_land
#pragma weak ompi_mpi_op_lor
#pragma weak ompi_mpi_op_lxor
#pragma weak ompi_mpi_op_max
#pragma weak ompi_mpi_op_maxloc
#pragma weak ompi_mpi_op_min
#pragma weak ompi_mpi_op_minloc
#pragma weak ompi_mpi_op_no_op
#pragma weak ompi_mpi_op_null
#pragma weak ompi_mpi_op_prod
#pragma weak ompi_mpi_op_replace
#pragma weak ompi_mpi_op_sum
#pragma weak ompi_mpi_real
#pragma weak ompi_mpi_real4
#pragma weak ompi_mpi_real8
#pragma weak ompi_mpi_short
#pragma weak ompi_mpi_signed_char
#pragma weak ompi_mpi_uint16_t
#pragma weak ompi_mpi_uint32_t
#pragma weak ompi_mpi_uint64_t
#pragma weak ompi_mpi_uint8_t
#pragma weak ompi_mpi_unsigned
#pragma weak ompi_mpi_unsigned_char
#pragma weak ompi_mpi_unsigned_long
#pragma weak ompi_mpi_unsigned_long_long
#pragma weak ompi_mpi_unsigned_short
#pragma weak ompi_mpi_wchar

#endif
