/* Fast backward kernels against an fp64 backward written here from spec 8.2 (P from the given softmax_max/sum,
 * D_i from the given attention_in, which come from the fast forward), every ISA variant, NaN-prefilled gradients
 * fully written, bit-identical across thread counts.
 * Bounds: fp32 gradients rel-L2 <= 1e-6 (dq, dk, dv, dq_rope, dk_rope), dsink 1e-5 relative to the sum of its
 * terms' magnitudes (they cancel); 16-bit gradients
 * rel-L2 <= 4e-3 (their final rounding alone is up to 2^-8 relative for bf16); rows of fully masked queries give
 * exactly zero dq.
 * inner_precise = 1 (semantics-decisions.md D17), every variant: 16-bit inputs with fp32 gradient outputs against
 * the fp64 backward with P o Z and dS rounded to the input dtype (nearest even) before the three products: rel-L2
 * <= 1e-4 (a kernel's fp32 P or dS next to a rounding boundary may round the other way than the fp64 one), and at
 * least 8 x closer to it than to the unrounded one (measured 30-30000 x: the rounding happened); inner_precise = 0 with
 * fp32 outputs within 2e-5 of the unrounded one; fp32 inputs bit-identical in both modes. */
#include "common/check.h"
#include "kt_harness.h"

#define NOLIM FR_TOKENS_MAX

static const int64_t k_lq[4] = {65, 0, 1, 130};
static const int64_t k_lkv[4] = {70, 5, 64, 129};


/* fp64 reference gradients, logical [b][n][row][d] arrays over the same index space as the tensors. */
typedef struct bref {
    double *dq, *dk, *dv, *dsink; /* dq: rows of query tensor (q and rope concatenated), dk/dv: key rows */
    double *dsink_abs;            /* sum of |terms| of dsink: its terms cancel, so its error is relative to this */
    int64_t DQ;
} bref;

static int64_t qrow(const kt_prob *P, int64_t b, int64_t h, int64_t i) { return (b * P->c.N1 + h) * P->pb.S1 + i; }
static int64_t krow(const kt_prob *P, int64_t b, int64_t n, int64_t j) { return (b * P->c.N2 + n) * P->pb.S2 + j; }

/* Alike kt_harness.c:kt_reference: kept apart because the backward oracle and the forward oracle compute different
 * sums; they share only the (b, h, i) loop heads. */
/* v as fp32, then rounded to bf16 / fp16 nearest even (rnd); other rnd: v unchanged. */
static double round16(double v, fr_dtype rnd) {
    if (rnd == FR_BF16) return fr_bf16_to_f32(fr_f32_to_bf16((float)v, FR_ROUND_NEAREST_EVEN, FR_SAT));
    if (rnd == FR_F16) return fr_f16_to_f32(fr_f32_to_f16((float)v, FR_ROUND_NEAREST_EVEN, FR_SAT));
    return v;
}

/* rnd: FR_DT_NONE, or the dtype P o Z and dS are rounded to before the three products (inner_precise 1, D17). */
static void bwd_reference(const kt_prob *P, const fr_bwd_inputs *bi, bref *R, bool *d1rows, fr_dtype rnd) {
    const kt_case *c = &P->c;
    const fr_fwd_inputs *in = &P->in;
    int64_t S1 = P->pb.S1, S2 = P->pb.S2, Dv = c->Dv, DQ = c->Dk + c->Drope, G = (c->N2 ? c->N1 / c->N2 : 1);
    R->DQ = DQ;
    R->dq = calloc((size_t)(c->B * c->N1 * S1 * DQ + 1), sizeof(double));
    R->dk = calloc((size_t)(c->B * c->N2 * S2 * DQ + 1), sizeof(double));
    R->dv = calloc((size_t)(c->B * c->N2 * S2 * Dv + 1), sizeof(double));
    R->dsink = calloc((size_t)c->N1 + 1, sizeof(double));
    R->dsink_abs = calloc((size_t)c->N1 + 1, sizeof(double));
    double scale = (double)(float)c->scale, rkeep = (double)(1.0f / (float)c->keep_prob);
    double *qv = malloc(sizeof(double) * (size_t)DQ), *kvv = malloc(sizeof(double) * (size_t)DQ);
    double *dy = malloc(sizeof(double) * (size_t)(Dv + 1));
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        for (int64_t h = 0; h < c->N1; h++) {
            int64_t kv = h / G;
            for (int64_t i = 0; i < S1b; i++) {
                double m = kt_get(&bi->softmax_max, fr_softmax_offset(&bi->softmax_max, c->layout, 0, q0, b, h, i, 0));
                double l = kt_get(&bi->softmax_sum, fr_softmax_offset(&bi->softmax_sum, c->layout, 0, q0, b, h, i, 0));
                bool live = m > -FLT_MAX;
                d1rows[qrow(P, b, h, i)] = !live;
                if (!live) continue;
                for (int64_t d = 0; d < DQ; d++) {
                    const fr_tensor *t = d < c->Dk ? &in->query : &in->query_rope;
                    int64_t D = d < c->Dk ? c->Dk : c->Drope, dd = d < c->Dk ? d : d - c->Dk;
                    qv[d] = kt_get(t, fr_layout_offset(t, c->layout, D, q0, b, h, i, dd));
                }
                double Di = 0;
                for (int64_t d = 0; d < Dv; d++) {
                    dy[d] = kt_get(&bi->dy, fr_layout_offset(&bi->dy, c->layout, Dv, q0, b, h, i, d));
                    Di += dy[d] * kt_get(&bi->attention_in,
                                         fr_layout_offset(&bi->attention_in, c->layout, Dv, q0, b, h, i, d));
                }
                if (c->sink) {
                    double term = exp((double)((float *)in->sink.data)[h] - m) / l * Di;
                    R->dsink[h] -= term;
                    R->dsink_abs[h] += fabs(term);
                }
                for (int64_t j = 0; j < S2b; j++) {
                    if (!kt_takes_part(P, b, h, i, j, S1b, S2b)) continue;
                    double s = 0;
                    for (int64_t d = 0; d < DQ; d++) {
                        const fr_tensor *t = d < c->Dk ? &in->key : &in->key_rope;
                        int64_t D = d < c->Dk ? c->Dk : c->Drope, dd = d < c->Dk ? d : d - c->Dk;
                        kvv[d] = kt_get(t, fr_layout_offset(t, c->layout, D, k0, b, kv, j, dd));
                        s += qv[d] * kvv[d];
                    }
                    bool has_pse = c->pse != FR_GEN_PSE_NONE;
                    double pse = has_pse ? kt_pse(P, b, h, i, j, S1b) : 0.0;
                    double x = has_pse && c->pse_type == FR_PSE_OUTER_ADD_MUL ? (s + pse) * scale : s * scale + pse;
                    double p = exp(x - m) / l;
                    double z = kt_drop_keep(P, b, h, i, j, S1b, S2b) ? (c->keep_prob < 1 ? rkeep : 1.0) : 0.0;
                    double dp = 0;
                    int64_t kr = krow(P, b, kv, j);
                    double pz = round16(p * z, rnd);
                    for (int64_t d = 0; d < Dv; d++) {
                        double vv = kt_get(&in->value, fr_layout_offset(&in->value, c->layout, Dv, k0, b, kv, j, d));
                        dp += dy[d] * vv;
                        R->dv[kr * Dv + d] += pz * dy[d];
                    }
                    double ds = round16(p * (dp * z - Di), rnd);
                    int64_t qr = qrow(P, b, h, i);
                    for (int64_t d = 0; d < DQ; d++) {
                        R->dq[qr * DQ + d] += scale * ds * kvv[d];
                        R->dk[kr * DQ + d] += scale * ds * qv[d];
                    }
                }
            }
        }
    }
    free(qv), free(kvv), free(dy);
}

/* rel-L2 of a gradient tensor pair (t, rope) against ref rows (logical index rowf(b, n, i)). */
static double grad_rel(const kt_prob *P, const fr_tensor *t, const fr_tensor *rope, const double *ref, bool query,
                       int64_t D, int64_t Drope, const bool *d1rows, int64_t *nnan, int64_t *nd1) {
    const kt_case *c = &P->c;
    double e2 = 0, r2 = 0;
    int64_t heads = query ? c->N1 : c->N2, DD = D + Drope;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t q0, S1b, k0, S2b;
        kt_rows(P, b, &q0, &S1b, &k0, &S2b);
        int64_t rows = query ? S1b : S2b, row0 = query ? q0 : k0;
        for (int64_t n = 0; n < heads; n++)
            for (int64_t i = 0; i < rows; i++) {
                int64_t lr = query ? qrow(P, b, n, i) : krow(P, b, n, i);
                for (int64_t d = 0; d < DD; d++) {
                    const fr_tensor *tt = d < D ? t : rope;
                    int64_t Dt = d < D ? D : Drope, dd = d < D ? d : d - D;
                    double f = kt_get(tt, fr_layout_offset(tt, c->layout, Dt, row0, b, n, i, dd));
                    double r = ref[lr * DD + d];
                    if (isnan(f)) (*nnan)++;
                    if (query && d1rows[lr] && f != 0.0) (*nd1)++;
                    e2 += (f - r) * (f - r), r2 += r * r;
                }
            }
    }
    return r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
}

static bool same_bits(const fr_tensor *a, const fr_tensor *b) {
    if (!fr_tensor_present(a)) return true;
    return memcmp(a->data, b->data, (size_t)kt_numel(a) * fr_dtype_size(a->dtype)) == 0;
}

static double grads_rel(const kt_prob *P, const fr_bwd_outputs *o, const bref *R, const bool *d1rows, int64_t *nnan) {
    const kt_case *c = &P->c;
    int64_t nd1 = 0;
    double rq = grad_rel(P, &o->dq, &o->dq_rope, R->dq, true, c->Dk, c->Drope, d1rows, nnan, &nd1);
    double rk = grad_rel(P, &o->dk, &o->dk_rope, R->dk, false, c->Dk, c->Drope, d1rows, nnan, &nd1);
    double rv = grad_rel(P, &o->dv, NULL, R->dv, false, c->Dv, 0, d1rows, nnan, &nd1);
    *nnan += nd1;
    return fmax(rq, fmax(rk, rv));
}

/* inner_precise 1 (D17) on every variant this CPU runs: see the header. Returns whether every check held. */
static bool check_inner_precise(const kt_prob *P, const fr_bwd_inputs *bi, const bref *R0, const bool *d1rows) {
    const kt_case *c = &P->c;
    bool all = true;
    bref R1;
    memset(&R1, 0, sizeof R1);
    bool *d1b = calloc((size_t)(c->B * c->N1 * P->pb.S1 + 1), sizeof(bool));
    bool narrow = c->dt == FR_BF16 || c->dt == FR_F16;
    if (narrow) bwd_reference(P, bi, &R1, d1b, c->dt);
    fr_params p1 = P->p;
    p1.inner_precise = 1;
    fr_error err;
/* Alike test_kernels_bwd.c:run_case and test_kernels_emu_ip1.c:run_case (their variant loops): kept apart because each
 * body checks something else (both modes against two fp64 backwards here); only the skip-a-missing-variant prologue
 * is alike. */
#define FR_VARIANT(vname, visa, ...)                                                                                   \
    do {                                                                                                               \
        const fr_kops *ops = fr_kops_get(visa);                                                                        \
        if (!ops) {                                                                                                    \
            printf("  %-24s %-10s inner_precise 1 SKIPPED: this CPU lacks it\n", c->name, #vname);                     \
            break;                                                                                                     \
        }                                                                                                              \
        fr_dtype odt = narrow ? FR_F32 : c->dt;                                                                        \
        fr_bwd_outputs o0 = kt_grads(P, odt), o1 = kt_grads(P, odt);                                                   \
        bool ok = fr_k_bwd(ops, 2, &P->pb, &P->p, bi, &o0, &err) == FR_OK &&                                           \
                  fr_k_bwd(ops, 2, &P->pb, &p1, bi, &o1, &err) == FR_OK;                                               \
        if (!ok) {                                                                                                     \
            printf("  %-24s %-10s inner_precise status: %s  FAIL\n", c->name, #vname, err.msg);                        \
        } else if (narrow) {                                                                                           \
            int64_t nnan = 0;                                                                                          \
            double e00 = grads_rel(P, &o0, R0, d1rows, &nnan), e11 = grads_rel(P, &o1, &R1, d1rows, &nnan);            \
            double e10 = grads_rel(P, &o1, R0, d1rows, &nnan);                                                         \
            ok = e00 <= 2e-5 && e11 <= 1e-4 && e10 >= 8 * e11 && nnan == 0;                                            \
            printf("  %-24s %-10s fp32 grads: ip0 vs fp64 %.3g; ip1 vs rounded fp64 %.3g, vs unrounded %.3g%s\n",      \
                   c->name, #vname, e00, e11, e10, ok ? "" : "  FAIL");                                                \
        } else {                                                                                                       \
            ok = same_bits(&o0.dq, &o1.dq) && same_bits(&o0.dk, &o1.dk) && same_bits(&o0.dv, &o1.dv) &&               \
                 same_bits(&o0.dq_rope, &o1.dq_rope) && same_bits(&o0.dk_rope, &o1.dk_rope) &&                         \
                 same_bits(&o0.dsink, &o1.dsink);                                                                      \
            printf("  %-24s %-10s inner_precise 1 vs 0: %s\n", c->name, #vname,                                        \
                   ok ? "bit-identical (no 16-bit dtype)" : "DIFFER  FAIL");                                           \
        }                                                                                                              \
        all = all && ok;                                                                                               \
        kt_free_grads(&o0), kt_free_grads(&o1);                                                                        \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    free(R1.dq), free(R1.dk), free(R1.dv), free(R1.dsink), free(R1.dsink_abs), free(d1b);
    return all;
}

static void run_case(const kt_case *c, uint64_t seed, bool threads_check) {
    kt_prob P;
    kt_build(&P, c, seed);
    /* forward (fp32 statistics, attention_out in the input dtype), then dy */
    fr_fwd_outputs fo = kt_outputs(&P, c->dt);
    fr_error err;
    if (!CHECKED(kt_run_fast(&P, NULL, 2, &fo, &err) == FR_OK, "[%s] forward failed: %s", c->name, err.msg)) return;
    fr_bwd_inputs bi = kt_bwd_inputs(&P, &fo, seed);
    bref R;
    bool *d1rows = calloc((size_t)(c->B * c->N1 * P.pb.S1 + 1), sizeof(bool));
    bwd_reference(&P, &bi, &R, d1rows, FR_DT_NONE);
    double lim = c->dt == FR_F32 ? 1e-6 : 4e-3;
    fr_bwd_outputs first;
    bool have_first = false;
    int bad = 0;
/* Alike test_kernels_fwd.c:run_case, test_kernels_emu_ip1.c:run_case and test_kernels_bwd.c:check_inner_precise
 * (their variant loops): kept apart because the loop bodies check different things (gradients against the fp64
 * backward here; forward outputs, the emulator's preset, both inner_precise modes there); they share only the
 * skip-a-missing-variant and keep-the-first-variant bookkeeping. */
#define FR_VARIANT(vname, visa, ...)                                                                                   \
    do {                                                                                                               \
        const fr_kops *ops = fr_kops_get(visa);                                                                        \
        if (!ops) {                                                                                                    \
            printf("  %-24s %-10s SKIPPED: this CPU lacks it\n", c->name, #vname);                                     \
            break;                                                                                                     \
        }                                                                                                              \
        fr_bwd_outputs o = kt_grads(&P, c->dt);                                                                        \
        fr_status st = fr_k_bwd(ops, 2, &P.pb, &P.p, &bi, &o, &err);                                                   \
        if (st != FR_OK) {                                                                                             \
            fprintf(stderr, "  [%s %s] status %s: %s\n", c->name, #vname, fr_status_name(st), err.msg);                \
            bad = 1;                                                                                                   \
        } else {                                                                                                       \
            int64_t nnan = 0, nd1 = 0;                                                                                 \
            double rq = grad_rel(&P, &o.dq, &o.dq_rope, R.dq, true, c->Dk, c->Drope, d1rows, &nnan, &nd1);             \
            double rk = grad_rel(&P, &o.dk, &o.dk_rope, R.dk, false, c->Dk, c->Drope, d1rows, &nnan, &nd1);            \
            double rv = grad_rel(&P, &o.dv, NULL, R.dv, false, c->Dv, 0, d1rows, &nnan, &nd1);                         \
            double rs = 0;                                                                                             \
            for (int64_t h = 0; c->sink && h < c->N1; h++) {                                                           \
                double f = ((float *)o.dsink.data)[h], e = fabs(f - R.dsink[h]);                                       \
                if (isnan(f)) nnan++;                                                                                  \
                if (e / (R.dsink_abs[h] + 1e-30) > rs) rs = e / (R.dsink_abs[h] + 1e-30);                              \
            }                                                                                                          \
            bool ok = rq <= lim && rk <= lim && rv <= lim && rs <= 1e-5 && nnan == 0 && nd1 == 0;                      \
            printf("  %-24s %-10s rel-L2 dq %.3g dk %.3g dv %.3g dsink %.3g nan %lld d1 %lld%s\n", c->name, #vname,    \
                   rq, rk, rv, rs, (long long)nnan, (long long)nd1, ok ? "" : "  FAIL");                               \
            if (!ok) bad = 1;                                                                                          \
        }                                                                                                              \
        if (!have_first) {                                                                                             \
            first = o;                                                                                                 \
            have_first = true;                                                                                         \
        } else {                                                                                                       \
            kt_free_grads(&o);                                                                                         \
        }                                                                                                              \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    if (!check_inner_precise(&P, &bi, &R, d1rows)) bad = 1;
    if (threads_check) {
        fr_bwd_outputs a = kt_grads(&P, c->dt), b3 = kt_grads(&P, c->dt);
        const fr_kops *ops = fr_kops_get(FR_ISA_AUTO);
        fr_k_bwd(ops, 1, &P.pb, &P.p, &bi, &a, &err);
        fr_k_bwd(ops, 3, &P.pb, &P.p, &bi, &b3, &err);
        bool same = same_bits(&a.dq, &b3.dq) && same_bits(&a.dk, &b3.dk) && same_bits(&a.dv, &b3.dv) &&
                    same_bits(&a.dsink, &b3.dsink);
        printf("  %-24s threads 1 vs 3: %s\n", c->name, same ? "bit-identical" : "DIFFER  FAIL");
        if (!same) bad = 1;
        kt_free_grads(&a), kt_free_grads(&b3);
    }
    if (have_first) kt_free_grads(&first);
    free(R.dq), free(R.dk), free(R.dv), free(R.dsink), free(R.dsink_abs), free(d1rows), free(bi.dy.data);
    kt_free_outputs(&fo);
    kt_free_prob(&P);
    CHECK(!bad, "%s", c->name);
}

/* Alike test_kernels_golden.c:main: kept apart because each test has its own default seed and its own case table (what
 * it covers); only the opening lines are alike. */
int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261130u;
    printf("test_kernels_bwd: seed %llu (rerun: test_kernels_bwd %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    kt_case cs[32];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    ADD(k_->name = "dense 1x1", k_->S1 = 1, k_->S2 = 1, k_->Dk = 1, k_->Dv = 1, k_->N1 = 1);
    ADD(k_->name = "dense GQA 64x65 D64", k_->S1 = 64, k_->S2 = 65, k_->Dk = 64, k_->Dv = 48, k_->N1 = 4, k_->N2 = 2);
    ADD(k_->name = "dense BSH 129x200", k_->layout = FR_BSH, k_->S1 = 129, k_->S2 = 200, k_->B = 2, k_->N1 = 3,
        k_->N2 = 1, k_->Dk = 24, k_->Dv = 16);
    ADD(k_->name = "mode0 mask+band (D1)", k_->mask = true, k_->pre = 20, k_->next = 5);
    ADD(k_->name = "mode3 S1>S2 (D1)", k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, k_->S1 = 150,
        k_->S2 = 70);
    ADD(k_->name = "mode2 causal dropout", k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->S1 = 130,
        k_->keep_prob = 0.7);
    ADD(k_->name = "pse1 full", k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL);
    ADD(k_->name = "alibi3 + sink", k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD_SQRT,
        k_->S1 = 130, k_->S2 = 130, k_->sink = true);
    ADD(k_->name = "rope 32+16", k_->Drope = 16);
    ADD(k_->name = "TND mode0 drop", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->mask = true,
        k_->pre = 40, k_->next = 0, k_->mask_density = 0.1, k_->keep_prob = 0.8);
    /* B * N2 >= 4: the fused single-pass backward */
    ADD(k_->name = "fused MHA B=2 N=4 causal", k_->B = 2, k_->N1 = 4, k_->N2 = 4, k_->S1 = 130, k_->S2 = 130,
        k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->sink = true);
    ADD(k_->name = "fused GQA 8/8 B=1 drop", k_->N1 = 8, k_->N2 = 8, k_->S1 = 70, k_->S2 = 200, k_->keep_prob = 0.8,
        k_->mask = true, k_->pre = 50, k_->next = 10);
    ADD(k_->name = "fused TND 4x2 pse", k_->layout = FR_TND, k_->B = 4, k_->lq = k_lq, k_->lkv = k_lkv, k_->N1 = 4,
        k_->N2 = 2, k_->pse = FR_GEN_PSE_SLOPES_N, k_->pse_type = FR_PSE_INNER_MUL_ADD, k_->Drope = 8);
    ADD(k_->name = "bf16 dense GQA", k_->dt = FR_BF16, k_->N1 = 4, k_->N2 = 2, k_->Dk = 64, k_->Dv = 64);
    /* bf16 on a variant with a bf16 dot: S and dP on gemm_bf16 (odd head dims, rope and the fused mode too) */
    ADD(k_->name = "bf16 odd D rope causal drop", k_->dt = FR_BF16, k_->Dk = 33, k_->Dv = 31, k_->Drope = 8,
        k_->mask = true, k_->sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL, k_->keep_prob = 0.7, k_->S1 = 130, k_->S2 = 150,
        k_->sink = true);
    ADD(k_->name = "bf16 fused MHA B=2 pse", k_->dt = FR_BF16, k_->B = 2, k_->N1 = 4, k_->N2 = 4, k_->S1 = 70,
        k_->S2 = 200, k_->pse = FR_GEN_PSE_BNSS, k_->pse_type = FR_PSE_OUTER_ADD_MUL, k_->Dk = 64, k_->Dv = 64);
    ADD(k_->name = "fp16 causal", k_->dt = FR_F16, k_->mask = true, k_->sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL);
    ADD(k_->name = "fp16 fused GQA drop sink", k_->dt = FR_F16, k_->B = 2, k_->N1 = 4, k_->N2 = 2, k_->S1 = 70,
        k_->S2 = 140, k_->keep_prob = 0.8, k_->sink = true);
    for (int k = 0; k < n; k++) run_case(&cs[k], seed + (uint64_t)k, k % 4 == 1 || strncmp(cs[k].name, "fused", 5) == 0);
    return fr_test_exit("test_kernels_bwd");
}
