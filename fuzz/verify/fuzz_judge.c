/* libFuzzer: the judge (metrics, verdict, diagnosis) on adversarial outputs of an implementation under test. Two
 * small cases (fp32 forward with an explicit [S1,S2] mask, fp32 backward) have their golden and ideal outputs computed once;
 * each input then writes every output element from a pattern chosen by the fuzzer: NaN, +-Inf, denormals, -0, 0,
 * FLT_MAX, the golden value exactly or nudged by an ulp, scaled, negated, taken from another element, raw bits, and
 * whole rows huge or zero. The judge must return FR_OK with a verdict, never crash, and must PASS outputs equal to
 * the golden rounded to fp32 when every element was chosen so. */
#include "flashref.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#include "verify/judge/judge.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz_case {
    fr_gen_case g;
    fr_case c;
    fr_case_outputs gold, ideal;
    bool ok;
} fz_case;

static fz_case g_cases[2];

static fr_status run(const fr_case *c, fr_engine_kind k, fr_case_outputs *o) {
    fr_error err;
    fr_status st = fr_case_alloc_outputs(c, k == FR_ENGINE_GOLDEN, o, &err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(k);
    e.num_threads = 1;
    return c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, &err)
                                : fr_bwd(&c->params, &c->in, &o->bwd, &e, &err);
}

static void init(void) {
    static bool done;
    if (done) return;
    done = true;
    setenv("OMP_NUM_THREADS", "1", 0); /* tiny cases: a thread team per golden re-run only costs time */
    const fr_gen_spec specs[2] = {
        {.name = "fz_fwd", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 3, .S2 = 5, .D = 4,
         .sparse_mode = FR_SPARSE_DEFAULT_MASK, .mask = FR_GEN_MASK_SS},
        {.name = "fz_bwd", .bwd = true, .layout = FR_BNSD, .B = 1, .N1 = 1, .S1 = 4, .S2 = 3, .D = 2},
    };
    for (int k = 0; k < 2; k++) {
        fz_case *z = &g_cases[k];
        fr_error err;
        if (fr_gen_build(&specs[k], 7, &z->g, &err) != FR_OK) abort();
        z->c.op = z->g.bwd ? FR_CASE_BWD : FR_CASE_FWD;
        z->c.dtype = z->g.dtype;
        z->c.params = z->g.params;
        z->c.prefix = z->g.prefix;
        z->c.actual_seq_qlen = z->g.cu_q;
        z->c.actual_seq_kvlen = z->g.cu_kv;
        z->c.in = z->g.in;
        if (run(&z->c, FR_ENGINE_GOLDEN, &z->gold) != FR_OK || run(&z->c, FR_ENGINE_EMULATE, &z->ideal) != FR_OK)
            abort();
        z->ok = true;
    }
}

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned next(reader *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* Element i of an output: from the golden g (fp64) by pattern. exact is cleared unless it is the golden's value. */
static float pick(reader *r, const double *g, int64_t n, int64_t i, bool *exact) {
    unsigned b = next(r);
    double v = g[i];
    switch (b & 15) {
    case 0: *exact = false; return NAN;
    case 1: *exact = false; return INFINITY;
    case 2: *exact = false; return -INFINITY;
    case 3: *exact = false; return (b & 16 ? -1.0f : 1.0f) * FLT_TRUE_MIN * (float)(1 + (b >> 5));
    case 4: *exact = v == 0; return -0.0f;
    case 5: *exact = v == 0; return 0.0f;
    case 6: *exact = false; return b & 16 ? -FLT_MAX : FLT_MAX;
    case 7: return (float)v;
    case 8: *exact = false; return nextafterf((float)v, b & 16 ? INFINITY : -INFINITY);
    case 9: *exact = false; return (float)(v * (1.0 + (double)(b >> 4) / 8.0));
    case 10: *exact = false; return (float)-v;
    case 11: *exact = false; return (float)g[(i + 1 + (b >> 4)) % n];
    case 12: {
        uint32_t u = (uint32_t)next(r) | (uint32_t)next(r) << 8 | (uint32_t)next(r) << 16 | (uint32_t)next(r) << 24;
        float f;
        memcpy(&f, &u, 4);
        *exact = false;
        return f;
    }
    case 13: *exact = false; return 1e30f;
    default: return (float)v;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    init();
    reader r = {data, size};
    fz_case *z = &g_cases[next(&r) & 1];
    fr_case_outputs o;
    fr_error err;
    if (fr_case_alloc_outputs(&z->c, false, &o, &err) != FR_OK) abort();
    bool exact = true;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        fr_tensor *t = fr_case_output_slot(&o, (fr_case_output)k);
        const fr_tensor *g = fr_case_output_cslot(&z->gold, (fr_case_output)k);
        if (!fr_tensor_present(t) || t->dtype != FR_F32) continue;
        int64_t n = fr_tensor_numel(t), row = t->shape[t->ndim - 1];
        const double *gv = g->data;
        float *v = t->data;
        for (int64_t i = 0; i < n; i++) {
            /* A row mode now and then: the whole row huge, zero or NaN. */
            if (row > 0 && i % row == 0 && (next(&r) & 7) == 7) {
                unsigned m = next(&r) % 3;
                for (int64_t j = 0; j < row && i + j < n; j++)
                    v[i + j] = m == 0 ? 3e38f : m == 1 ? 0.0f : NAN;
                bool zero_ok = m == 1;
                for (int64_t j = 0; j < row && i + j < n; j++) zero_ok = zero_ok && gv[i + j] == 0;
                exact = exact && zero_ok;
                i += row - 1;
                continue;
            }
            v[i] = pick(&r, gv, n, i, &exact);
        }
    }
    fr_judge_opts opt = fr_judge_opts_default();
    opt.external = next(&r) & 1;
    fr_judgement j;
    fr_status st = fr_judge(&z->c, 0, 0, &opt, FR_OK, "", &o, &z->gold, &z->ideal, &j, &err);
    if (st != FR_OK) abort();
    if (j.verdict != FR_PASS && j.verdict != FR_WARN && j.verdict != FR_FAIL && j.verdict != FR_SKIP) abort();
    /* The golden itself, rounded once to fp32, is what the best implementation writes: never a FAIL. */
    if (exact && j.verdict == FR_FAIL) abort();
    fr_judgement_free(&j);
    fr_case_outputs_free(&o);
    return 0;
}
