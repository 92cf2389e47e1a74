/* flashref: FlashAttention on the CPU, exactly to the FlashAttentionScore specification.
 *
 * The one public header. Tensors are views (dtype, shape, strides in elements, data pointer); parameters carry
 * every attribute of the operator (spec section 1.2) with the spec's defaults from fr_params_default(); every entry
 * point validates first, returns an fr_status and, when given an fr_error, a message naming the offending parameter.
 * Nothing in the library prints, exits or aborts; there is no global mutable state; all entry points are thread-safe.
 */
#ifndef FLASHREF_H
#define FLASHREF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLASHREF_VERSION_MAJOR 0
#define FLASHREF_VERSION_MINOR 1
#define FLASHREF_VERSION_PATCH 0
#define FLASHREF_VERSION_STRING "0.1.0"
/* Version of the case-directory format this build writes (docs/case-format.md). */
#define FLASHREF_CASE_FORMAT "flashref-case/1"

#if defined(_WIN32)
#define FR_API
#else
#define FR_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------------------------- */
/* Status codes. 0 = OK; every other value names one class of problem; the message says which parameter and value. */

typedef enum fr_status {
    FR_OK = 0,
    FR_E_NULL,            /* a required pointer (params, input, output, data) is NULL */
    FR_E_DTYPE,           /* a tensor's dtype is not allowed there, or q/k/v dtypes differ */
    FR_E_LAYOUT,          /* input_layout unknown, or a layout-only feature used with another layout */
    FR_E_RANK,            /* a tensor has the wrong number of dimensions for its layout */
    FR_E_SHAPE,           /* tensor shapes disagree with each other or with the layout */
    FR_E_RANGE,           /* B, N1, S1, S2, D, T outside the documented limits (spec D9) */
    FR_E_HEADS,           /* head_num invalid, N1 not a multiple of N2, H not divisible by head_num */
    FR_E_HEAD_DIM,        /* Dv > Dk, rope dims, D not derivable */
    FR_E_KEEP_PROB,       /* keep_prob outside (0, 1] or not finite */
    FR_E_SCALE,           /* scale_value not finite */
    FR_E_SPARSE_MODE,     /* sparse_mode outside 0..8, or a mode not allowed with this layout */
    FR_E_BAND,            /* pre_tokens / next_tokens violate the band rules (spec 4.1, 4.2) */
    FR_E_MASK,            /* atten_mask shape or dtype wrong for the sparse mode */
    FR_E_PSE,             /* pse_type, real_shift shape/dtype, pse with a mode that forbids it */
    FR_E_PREFIX,          /* prefix missing, wrong length, or out of range (modes 5/6) */
    FR_E_SEQLEN,          /* actual_seq_qlen/kvlen missing, not cumulative, inconsistent with T */
    FR_E_DROPOUT,         /* drop_mask missing when keep_prob < 1, wrong dtype, too short */
    FR_E_FP8,             /* fp8/hif8 restrictions (aclnn FP8 docs: no rope, pse, mask, dropout; D <= 128) */
    FR_E_DEQUANT_SCALE,   /* d_scale_q/k/v missing or of the wrong shape */
    FR_E_ROPE,            /* query_rope/key_rope shape, dtype or layout */
    FR_E_SINK,            /* sink shape or dtype */
    FR_E_TOPK,            /* topk_indices shape or dtype */
    FR_E_OUTPUT,          /* an output tensor has the wrong shape or a dtype this engine cannot write */
    FR_E_SOFTMAX_STATS,   /* backward: softmax_max/softmax_sum shape or dtype */
    FR_E_OVERFLOW,        /* a size or offset overflows 64-bit arithmetic */
    FR_E_NOMEM,           /* an allocation failed */
    FR_E_IO,              /* a file could not be opened, read or written */
    FR_E_FORMAT,          /* a file is malformed (npy, safetensors, case.json) */
    FR_E_UNSUPPORTED,     /* valid per the spec, but not supported by this engine / build */
    FR_E_NOT_AVAILABLE,   /* the requested engine or ISA is not available in this build or on this machine */
    FR_E_INVALID_ARG,     /* any other invalid argument (engine config, thread count, ...) */
    FR_E_INTERNAL,        /* a broken internal invariant: please report */
    FR_STATUS_COUNT
} fr_status;

/* A static, never-NULL English description of a status ("ok", "invalid dtype", ...). */
FR_API const char *fr_status_str(fr_status s);
/* The enum name ("FR_E_DTYPE"), for tables and logs. */
FR_API const char *fr_status_name(fr_status s);

#define FR_MSG_LEN 512
/* Optional error detail: filled by every entry point on failure, when non-NULL. */
typedef struct fr_error {
    fr_status status;
    char msg[FR_MSG_LEN]; /* e.g. "head_num: N1 = 6 is not a multiple of N2 = 4" */
} fr_error;

/* ---------------------------------------------------------------------------------------------------------------- */
/* Data types and number formats. */

typedef enum fr_dtype {
    FR_DT_NONE = 0, /* absent tensor */
    FR_F64,
    FR_F32,
    FR_F16,
    FR_BF16,
    FR_E4M3FN, /* OCP float8 e4m3fn: no Inf, NaN = S.1111.111, max 448 */
    FR_E5M2,   /* OCP float8 e5m2: IEEE-like, max 57344 */
    FR_HIF8,   /* Ascend HiFloat8 (spec section 9) */
    FR_I32,
    FR_I64,
    FR_U8,
    FR_BOOL,
    FR_DTYPE_COUNT
} fr_dtype;

FR_API const char *fr_dtype_name(fr_dtype t); /* "fp32", "bf16", "e4m3fn", "hif8", "int32", "bool", ... */
FR_API fr_dtype fr_dtype_from_name(const char *name); /* FR_DT_NONE when unknown; accepts the case-format names */
FR_API size_t fr_dtype_size(fr_dtype t);                /* bytes per element; 0 for FR_DT_NONE */

/* Rounding of a conversion from fp32 to a narrower format. */
typedef enum fr_round {
    FR_ROUND_NEAREST_EVEN = 0, /* IEEE default; GPU/PyTorch convention; Ascend CAST_RINT */
    FR_ROUND_HALF_AWAY = 1     /* ties away from zero; Ascend CAST_ROUND (spec D3) */
} fr_round;

/* Overflow behaviour. Saturating follows the "satfinite" rule: finite overflow and +-Inf go to +-max, NaN stays NaN.
 * Non-saturating: overflow goes to +-Inf (fp16, bf16, e5m2, hif8) or NaN (e4m3fn, which has no Inf). */
typedef enum fr_sat { FR_NO_SAT = 0, FR_SAT = 1 } fr_sat;

/* Scalar conversions. Encoders return the format's bit pattern; decoders are exact. */
FR_API uint16_t fr_f32_to_f16(float x, fr_round r, fr_sat s);
FR_API uint16_t fr_f32_to_bf16(float x, fr_round r, fr_sat s);
FR_API uint8_t fr_f32_to_e4m3fn(float x, fr_round r, fr_sat s);
FR_API uint8_t fr_f32_to_e5m2(float x, fr_round r, fr_sat s);
FR_API uint8_t fr_f32_to_hif8(float x, fr_round r, fr_sat s);
FR_API float fr_f16_to_f32(uint16_t h);
FR_API float fr_bf16_to_f32(uint16_t h);
FR_API float fr_e4m3fn_to_f32(uint8_t c);
FR_API float fr_e5m2_to_f32(uint8_t c);
FR_API float fr_hif8_to_f32(uint8_t c);

/* Array conversions (vectorized where it pays). dst holds n elements of `to`; src holds n elements of `from`.
 * Either side must be FR_F32 (fp32 -> narrow encodes with r/s; narrow -> fp32 decodes; fp32 -> fp32 copies).
 * Returns FR_E_DTYPE for an unsupported pair. */
FR_API fr_status fr_convert_array(fr_dtype to, void *dst, fr_dtype from, const void *src, size_t n, fr_round r,
                                  fr_sat s);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Tensor views. */

#define FR_MAX_DIMS 8

typedef struct fr_tensor {
    fr_dtype dtype;                /* FR_DT_NONE = absent */
    int ndim;                      /* 0..FR_MAX_DIMS */
    int64_t shape[FR_MAX_DIMS];
    int64_t strides[FR_MAX_DIMS];  /* in elements (not bytes); may be any value, including 0 (broadcast) */
    void *data;                    /* may be NULL only when the tensor has no elements */
} fr_tensor;

/* A contiguous (C-order) view; ndim <= FR_MAX_DIMS. */
FR_API fr_tensor fr_tensor_make(fr_dtype t, void *data, int ndim, const int64_t *shape);
FR_API bool fr_tensor_present(const fr_tensor *t);
/* Number of elements, or -1 when it overflows int64. */
FR_API int64_t fr_tensor_numel(const fr_tensor *t);
FR_API bool fr_tensor_is_contiguous(const fr_tensor *t);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Operator parameters (spec section 1.2), defaults from fr_params_default(). */

typedef enum fr_layout { FR_LAYOUT_NONE = 0, FR_BSH, FR_SBH, FR_BSND, FR_BNSD, FR_TND } fr_layout;
FR_API const char *fr_layout_name(fr_layout l);
FR_API fr_layout fr_layout_from_name(const char *name); /* case-insensitive; FR_LAYOUT_NONE when unknown */

typedef enum fr_softmax_layout {
    FR_SOFTMAX_DEFAULT = 0,      /* [B,N1,S1,8]; TND: [N1,T,8] */
    FR_SOFTMAX_SAME_AS_INPUT = 1 /* TND only: [T,N1,8] */
} fr_softmax_layout;

#define FR_TOKENS_MAX INT64_C(2147483647)

/* sparse_mode (spec 4.2): how atten_mask and pre_tokens/next_tokens make the pattern of positions that take part. */
typedef enum fr_sparse_mode {
    FR_SPARSE_DEFAULT_MASK = 0,           /* defaultMask: the user mask, and the band when pre/next are set */
    FR_SPARSE_ALL_MASK = 1,               /* allMask: the user mask as given (pre/next ignored) */
    FR_SPARSE_LEFT_UP_CAUSAL = 2,         /* leftUpCausal: j > i masked (compressed mask) */
    FR_SPARSE_RIGHT_DOWN_CAUSAL = 3,      /* rightDownCausal: j > i + S2 - S1 masked (compressed mask) */
    FR_SPARSE_BAND = 4,                   /* band with a bottom-right origin (compressed mask) */
    FR_SPARSE_PREFIX = 5,                 /* prefix, the user's full mask; not with TND */
    FR_SPARSE_PREFIX_COMPRESS = 6,        /* prefix, the compressed 3072 x 2048 mask */
    FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND = 7, /* TND only: mode 3, the last non-empty batch a mode-4 band */
    FR_SPARSE_BAND_LEFT_UP_CAUSAL = 8,    /* TND only: mode 2, the first non-empty batch a mode-4 band */
    FR_SPARSE_MODE_COUNT
} fr_sparse_mode;

/* pse_type (spec 5.1): where real_shift comes from and where it enters the scores. */
typedef enum fr_pse_type {
    FR_PSE_OUTER_MUL_ADD = 0,      /* a pse tensor: scale * QK^T + pse */
    FR_PSE_OUTER_ADD_MUL = 1,      /* the default: a pse tensor: scale * (QK^T + pse) */
    FR_PSE_INNER_MUL_ADD = 2,      /* slopes: scale * QK^T - slope * |j + kv_start - i - q_start| */
    FR_PSE_INNER_MUL_ADD_SQRT = 3, /* slopes: scale * QK^T - slope * sqrt(|j + kv_start - i - q_start|) */
    FR_PSE_TYPE_COUNT
} fr_pse_type;

typedef struct fr_params {
    int64_t head_num;         /* N1, required */
    fr_layout input_layout;   /* required */
    double scale_value;       /* default 1.0; converted to fp32 by the kernels as the spec says */
    double keep_prob;         /* default 1.0; (0, 1] */
    int64_t pre_tokens;       /* default 2147483647 */
    int64_t next_tokens;      /* default 2147483647 */
    int inner_precise;        /* default 0; 0, 1, 2 (fully masked rows follow D1 in every mode) */
    int sparse_mode;          /* an fr_sparse_mode; default FR_SPARSE_DEFAULT_MASK */
    int pse_type;             /* an fr_pse_type; default FR_PSE_OUTER_ADD_MUL (ints: validation sees any value) */
    const int64_t *prefix;    /* modes 5/6: per-batch prefix lengths (length prefix_len) */
    int64_t prefix_len;
    const int64_t *actual_seq_qlen;  /* TND: cumulative end offsets, length actual_seq_len */
    const int64_t *actual_seq_kvlen; /* TND: cumulative end offsets, length actual_seq_len */
    int64_t actual_seq_len;          /* B for TND */
    int64_t q_start_idx;      /* pse_type 2/3; default 0 */
    int64_t kv_start_idx;     /* pse_type 2/3; default 0 */
    fr_dtype out_dtype;       /* FR_DT_NONE = the spec's default: the input dtype; fp8 inputs: FR_F16 (or FR_BF16) */
    fr_softmax_layout softmax_layout;
} fr_params;

FR_API fr_params fr_params_default(void);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Inputs and outputs. Absent optional tensors have dtype FR_DT_NONE (a zero-initialised fr_tensor). */

typedef struct fr_fwd_inputs {
    fr_tensor query, key, value;   /* layout-dependent shapes (spec 2.1) */
    fr_tensor real_shift;          /* pse: [B,N1,S1,S2], [B,N1,1,S2], [1,N1,S1,S2], [B|1,N1,1024,S2]; slopes [B,N1] or [N1] */
    fr_tensor drop_mask;           /* uint8, bit-packed LSB first, 1 = keep (spec D4, section 6) */
    fr_tensor atten_mask;          /* bool or uint8, nonzero = masked */
    fr_tensor d_scale_q, d_scale_k, d_scale_v; /* fp8 only (spec D5) */
    fr_tensor query_rope, key_rope;
    fr_tensor sink;                /* fp32 [N1] */
    fr_tensor topk_indices;        /* int32 [B,S1,W] or [B,N2,S1,W] (TND: [T,W] or [T,N2,W]) (spec D7) */
} fr_fwd_inputs;

typedef struct fr_fwd_outputs {
    fr_tensor attention_out; /* query's shape with last dim Dv */
    fr_tensor softmax_max;   /* fp32 (or fp64) [B,N1,S1,8]; TND [N1,T,8] or [T,N1,8] */
    fr_tensor softmax_sum;
} fr_fwd_outputs;

typedef struct fr_bwd_inputs {
    fr_fwd_inputs fwd;       /* the forward's inputs */
    fr_tensor dy;            /* attention_out's shape */
    fr_tensor attention_in;  /* the forward output O */
    fr_tensor softmax_max;   /* from the forward */
    fr_tensor softmax_sum;
} fr_bwd_inputs;

typedef struct fr_bwd_outputs {
    fr_tensor dq, dk, dv;    /* shapes of query, key, value */
    fr_tensor dq_rope, dk_rope; /* when rope is present */
    fr_tensor dsink;         /* fp32 [N1] when sink is present */
} fr_bwd_outputs;

/* Output dtypes: every engine writes outputs in the operator's dtype (rounded as the spec says, D3), and also in
 * FR_F32 or FR_F64 (no final rounding), which is how the golden's fp64 results are kept. */

/* ---------------------------------------------------------------------------------------------------------------- */
/* Engines. */

typedef enum fr_engine_kind {
    FR_ENGINE_GOLDEN = 0, /* fp64 reference */
    FR_ENGINE_FAST = 1,   /* fused tiled CPU kernels */
    FR_ENGINE_EMULATE = 2 /* numerics emulator, configured by `numerics` */
} fr_engine_kind;

typedef enum fr_isa {
    FR_ISA_AUTO = 0, /* best the CPU has, unless FLASHREF_ISA is set */
    FR_ISA_SCALAR,
    FR_ISA_AVX2,
    FR_ISA_AVX512,
    FR_ISA_AVX512_BF16,
    FR_ISA_AMX /* AVX512-BF16 plus AMX tiles (TDPBF16PS) for the bf16 GEMMs; needs the Linux tile permission */
} fr_isa;

/* The one CPU dispatcher (every variant choice in the library goes through it). */
/* The k-th variant of the library's one list (k = 0: scalar ... best last); FR_ISA_AUTO for k out of range. */
FR_API fr_isa fr_isa_variant(int k);
/* Spelling of a variant ("scalar", "avx2", "avx512", "avx512bf16", "amx"; "auto"; "unknown" for anything else). */
FR_API const char *fr_isa_name(fr_isa isa);
/* FR_OK and *isa for a FLASHREF_ISA spelling; FR_E_INVALID_ARG (message listing the names) for anything else. */
FR_API fr_status fr_isa_parse(const char *name, fr_isa *isa, fr_error *err);
/* Whether this build, this CPU (cpuid) and, for AMX, the OS (tile state granted) run the variant.
 * FR_ISA_AUTO, FR_ISA_SCALAR: true. */
FR_API bool fr_isa_available(fr_isa isa);
/* The variant FR_ISA_AUTO means in this process: the best available one, lowered by FLASHREF_ISA when set (read and
 * cached once). FR_E_INVALID_ARG with a message when FLASHREF_ISA names no variant: every automatic choice (fast
 * engine, conversions) then fails with that status rather than guess. */
FR_API fr_status fr_isa_selected(fr_isa *isa, fr_error *err);

typedef struct fr_numerics fr_numerics; /* emulator configuration; see flashref_emulate.h */

/* Progress of one fr_fwd / fr_bwd call: done of total work units (the engine's tasks: blocks of query rows, key
 * blocks), called with done = 0 when the work starts, as units finish and with done = total at the end. Called
 * only on the thread that called fr_fwd / fr_bwd, never twice at once, so it may print (the library never does:
 * the flashref command draws a line from it). It must return quickly and must not call back into the engine. */
typedef void (*fr_progress_fn)(void *ud, int64_t done, int64_t total);

typedef struct fr_engine {
    fr_engine_kind kind;
    int num_threads;               /* 0 = OpenMP default; results are bit-identical for any count */
    fr_isa isa;                    /* fast engine: force a variant (overrides FLASHREF_ISA) */
    const fr_numerics *numerics;   /* emulate engine: NULL = the "ideal" pipeline of the input dtype */
    fr_progress_fn progress;       /* NULL (default): no reports */
    void *progress_ud;             /* handed to progress */
} fr_engine;

FR_API fr_engine fr_engine_default(fr_engine_kind kind);
FR_API const char *fr_engine_name(fr_engine_kind kind);
/* FR_OK when the engine exists in this build (and, for FR_ENGINE_FAST with an ISA, the CPU has it). */
FR_API fr_status fr_engine_available(const fr_engine *e, fr_error *err);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Entry points. Validate everything first; on failure nothing is written to the outputs. */

FR_API fr_status fr_validate_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                                 fr_error *err);
FR_API fr_status fr_validate_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                                 fr_error *err);

FR_API fr_status fr_fwd(const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out, const fr_engine *e,
                        fr_error *err);
FR_API fr_status fr_bwd(const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out, const fr_engine *e,
                        fr_error *err);

/* Version of the library actually linked (may differ from the header's macros). */
FR_API const char *fr_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHREF_H */
