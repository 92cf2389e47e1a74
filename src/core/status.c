/* Status codes and error messages. */
#include "core/core.h"

#include <stdio.h>
#include <string.h>

static const char *const status_text[FR_STATUS_COUNT] = {
    [FR_OK] = "ok",
    [FR_E_NULL] = "required pointer is NULL",
    [FR_E_DTYPE] = "invalid dtype",
    [FR_E_LAYOUT] = "invalid input layout",
    [FR_E_RANK] = "wrong tensor rank",
    [FR_E_SHAPE] = "inconsistent tensor shapes",
    [FR_E_RANGE] = "dimension out of range",
    [FR_E_HEADS] = "invalid head numbers",
    [FR_E_HEAD_DIM] = "invalid head dimension",
    [FR_E_KEEP_PROB] = "keep_prob outside (0, 1]",
    [FR_E_SCALE] = "invalid scale_value",
    [FR_E_SPARSE_MODE] = "invalid sparse_mode",
    [FR_E_BAND] = "invalid pre_tokens/next_tokens",
    [FR_E_MASK] = "invalid atten_mask",
    [FR_E_PSE] = "invalid pse",
    [FR_E_PREFIX] = "invalid prefix",
    [FR_E_SEQLEN] = "invalid actual_seq_qlen/kvlen",
    [FR_E_DROPOUT] = "invalid dropout mask",
    [FR_E_FP8] = "fp8/hif8 restriction violated",
    [FR_E_DEQUANT_SCALE] = "invalid dequant scale",
    [FR_E_ROPE] = "invalid query_rope/key_rope",
    [FR_E_SINK] = "invalid sink",
    [FR_E_TOPK] = "invalid topk_indices",
    [FR_E_OUTPUT] = "invalid output tensor",
    [FR_E_SOFTMAX_STATS] = "invalid softmax_max/softmax_sum input",
    [FR_E_OVERFLOW] = "size overflows 64-bit",
    [FR_E_NOMEM] = "out of memory",
    [FR_E_IO] = "i/o error",
    [FR_E_FORMAT] = "malformed file",
    [FR_E_UNSUPPORTED] = "not supported by this engine",
    [FR_E_NOT_AVAILABLE] = "not available in this build or on this machine",
    [FR_E_INVALID_ARG] = "invalid argument",
    [FR_E_INTERNAL] = "internal error",
};

static const char *const status_names[FR_STATUS_COUNT] = {
    [FR_OK] = "FR_OK", [FR_E_NULL] = "FR_E_NULL", [FR_E_DTYPE] = "FR_E_DTYPE", [FR_E_LAYOUT] = "FR_E_LAYOUT",
    [FR_E_RANK] = "FR_E_RANK", [FR_E_SHAPE] = "FR_E_SHAPE", [FR_E_RANGE] = "FR_E_RANGE",
    [FR_E_HEADS] = "FR_E_HEADS", [FR_E_HEAD_DIM] = "FR_E_HEAD_DIM", [FR_E_KEEP_PROB] = "FR_E_KEEP_PROB",
    [FR_E_SCALE] = "FR_E_SCALE", [FR_E_SPARSE_MODE] = "FR_E_SPARSE_MODE", [FR_E_BAND] = "FR_E_BAND",
    [FR_E_MASK] = "FR_E_MASK", [FR_E_PSE] = "FR_E_PSE", [FR_E_PREFIX] = "FR_E_PREFIX",
    [FR_E_SEQLEN] = "FR_E_SEQLEN", [FR_E_DROPOUT] = "FR_E_DROPOUT", [FR_E_FP8] = "FR_E_FP8",
    [FR_E_DEQUANT_SCALE] = "FR_E_DEQUANT_SCALE", [FR_E_ROPE] = "FR_E_ROPE", [FR_E_SINK] = "FR_E_SINK",
    [FR_E_TOPK] = "FR_E_TOPK", [FR_E_OUTPUT] = "FR_E_OUTPUT", [FR_E_SOFTMAX_STATS] = "FR_E_SOFTMAX_STATS",
    [FR_E_OVERFLOW] = "FR_E_OVERFLOW", [FR_E_NOMEM] = "FR_E_NOMEM", [FR_E_IO] = "FR_E_IO",
    [FR_E_FORMAT] = "FR_E_FORMAT", [FR_E_UNSUPPORTED] = "FR_E_UNSUPPORTED",
    [FR_E_NOT_AVAILABLE] = "FR_E_NOT_AVAILABLE", [FR_E_INVALID_ARG] = "FR_E_INVALID_ARG",
    [FR_E_INTERNAL] = "FR_E_INTERNAL",
};

const char *fr_status_str(fr_status s) {
    if ((unsigned)s >= FR_STATUS_COUNT) return "unknown status";
    return status_text[s];
}

const char *fr_status_name(fr_status s) {
    if ((unsigned)s >= FR_STATUS_COUNT) return "FR_E_UNKNOWN";
    return status_names[s];
}

fr_status fr_fail(fr_error *err, fr_status status, const char *fmt, ...) {
    if (err) {
        err->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

void fr_error_clear(fr_error *err) {
    if (err) {
        err->status = FR_OK;
        err->msg[0] = '\0';
    }
}

const char *fr_version(void) { return FLASHREF_VERSION_STRING; }
