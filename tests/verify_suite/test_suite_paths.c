/* The suite runner's and the case modifiers' paths the suite tests leave out (src/verify/suite/suite_run.c,
 * suite_modify.c), on small cases and flashref's reference implementation as a callback:
 *   1. fr_suite_apply_mod: each modifier refuses a case without what it needs (FR_E_INTERNAL naming it: a [S1,S2] mask,
 *      a [B,1,S1,S2] mask, a BNSD key, a [B,N1,S1,S2] pse, Dv = S2), and does what it says on a case that has it
 *      (NaN/Inf in the masked K/V columns, padding masks, one kept key per row, a -1e4 pse sentinel, V = I, a key
 *      whose rows start past 2^31 elements with its values kept);
 *   2. fr_suite_permute_topk's three orders keep each row's keys; fr_suite_out_rel_l2 skips non-finite elements and
 *      absent outputs; fr_suite_check_props passes the golden of a V = I case and fails a row whose sum is off;
 *      fr_suite_impldef_reading names reading A for the golden of a top-k list with repeats and leaves a SKIP, a
 *      backward case, an error-status, shape, unwritten or NaN-mismatched FAIL alone; the explicit-P check in fp16,
 *      bf16 and fp32, a negative P (precision) and a FAIL kept;
 *   3. fr_suite_run: an unknown set, a regression folder that does not exist, one part of a distributed run (with
 *      and without a gather), an implementation that fails every case the same way (stopped early), too many random
 *      draws, one draw with shrinking (a regression folder unread); fr_suite_verify_dirs with a filter that selects
 *      nothing, without options, with progress;
 *   4. out of memory for the run's list of regression folders (builds with the allocation hook, -DFR_ALLOC_HOOK=ON;
 *      skipped otherwise): FR_E_NOMEM. The list's calloc failing dropped every regression case in silence and the
 *      run passed without them; any allocation of the folder listing failing (fr_suite_list_case_dirs) returned
 *      the part listed so far, and the run passed with fewer cases. Every allocation before the first case: an error
 *      or the whole run. */
#define _GNU_SOURCE
#include "common/check.h"
#include "core/core.h"
#include "verify/iut/iut_callback.h"
#include "verify/suite/suite_internal.h"
#include "verify/zoo/mutants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tests/regression/cases, beside this file's folder. */
static char g_regress[600];

static fr_gen_spec spec_of(fr_layout layout, fr_gen_mask mask, int64_t B, int64_t S1, int64_t S2, int64_t D) {
    fr_gen_spec s;
    memset(&s, 0, sizeof s);
    s.name = "mod";
    s.dtype = FR_F32;
    s.layout = layout;
    s.B = B;
    s.N1 = 2;
    s.S1 = S1;
    s.S2 = S2;
    s.D = D;
    s.mask = mask;
    return s;
}

static bool build(const fr_gen_spec *s, fr_gen_case *g) {
    fr_error err;
    return CHECKED(fr_gen_build(s, 3, g, &err) == FR_OK, "%s: %s", s->name, err.msg);
}

/* ---- 1. modifiers ---- */

static void test_mod_refusals(void) {
    static const struct {
        fr_suite_mod mod;
        const char *msg;
    } kNoMask[] = {
        {FR_MOD_NAN_KV, "needs a [S1,S2] mask and a non-TND layout"},
        {FR_MOD_FIRST_TILE_MASKED, "needs a [S1,S2] mask and a non-TND layout"},
        {FR_MOD_ONE_KEY, "needs a [S1,S2] mask and a non-TND layout"},
        {FR_MOD_PAD_RIGHT, "padding needs a [B,1,S1,S2] mask"},
        {FR_MOD_PAD_LEFT, "padding needs a [B,1,S1,S2] mask"},
        {FR_MOD_SENTINEL_1E4, "needs a [S1,S2] mask and a [B,N1,S1,S2] pse"},
        {FR_MOD_V_IDENTITY, "V = I needs BNSD and Dv = S2"},
    };
    fr_gen_spec s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 8, 12, 16);
    fr_gen_case g;
    fr_error err;
    for (size_t k = 0; k < sizeof kNoMask / sizeof kNoMask[0]; k++) {
        if (!build(&s, &g)) return;
        fr_status st = fr_suite_apply_mod(&g, kNoMask[k].mod, &err);
        CHECK(st == FR_E_INTERNAL && strstr(err.msg, kNoMask[k].msg) && strstr(err.msg, "mod"), "mod %d: %s",
              (int)kNoMask[k].mod, err.msg);
        fr_gen_case_free(&g);
    }
    /* A [S1,S2] mask is not a padding mask; a BSND key cannot be re-homed. */
    s = spec_of(FR_BSND, FR_GEN_MASK_SS, 1, 8, 12, 16);
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_PAD_LEFT, &err) == FR_E_INTERNAL && strstr(err.msg, "[B,1,S1,S2]"), "%s",
          err.msg);
    CHECK(fr_suite_apply_mod(&g, FR_MOD_KEY_PAST_2G, &err) == FR_E_INTERNAL &&
              strstr(err.msg, "the strided key needs BNSD"),
          "%s", err.msg);
    CHECK(fr_suite_apply_mod(&g, FR_MOD_SENTINEL_1E4, &err) == FR_E_INTERNAL && strstr(err.msg, "pse"), "%s",
          err.msg);
    CHECK(fr_suite_apply_mod(&g, FR_MOD_NONE, &err) == FR_OK);
    fr_gen_case_free(&g);
    /* A B1SS mask is not [S1,S2]. */
    s = spec_of(FR_BNSD, FR_GEN_MASK_B1SS, 2, 8, 12, 16);
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_ONE_KEY, &err) == FR_E_INTERNAL && strstr(err.msg, "[S1,S2] mask"), "%s",
          err.msg);
    fr_gen_case_free(&g);
}

static void test_mod_effects(void) {
    fr_gen_case g;
    fr_error err;
    /* NaN / Inf in two masked key columns: column S2/2 and S2-1 masked for every row, K NaN / Inf there. */
    fr_gen_spec s = spec_of(FR_BNSD, FR_GEN_MASK_SS, 1, 6, 10, 8);
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_NAN_KV, &err) == FR_OK, "%s", err.msg);
    const fr_tensor *m = &g.in.fwd.atten_mask, *k = &g.in.fwd.key, *v = &g.in.fwd.value;
    int bad = 0;
    for (int64_t i = 0; i < 6; i++) bad += fr_load_f64(m, i * 10 + 5) != 1 || fr_load_f64(m, i * 10 + 9) != 1;
    CHECK(bad == 0, "%d rows keep a poisoned column", bad);
    /* key [B,N2,S2,D]: row 5 NaN, row 9 +Inf; value the other way round */
    CHECK(isnan(fr_load_f64(k, 5 * 8)) && isinf(fr_load_f64(k, 9 * 8)) && isinf(fr_load_f64(v, 5 * 8)) &&
              isnan(fr_load_f64(v, 9 * 8)) && isfinite(fr_load_f64(k, 4 * 8)),
          "poisoned K/V");
    fr_gen_case_free(&g);
    /* One key per row, every fifth row none. */
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_ONE_KEY, &err) == FR_OK, "%s", err.msg);
    m = &g.in.fwd.atten_mask;
    for (int64_t i = 0; i < 6; i++) {
        int kept = 0;
        for (int64_t j = 0; j < 10; j++) kept += fr_load_f64(m, i * 10 + j) == 0;
        CHECK(kept == (i % 5 == 4 ? 0 : 1), "row %lld keeps %d keys", (long long)i, kept);
    }
    fr_gen_case_free(&g);
    /* Padding, right and left: batch 0 keeps every key, batch 1 a prefix (right) or a suffix (left). */
    for (int left = 0; left < 2; left++) {
        s = spec_of(FR_BNSD, FR_GEN_MASK_B1SS, 3, 4, 9, 8);
        if (!build(&s, &g)) return;
        CHECK(fr_suite_apply_mod(&g, left ? FR_MOD_PAD_LEFT : FR_MOD_PAD_RIGHT, &err) == FR_OK, "%s", err.msg);
        m = &g.in.fwd.atten_mask;
        int b0 = 0, order_bad = 0;
        for (int64_t j = 0; j < 9; j++) b0 += fr_load_f64(m, j) != 0;
        for (int64_t b = 1; b < 3; b++)
            for (int64_t i = 0; i < 4; i++)
                for (int64_t j = 1; j < 9; j++) {
                    double prev = fr_load_f64(m, (b * 4 + i) * 9 + j - 1), cur = fr_load_f64(m, (b * 4 + i) * 9 + j);
                    order_bad += left ? cur > prev : cur < prev; /* right: 0 then 1; left: 1 then 0 */
                }
        CHECK(b0 == 0 && order_bad == 0, "%s padding: batch 0 masks %d, %d out of order", left ? "left" : "right",
              b0, order_bad);
        fr_gen_case_free(&g);
    }
    /* -1e4 on kept positions, 0 on masked ones. */
    s = spec_of(FR_BNSD, FR_GEN_MASK_SS, 1, 4, 6, 8);
    s.pse = FR_GEN_PSE_BNSS;
    s.pse_type = 0;
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_SENTINEL_1E4, &err) == FR_OK, "%s", err.msg);
    int wrong = 0;
    for (int64_t q = 0; q < fr_tensor_numel(&g.in.fwd.real_shift); q++) {
        double mv = fr_load_f64(&g.in.fwd.atten_mask, q % 24), pv = fr_load_f64(&g.in.fwd.real_shift, q);
        wrong += pv != (mv != 0 ? 0.0 : -1e4);
    }
    CHECK(wrong == 0, "%d pse elements not the sentinel", wrong);
    fr_gen_case_free(&g);
    /* V = I (Dv = S2). */
    s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 3, 8, 8);
    if (!build(&s, &g)) return;
    CHECK(fr_suite_apply_mod(&g, FR_MOD_V_IDENTITY, &err) == FR_OK, "%s", err.msg);
    wrong = 0;
    for (int64_t h = 0; h < 2; h++)
        for (int64_t j = 0; j < 8; j++)
            for (int64_t d = 0; d < 8; d++) wrong += fr_load_f64(&g.in.fwd.value, (h * 8 + j) * 8 + d) != (j == d);
    CHECK(wrong == 0, "V is not the identity in %d elements", wrong);
    fr_gen_case_free(&g);
    /* K re-homed with a row stride of 2^22 elements, its values kept. */
    s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 2, 3, 4);
    s.N1 = 1;
    if (!build(&s, &g)) return;
    double before[12];
    for (int q = 0; q < 12; q++) before[q] = fr_load_f64(&g.in.fwd.key, q);
    CHECK(fr_suite_apply_mod(&g, FR_MOD_KEY_PAST_2G, &err) == FR_OK, "%s", err.msg);
    const fr_tensor *nk = &g.in.fwd.key;
    CHECK(nk->strides[2] == (INT64_C(1) << 22) && nk->strides[3] == 1, "strides %lld %lld", (long long)nk->strides[2],
          (long long)nk->strides[3]);
    wrong = 0;
    for (int64_t j = 0; j < 3; j++)
        for (int64_t d = 0; d < 4; d++) wrong += fr_load_f64(nk, j * nk->strides[2] + d) != before[j * 4 + d];
    CHECK(wrong == 0, "%d key values changed", wrong);
    fr_gen_case_free(&g);
}

/* ---- 2. helpers of the categories ---- */

static void test_helpers(void) {
    int32_t idx[2][6] = {{0, 1, 2, 3, 4, 5}, {10, 11, 12, 13, 14, 15}};
    int64_t shape[2] = {2, 6};
    for (int variant = 1; variant <= 3; variant++) {
        int32_t t[2][6];
        memcpy(t, idx, sizeof t);
        fr_tensor ti = fr_tensor_make(FR_I32, t, 2, shape);
        fr_suite_permute_topk(&ti, variant, 9);
        for (int r = 0; r < 2; r++) {
            int sum = 0;
            for (int w = 0; w < 6; w++) sum += t[r][w];
            CHECK(sum == (r ? 75 : 15), "variant %d row %d: keys changed", variant, r);
        }
        if (variant == 1) CHECK(t[0][0] == 5 && t[0][5] == 0 && t[1][0] == 15, "reversed");
        if (variant == 3) CHECK(t[0][0] == 3 && t[0][3] == 0 && t[1][5] == 12, "rotated by half a row");
    }
    /* rel-L2 over the elements finite in both; 0 when either output is absent. */
    fr_gen_spec s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 2, 4, 4);
    fr_gen_case g;
    if (!build(&s, &g)) return;
    fr_case c;
    fr_suite_case_view(&g, &c);
    fr_case_outputs a, b;
    fr_error err;
    if (!CHECKED(fr_case_alloc_outputs(&c, true, &a, &err) == FR_OK && fr_case_alloc_outputs(&c, true, &b, &err) == FR_OK,
                 "%s", err.msg))
        return;
    int64_t n = fr_tensor_numel(&a.fwd.attention_out);
    for (int64_t q = 0; q < n; q++) {
        fr_store_f64(&a.fwd.attention_out, q, 2.0);
        fr_store_f64(&b.fwd.attention_out, q, 1.0);
    }
    fr_store_f64(&a.fwd.attention_out, 0, NAN);
    fr_store_f64(&b.fwd.attention_out, 1, INFINITY);
    CHECK(fabs(fr_suite_out_rel_l2(&a, &b, FR_CO_ATTENTION_OUT) - 1.0) < 1e-12, "rel-L2 %g",
          fr_suite_out_rel_l2(&a, &b, FR_CO_ATTENTION_OUT));
    for (int64_t q = 0; q < n; q++) fr_store_f64(&b.fwd.attention_out, q, 0.0);
    fr_store_f64(&a.fwd.attention_out, 0, 3.0);
    for (int64_t q = 1; q < n; q++) fr_store_f64(&a.fwd.attention_out, q, 0.0);
    CHECK(fr_suite_out_rel_l2(&a, &b, FR_CO_ATTENTION_OUT) == 3.0, "a zero reference: the absolute L2");
    CHECK(fr_suite_out_rel_l2(&a, &b, FR_CO_DQ) == 0, "absent output");
    /* The reading of an implementation-defined case is left alone for a SKIP, a backward case, an error status. */
    fr_case_result cr;
    memset(&cr, 0, sizeof cr);
    cr.j.verdict = FR_SKIP;
    CHECK(fr_suite_impldef_reading(&c, &a, &cr, &err) == FR_OK && cr.j.verdict == FR_SKIP && !cr.info[0], "SKIP");
    cr.j.verdict = FR_FAIL;
    cr.j.diag = FR_DIAG_ERROR_STATUS;
    CHECK(fr_suite_impldef_reading(&c, &a, &cr, &err) == FR_OK && cr.j.verdict == FR_FAIL && !cr.info[0],
          "error status");
    cr.j.diag = FR_DIAG_SHAPE;
    CHECK(fr_suite_impldef_reading(&c, &a, &cr, &err) == FR_OK && cr.j.verdict == FR_FAIL && !cr.info[0], "shape");
    fr_case cb = c;
    cb.op = FR_CASE_BWD;
    cr.j.verdict = FR_PASS;
    CHECK(fr_suite_impldef_reading(&cb, &a, &cr, &err) == FR_OK && !cr.info[0], "backward");
    fr_case_outputs_free(&a);
    fr_case_outputs_free(&b);
    fr_gen_case_free(&g);

    /* Explicit softmax properties of a V = I case: its golden passes, a row scaled by 1.5 fails (sum != 1). */
    s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 4, 8, 8);
    if (!build(&s, &g)) return;
    if (!CHECKED(fr_suite_apply_mod(&g, FR_MOD_V_IDENTITY, &err) == FR_OK, "%s", err.msg)) return;
    fr_suite_case_view(&g, &c);
    fr_case_outputs go;
    if (!CHECKED(fr_suite_run_engine(&c, FR_ENGINE_GOLDEN, &go, &err) == FR_OK, "%s", err.msg)) return;
    memset(&cr, 0, sizeof cr);
    cr.j.verdict = FR_PASS;
    fr_suite_check_props(&c, &go, &go, &cr);
    CHECK(cr.j.verdict == FR_PASS && !strncmp(cr.extra, "explicit P: 8 rows", 18), "golden: %s / %s",
          fr_verdict_name(cr.j.verdict), cr.extra);
    for (int64_t j = 0; j < 8; j++)
        fr_store_f64(&go.fwd.attention_out, j, 1.5 * fr_load_f64(&go.fwd.attention_out, j));
    memset(&cr, 0, sizeof cr);
    cr.j.verdict = FR_PASS;
    fr_suite_check_props(&c, &go, NULL, &cr);
    CHECK(cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_STALE_MAX &&
              strstr(cr.j.why, "softmax properties violated: explicit P"),
          "a row summing to 1.5: %s %s: %s", fr_verdict_name(cr.j.verdict), fr_diag_name(cr.j.diag), cr.j.why);
    fr_case_outputs_free(&go);
    fr_gen_case_free(&g);
}

/* The allocation hook (src/core/alloc_hook.h), present only in a build with -DFR_ALLOC_HOOK=ON: weak, so that this
 * test links without it. */
void fr_alloc_hook_set(long fail_at) __attribute__((weak));
int fr_alloc_hook_failed(void) __attribute__((weak));
size_t fr_alloc_hook_failed_bytes(void) __attribute__((weak));


/* More refusals: an invalid case, a TND case, a per-head mask for padding, a one-row pse for the -1e4 sentinel, a
 * BSND case for V = I. */
static void test_mod_refusals_more(void) {
    fr_gen_case g;
    fr_error err;
    fr_gen_spec s = spec_of(FR_BNSD, FR_GEN_MASK_SS, 1, 8, 12, 16);
    if (build(&s, &g)) {
        g.params.head_num = 3; /* the tensors have 2 heads */
        fr_status st = fr_suite_apply_mod(&g, FR_MOD_NAN_KV, &err);
        CHECK(st != FR_OK && st != FR_E_INTERNAL && strstr(err.msg, "head"), "invalid case: %s: %s",
              fr_status_str(st), err.msg);
        fr_gen_case_free(&g);
    }
    s = spec_of(FR_TND, FR_GEN_MASK_SS, 2, 0, 0, 16);
    s.seq_q[0] = 4, s.seq_kv[0] = 6, s.seq_q[1] = 5, s.seq_kv[1] = 6;
    if (build(&s, &g)) {
        CHECK(fr_suite_apply_mod(&g, FR_MOD_NAN_KV, &err) == FR_E_INTERNAL && strstr(err.msg, "non-TND"), "%s",
              err.msg);
        CHECK(fr_suite_apply_mod(&g, FR_MOD_ONE_KEY, &err) == FR_E_INTERNAL && strstr(err.msg, "non-TND"), "%s",
              err.msg);
        fr_gen_case_free(&g);
    }
    s = spec_of(FR_BNSD, FR_GEN_MASK_BNSS, 2, 4, 6, 8);
    if (build(&s, &g)) {
        CHECK(fr_suite_apply_mod(&g, FR_MOD_PAD_RIGHT, &err) == FR_E_INTERNAL && strstr(err.msg, "[B,1,S1,S2]"), "%s",
              err.msg);
        fr_gen_case_free(&g);
    }
    s = spec_of(FR_BNSD, FR_GEN_MASK_SS, 1, 4, 6, 8);
    s.pse = FR_GEN_PSE_BN1S;
    s.pse_type = 0;
    if (build(&s, &g)) {
        CHECK(fr_suite_apply_mod(&g, FR_MOD_SENTINEL_1E4, &err) == FR_E_INTERNAL && strstr(err.msg, "[B,N1,S1,S2] pse"),
              "%s", err.msg);
        fr_gen_case_free(&g);
    }
    s = spec_of(FR_BSND, FR_GEN_MASK_NONE, 1, 3, 8, 8);
    if (build(&s, &g)) {
        CHECK(fr_suite_apply_mod(&g, FR_MOD_V_IDENTITY, &err) == FR_E_INTERNAL && strstr(err.msg, "V = I needs BNSD"),
              "%s", err.msg);
        fr_gen_case_free(&g);
    }
    /* An empty top-k list: nothing to permute. */
    int32_t none[1] = {7};
    int64_t sh0[2] = {2, 0};
    fr_tensor t0 = fr_tensor_make(FR_I32, none, 2, sh0);
    fr_suite_permute_topk(&t0, 2, 1);
    CHECK(none[0] == 7, "an empty list was written");
}

/* The explicit-P check of fp16 and fp32 outputs (the fast engine's): within tolerance; a negative P with its row
 * sum kept is a precision FAIL; a case failing already keeps its diagnosis. */
static void test_props_dtypes(void) {
    static const fr_dtype kDt[] = {FR_F16, FR_F32, FR_BF16};
    for (size_t q = 0; q < sizeof kDt / sizeof kDt[0]; q++) {
        fr_gen_spec s = spec_of(FR_BNSD, FR_GEN_MASK_NONE, 1, 4, 8, 8);
        s.dtype = kDt[q];
        fr_gen_case g;
        fr_error err;
        if (!build(&s, &g)) continue;
        fr_case c;
        fr_case_outputs fo;
        if (!CHECKED(fr_suite_apply_mod(&g, FR_MOD_V_IDENTITY, &err) == FR_OK, "%s", err.msg)) continue;
        fr_suite_case_view(&g, &c);
        if (!CHECKED(fr_suite_run_engine(&c, FR_ENGINE_FAST, &fo, &err) == FR_OK, "%s", err.msg)) continue;
        fr_case_result cr;
        memset(&cr, 0, sizeof cr);
        cr.j.verdict = FR_PASS;
        fr_suite_check_props(&c, &fo, NULL, &cr);
        CHECK(cr.j.verdict == FR_PASS && strstr(cr.extra, "negative 0, argmax wrong 0"), "%s: %s %s",
              fr_dtype_name(kDt[q]), fr_verdict_name(cr.j.verdict), cr.extra);
        if (kDt[q] == FR_F32) { /* row 0: move 0.5 from its largest entry to a negative one, the sum kept */
            const fr_tensor *o = &fo.fwd.attention_out;
            double a = fr_load_f64(o, 0), b = fr_load_f64(o, 1);
            fr_store_f64(o, 0, a + b + 0.25);
            fr_store_f64(o, 1, -0.25);
            memset(&cr, 0, sizeof cr);
            cr.j.verdict = FR_WARN;
            fr_suite_check_props(&c, &fo, NULL, &cr);
            CHECK(cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_PRECISION && strstr(cr.j.why, "negative 1"),
                  "negative P: %s %s: %s", fr_verdict_name(cr.j.verdict), fr_diag_name(cr.j.diag), cr.j.why);
            memset(&cr, 0, sizeof cr);
            cr.j.verdict = FR_FAIL;
            cr.j.diag = FR_DIAG_TILE_TAIL;
            fr_suite_check_props(&c, &fo, NULL, &cr);
            CHECK(cr.j.verdict == FR_FAIL && cr.j.diag == FR_DIAG_TILE_TAIL && strstr(cr.extra, "negative 1"),
                  "a FAIL kept: %s", fr_diag_name(cr.j.diag));
        }
        fr_case_outputs_free(&fo);
        fr_gen_case_free(&g);
    }
}

/* The reading of a top-k list with repeats (the golden's outputs follow A, D7); an unwritten or NaN-mismatched FAIL
 * is left alone. */
static void test_topk_reading(void) {
    fr_gen_spec s = spec_of(FR_BSND, FR_GEN_MASK_NONE, 1, 16, 16, 16);
    s.topk_w = 8;
    s.topk_dup = true;
    fr_gen_case g;
    fr_error err;
    if (!build(&s, &g)) return;
    fr_case c;
    fr_suite_case_view(&g, &c);
    fr_case_outputs go;
    if (!CHECKED(fr_suite_run_engine(&c, FR_ENGINE_GOLDEN, &go, &err) == FR_OK, "%s", err.msg)) return;
    fr_case_result cr;
    memset(&cr, 0, sizeof cr);
    cr.j.verdict = FR_PASS;
    cr.j.out[FR_CO_ATTENTION_OUT].bound_l2 = 1e-3;
    CHECK(fr_suite_impldef_reading(&c, &go, &cr, &err) == FR_OK &&
              strstr(cr.info, "top-k with repeated keys: follows reading A") && !strncmp(cr.j.why, "INFO: ", 6),
          "int32: %s", cr.info);
    memset(&cr, 0, sizeof cr);
    cr.j.verdict = FR_FAIL;
    cr.j.diag = FR_DIAG_UNWRITTEN;
    CHECK(fr_suite_impldef_reading(&c, &go, &cr, &err) == FR_OK && !cr.info[0] && cr.j.verdict == FR_FAIL,
          "unwritten");
    cr.j.diag = FR_DIAG_NAN;
    cr.j.out[FR_CO_ATTENTION_OUT].m.n_anomaly_mismatch = 3;
    CHECK(fr_suite_impldef_reading(&c, &go, &cr, &err) == FR_OK && !cr.info[0] && cr.j.verdict == FR_FAIL,
          "NaN mismatch");
    fr_case_outputs_free(&go);
    fr_gen_case_free(&g);
}

/* ---- 3. the runner ---- */

typedef struct cb_state {
    int calls;
    bool fail_all;
} cb_state;

static fr_status reference(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                           fr_error *err) {
    cb_state *s = ud;
    s->calls++;
    if (s->fail_all) return fr_fail(err, FR_E_INTERNAL, "cannot load the runtime");
    if (c->op == FR_VERIFY_BWD) return fr_mutant_base_bwd(c->params, c->in, bwd, err);
    return fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
}

typedef struct gather_rec {
    int calls, total;
    unsigned char mine[4];
} gather_rec;

static fr_status gather(void *ud, fr_suite_result *res, int total, const unsigned char *mine, fr_status st,
                        fr_error *err) {
    (void)res, (void)err;
    gather_rec *g = ud;
    g->calls++;
    g->total = total;
    for (int k = 0; k < total && k < 4; k++) g->mine[k] = mine[k];
    return st;
}

static int g_progress;
static void on_progress(void *ud, int done, int total, const fr_case_result *last) {
    (void)ud, (void)done, (void)total, (void)last;
    g_progress++;
}

static void test_runner(void) {
    cb_state s = {0};
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_callback_open(reference, &s, "reference", &iut, &err) == FR_OK, "%s", err.msg)) return;
    fr_suite_result res;
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "nope";
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_E_INVALID_ARG &&
              strstr(err.msg, "--set: 'nope': expected quick, default, long or all"),
          "%s", err.msg);
    o.set = "quick";
    o.regression_dir = "/nonexistent/regression/cases";
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_E_IO && strstr(err.msg, "--regression: /nonexistent") &&
              strstr(err.msg, "No such file"),
          "%s", err.msg);
    CHECK(s.calls == 0, "a refused run called the implementation");

    /* One part of two: the regression case (place 0) and the set's case (place 1) of the filter "d1_rows". */
    o.regression_dir = g_regress;
    o.filter = "d1_rows";
    o.parts = 2;
    gather_rec gr = {0};
    o.gather = gather;
    o.gather_ud = &gr;
    o.progress = on_progress;
    g_progress = 0;
    for (int part = 0; part < 2; part++) {
        o.part = part;
        memset(&gr, 0, sizeof gr);
        CHECK(fr_suite_run(iut, &o, &res, &err) == FR_OK, "part %d: %s", part, err.msg);
        CHECK(gr.calls == 1 && gr.total == 2 && gr.mine[part] == 1 && gr.mine[1 - part] == 0 && res.n == 2 &&
                  res.planned == 2,
              "part %d: gather %d calls, total %d, mine %d %d, n %d", part, gr.calls, gr.total, gr.mine[0],
              gr.mine[1], res.n);
        const char *want = part ? "bd_d1_rows_m3" : "reg_bd_d1_rows_band";
        CHECK(!strcmp(res.cases[part].name, want) && res.cases[part].j.verdict == FR_PASS, "part %d: %s %s: %s", part,
              res.cases[part].name, fr_verdict_name(res.cases[part].j.verdict), res.cases[part].j.why);
        fr_suite_result_free(&res);
    }
    CHECK(g_progress == 2, "progress called %d times", g_progress);
    /* Without a gather, the part's own cases only. */
    o.gather = NULL;
    o.part = 1;
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_OK && res.n == 2 && !strcmp(res.cases[1].name, "bd_d1_rows_m3") &&
              res.cases[0].name[0] == 0,
          "%s; n %d", err.msg, res.n);
    fr_suite_result_free(&res);
    fr_iut_close(iut);

    /* Every case failing with the same message: stopped after FR_IUT_GIVE_UP_AFTER of the six regression cases. */
    s = (cb_state){0, true};
    if (!CHECKED(fr_iut_callback_open(reference, &s, "broken", &iut, &err) == FR_OK, "%s", err.msg)) return;
    o = fr_suite_opts_default();
    o.set = "quick";
    o.regression_dir = g_regress;
    o.filter = "reg_";
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_OK, "%s", err.msg);
    CHECK(res.n == FR_IUT_GIVE_UP_AFTER && res.planned == 6 && res.overall == FR_FAIL &&
              strstr(res.stopped, "stopped early after 5 identical consecutive errors (5 of 6 cases run)") &&
              strstr(res.stopped, "cannot load the runtime"),
          "n %d of %d: %s", res.n, res.planned, res.stopped);
    fr_suite_result_free(&res);
    fr_iut_close(iut);

    /* Random draws: more than FR_SUITE_MAX_RANDOM refused; draw 0 alone (--only rnd_0), shrinking asked, with a
     * regression folder that a run of draws does not read. */
    s = (cb_state){0};
    if (!CHECKED(fr_iut_callback_open(reference, &s, "reference", &iut, &err) == FR_OK, "%s", err.msg)) return;
    o = fr_suite_opts_default();
    o.set = "quick";
    o.random = FR_SUITE_MAX_RANDOM + 1;
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_E_INVALID_ARG && strstr(err.msg, "--random: 100001 draws, at most"),
          "%s", err.msg);
    fr_suite_result_free(&res);
    o.random = 0;
    o.only = "rnd_0";
    o.regression_dir = g_regress;
    o.shrink = true;
    o.progress = on_progress;
    g_progress = 0;
    CHECK(fr_suite_run(iut, &o, &res, &err) == FR_OK && res.n == 1 && !strcmp(res.cases[0].name, "rnd_0") &&
              res.cases[0].j.verdict == FR_PASS && res.cases[0].config[0] && g_progress == 1,
          "%s; n %d, %s %s, progress %d", err.msg, res.n, res.n ? res.cases[0].name : "",
          res.n ? fr_verdict_name(res.cases[0].j.verdict) : "", g_progress);
    fr_suite_result_free(&res);
    fr_iut_close(iut);

    /* fr_suite_verify_dirs: a filter that selects none of the directories judges nothing. */
    char d0[700];
    snprintf(d0, sizeof d0, "%s/reg_bd_d1_rows_band", g_regress);
    char *dirs[] = {d0};
    o = fr_suite_opts_default();
    o.filter = "no_such_case";
    CHECK(fr_suite_verify_dirs(dirs, 1, &o, &res, &err) == FR_OK && res.n == 0 && res.overall == FR_SKIP, "%s; n %d",
          err.msg, res.n);
    fr_suite_result_free(&res);
    /* No options: the defaults, every directory judged (the outputs on disk: none here), progress reported. */
    CHECK(fr_suite_verify_dirs(dirs, 1, NULL, &res, &err) == FR_OK && res.n == 1 &&
              !strcmp(res.cases[0].name, "reg_bd_d1_rows_band"),
          "%s; n %d", err.msg, res.n);
    fr_suite_result_free(&res);
    o = fr_suite_opts_default();
    o.progress = on_progress;
    g_progress = 0;
    CHECK(fr_suite_verify_dirs(dirs, 1, &o, &res, &err) == FR_OK && res.n == 1 && g_progress == 1, "%s; progress %d",
          err.msg, g_progress);
    fr_suite_result_free(&res);
}

static void test_runner_oom(void) {
    if (!fr_alloc_hook_set || !fr_alloc_hook_failed || !fr_alloc_hook_failed_bytes) {
        printf("SKIP out of memory: built without -DFR_ALLOC_HOOK=ON\n");
        return;
    }
    cb_state s = {0};
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_callback_open(reference, &s, "reference", &iut, &err) == FR_OK, "%s", err.msg)) return;
    fr_suite_opts o = fr_suite_opts_default();
    o.set = "quick";
    o.regression_dir = g_regress;
    o.filter = "reg_bd_d1_rows_band";
    char **all;
    int na = fr_suite_list_case_dirs(g_regress, &all);
    for (int k = 0; k < na; k++) free(all[k]);
    free(all);
    /* The run's list of the selected folders: calloc(na + 1, sizeof(char *)). */
    const size_t list_bytes = (size_t)(na + 1) * sizeof(char *);
    fr_suite_result whole;
    if (!CHECKED(fr_suite_run(iut, &o, &whole, &err) == FR_OK, "%s", err.msg)) return;
    const int n_whole = whole.n;
    fr_suite_result_free(&whole);
    int hits = 0;
    for (long k = 1; k <= 40; k++) { /* the allocations before the first case */
        fr_suite_result res;
        fr_alloc_hook_set(k);
        fr_status st = fr_suite_run(iut, &o, &res, &err);
        bool hit = fr_alloc_hook_failed() == 1 && fr_alloc_hook_failed_bytes() == list_bytes;
        fr_alloc_hook_set(0);
        hits += hit;
        /* Any allocation failing: an error, never a run that passes with fewer cases (the folder listing's own
         * allocations, fr_suite_list_case_dirs, returned the list read so far as if whole). */
        CHECK(st != FR_OK || res.n == n_whole, "allocation %ld failed: FR_OK with %d of %d cases", k, res.n, n_whole);
        if (hit)
            CHECK(st == FR_E_NOMEM && !strcmp(err.msg, "suite: out of memory"), "allocation %ld (the list) failed: "
                  "%s, %d cases", k, fr_status_str(st), st == FR_OK ? res.n : -1);
        fr_suite_result_free(&res); /* the caller's, whatever the status */
    }
    CHECK(hits == 1, "the list's calloc failed %d times in the sweep", hits);
    fr_iut_close(iut);
}

int main(void) {
    const char *src = __FILE__, *slash = strrchr(src, '/');
    snprintf(g_regress, sizeof g_regress, "%.*s/../regression/cases", slash ? (int)(slash - src) : 1,
             slash ? src : ".");
    test_mod_refusals();
    test_mod_effects();
    test_helpers();
    test_mod_refusals_more();
    test_props_dtypes();
    test_topk_reading();
    test_runner();
    test_runner_oom();
    return fr_test_exit("test_suite_paths");
}
