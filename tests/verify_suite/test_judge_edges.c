/* The judge's paths that test_judge.c does not take, on constructed outputs of small generated cases: the IUT's error
 * statuses (guard, crash, timeout, shape), missing and wrong-shaped outputs, outputs the IUT may leave absent,
 * references of the wrong size or with NaN / far off (not used, and said so), NaN / Inf in each output and what the
 * case's tags make of them, a NaN in the golden matched by the IUT, the WARN band (precision and native-dtype), the
 * Ascend and FlashAttention standards with and without references, fully masked rows of the statistics and of dq,
 * one wrong gradient of a backward with rope and sink, the stored-golden check and bitwise identity. */
#include "core/core.h"
#include "verify/cases/casegen.h"
#include "verify/judge/judge.h"
#include "verify/judge/plain_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const uint64_t kSeed = 777;

/* A generated case with its golden (fp64), ideal pipeline and plain reference (in the operator's dtypes). */
typedef struct fixture {
    fr_gen_case g;
    fr_case c;
    fr_case_outputs gold, ideal, plain;
    bool ok;
} fixture;

static fr_status engine_run(const fr_case *c, fr_engine_kind k, fr_case_outputs *o) {
    fr_error err;
    fr_status st = fr_case_alloc_outputs(c, k == FR_ENGINE_GOLDEN, o, &err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(k);
    st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, &err)
                              : fr_bwd(&c->params, &c->in, &o->bwd, &e, &err);
    if (st != FR_OK) printf("engine %d: %s\n", (int)k, err.msg);
    return st;
}

static void fixture_make(const fr_gen_spec *s, fixture *f) {
    fr_error err;
    memset(f, 0, sizeof *f);
    if (!CHECKED(fr_gen_build(s, kSeed, &f->g, &err) == FR_OK, "%s: %s", s->name, err.msg)) return;
    f->c.op = f->g.bwd ? FR_CASE_BWD : FR_CASE_FWD;
    f->c.dtype = f->g.dtype;
    f->c.params = f->g.params;
    f->c.in = f->g.in;
    f->ok = CHECKED(engine_run(&f->c, FR_ENGINE_GOLDEN, &f->gold) == FR_OK, "%s golden", s->name) &&
            CHECKED(engine_run(&f->c, FR_ENGINE_EMULATE, &f->ideal) == FR_OK, "%s ideal", s->name) &&
            CHECKED(fr_judge_run_plain(&f->c, NULL, &f->plain, &err) == FR_OK, "%s plain: %s", s->name, err.msg);
}

static void fixture_free(fixture *f) {
    fr_case_outputs_free(&f->gold);
    fr_case_outputs_free(&f->ideal);
    fr_case_outputs_free(&f->plain);
    fr_gen_case_free(&f->g);
}

/* dst: src's values in the operator's dtypes (a fresh allocation). */
static void outputs_copy(const fixture *f, const fr_case_outputs *src, fr_case_outputs *dst) {
    fr_error err;
    if (fr_case_alloc_outputs(&f->c, false, dst, &err) != FR_OK) {
        memset(dst, 0, sizeof *dst);
        return;
    }
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *s = fr_case_output_cslot(src, (fr_case_output)k);
        fr_tensor *d = fr_case_output_slot(dst, (fr_case_output)k);
        if (fr_tensor_present(s) && fr_tensor_present(d))
            for (int64_t i = 0; i < fr_tensor_numel(d); i++)
                fr_store_f64(d, i, fr_load_f64(s, i));
    }
}

/* A copy of the fp64 golden, to change for the stored-golden checks. */
static void golden_copy(const fixture *f, fr_case_outputs *dst) {
    fr_error err;
    if (fr_case_alloc_outputs(&f->c, true, dst, &err) != FR_OK) {
        memset(dst, 0, sizeof *dst);
        return;
    }
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *s = fr_case_output_cslot(&f->gold, (fr_case_output)k);
        fr_tensor *d = fr_case_output_slot(dst, (fr_case_output)k);
        if (fr_tensor_present(s) && fr_tensor_present(d))
            memcpy(d->data, s->data, (size_t)fr_tensor_numel(d) * fr_dtype_size(d->dtype));
    }
}

static void set_at(fr_case_outputs *o, fr_case_output k, int64_t i, double v) {
    fr_store_f64(fr_case_output_slot(o, k), i, v);
}
static double get_at(const fr_case_outputs *o, fr_case_output k, int64_t i) {
    return fr_load_f64(fr_case_output_cslot(o, k), i);
}

typedef struct jarg {
    const fr_judge_opts *opt;
    unsigned tags, purpose;
    const fr_case_outputs *ideal, *plain; /* as given (NULL: none) */
} jarg;

static fr_judgement judge_with(const fixture *f, const fr_case_outputs *iut, jarg a) {
    fr_judgement j;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st =
        fr_judge_plain(&f->c, a.tags, a.purpose, a.opt, FR_OK, "", iut, &f->gold, a.ideal, a.plain, &j, &err);
    CHECK(st == FR_OK, "fr_judge_plain: %s: %s", fr_status_name(st), err.msg);
    return j;
}

/* Checks verdict, diagnosis and (when want_why is not NULL) a substring of the verdict's line; frees j. */
static void expect(const char *what, fr_judgement j, fr_verdict v, fr_diag d, const char *want_why) {
    printf("%-34s %s %s: %s\n", what, fr_verdict_name(j.verdict), fr_diag_name(j.diag), j.why);
    CHECK(j.verdict == v && j.diag == d, "%s: got %s/%s, want %s/%s", what, fr_verdict_name(j.verdict),
          fr_diag_name(j.diag), fr_verdict_name(v), fr_diag_name(d));
    if (want_why) CHECK(strstr(j.why, want_why) != NULL, "%s: '%s' not in: %s", what, want_why, j.why);
    fr_judgement_free(&j);
}

static void test_standard_names(void) {
    fr_standard s = FR_STD_FLASHREF;
    fr_error err;
    CHECK(!strcmp(fr_standard_name((fr_standard)99), "?"), "unknown standard's name");
    CHECK(fr_standard_parse("ascend-L1", &s, &err) == FR_OK && s == FR_STD_ASCEND_L1, "parse ascend-L1");
    CHECK(fr_standard_parse(NULL, &s, &err) == FR_E_INVALID_ARG &&
              !strcmp(err.msg, "--standard: '(null)': expected flashref, ascend-L0, ascend-L1, ascend-L2 or fa"),
          "NULL name: %s", err.msg);
    CHECK(fr_standard_parse("Ascend-L1", &s, &err) == FR_E_INVALID_ARG && strstr(err.msg, "'Ascend-L1'"),
          "names are case-sensitive: %s", err.msg);
}

/* What the IUT's run returned decides before any output is read (opt NULL: the defaults). */
static void test_statuses(const fixture *f) {
    static const struct {
        fr_status st;
        const char *msg;
        fr_verdict v;
        fr_diag d;
        const char *why;
    } rows[] = {
        {FR_E_OUTPUT, "guard: attention_out: 4 bytes after the end overwritten", FR_FAIL, FR_DIAG_UNWRITTEN,
         "FR_E_OUTPUT: guard: attention_out"},
        {FR_E_INTERNAL, "crash: signal 11", FR_FAIL, FR_DIAG_CRASH, "crash: signal 11"},
        {FR_E_INTERNAL, "timeout: 5 s", FR_FAIL, FR_DIAG_TIMEOUT, "timeout: 5 s"},
        {FR_E_OUTPUT, "shape: out.npy is [2, 3]", FR_FAIL, FR_DIAG_SHAPE, "shape: out.npy"},
        {FR_E_OUTPUT, NULL, FR_FAIL, FR_DIAG_ERROR_STATUS, "FR_E_OUTPUT: "},
        {FR_E_INTERNAL, NULL, FR_FAIL, FR_DIAG_ERROR_STATUS, "FR_E_INTERNAL: "},
        {FR_E_OUTPUT, "crash: is not an FR_E_INTERNAL", FR_FAIL, FR_DIAG_ERROR_STATUS, NULL},
        {FR_E_INTERNAL, "shape: is not an FR_E_OUTPUT", FR_FAIL, FR_DIAG_ERROR_STATUS, NULL},
        {FR_E_NOT_AVAILABLE, NULL, FR_SKIP, FR_DIAG_NONE, "not supported by the implementation: "},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fr_judgement j;
        fr_error err;
        CHECK(fr_judge(&f->c, 0, 0, NULL, rows[r].st, rows[r].msg, NULL, &f->gold, &f->ideal, &j, &err) == FR_OK);
        if (rows[r].v == FR_FAIL) CHECK(isinf(j.ratio), "row %zu: ratio %g", r, j.ratio);
        expect(rows[r].msg ? rows[r].msg : "(no message)", j, rows[r].v, rows[r].d, rows[r].why);
    }
}

/* A case the problem checks refuse is an error of the call, not a verdict. */
static void test_invalid_case(const fixture *f) {
    fr_case bad = f->c;
    bad.params.head_num = 3; /* N1 of the tensors is 2 */
    fr_judgement j;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st = fr_judge(&bad, 0, 0, NULL, FR_OK, "", &f->ideal, &f->gold, &f->ideal, &j, &err);
    printf("invalid case: %s: %s\n", fr_status_name(st), err.msg);
    CHECK(st == FR_E_HEADS && !strcmp(err.msg, "head_num: 3 differs from query N = 2"), "invalid case: %s: %s",
          fr_status_name(st), err.msg);
    char why[200] = "";
    CHECK(fr_judge_golden_agrees(&bad, &f->gold, &f->ideal, why, sizeof why) && why[0] == 0,
          "an invalid case is not the stored-golden check's business");
}

static void test_shapes(const fixture *f) {
    fr_judge_opts o = fr_judge_opts_default();
    fr_case_outputs io;
    outputs_copy(f, &f->ideal, &io);
    /* attention_out absent */
    fr_tensor keep = io.fwd.attention_out;
    memset(&io.fwd.attention_out, 0, sizeof io.fwd.attention_out);
    expect("attention_out missing", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_FAIL, FR_DIAG_SHAPE,
           "attention_out: missing, expected dtype bf16 with 4 dims");
    /* ... allowed absent: judged on the statistics alone, no line about attention_out */
    o.absent_ok = 1u << FR_CO_ATTENTION_OUT;
    fr_judgement j = judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain});
    CHECK(!j.out[FR_CO_ATTENTION_OUT].present && j.out[FR_CO_SOFTMAX_MAX].present && j.heat_rows == 0 && !j.gains,
          "absent attention_out: not judged, no heat map");
    expect("attention_out absent, allowed", j, FR_PASS, FR_DIAG_NONE, "empty outputs");
    io.fwd.attention_out = keep;
    /* softmax_sum absent, allowed: the rest judged */
    keep = io.fwd.softmax_sum;
    memset(&io.fwd.softmax_sum, 0, sizeof io.fwd.softmax_sum);
    o.absent_ok = 1u << FR_CO_SOFTMAX_SUM;
    expect("softmax_sum absent, allowed", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_PASS,
           FR_DIAG_NONE, "attention_out: rel-L2");
    o.absent_ok = 0;
    io.fwd.softmax_sum = keep;
    /* softmax_max with one dimension less (same dtype) */
    io.fwd.softmax_max.ndim--;
    expect("softmax_max wrong shape", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_FAIL,
           FR_DIAG_SHAPE, "softmax_max: dtype fp32, expected dtype fp32 with 4 dims");
    io.fwd.softmax_max.ndim++;
    fr_case_outputs_free(&io);
}

/* References of another size are dropped (the bounds from the others); one with NaN where the golden is finite, or
 * far off it, is not used and the verdict says so. */
static void test_references(const fixture *f) {
    fr_judge_opts o = fr_judge_opts_default();
    fr_case_outputs io, ref;
    outputs_copy(f, &f->gold, &io);
    outputs_copy(f, &f->ideal, &ref);
    ref.fwd.attention_out.shape[2] /= 2; /* half the rows: another element count */
    fr_judgement j = judge_with(f, &io, (jarg){&o, 0, 0, &ref, &f->plain});
    CHECK(!j.out[FR_CO_ATTENTION_OUT].have_ideal && j.out[FR_CO_SOFTMAX_MAX].have_ideal, "ideal of another size");
    expect("ideal of another size", j, FR_PASS, FR_DIAG_NONE, NULL);
    j = judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &ref});
    CHECK(!j.out[FR_CO_ATTENTION_OUT].have_plain && j.out[FR_CO_ATTENTION_OUT].have_ideal, "plain of another size");
    expect("plain of another size", j, FR_PASS, FR_DIAG_NONE, NULL);
    ref.fwd.attention_out.shape[2] *= 2;

    set_at(&ref, FR_CO_ATTENTION_OUT, 3, NAN);
    expect("plain with a NaN", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &ref}), FR_PASS, FR_DIAG_NONE,
           "; plain reference not used for attention_out (NaN/Inf where the golden is finite)");
    expect("ideal with a NaN", judge_with(f, &io, (jarg){&o, 0, 0, &ref, &f->plain}), FR_PASS, FR_DIAG_NONE,
           "; ideal pipeline not used for attention_out (NaN/Inf)");
    /* the statistics' references with NaN: left out of their bounds (no note) */
    fr_case_outputs r2;
    outputs_copy(f, &f->ideal, &r2);
    set_at(&r2, FR_CO_SOFTMAX_SUM, 0, NAN);
    j = judge_with(f, &io, (jarg){&o, 0, 0, &r2, &r2});
    CHECK(j.out[FR_CO_SOFTMAX_SUM].x_ideal == 0 && j.out[FR_CO_SOFTMAX_SUM].x_plain == 0,
          "softmax_sum references with a NaN not used: x %g %g", j.out[FR_CO_SOFTMAX_SUM].x_ideal,
          j.out[FR_CO_SOFTMAX_SUM].x_plain);
    expect("stats references with a NaN", j, FR_PASS, FR_DIAG_NONE, NULL);
    fr_case_outputs_free(&r2);
    for (int64_t i = 0; i < fr_tensor_numel(&ref.fwd.attention_out); i++)
        set_at(&ref, FR_CO_ATTENTION_OUT, i, 1.5 * get_at(&f->gold, FR_CO_ATTENTION_OUT, i));
    expect("plain far off", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &ref}), FR_PASS, FR_DIAG_NONE,
           "; plain reference not used for attention_out (far off the golden)");
    /* the plain reference far off and the ideal with a NaN: the first note only */
    fr_case_outputs rn;
    outputs_copy(f, &f->ideal, &rn);
    set_at(&rn, FR_CO_ATTENTION_OUT, 3, NAN);
    j = judge_with(f, &io, (jarg){&o, 0, 0, &rn, &ref});
    CHECK(strstr(j.why, "ideal pipeline not used") == NULL, "one note: %s", j.why);
    expect("plain far off, ideal NaN", j, FR_WARN, FR_DIAG_PRECISION,
           "; plain reference not used for attention_out (far off the golden)");
    fr_case_outputs_free(&rn);
    /* no reference at all: the floor of the dtype, k_out x u/4 = 2^-9, and the rounded golden (rel-L2 0.84 of
     * that) is in the WARN band; the native-dtype candidates, tried there, do not match a rounded golden */
    j = judge_with(f, &io, (jarg){&o, 0, 0, NULL, NULL});
    CHECK(j.out[FR_CO_ATTENTION_OUT].bound_l2 == 2.0 * 0.25 * ldexp(1.0, -8),
          "bound without references: %g, want k_out x u/4 of bf16", j.out[FR_CO_ATTENTION_OUT].bound_l2);
    expect("no references", j, FR_WARN, FR_DIAG_PRECISION, "attention_out: rel-L2 0.00164 is 0.84 of its bound");
    /* the band needs 1024 elements: the same ratio in softmax statistics or a small output is no WARN; and a
     * warn_frac of 0.9 puts 0.84 below the band */
    o.warn_frac = 0.9;
    expect("no references, warn_frac 0.9", judge_with(f, &io, (jarg){&o, 0, 0, NULL, NULL}), FR_PASS, FR_DIAG_NONE,
           NULL);
    o.warn_frac = 0.75;
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&io);
}

/* A NaN or Inf where the golden is finite, in each forward output, and what the tags make of it. */
static void test_anomalies(const fixture *f) {
    fr_judge_opts o = fr_judge_opts_default();
    static const struct {
        fr_case_output k;
        double v;
        unsigned tags;
        fr_diag d;
        const char *why;
    } rows[] = {
        {FR_CO_SOFTMAX_SUM, INFINITY, 0, FR_DIAG_OVERFLOW, "softmax_sum: 1 NaN/Inf mismatches, first at 40: inf"},
        {FR_CO_ATTENTION_OUT, NAN, FR_TAG_NAN_KV, FR_DIAG_NAN_LEAK, "attention_out: 1 NaN/Inf mismatches"},
        {FR_CO_ATTENTION_OUT, NAN, FR_TAG_LARGE, FR_DIAG_OVERFLOW, NULL},
        {FR_CO_ATTENTION_OUT, NAN, FR_TAG_D1, FR_DIAG_NAN_FULLY_MASKED, NULL},
        {FR_CO_SOFTMAX_MAX, -INFINITY, 0, FR_DIAG_OVERFLOW, "softmax_max: 1 NaN/Inf mismatches, first at 40: -inf"},
        {FR_CO_SOFTMAX_SUM, NAN, 0, FR_DIAG_NAN, "softmax_sum: 1 NaN/Inf mismatches, first at 40: nan"},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fr_case_outputs io;
        outputs_copy(f, &f->ideal, &io);
        set_at(&io, rows[r].k, 40, rows[r].v);
        fr_judgement j = judge_with(f, &io, (jarg){&o, rows[r].tags, 0, &f->ideal, &f->plain});
        CHECK(isinf(j.ratio), "anomaly: ratio %g", j.ratio);
        expect(fr_diag_name(rows[r].d), j, FR_FAIL, rows[r].d, rows[r].why);
        fr_case_outputs_free(&io);
    }
    /* +Inf in bf16 attention_out (written as bits: a store saturates): overflow, whatever the tags */
    fr_case_outputs io0;
    outputs_copy(f, &f->ideal, &io0);
    ((uint16_t *)io0.fwd.attention_out.data)[40] = 0x7f80;
    expect("bf16 +Inf", judge_with(f, &io0, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_FAIL, FR_DIAG_OVERFLOW,
           "attention_out: 1 NaN/Inf mismatches, first at 40: inf");
    fr_case_outputs_free(&io0);
    /* A NaN in the golden that the IUT (and the references) match: never a PASS. */
    fr_case_outputs g2, io, e2;
    golden_copy(f, &g2);
    outputs_copy(f, &f->ideal, &io);
    outputs_copy(f, &f->ideal, &e2);
    set_at(&g2, FR_CO_SOFTMAX_SUM, 8, NAN);
    set_at(&io, FR_CO_SOFTMAX_SUM, 8, NAN);
    set_at(&e2, FR_CO_SOFTMAX_SUM, 8, NAN);
    fr_judgement j;
    fr_error err;
    CHECK(fr_judge_plain(&f->c, 0, 0, &o, FR_OK, "", &io, &g2, &e2, NULL, &j, &err) == FR_OK);
    expect("golden NaN matched", j, FR_WARN, FR_DIAG_NAN,
           "softmax_sum: the golden has 1 NaN/Inf (matched by the implementation): not a pass");
    set_at(&g2, FR_CO_ATTENTION_OUT, 8, NAN);
    set_at(&io, FR_CO_ATTENTION_OUT, 8, NAN);
    set_at(&e2, FR_CO_ATTENTION_OUT, 8, NAN);
    o.standard = FR_STD_ASCEND_L1;
    CHECK(fr_judge_plain(&f->c, 0, 0, &o, FR_OK, "", &io, &g2, &e2, NULL, &j, &err) == FR_OK);
    expect("golden NaN matched, ascend-L1", j, FR_WARN, FR_DIAG_NAN,
           "attention_out: the golden has 1 NaN/Inf (matched by the implementation): not a pass");
    o.standard = FR_STD_FA;
    CHECK(fr_judge_plain(&f->c, 0, 0, &o, FR_OK, "", &io, &g2, &e2, NULL, &j, &err) == FR_OK);
    expect("golden NaN matched, fa", j, FR_WARN, FR_DIAG_NAN, "attention_out: the golden has 1 NaN/Inf");
    o.standard = FR_STD_FLASHREF;
    fr_case_outputs_free(&g2);
    fr_case_outputs_free(&io);
    fr_case_outputs_free(&e2);
}

/* The standards other than flashref's, with the plain reference, the ideal pipeline only, or no reference. */
static void test_standards(const fixture *f) {
    fr_case_outputs io, sc;
    outputs_copy(f, &f->gold, &io);
    outputs_copy(f, &f->gold, &sc);
    for (int64_t i = 0; i < fr_tensor_numel(&sc.fwd.attention_out); i++)
        set_at(&sc, FR_CO_ATTENTION_OUT, i, 1.05 * get_at(&f->gold, FR_CO_ATTENTION_OUT, i));
    static const fr_standard stds[] = {FR_STD_ASCEND_L0, FR_STD_ASCEND_L1, FR_STD_ASCEND_L2, FR_STD_FA};
    for (size_t s = 0; s < sizeof stds / sizeof stds[0]; s++) {
        fr_judge_opts o = fr_judge_opts_default();
        o.standard = stds[s];
        char what[64];
        snprintf(what, sizeof what, "%s: golden rounded", fr_standard_name(stds[s]));
        expect(what, judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_PASS, FR_DIAG_NONE,
               fr_standard_name(stds[s]));
        snprintf(what, sizeof what, "%s: ideal only", fr_standard_name(stds[s]));
        expect(what, judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, NULL}), FR_PASS, FR_DIAG_NONE, NULL);
        /* rows scaled 1.05: beyond every standard, with or without references */
        snprintf(what, sizeof what, "%s: x 1.05, no reference", fr_standard_name(stds[s]));
        fr_judgement j = judge_with(f, &sc, (jarg){&o, 0, 0, NULL, NULL});
        CHECK(j.out[FR_CO_ATTENTION_OUT].x_plain == 0 && j.out[FR_CO_ATTENTION_OUT].x_ideal == 0, "%s", what);
        expect(what, j, FR_FAIL, FR_DIAG_UNKNOWN,
               stds[s] == FR_STD_FA ? "attention_out: max abs" : "attention_out: ascend-L");
    }
    fr_case_outputs_free(&io);
    fr_case_outputs_free(&sc);
}

/* Fully masked rows (causal, S1 > S2) of the statistics: within 1e-6 relative of D1 is D1 (an fp32 neighbour of
 * FLT_MAX); a sum off by 1 % is not. */
static void test_d1_stats(void) {
    fr_gen_spec s = {.name = "edges_d1", .B = 1, .N1 = 2, .S1 = 24, .S2 = 12, .D = 16,
                     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL};
    fixture f;
    fixture_make(&s, &f);
    if (f.ok) {
        fr_judge_opts o = fr_judge_opts_default();
        fr_case_outputs io;
        outputs_copy(&f, &f.gold, &io);
        int64_t nsm = fr_tensor_numel(&io.fwd.softmax_max), d1 = 0;
        for (int64_t i = 0; i < nsm; i++)
            if (get_at(&f.gold, FR_CO_SOFTMAX_MAX, i) <= -FLT_MAX) {
                set_at(&io, FR_CO_SOFTMAX_MAX, i, -(double)nextafterf(FLT_MAX, 0));
                set_at(&io, FR_CO_SOFTMAX_SUM, i, (double)nextafterf(FLT_MAX, 0));
                d1++;
            }
        CHECK(d1 == 2 * 12 * 8, "D1 softmax elements: %lld", (long long)d1);
        fr_judgement j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain});
        CHECK(j.d1_rows == 2 * 12, "d1 rows %lld", (long long)j.d1_rows);
        expect("D1 stats one ulp off", j, FR_PASS, FR_DIAG_NONE, NULL);
        expect("D1 stats, no references", judge_with(&f, &io, (jarg){&o, 0, 0, NULL, NULL}), FR_PASS, FR_DIAG_NONE,
               NULL);
        o.standard = FR_STD_ASCEND_L0;
        expect("D1, fp32, ascend-L0", judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain}), FR_PASS,
               FR_DIAG_NONE, "[ascend-L0]");
        o.standard = FR_STD_FLASHREF;
        /* k_out set so the rounded golden is at 0.85 of its bound (no reference): still a PASS, the WARN band needs
         * 1024 elements for rel-L2 to be a statistic and attention_out has 768 */
        j = judge_with(&f, &io, (jarg){&o, 0, 0, NULL, NULL});
        double r = j.out[FR_CO_ATTENTION_OUT].m.rel_l2;
        fr_judgement_free(&j);
        fr_judge_opts w = o;
        w.k_out = r / (0.85 * 0.25 * ldexp(1.0, -24));
        w.k_max = 1e3;
        w.gain_warn = 1e3;
        expect("0.85 of the bound, 768 elements", judge_with(&f, &io, (jarg){&w, 0, 0, NULL, NULL}), FR_PASS,
               FR_DIAG_NONE, "worst ratio 0.85");
        for (int64_t i = 0; i < nsm; i++)
            if (get_at(&f.gold, FR_CO_SOFTMAX_MAX, i) <= -FLT_MAX) set_at(&io, FR_CO_SOFTMAX_SUM, i, 0.99 * FLT_MAX);
        expect("D1 sum off 1 %", judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain}), FR_FAIL,
               FR_DIAG_FULLY_MASKED, "softmax_sum: ");
        fr_case_outputs_free(&io);
    }
    fixture_free(&f);
}

/* A backward with fully masked rows: a NaN in dq on one of them; the golden's fp64 outputs are the wrong dtype. */
static void test_backward_d1(void) {
    fr_gen_spec s = {.name = "edges_bwd_d1", .bwd = true, .B = 1, .N1 = 2, .S1 = 20, .S2 = 12, .D = 16,
                     .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL};
    fixture f;
    fixture_make(&s, &f);
    if (f.ok) {
        fr_judge_opts o = fr_judge_opts_default();
        expect("bwd: golden itself (fp64)", judge_with(&f, &f.gold, (jarg){&o, 0, 0, &f.ideal, &f.plain}), FR_FAIL,
               FR_DIAG_SHAPE, "dq: dtype fp64, expected dtype fp32 with 4 dims");
        fr_case_outputs io;
        outputs_copy(&f, &f.ideal, &io);
        fr_judgement j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain});
        CHECK(j.d1_rows == 2 * 8, "bwd d1 rows %lld", (long long)j.d1_rows);
        expect("bwd d1: ideal", j, FR_PASS, FR_DIAG_NONE, NULL);
        /* row 0 of head 0 is fully masked (S1 - S2 = 8 rows, bottom-right causal) */
        set_at(&io, FR_CO_DQ, 3, NAN);
        expect("bwd: dq NaN on a D1 row", judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain}), FR_FAIL,
               FR_DIAG_NAN_FULLY_MASKED, "dq: nan on a fully masked row (row 0 of 40; 16 fully masked rows)");
        set_at(&io, FR_CO_DQ, 3, 1e-3);
        expect("bwd: dq 1e-3 on a D1 row", judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain}), FR_FAIL,
               FR_DIAG_FULLY_MASKED, "dq: 0.00100000005 on a fully masked row where D1 gives 0 (row 0; 16 such rows)");
        o.external = true;
        expect("bwd: dq 1e-3 on a D1 row, external", judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain}),
               FR_PASS, FR_DIAG_NONE, NULL);
        fr_case_outputs_free(&io);
    }
    fixture_free(&f);
}

/* A backward with rope and sink: each gradient but dq wrong alone (x 1.1 + 1e-3) fails on that gradient with dq
 * inside its bound; --standard fa bounds the gradients by 3 x the plain reference's max abs. */
static void test_backward(void) {
    fr_gen_spec s = {.name = "edges_bwd", .bwd = true, .B = 1, .N1 = 2, .S1 = 20, .S2 = 12, .D = 16, .Drope = 8,
                     .sink = true};
    fixture f;
    fixture_make(&s, &f);
    if (f.ok) {
        fr_judge_opts o = fr_judge_opts_default();
        fr_case_outputs io;
        outputs_copy(&f, &f.ideal, &io);
        fr_judgement j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain});
        CHECK(j.out[FR_CO_DQ_ROPE].present && j.out[FR_CO_DK_ROPE].present && j.out[FR_CO_DSINK].present,
              "rope and sink gradients judged");
        expect("bwd: ideal", j, FR_PASS, FR_DIAG_NONE, NULL);
        fr_case_outputs_free(&io);
        static const fr_case_output ks[] = {FR_CO_DK, FR_CO_DV, FR_CO_DQ_ROPE, FR_CO_DK_ROPE, FR_CO_DSINK};
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
            outputs_copy(&f, &f.ideal, &io);
            const fr_tensor *t = fr_case_output_cslot(&io, ks[q]);
            for (int64_t i = 0; i < fr_tensor_numel(t); i++)
                set_at(&io, ks[q], i, 1.1 * get_at(&f.gold, ks[q], i) + 1e-3);
            j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain});
            char what[64];
            snprintf(what, sizeof what, "bwd: %s x 1.1", fr_case_output_name(ks[q]));
            printf("%-34s %s %s: %s\n", what, fr_verdict_name(j.verdict), fr_diag_name(j.diag), j.why);
            const char *nm = fr_case_output_name(ks[q]);
            CHECK(j.verdict == FR_FAIL && !strncmp(j.why, nm, strlen(nm)),
                  "%s: %s: %s", what, fr_verdict_name(j.verdict), j.why);
            CHECK(j.out[ks[q]].ratio > 1 && j.out[FR_CO_DQ].ratio < 1, "%s: ratio %g, dq %g", what, j.out[ks[q]].ratio,
                  j.out[FR_CO_DQ].ratio);
            fr_judgement_free(&j);
            fr_case_outputs_free(&io);
        }
        /* --standard fa on a backward: 3 x the plain reference's max abs */
        o.standard = FR_STD_FA;
        outputs_copy(&f, &f.gold, &io);
        j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, &f.plain});
        CHECK(j.out[FR_CO_DK].bound_abs > 3 * j.out[FR_CO_DK].plain.max_abs, "fa bwd bound %g",
              j.out[FR_CO_DK].bound_abs);
        expect("bwd: fa, golden rounded", j, FR_PASS, FR_DIAG_NONE, "[fa]");
        fr_case_outputs_free(&io);
    }
    fixture_free(&f);
}

/* The stored-golden check (issue 28): agrees with itself; a NaN where the ideal is finite, an all-zero golden and a
 * golden off by more than the a-priori ceiling at one element are each contradicted, naming the file. */
static void test_golden_agrees(const fixture *f) {
    char why[300] = "";
    CHECK(fr_judge_golden_agrees(&f->c, &f->gold, &f->ideal, why, sizeof why), "golden vs ideal: %s", why);
    fr_case_outputs g;
    golden_copy(f, &g);
    set_at(&g, FR_CO_SOFTMAX_MAX, 5, NAN);
    CHECK(!fr_judge_golden_agrees(&f->c, &g, &f->ideal, why, sizeof why) &&
              strstr(why, "golden/softmax_max.npy: NaN/Inf at 1 positions where a fresh ideal pipeline run"),
          "NaN: %s", why);
    set_at(&g, FR_CO_SOFTMAX_MAX, 5, get_at(&f->gold, FR_CO_SOFTMAX_MAX, 5));
    for (int64_t i = 0; i < fr_tensor_numel(&g.fwd.attention_out); i++)
        set_at(&g, FR_CO_ATTENTION_OUT, i, 0);
    CHECK(!fr_judge_golden_agrees(&f->c, &g, &f->ideal, why, sizeof why) &&
              strstr(why, "golden/attention_out.npy: a fresh ideal pipeline run of the case is inf (rel-L2) off it"),
          "zeros: %s", why);
    for (int64_t i = 0; i < fr_tensor_numel(&g.fwd.attention_out); i++)
        set_at(&g, FR_CO_ATTENTION_OUT, i, get_at(&f->gold, FR_CO_ATTENTION_OUT, i));
    set_at(&g, FR_CO_ATTENTION_OUT, 7, get_at(&f->gold, FR_CO_ATTENTION_OUT, 7) + 0.5);
    CHECK(!fr_judge_golden_agrees(&f->c, &g, &f->ideal, why, sizeof why) &&
              strstr(why, "(max abs) off it, beyond the a-priori ceiling"),
          "one element: %s", why);
    /* an ideal output of another size is not compared */
    fr_case_outputs e0;
    outputs_copy(f, &f->ideal, &e0);
    e0.fwd.attention_out.shape[2] /= 2;
    CHECK(fr_judge_golden_agrees(&f->c, &g, &e0, why, sizeof why), "attention_out of another size not compared");
    e0.fwd.attention_out.shape[2] *= 2;
    fr_case_outputs_free(&e0);
    /* an output the ideal does not have is not compared */
    fr_case_outputs e;
    outputs_copy(f, &f->ideal, &e);
    fr_tensor keep = e.fwd.attention_out;
    memset(&e.fwd.attention_out, 0, sizeof e.fwd.attention_out);
    CHECK(fr_judge_golden_agrees(&f->c, &g, &e, why, sizeof why), "attention_out not compared");
    e.fwd.attention_out = keep;
    fr_case_outputs_free(&e);
    fr_case_outputs_free(&g);
}

static void test_identical(const fixture *f) {
    fr_case_outputs a, b;
    outputs_copy(f, &f->ideal, &a);
    outputs_copy(f, &f->ideal, &b);
    int first = 99;
    CHECK(fr_outputs_identical(&a, &b, &first) && first == -1, "identical: first %d", first);
    CHECK(fr_outputs_identical(&a, &b, NULL), "identical, first NULL");
    set_at(&b, FR_CO_SOFTMAX_SUM, 2, get_at(&a, FR_CO_SOFTMAX_SUM, 2) * 2);
    CHECK(!fr_outputs_identical(&a, &b, &first) && first == FR_CO_SOFTMAX_SUM, "data: first %d", first);
    CHECK(!fr_outputs_identical(&a, &b, NULL), "data, first NULL");
    set_at(&b, FR_CO_SOFTMAX_SUM, 2, get_at(&a, FR_CO_SOFTMAX_SUM, 2));
    b.fwd.softmax_max.dtype = FR_BF16;
    CHECK(!fr_outputs_identical(&a, &b, &first) && first == FR_CO_SOFTMAX_MAX, "dtype: first %d", first);
    b.fwd.softmax_max.dtype = FR_F32;
    b.fwd.softmax_max.shape[3] = 4;
    CHECK(!fr_outputs_identical(&a, &b, &first) && first == FR_CO_SOFTMAX_MAX, "shape: first %d", first);
    b.fwd.softmax_max.shape[3] = 8;
    fr_tensor keep = b.fwd.attention_out;
    memset(&b.fwd.attention_out, 0, sizeof b.fwd.attention_out);
    CHECK(!fr_outputs_identical(&a, &b, &first) && first == FR_CO_ATTENTION_OUT, "presence: first %d", first);
    b.fwd.attention_out = keep;
    fr_case_outputs_free(&a);
    fr_case_outputs_free(&b);
}

/* The WARN band in 16 bits names a textbook attention in the input dtype (native-dtype) when its candidate matches:
 * the native plain reference as the IUT, with k_out set so that its error is 0.85 of the bound. */
static void test_native_warn(void) {
    fr_gen_spec s = {.name = "edges_native", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 128, .S2 = 128, .D = 64,
                     .beta = 0.4};
    fixture f;
    fixture_make(&s, &f);
    fr_case_outputs io;
    fr_error err;
    if (f.ok && CHECKED(fr_case_alloc_outputs(&f.c, false, &io, &err) == FR_OK)) {
        if (CHECKED(fr_plain_fwd_native(&f.c.params, &f.c.in.fwd, &io.fwd, FR_PLAIN_SCALE_AFTER, &err) == FR_OK,
                    "native: %s", err.msg)) {
            /* the statistics from the ideal pipeline: the native candidates compare attention_out only */
            for (int64_t i = 0; i < fr_tensor_numel(&io.fwd.softmax_max); i++) {
                set_at(&io, FR_CO_SOFTMAX_MAX, i, get_at(&f.ideal, FR_CO_SOFTMAX_MAX, i));
                set_at(&io, FR_CO_SOFTMAX_SUM, i, get_at(&f.ideal, FR_CO_SOFTMAX_SUM, i));
            }
            fr_judge_opts o = fr_judge_opts_default();
            fr_judgement j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, NULL});
            double r = j.out[FR_CO_ATTENTION_OUT].m.rel_l2, il2 = j.out[FR_CO_ATTENTION_OUT].ideal.rel_l2;
            fr_judgement_free(&j);
            o.k_out = r / (0.85 * il2);
            o.k_max = 1e3;
            o.gain_warn = 1e3;
            j = judge_with(&f, &io, (jarg){&o, 0, 0, &f.ideal, NULL});
            if (j.out[FR_CO_ATTENTION_OUT].m.max_abs > j.out[FR_CO_ATTENTION_OUT].apriori_abs)
                printf("native: beyond the a-priori ceiling %g\n", j.out[FR_CO_ATTENTION_OUT].apriori_abs);
            expect("native in the WARN band", j, FR_WARN, FR_DIAG_NATIVE_DTYPE,
                   "; matches candidate 'scores in the dtype, (q.k)s'");
        }
        fr_case_outputs_free(&io);
    }
    fixture_free(&f);
}

/* lse stored as the sum with softmax_max left absent (allowed): named from the sum alone. */
static void test_lse_without_max(const fixture *f) {
    fr_judge_opts o = fr_judge_opts_default();
    o.absent_ok = 1u << FR_CO_SOFTMAX_MAX;
    fr_case_outputs io;
    outputs_copy(f, &f->ideal, &io);
    fr_tensor keep = io.fwd.softmax_max;
    memset(&io.fwd.softmax_max, 0, sizeof io.fwd.softmax_max);
    for (int64_t i = 0; i < fr_tensor_numel(&io.fwd.softmax_sum); i++)
        set_at(&io, FR_CO_SOFTMAX_SUM, i, log(get_at(&f->gold, FR_CO_SOFTMAX_SUM, i)));
    fr_judge_opts o2 = fr_judge_opts_default();
    io.fwd.softmax_max = keep;
    expect("log(sum), max present", judge_with(f, &io, (jarg){&o2, 0, 0, &f->ideal, &f->plain}), FR_FAIL,
           FR_DIAG_LSE_FOR_SUM, "softmax_sum: max rel error");
    memset(&io.fwd.softmax_max, 0, sizeof io.fwd.softmax_max);
    expect("log(sum), max absent", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_FAIL,
           FR_DIAG_LSE_FOR_SUM, "softmax_sum: max rel error");
    for (int64_t i = 0; i < fr_tensor_numel(&io.fwd.softmax_sum); i++)
        set_at(&io, FR_CO_SOFTMAX_SUM, i, 1.01 * get_at(&f->gold, FR_CO_SOFTMAX_SUM, i));
    expect("sum x 1.01, max absent", judge_with(f, &io, (jarg){&o, 0, 0, &f->ideal, &f->plain}), FR_FAIL,
           FR_DIAG_SOFTMAX_STATS, "softmax_sum: max rel error");
    io.fwd.softmax_max = keep;
    fr_case_outputs_free(&io);
}

/* --standard fa's plain reference is the one in the input dtype for 16-bit inputs, forward and backward; the fp32
 * plain reference otherwise. An empty case (varlen, no query rows) is judged on nothing. */
static void test_plain_runs(void) {
    fr_gen_spec specs[] = {
        {.name = "edges_fa_bwd", .bwd = true, .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 16, .S2 = 24, .D = 16},
        {.name = "edges_fa_f16", .dtype = FR_F16, .B = 1, .N1 = 2, .S1 = 16, .S2 = 24, .D = 16},
    };
    fr_judge_opts fa = fr_judge_opts_default();
    fa.standard = FR_STD_FA;
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        fixture f;
        fixture_make(&specs[s], &f);
        fr_case_outputs nat;
        fr_error err;
        if (f.ok && CHECKED(fr_judge_run_plain(&f.c, &fa, &nat, &err) == FR_OK, "%s: %s", specs[s].name, err.msg)) {
            fr_case_output k = f.c.op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ;
            double d = 0;
            for (int64_t i = 0; i < fr_tensor_numel(fr_case_output_cslot(&nat, k)); i++)
                d = fmax(d, fabs(get_at(&nat, k, i) - get_at(&f.plain, k, i)));
            CHECK(d > 0, "%s: the native plain reference is the fp32 one", specs[s].name);
            expect(specs[s].name, judge_with(&f, &f.ideal, (jarg){&fa, 0, 0, &f.ideal, &nat}), FR_PASS, FR_DIAG_NONE,
                   "[fa]");
            int first = -2;
            CHECK(!fr_outputs_identical(&nat, &f.plain, &first) && first == (int)k, "%s: first %d", specs[s].name,
                  first);
            fr_case_outputs_free(&nat);
        }
        fixture_free(&f);
    }
    fr_gen_spec e = {.name = "edges_empty", .layout = FR_TND, .B = 2, .N1 = 2, .D = 16, .seq_q = {0, 0},
                     .seq_kv = {3, 4}};
    fixture f;
    fixture_make(&e, &f);
    if (f.ok) {
        fr_judge_opts o = fr_judge_opts_default();
        fr_judgement j = judge_with(&f, &f.ideal, (jarg){&o, 0, 0, &f.ideal, &f.plain});
        CHECK(!j.out[FR_CO_ATTENTION_OUT].present && j.heat_rows == 0 && j.n_gains == 0, "empty: nothing judged");
        expect("empty case", j, FR_PASS, FR_DIAG_NONE, "empty outputs");
        int first = -2;
        CHECK(fr_outputs_identical(&f.ideal, &f.plain, &first) && first == -1, "empty outputs are identical");
        char why[200] = "";
        CHECK(fr_judge_golden_agrees(&f.c, &f.gold, &f.ideal, why, sizeof why), "empty: %s", why);
    }
    fixture_free(&f);
}

int main(void) {
    printf("test_judge_edges: seed %llu\n", (unsigned long long)kSeed);
    test_standard_names();
    fr_gen_spec s = {.name = "edges_bf16", .dtype = FR_BF16, .B = 1, .N1 = 2, .S1 = 32, .S2 = 48, .D = 32};
    fixture f;
    fixture_make(&s, &f);
    if (f.ok) {
        test_statuses(&f);
        test_invalid_case(&f);
        test_shapes(&f);
        test_references(&f);
        test_anomalies(&f);
        test_standards(&f);
        test_golden_agrees(&f);
        test_identical(&f);
        test_lse_without_max(&f);
    }
    fixture_free(&f);
    test_d1_stats();
    test_backward_d1();
    test_backward();
    test_native_warn();
    test_plain_runs();
    return fr_test_exit("test_judge_edges");
}
