/* A runner's capability declaration (docs/exec-protocol.md, "Runner capabilities (declared)"): the JSON object a
 * persistent runner sends as its first stdout line under FLASHREF_PROTOCOL=persistent-2, or that a callback
 * implementation is given (flashref.verify(fn, capabilities=...)), parsed strictly into plain data. The runner is not
 * trusted: the text is bounded (FR_CAPS_MAX_BYTES), UTF-8 and JSON by RFC 8259 (not merely what cJSON tolerates),
 * every known key must have its documented type and values, a duplicate key is an error; an unknown key is ignored (the
 * vocabulary grows) and named in `ignored`. A refusal's message shows the runner's text only as valid UTF-8 without
 * control characters, cut between characters (fuzz/verify/fuzz_caps.c checks all of this).
 *
 *   fr_caps c;
 *   if (fr_caps_parse(json, len, &c, &err) != FR_OK) ...        // FR_E_FORMAT "capabilities: ops.fwd.dtypes[1]: ..."
 *   if (c.op[FR_CAPS_FWD].present && (c.op[FR_CAPS_FWD].dtypes & FR_CAPS_BIT(FR_BF16))) ...
 *
 * An absent axis is undeclared: everything may be drawn there (its bits all set, its flags true), except
 * mask_handover: a runner that does not declare it honours no hint (only FR_MASK_HINT_DEFAULT). */
#ifndef FR_VERIFY_IUT_CAPS_H
#define FR_VERIFY_IUT_CAPS_H

#include "io/casedir.h" /* fr_mask_hint */

#define FR_CAPS_PREFIX "flashref-capabilities:"
#define FR_CAPS_FORMAT "flashref-capabilities/1"
#define FR_CAPS_MAX_BYTES 65536 /* the whole line, prefix included */
#define FR_CAPS_MAX_VARIANTS 16
#define FR_CAPS_MAX_NAME 64 /* a variant: one shell word of [A-Za-z0-9_.+-] */

#define FR_CAPS_BIT(x) (1u << (unsigned)(x))
enum { FR_CAPS_FWD = 0, FR_CAPS_BWD = 1 };

/* Mask shapes (bits of fr_caps_op.mask_shapes) and pse shapes (pse_shapes). */
enum { FR_CAPS_MASK_SS = 1u, FR_CAPS_MASK_11SS = 2u, FR_CAPS_MASK_B1SS = 4u, FR_CAPS_MASK_BNSS = 8u };
enum { FR_CAPS_PSE_BNSS = 1u, FR_CAPS_PSE_BN1S = 2u, FR_CAPS_PSE_1NSS = 4u, FR_CAPS_PSE_COMPRESSED = 8u };
/* Whether an implementation has declared what it supports (iut.h: fr_iut_caps). */
typedef enum fr_caps_state {
    FR_CAPS_NONE = 0, /* nothing declared (a persistent-1 runner, exec:, a built-in): learn from SKIPs */
    FR_CAPS_PENDING,  /* a persistent: runner not yet started: its declaration comes with its first answer */
    FR_CAPS_DECLARED
} fr_caps_state;

typedef enum fr_caps_topk { FR_CAPS_TOPK_NONE = 0, FR_CAPS_TOPK_UNIQUE, FR_CAPS_TOPK_ANY } fr_caps_topk;

typedef struct fr_caps_op {
    bool present;          /* the op is in "ops": absent ops are not supported at all */
    unsigned dtypes;       /* FR_CAPS_BIT(fr_dtype) */
    unsigned layouts;      /* FR_CAPS_BIT(fr_layout - FR_BSH) */
    unsigned sparse_modes; /* FR_CAPS_BIT(mode), modes 0..8 */
    unsigned mask_shapes;  /* FR_CAPS_MASK_* */
    unsigned pse_types;    /* FR_CAPS_BIT(type), 0..3 */
    unsigned pse_shapes;   /* FR_CAPS_PSE_* */
    unsigned handover;     /* FR_CAPS_BIT(fr_mask_hint) of the hints the runner honours (DEFAULT always) */
    bool band, prefix, dropout, sink, rope, gqa, dv_ne_dk, empty;
    bool s1_le_s2;         /* true: only S1 <= S2 (per batch) */
    fr_caps_topk topk;
    int64_t head_dim_min, head_dim_max, head_dim_multiple;
    bool scale_pow2;       /* only scales 2^k / sqrt(D) */
    bool scale_dtype;      /* 16-bit cases: only scales the input dtype holds exactly */
    unsigned keys;         /* FR_CAPS_KEY_* of the axes the declaration names (the others are undeclared) */
} fr_caps_op;
enum {
    FR_CAPS_KEY_DTYPES = 1u << 0, FR_CAPS_KEY_LAYOUTS = 1u << 1, FR_CAPS_KEY_SPARSE = 1u << 2,
    FR_CAPS_KEY_MASK = 1u << 3, FR_CAPS_KEY_PSE = 1u << 4, FR_CAPS_KEY_BAND = 1u << 5, FR_CAPS_KEY_DROPOUT = 1u << 6,
    FR_CAPS_KEY_SINK = 1u << 7, FR_CAPS_KEY_TOPK = 1u << 8, FR_CAPS_KEY_GQA = 1u << 9, FR_CAPS_KEY_HEADDIM = 1u << 10
};

typedef struct fr_caps {
    bool declared;         /* false: "{}" or no line (nothing declared; every op undeclared) */
    char runner[128], framework[64], version[64], variant[FR_CAPS_MAX_NAME], unavailable[256];
    int nvariants;
    char variants[FR_CAPS_MAX_VARIANTS][FR_CAPS_MAX_NAME];
    bool repro;            /* `CMD --repro CASE_DIR OUT.py` writes a standalone reproducer */
    bool ops_declared;     /* "ops" present (else both ops undeclared: anything) */
    fr_caps_op op[2];
    char ignored[160];     /* unknown keys that were ignored, comma-separated ("" none) */
} fr_caps;

/* Everything allowed (nothing declared). */
void fr_caps_any(fr_caps *c);
/* Parses the object (len bytes, need not be NUL-terminated; at most FR_CAPS_MAX_BYTES). FR_E_FORMAT with the path of
 * the offending key and what was expected, FR_E_NOMEM when out of memory; c is left as fr_caps_any then. */
fr_status fr_caps_parse(const char *json, size_t len, fr_caps *c, fr_error *err);
/* One line for people: "onnxruntime 1.32.0 (ort_contrib.py gqa): fwd fp32,fp16 ...", cut to n bytes between
 * characters. */
void fr_caps_describe(const fr_caps *c, char *buf, size_t n);

#endif
