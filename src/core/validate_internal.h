/* Internal to validation (validate.c, validate_opts.c, validate_problem.c): the shape and view helpers every check
 * uses (validate.c). */
#ifndef FR_CORE_VALIDATE_INTERNAL_H
#define FR_CORE_VALIDATE_INTERNAL_H

#include "core/core.h"
#include "core/validate.h"

#include <stddef.h>

#define LL(x) ((long long)(x))

/* Band values beyond this are equivalent to "no bound" for any S <= 1M; clamping keeps the arithmetic exact. */
#define BAND_CLAMP (INT64_C(1) << 40)

static inline const char *layout_str(fr_layout l) { return fr_layout_name(l); }
static inline const char *dt_str(fr_dtype t) { return fr_dtype_name(t); }

/* Layout dims of a q/k/v-like tensor. BSH/SBH give H (N, D = -1); BSND/BNSD give N, D; TND gives S = T, N, D. */
typedef struct vd_lay_dims {
    int64_t B, S, N, D, H;
} vd_lay_dims;

/* ---- helpers (validate.c) ---- */

/* FR_OK when t's dtype is want, else status and "NAME: dtype X differs from REF dtype Y". */
fr_status vd_same_dtype(const fr_tensor *t, const char *name, fr_dtype want, const char *ref, fr_status status,
                        fr_error *err);
const char *vd_shape_str(const fr_tensor *t, char *buf, size_t n); /* "[2,3,4]" */
bool vd_shape_eq(const fr_tensor *t, int nd, const int64_t *s);
bool vd_shape_eq2(const fr_tensor *t, int64_t a, int64_t b);
bool vd_shape_eq4(const fr_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d);
/* Generic checks of one present tensor view (rank, dims, sizes and spans in int64, data). */
fr_status vd_check_view(const fr_tensor *t, const char *name, fr_error *err);
vd_lay_dims vd_dims_of(const fr_tensor *t, fr_layout l);
/* The shape a q-like (kv false) or kv-like tensor with N heads of dim D has in pb's layout; returns its rank. */
int vd_layout_shape(const fr_problem *pb, bool kv, int64_t N, int64_t D, int64_t *s);
/* softmax_max/sum: [B,N1,S1,8]; TND [N1,T1,8] or [T1,N1,8] (same_as_input); returns the rank. */
int vd_softmax_shape(const fr_problem *pb, fr_softmax_layout sl, int64_t *s);
const char *vd_expect_str(int nd, const int64_t *s, char *buf, size_t n);
/* Per-batch lengths (TND: from the cumulative arrays; else S1, S2). */
void vd_batch_lens(const fr_problem *pb, int64_t b, int64_t *s1, int64_t *s2);
int64_t vd_clamp_band(int64_t v);
/* Spec 4.1 band rules with a top-left origin (kept iff -pre <= j - i <= next); `what` names the values' origin. */
fr_status vd_band_rules(int64_t pre, int64_t next, int64_t S1, int64_t S2, const char *what, fr_error *err);

#endif
