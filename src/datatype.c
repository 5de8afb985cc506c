/* datatype.c - sizes and names of datatypes, ops and status codes. */
#include "rcoll.h"
#include "status.h"

static const size_t dtype_sizes[RCOLL_DATATYPE_LAST] = {
    [RCOLL_INT8] = 1,   [RCOLL_UINT8] = 1,  [RCOLL_INT16] = 2,    [RCOLL_UINT16] = 2,
    [RCOLL_INT32] = 4,  [RCOLL_UINT32] = 4, [RCOLL_INT64] = 8,    [RCOLL_UINT64] = 8,
    [RCOLL_FLOAT16] = 2, [RCOLL_BFLOAT16] = 2, [RCOLL_FLOAT32] = 4, [RCOLL_FLOAT64] = 8,
};

static const char *const dtype_names[RCOLL_DATATYPE_LAST] = {
    [RCOLL_INT8] = "int8",   [RCOLL_UINT8] = "uint8",   [RCOLL_INT16] = "int16",
    [RCOLL_UINT16] = "uint16", [RCOLL_INT32] = "int32", [RCOLL_UINT32] = "uint32",
    [RCOLL_INT64] = "int64", [RCOLL_UINT64] = "uint64", [RCOLL_FLOAT16] = "float16",
    [RCOLL_BFLOAT16] = "bfloat16", [RCOLL_FLOAT32] = "float32", [RCOLL_FLOAT64] = "float64",
};

static const char *const op_names[RCOLL_OP_LAST] = {
    [RCOLL_SUM] = "sum", [RCOLL_PROD] = "prod", [RCOLL_MIN] = "min", [RCOLL_MAX] = "max",
    [RCOLL_BAND] = "band", [RCOLL_BOR] = "bor", [RCOLL_BXOR] = "bxor",
};

/* One list gives every status its text. */
static const char *const status_text[RCOLL_STATUS_LAST] = {
    [RCOLL_OK]                = "success",
    [RCOLL_ERR_INVALID_ARG]   = "invalid argument",
    [RCOLL_ERR_NO_MEMORY]     = "out of memory",
    [RCOLL_ERR_NOT_SUPPORTED] = "not supported",
    [RCOLL_ERR_BOOTSTRAP]     = "bootstrap failure (PMIx or the oob all-gather)",
    [RCOLL_ERR_TRANSPORT]     = "transport error",
    [RCOLL_ERR_TIMEOUT]       = "timed out",
    [RCOLL_ERR_PEER_FAILED]   = "peer failed",
    [RCOLL_ERR_INTERNAL]      = "internal error",
    [RCOLL_ERR_TRUNCATED]     = "message truncated",
    [RCOLL_ERR_PROTOCOL]      = "protocol error (malformed or unexpected message)",
    [RCOLL_ERR_NOT_FINALIZED] = "resources still in use",
};

RCOLL_API size_t rcoll_datatype_size(rcoll_datatype_t dtype)
{
    return ((unsigned)dtype < RCOLL_DATATYPE_LAST) ? dtype_sizes[dtype] : 0;
}

RCOLL_API const char *rcoll_datatype_name(rcoll_datatype_t dtype)
{
    return ((unsigned)dtype < RCOLL_DATATYPE_LAST) ? dtype_names[dtype] : "unknown";
}

RCOLL_API const char *rcoll_op_name(rcoll_op_t op)
{
    return ((unsigned)op < RCOLL_OP_LAST) ? op_names[op] : "unknown";
}

RCOLL_API const char *rcoll_strerror(rcoll_status_t status)
{
    if ((unsigned)status < RCOLL_STATUS_LAST) {
        return status_text[status];
    }
    if (status == RCOLL_INPROGRESS) {
        return "in progress";
    }
    if (status == RCOLL_AGAIN) {
        return "no resources, try again";
    }
    return "unknown status";
}
