/* The diagnosis's candidates on constructed failures (diagnose.c, diagnose_cands.c): each defect below is built by
 * running the golden on the case with that defect (or by transforming the golden's outputs), and must be named by its
 * candidate; near misses must not be: every row scaled by 1.02 (no candidate gives a constant gain) on cases of many
 * shapes (GQA with rope, 4-dim and broadcast masks with a pse, dropout, varlen with empty sequences, an odd head dim),
 * where every applicable candidate is re-run and none may match; a whole output row zero is named overflow only for a
 * case built for overflow. Small cases: the whole test takes about a second. */
#include "core/core.h"
#include "verify/cases/casegen.h"
#include "verify/judge/judge.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const uint64_t kSeed = 9090;

typedef struct fixture {
    fr_gen_case g;
    fr_case c;
    fr_case_outputs gold, ideal;
    bool ok;
} fixture;

/* Outputs of case c (fp64 for the golden engine) with params p and inputs in. */
static fr_status run_engine(const fr_case *c, const fr_params *p, const fr_bwd_inputs *in, fr_engine_kind k,
                            fr_case_outputs *o) {
    fr_error err;
    fr_status st = fr_case_alloc_outputs(c, k == FR_ENGINE_GOLDEN, o, &err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(k);
    st = c->op == FR_CASE_FWD ? fr_fwd(p, &in->fwd, &o->fwd, &e, &err) : fr_bwd(p, in, &o->bwd, &e, &err);
    if (st != FR_OK) {
        printf("engine %d: %s\n", (int)k, err.msg);
        fr_case_outputs_free(o);
    }
    return st;
}

static bool fixture_make(const fr_gen_spec *s, fixture *f) {
    fr_error err;
    memset(f, 0, sizeof *f);
    if (!CHECKED(fr_gen_build(s, kSeed, &f->g, &err) == FR_OK, "%s: %s", s->name, err.msg)) return false;
    f->c.op = f->g.bwd ? FR_CASE_BWD : FR_CASE_FWD;
    f->c.dtype = f->g.dtype;
    f->c.params = f->g.params;
    f->c.in = f->g.in;
    f->ok = CHECKED(run_engine(&f->c, &f->c.params, &f->c.in, FR_ENGINE_GOLDEN, &f->gold) == FR_OK, "%s golden",
                    s->name) &&
            CHECKED(run_engine(&f->c, &f->c.params, &f->c.in, FR_ENGINE_EMULATE, &f->ideal) == FR_OK, "%s ideal",
                    s->name);
    return f->ok;
}

static void fixture_free(fixture *f) {
    fr_case_outputs_free(&f->gold);
    fr_case_outputs_free(&f->ideal);
    fr_gen_case_free(&f->g);
}

/* src in the operator's dtypes, each output element through fn(k, i, v) (NULL: as is). */
typedef double (*xform_fn)(fr_case_output k, int64_t i, double v, const void *ud);
static void outputs_map(const fixture *f, const fr_case_outputs *src, xform_fn fn, const void *ud,
                        fr_case_outputs *dst) {
    fr_error err;
    if (fr_case_alloc_outputs(&f->c, false, dst, &err) != FR_OK) {
        memset(dst, 0, sizeof *dst);
        return;
    }
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *s = fr_case_output_cslot(src, (fr_case_output)k);
        fr_tensor *d = fr_case_output_slot(dst, (fr_case_output)k);
        if (!fr_tensor_present(s) || !fr_tensor_present(d)) continue;
        for (int64_t i = 0; i < fr_tensor_numel(d); i++) {
            double v = fr_load_f64(s, i);
            fr_store_f64(d, i, fn ? fn((fr_case_output)k, i, v, ud) : v);
        }
    }
}

static double scale_out(fr_case_output k, int64_t i, double v, const void *ud) {
    (void)i;
    const double *fac = ud;
    return k == FR_CO_ATTENTION_OUT || k == FR_CO_DQ ? v * fac[0] : v;
}

static unsigned g_absent_ok; /* fr_judge_opts.absent_ok of judge() */

static fr_judgement judge(const fixture *f, const fr_case_outputs *iut, unsigned tags, unsigned purpose) {
    fr_judge_opts o = fr_judge_opts_default();
    o.absent_ok = g_absent_ok;
    fr_judgement j;
    fr_error err;
    fr_status st = fr_judge(&f->c, tags, purpose, &o, FR_OK, "", iut, &f->gold, &f->ideal, &j, &err);
    CHECK(st == FR_OK, "fr_judge: %s", err.msg);
    return j;
}

static void expect(const char *what, fr_judgement j, fr_verdict v, fr_diag d, const char *want_why) {
    printf("%-36s %s %s: %.300s\n", what, fr_verdict_name(j.verdict), fr_diag_name(j.diag), j.why);
    CHECK(j.verdict == v && j.diag == d, "%s: got %s/%s, want %s/%s", what, fr_verdict_name(j.verdict),
          fr_diag_name(j.diag), fr_verdict_name(v), fr_diag_name(d));
    if (want_why) CHECK(strstr(j.why, want_why) != NULL, "%s: '%s' not in: %s", what, want_why, j.why);
    fr_judgement_free(&j);
}

/* The golden re-run with params p / inputs in, as the IUT's outputs. */
static bool defect_run(const fixture *f, const fr_params *p, const fr_bwd_inputs *in, fr_case_outputs *iut) {
    fr_case_outputs a;
    if (!CHECKED(run_engine(&f->c, p, in, FR_ENGINE_GOLDEN, &a) == FR_OK, "defect run")) return false;
    outputs_map(f, &a, NULL, NULL, iut);
    fr_case_outputs_free(&a);
    return true;
}

/* Near misses: every output row x 1.02 (fp8: x 1.3) on cases of many shapes; every applicable candidate is re-run,
 * none is a constant gain. */
static void test_near_misses(void) {
    static const fr_gen_spec specs[] = {
        {.name = "nm_gqa_rope", .B = 1, .N1 = 4, .N2 = 2, .S1 = 24, .S2 = 40, .D = 16, .Drope = 8},
        {.name = "nm_gqa_rope_bwd", .bwd = true, .B = 1, .N1 = 4, .N2 = 2, .S1 = 16, .S2 = 24, .D = 16, .Drope = 8},
        {.name = "nm_mask_b1ss_pse", .B = 2, .N1 = 2, .S1 = 20, .S2 = 36, .D = 16,
         .sparse_mode = FR_SPARSE_DEFAULT_MASK,
         .mask = FR_GEN_MASK_B1SS, .pse = FR_GEN_PSE_BNSS, .pse_type = FR_PSE_OUTER_MUL_ADD},
        {.name = "nm_mask_11ss_pse1nss", .B = 1, .N1 = 2, .S1 = 20, .S2 = 36, .D = 16,
         .sparse_mode = FR_SPARSE_ALL_MASK, .mask = FR_GEN_MASK_11SS, .pse = FR_GEN_PSE_1NSS,
         .pse_type = FR_PSE_OUTER_MUL_ADD},
        {.name = "nm_mask_pse_bn1s", .B = 1, .N1 = 2, .S1 = 20, .S2 = 36, .D = 16,
         .sparse_mode = FR_SPARSE_DEFAULT_MASK,
         .mask = FR_GEN_MASK_SS, .pse = FR_GEN_PSE_BN1S, .pse_type = FR_PSE_OUTER_MUL_ADD},
        {.name = "nm_mask_band", .B = 1, .N1 = 2, .S1 = 30, .S2 = 30, .D = 16, .sparse_mode = FR_SPARSE_DEFAULT_MASK,
         .mask = FR_GEN_MASK_SS, .set_band = true, .pre_tokens = 6, .next_tokens = 2},
        {.name = "nm_pse_add_mul", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 16, .S2 = 40, .D = 16,
         .pse = FR_GEN_PSE_BNSS, .pse_type = FR_PSE_OUTER_ADD_MUL, .scale = 0.5},
        {.name = "nm_dropout_bwd_tnd", .bwd = true, .layout = FR_TND, .B = 3, .N1 = 2, .D = 16, .keep_prob = 0.8,
         .seq_q = {5, 0, 7}, .seq_kv = {6, 4, 9}},
        {.name = "nm_varlen_fwd", .layout = FR_TND, .B = 4, .N1 = 2, .D = 16, .seq_q = {4, 0, 6, 3},
         .seq_kv = {5, 7, 3, 6}},
        {.name = "nm_headdim_20", .B = 1, .N1 = 2, .S1 = 20, .S2 = 70, .D = 20},
        {.name = "nm_causal_tnd", .layout = FR_TND, .B = 2, .N1 = 2, .D = 16, .seq_q = {6, 9}, .seq_kv = {8, 9},
         .sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, .mask = FR_GEN_MASK_CANONICAL},
        {.name = "nm_band_inactive", .B = 1, .N1 = 2, .S1 = 24, .S2 = 24, .D = 16, .sparse_mode = FR_SPARSE_BAND,
         .mask = FR_GEN_MASK_CANONICAL, .set_band = true, .pre_tokens = 2147483647, .next_tokens = 3},
        {.name = "nm_topk", .B = 1, .N1 = 2, .S1 = 16, .S2 = 48, .D = 16, .topk_w = 8},
        {.name = "nm_mask_bnss", .B = 1, .N1 = 2, .S1 = 20, .S2 = 36, .D = 16, .sparse_mode = FR_SPARSE_DEFAULT_MASK,
         .mask = FR_GEN_MASK_BNSS},
        {.name = "nm_mask_pse_add_mul", .B = 1, .N1 = 2, .S1 = 20, .S2 = 36, .D = 16,
         .sparse_mode = FR_SPARSE_DEFAULT_MASK, .mask = FR_GEN_MASK_SS, .pse = FR_GEN_PSE_BNSS,
         .pse_type = FR_PSE_OUTER_ADD_MUL, .scale = 0.5},
        {.name = "nm_pse_scale_1", .B = 1, .N1 = 2, .S1 = 16, .S2 = 40, .D = 16, .pse = FR_GEN_PSE_BNSS,
         .pse_type = FR_PSE_OUTER_MUL_ADD, .scale = 1.0},
        {.name = "nm_dropout_fwd", .B = 1, .N1 = 2, .S1 = 16, .S2 = 40, .D = 16, .keep_prob = 0.8},
        {.name = "nm_bwd_scale_1", .bwd = true, .B = 1, .N1 = 2, .S1 = 16, .S2 = 24, .D = 16, .scale = 1.0},
        {.name = "nm_causal_d1", .B = 1, .N1 = 2, .S1 = 30, .S2 = 20, .D = 16,
         .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL},
        {.name = "nm_alibi", .B = 1, .N1 = 2, .S1 = 32, .S2 = 32, .D = 16, .pse = FR_GEN_PSE_SLOPES_N,
         .pse_type = FR_PSE_INNER_MUL_ADD},
        {.name = "nm_topk_per_kv_head", .B = 1, .N1 = 4, .N2 = 2, .S1 = 16, .S2 = 48, .D = 16, .topk_w = 8,
         .topk_per_kv_head = true},
        {.name = "nm_fp8", .dtype = FR_E4M3FN, .B = 1, .N1 = 2, .S1 = 16, .S2 = 40, .D = 16},
        {.name = "nm_sink_bf16", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 40, .S2 = 200, .D = 16, .sink = true},
    };
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        fixture f;
        if (fixture_make(&specs[s], &f)) {
            double fac = specs[s].dtype == FR_E4M3FN ? 1.3 : 1.02; /* 2 % is inside fp8's bounds */
            fr_case_outputs io;
            outputs_map(&f, &f.gold, scale_out, &fac, &io);
            fr_judgement j = judge(&f, &io, 0, 0);
            char what[80];
            snprintf(what, sizeof what, "%s: rows x %g", specs[s].name, fac);
            expect(what, j, FR_FAIL, FR_DIAG_UNKNOWN, "; shape: ");
            fr_case_outputs_free(&io);
        }
        fixture_free(&f);
    }
}

/* A whole output row zero: overflow for a case designed for overflow-sized sums (purpose FR_TAG_LARGE), unknown
 * otherwise; a NaN there instead of zeros: overflow as well. */
static void test_overflow_shape(void) {
    fr_gen_spec s = {.name = "ovf_rows", .B = 1, .N1 = 2, .S1 = 24, .S2 = 40, .D = 16};
    fixture f;
    if (fixture_make(&s, &f)) {
        fr_case_outputs io;
        outputs_map(&f, &f.gold, NULL, NULL, &io);
        for (int64_t d = 0; d < 16; d++)
            fr_store_f64(&io.fwd.attention_out, 5 * 16 + d, 0.0);
        expect("row 5 zero, built for overflow", judge(&f, &io, 0, FR_TAG_LARGE), FR_FAIL, FR_DIAG_OVERFLOW,
               "attention_out rows above bound 1/48, 1 of 2 heads (0-0)");
        expect("row 5 zero, not built for it", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_UNKNOWN, NULL);
        /* every row right but one scaled: nothing zero, not overflow even in an overflow case */
        for (int64_t d = 0; d < 16; d++)
            fr_store_f64(&io.fwd.attention_out, 5 * 16 + d, 1.5 * fr_load_f64(&f.gold.fwd.attention_out, 5 * 16 + d));
        expect("row 5 x 1.5, built for overflow", judge(&f, &io, 0, FR_TAG_LARGE), FR_FAIL, FR_DIAG_UNKNOWN, NULL);
        fr_case_outputs_free(&io);
    }
    fixture_free(&f);
}

static void grad_map_scale(fixture *f, fr_case_output k, double fac, fr_case_outputs *io) {
    outputs_map(f, &f->gold, NULL, NULL, io);
    fr_tensor *t = fr_case_output_slot(io, k);
    for (int64_t i = 0; i < fr_tensor_numel(t); i++)
        fr_store_f64(t, i, fac * fr_load_f64(fr_case_output_cslot(&f->gold, k), i));
}

/* Backward defects: dq without the softmax scale, dk scaled twice, dpsum = 0, the dropout scaled twice, dv alone x 1.02
 * (named by nothing). */
static void test_backward(void) {
    fr_gen_spec s = {.name = "diag_bwd", .bwd = true, .B = 1, .N1 = 2, .S1 = 24, .S2 = 32, .D = 16, .scale = 0.3,
                     .keep_prob = 0.8};
    fixture f;
    if (fixture_make(&s, &f)) {
        fr_case_outputs io;
        grad_map_scale(&f, FR_CO_DQ, 1.0 / 0.3, &io);
        expect("dq without the scale", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_GRAD_SCALE,
               "matches candidate 'dq without the scale'");
        fr_case_outputs_free(&io);
        /* the same with dv left absent (allowed): named from dq and dk */
        grad_map_scale(&f, FR_CO_DQ, 1.0 / 0.3, &io);
        fr_tensor keep = io.bwd.dv;
        memset(&io.bwd.dv, 0, sizeof io.bwd.dv);
        g_absent_ok = 1u << FR_CO_DV;
        expect("dq without the scale, dv absent", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_GRAD_SCALE,
               "matches candidate 'dq without the scale'");
        g_absent_ok = 0;
        io.bwd.dv = keep;
        fr_case_outputs_free(&io);
        grad_map_scale(&f, FR_CO_DK, 0.3, &io);
        expect("dk scaled twice", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_GRAD_SCALE,
               "matches candidate 'dk scaled twice'");
        fr_case_outputs_free(&io);
        grad_map_scale(&f, FR_CO_DV, 1.02, &io);
        expect("dv x 1.02", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_UNKNOWN, "dv: rel-L2");
        fr_case_outputs_free(&io);
        fr_bwd_inputs in = f.c.in;
        fr_tensor zero = in.attention_in;
        zero.data = calloc((size_t)fr_tensor_numel(&zero), fr_dtype_size(zero.dtype));
        in.attention_in = zero;
        if (zero.data && defect_run(&f, &f.c.params, &in, &io)) {
            expect("dpsum = 0", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_DPSUM, "matches candidate 'dpsum = 0'");
            fr_case_outputs_free(&io);
        }
        free(zero.data);
        fr_params p = f.c.params;
        p.keep_prob = 0.8 * 0.8;
        if (defect_run(&f, &p, &f.c.in, &io)) {
            expect("bwd dropout scaled twice", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_DROPOUT,
                   "matches candidate 'dropout scaled twice'");
            fr_case_outputs_free(&io);
        }
    }
    fixture_free(&f);
}

/* Forward defects of the inputs' reading: the last key ignored (the golden with that key masked), the query's Dk % 8
 * tail ignored (the golden with those columns zero), the scale missing. */
static void test_forward(void) {
    fr_gen_spec s = {.name = "diag_fwd", .B = 1, .N1 = 2, .S1 = 20, .S2 = 37, .D = 20, .scale = 0.4};
    fixture f;
    if (fixture_make(&s, &f)) {
        fr_case_outputs io;
        /* last key dropped: a [S1, S2] mask of mode 0 over the last column */
        fr_params p = f.c.params;
        fr_bwd_inputs in = f.c.in;
        int64_t sh[2] = {20, 37};
        uint8_t *m = calloc(20 * 37, 1);
        for (int64_t i = 0; m && i < 20; i++)
            m[i * 37 + 36] = 1;
        in.fwd.atten_mask = fr_tensor_make(FR_BOOL, m, 2, sh);
        p.sparse_mode = FR_SPARSE_DEFAULT_MASK;
        if (m && defect_run(&f, &p, &in, &io)) {
            expect("last key dropped", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_TILE_TAIL,
                   "matches candidate 'last key dropped'");
            fr_case_outputs_free(&io);
        }
        free(m);
        /* q.k without the last 4 of 20 columns */
        in = f.c.in;
        fr_tensor q = in.fwd.query;
        q.data = malloc((size_t)fr_tensor_numel(&q) * fr_dtype_size(q.dtype));
        if (q.data) {
            memcpy(q.data, f.c.in.fwd.query.data, (size_t)fr_tensor_numel(&q) * fr_dtype_size(q.dtype));
            for (int64_t r = 0; r < fr_tensor_numel(&q) / 20; r++)
                for (int64_t d = 16; d < 20; d++)
                    fr_store_f64(&q, r * 20 + d, 0.0);
            in.fwd.query = q;
            if (defect_run(&f, &f.c.params, &in, &io)) {
                expect("q.k without the Dk % 8 tail", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_HEAD_DIM,
                       "matches candidate 'q.k without the Dk % ");
                fr_case_outputs_free(&io);
            }
            free(q.data);
        }
        p = f.c.params;
        p.scale_value = 1.0;
        if (defect_run(&f, &p, &f.c.in, &io)) {
            expect("scale missing", judge(&f, &io, 0, 0), FR_FAIL, FR_DIAG_SCALE, "matches candidate 'scale missing'");
            fr_case_outputs_free(&io);
        }
    }
    fixture_free(&f);
}

int main(void) {
    printf("test_diag_cands: seed %llu\n", (unsigned long long)kSeed);
    test_backward();
    test_forward();
    test_overflow_shape();
    test_near_misses();
    return fr_test_exit("test_diag_cands");
}
