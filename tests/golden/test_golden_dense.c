/* The golden engine against the plain dense reference of dense_ref.h (S1 x S2 matrices, whole-matrix masks and pse,
 * forward and backward as matrix loops). A seeded grid of layouts x sparse modes x pse types x dtypes x GQA shapes,
 * with TND empty sequences, strided inputs, sink, rope, top-k (-1, out of range, duplicates), dropout. Tolerance:
 * 1e-12 relative to each output's largest magnitude plus an absolute 1e-14 (inputs are O(1)). */
#include "common/check.h"
#include "golden/dense_ref.h"
#include "golden/gt_case.h"

#define NDT 6
static const fr_dtype dtypes[NDT] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};

/* ---- comparison ---------------------------------------------------------------------------------------------- */
typedef struct cmp {
    double maxref, maxerr;
    int64_t bad; /* non-finite where the reference is finite, or NaN (unwritten) */
} cmp;
static void cmp_add(cmp *k, double a, double r) {
    if (!isfinite(r)) {
        if (!(isnan(r) && isnan(a)) && a != r) k->bad++;
        return;
    }
    if (!isfinite(a)) {
        k->bad++;
        return;
    }
    if (fabs(r) > k->maxref) k->maxref = fabs(r);
    if (fabs(a - r) > k->maxerr) k->maxerr = fabs(a - r);
}
/* Relative to the output's largest magnitude, with an absolute floor of 1e-14: inputs and dy are O(1), so a
 * gradient that is small only through cancellation (sum_j P (dP - D)) still has O(1) terms, each rounded in fp64. */
static int cmp_ok(const cmp *k, double tol) { return k->bad == 0 && k->maxerr <= tol * k->maxref + 1e-14; }

/* Compares a q-like (kv = 0) or k-like tensor of the golden with the reference array [rows][N][D]. */
static cmp cmp_qkv(const gt_case *c, const fr_tensor *t, int kv, int64_t N, int64_t D, const double *rf) {
    cmp k = {0, 0, 0};
    for (int64_t b = 0; b < c->B; b++) {
        int64_t S = kv ? c->lkv[b] : c->lq[b];
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < S; i++) {
                int64_t row = kv ? kvrow(c, b, i) : qrow(c, b, i);
                for (int64_t d = 0; d < D; d++) cmp_add(&k, gt_qkv(c, t, kv, b, n, i, d, D), rf[(row * N + n) * D + d]);
            }
    }
    return k;
}

static int check_case(int64_t id, const gt_case *c, const ref *R, int bwd) {
    const double tol = 1e-12;
    int ok = 1;
    cmp k = cmp_qkv(c, &c->out, 0, c->N1, c->Dv, R->out);
    if (!cmp_ok(&k, tol)) printf("case %lld: attention_out err %.3g (max %.3g, bad %lld)\n", (long long)id, k.maxerr, k.maxref, (long long)k.bad), ok = 0;
    cmp km = {0, 0, 0}, kl = {0, 0, 0};
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->N1; h++)
            for (int64_t i = 0; i < c->lq[b]; i++)
                for (int64_t q = 0; q < 8; q++) {
                    int64_t si[4];
                    gt_sidx(c, b, h, i, q, si);
                    cmp_add(&km, gt_get(&c->smax, si), R->m[qrow(c, b, i) * c->N1 + h]);
                    cmp_add(&kl, gt_get(&c->ssum, si), R->l[qrow(c, b, i) * c->N1 + h]);
                }
    /* max: exact up to rounding; sum: relative */
    if (!cmp_ok(&km, tol)) printf("case %lld: softmax_max err %.3g bad %lld\n", (long long)id, km.maxerr, (long long)km.bad), ok = 0;
    if (!cmp_ok(&kl, tol)) printf("case %lld: softmax_sum err %.3g bad %lld\n", (long long)id, kl.maxerr, (long long)kl.bad), ok = 0;
    if (!bwd) return ok;
    struct {
        const char *name;
        const fr_tensor *t;
        int kv;
        int64_t N, D;
        const double *r;
    } g[5] = {{"dq", &c->dq, 0, c->N1, c->Dk, R->dq},
              {"dk", &c->dk, 1, c->N2, c->Dk, R->dk},
              {"dv", &c->dv, 1, c->N2, c->Dv, R->dv},
              {"dq_rope", &c->dqr, 0, c->N1, c->Dr, R->dqr},
              {"dk_rope", &c->dkr, 1, c->N2, c->Dr, R->dkr}};
    for (int q = 0; q < 5; q++) {
        if (q >= 3 && !c->Dr) continue;
        k = cmp_qkv(c, g[q].t, g[q].kv, g[q].N, g[q].D, g[q].r);
        if (!cmp_ok(&k, tol)) printf("case %lld: %s err %.3g (max %.3g, bad %lld)\n", (long long)id, g[q].name, k.maxerr, k.maxref, (long long)k.bad), ok = 0;
    }
    if (fr_tensor_present(&c->dsink)) {
        cmp ks = {0, 0, 0};
        for (int64_t h = 0; h < c->N1; h++) cmp_add(&ks, gt_get(&c->dsink, &h), R->dsink[h]);
        if (!cmp_ok(&ks, tol)) printf("case %lld: dsink err %.3g bad %lld\n", (long long)id, ks.maxerr, (long long)ks.bad), ok = 0;
    }
    return ok;
}

/* ---- the grid ------------------------------------------------------------------------------------------------ */
static void band(gt_case *c, uint64_t *r, int64_t S1, int64_t S2, int64_t *pre, int64_t *next) {
    /* a top-left band [-pre, next] meeting the S1 x S2 scores, negative values now and then (spec 4.1) */
    for (;;) {
        int64_t p = fr_test_range(r, -(S1 > 1 ? S1 - 1 : 0), S1 + 1), n = fr_test_range(r, -(S2 > 1 ? S2 - 1 : 0), S2 + 1);
        if (fr_test_below(r, 4) == 0) p = FR_TOKENS_MAX;
        if (fr_test_below(r, 4) == 0) n = FR_TOKENS_MAX;
        if (p < 0 && n < 0) continue;
        if (n < 0 && p < -n) continue;
        if (p < 0 && n < -p) continue;
        if (S1 > 0 && S2 > 0) {
            int64_t lo = -p > -(S1 - 1) ? -p : -(S1 - 1), hi = n < S2 - 1 ? n : S2 - 1;
            if (lo > hi) continue;
        }
        *pre = p, *next = n;
        (void)c;
        return;
    }
}

/* big = 1: lengths around the golden's 64-row / 64-key blocks and the fp8 scale blocks (128 query rows, 256 keys) */
static int64_t pick(uint64_t *r, const int64_t *v, int n) { return v[fr_test_below(r, n)]; }

static int make_case(int64_t k, uint64_t *r, gt_case *c, gt_opts *o, const fr_tensor *cm, const fr_tensor *cm6,
                     int big) {
    memset(c, 0, sizeof *c);
    memset(o, 0, sizeof *o);
    o->cmask = cm, o->cmask6 = cm6;
    c->p = fr_params_default();
    const fr_layout layouts[5] = {FR_BSH, FR_SBH, FR_BSND, FR_BNSD, FR_TND};
    /* blocks of 30 cases: every (layout, dtype) pair once per block; one sparse mode per block; pse type shifts
     * with the layout and the block (-1 = none) */
    int mode = (int)((k / 30) % FR_SPARSE_MODE_COUNT);
    c->L = mode >= FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? FR_TND : layouts[k % 5]; /* modes 7 and 8 are TND only */
    c->dt = dtypes[(k / 5) % NDT];
    int fp8 = c->dt == FR_E4M3FN || c->dt == FR_E5M2 || c->dt == FR_HIF8;
    int pse = (int)((k % 5 + k / 30) % 5) - 1;
    if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND) pse = -1; /* pse is not allowed with mode 7 */
    int gqa = (int)((k / 2) % 3);
    int tnd = c->L == FR_TND;
    if (tnd && mode == FR_SPARSE_PREFIX) mode = FR_SPARSE_PREFIX_COMPRESS;
    c->N2 = fr_test_range(r, 1, 2);
    c->G = gqa == 0 ? 1 : fr_test_range(r, 2, 3);
    if (gqa == 2) c->N2 = 1; /* MQA */
    c->N1 = c->N2 * c->G;
    c->B = fr_test_range(r, 1, tnd ? 4 : 3);
    c->Dk = fr_test_range(r, 1, 12);
    c->Dv = fr_test_range(r, 1, c->Dk);
    c->S1 = fr_test_range(r, 1, 13);
    c->S2 = fr_test_range(r, 1, 13);
    for (int64_t b = 0; b < c->B; b++) {
        c->lq[b] = fr_test_range(r, 0, 9);
        c->lkv[b] = c->lq[b] ? fr_test_range(r, 1, 11) : fr_test_range(r, 0, 4);
    }
    if (big) {
        static const int64_t sz[8] = {1, 63, 64, 65, 127, 128, 129, 130}, sq8[4] = {127, 128, 129, 130},
                             sk8[4] = {255, 256, 257, 300}, tl[6] = {0, 1, 63, 64, 65, 129};
        c->B = fr_test_range(r, 1, tnd ? 3 : 2);
        c->Dk = fr_test_range(r, 1, 6);
        c->Dv = fr_test_range(r, 1, c->Dk);
        c->S1 = fp8 ? pick(r, sq8, 4) : pick(r, sz, 8);
        c->S2 = fp8 ? pick(r, sk8, 4) : pick(r, sz, 8);
        for (int64_t b = 0; b < c->B; b++) {
            c->lq[b] = pick(r, tl, 6);
            c->lkv[b] = c->lq[b] ? pick(r, tl + 1, 5) : pick(r, tl, 6);
        }
    }
    c->strided = fr_test_below(r, 10) < 3;
    c->p.scale_value = 0.1 + 1.4 * fr_test_unif(r);
    if (tnd && fr_test_below(r, 2)) c->p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    o->amp = 1.0;
    if (!fp8) {
        o->mask = fr_test_below(r, 10) < 8;
        o->pse = pse >= 0;
        o->drop = fr_test_below(r, 10) < 3;
        o->rope = fr_test_below(r, 4) == 0;
    }
    o->sink = fr_test_below(r, 4) == 0;
    o->topk = fr_test_below(r, 5) == 0;
    o->topk_kv = (int)fr_test_below(r, 2);
    o->mask_shape = FR_GEN_MASK_SS + (int)fr_test_below(r, 4); /* SS, 11SS, B1SS, BNSS */
    o->mask_density = 0.25;
    if (o->rope) c->Dr = fr_test_range(r, 1, 6);
    if (o->topk) c->W = fr_test_range(r, 1, 6);
    if (o->drop) c->p.keep_prob = 0.8;
    if (o->pse) {
        c->p.pse_type = pse;
        if (pse >= 2) {
            o->pse_shape = FR_GEN_PSE_SLOPES_BN + (int)fr_test_below(r, 2); /* SLOPES_BN, SLOPES_N */
            c->S2 = c->S1;
            c->p.q_start_idx = fr_test_range(r, -3, 3);
            c->p.kv_start_idx = fr_test_range(r, -3, 3);
        } else {
            /* TND: COMP_B, COMP_1; else BNSS, BN1S, 1NSS */
            o->pse_shape =
                tnd ? FR_GEN_PSE_COMP_B + (int)fr_test_below(r, 2) : FR_GEN_PSE_BNSS + (int)fr_test_below(r, 3);
        }
        if (tnd) {
            /* TND pse: every batch S1_b == S2_b > 0; pse_type 0/1 (compressed) needs a causal pattern */
            for (int64_t b = 0; b < c->B; b++) {
                if (!c->lq[b]) c->lq[b] = 1;
                c->lkv[b] = c->lq[b];
            }
            if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND) mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
            if (pse <= 1) {
                o->mask = 1;
                if (mode != FR_SPARSE_LEFT_UP_CAUSAL && mode != FR_SPARSE_RIGHT_DOWN_CAUSAL)
                    mode = FR_SPARSE_LEFT_UP_CAUSAL + (int)fr_test_below(r, 2);
            }
        }
    }
    c->p.sparse_mode = mode;
    if (o->mask) {
        if (mode == FR_SPARSE_DEFAULT_MASK) {
            band(c, r, c->L == FR_TND ? 0 : c->S1, c->L == FR_TND ? 0 : c->S2, &c->p.pre_tokens, &c->p.next_tokens);
            if (tnd) {
                /* TND: the band is checked against max lengths; keep it wide */
                c->p.pre_tokens = fr_test_range(r, 0, big ? 140 : 12);
                c->p.next_tokens = fr_test_range(r, 0, big ? 140 : 12);
            }
        } else if (mode == FR_SPARSE_BAND) {
            if (tnd) {
                c->p.pre_tokens = fr_test_range(r, 12, 20) + (big ? 1000 : 0);
                c->p.next_tokens = fr_test_range(r, 12, 20) + (big ? 1000 : 0);
            } else {
                int64_t pre, next;
                band(c, r, c->S1, c->S2, &pre, &next);
                /* convert top-left to the mode's bottom-right origin: pre' = pre + S1 - S2, next' = next + S2 - S1 */
                c->p.pre_tokens = pre == FR_TOKENS_MAX ? pre : pre - c->S1 + c->S2;
                c->p.next_tokens = next == FR_TOKENS_MAX ? next : next - c->S2 + c->S1;
            }
        } else if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND || mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL) {
            int64_t sel = -1;
            for (int64_t b = 0; b < c->B; b++)
                if (c->lq[b]) {
                    if (sel < 0 || mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND) sel = b;
                }
            if (sel >= 0) {
                int64_t s1 = c->lq[sel], s2 = c->lkv[sel];
                if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND && s1 > s2) c->lkv[sel] = s2 = s1;
                c->p.pre_tokens = s2 + fr_test_range(r, 0, 2);
                c->p.next_tokens = mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND ? fr_test_range(r, s1 - s2, 0)
                                                                             : fr_test_range(r, s1 - s2, s1 - s2 + 4);
            }
        }
    }
    gt_make_inputs(c, o, r);
    gt_make_outputs(c, 1, r);
    return 1;
}

static int run_case(int64_t k, gt_case *c, int verbose) {
    fr_error err;
    /* one thread mostly (tiny problems; the machine is shared), two now and then (test_golden_props checks that
     * thread counts give the same bits) */
    int threads = k % 8 == 0 ? 2 : 1;
    fr_status st = gt_run_fwd(c, threads, &err);
    if (st != FR_OK) {
        printf("case %lld: fr_fwd %s: %s\n", (long long)k, fr_status_name(st), err.msg);
        return 0;
    }
    st = gt_run_bwd(c, threads, &err);
    if (st != FR_OK) {
        printf("case %lld: fr_bwd %s: %s\n", (long long)k, fr_status_name(st), err.msg);
        return 0;
    }
    ref R;
    size_t nq = (size_t)(c->T1 * c->N1 + 1), nk = (size_t)(c->T2 * c->N2 + 1);
    R.out = calloc(nq * (size_t)(c->Dv + 1), sizeof(double));
    R.m = calloc(nq, sizeof(double));
    R.l = calloc(nq, sizeof(double));
    R.dq = calloc(nq * (size_t)(c->Dk + 1), sizeof(double));
    R.dqr = calloc(nq * (size_t)(c->Dr + 1), sizeof(double));
    R.dk = calloc(nk * (size_t)(c->Dk + 1), sizeof(double));
    R.dv = calloc(nk * (size_t)(c->Dv + 1), sizeof(double));
    R.dkr = calloc(nk * (size_t)(c->Dr + 1), sizeof(double));
    R.dsink = calloc((size_t)(c->N1 + 1), sizeof(double));
    naive(c, &R, 1);
    int ok = check_case(k, c, &R, 1);
    if (!ok || verbose)
        printf("case %lld: %s %s B=%lld N1=%lld N2=%lld S1=%lld S2=%lld Dk=%lld Dv=%lld Dr=%lld W=%lld mode=%d mask=%d "
               "pse=%d(%d) keep=%g sink=%d strided=%d\n",
               (long long)k, fr_layout_name(c->L), fr_dtype_name(c->dt), (long long)c->B, (long long)c->N1,
               (long long)c->N2, (long long)c->S1, (long long)c->S2, (long long)c->Dk, (long long)c->Dv,
               (long long)c->Dr, (long long)c->W, c->p.sparse_mode, fr_tensor_present(&c->in.atten_mask),
               fr_tensor_present(&c->in.real_shift) ? c->p.pse_type : -1, (int)c->in.real_shift.ndim,
               c->p.keep_prob, fr_tensor_present(&c->in.sink), c->strided);
    free(R.out), free(R.m), free(R.l), free(R.dq), free(R.dqr), free(R.dk), free(R.dv), free(R.dkr), free(R.dsink);
    return ok;
}

/* Compressed pse [B|1, N1, 1024, S2] outside TND needs S1 = S2 > 1024 and a causal mask: a few larger cases. */
static int big_compressed_cases(uint64_t *r, const fr_tensor *cm, int64_t *ncases) {
    int ok = 1;
    for (int k = 0; k < 4; k++) {
        gt_case c;
        gt_opts o;
        memset(&c, 0, sizeof c);
        memset(&o, 0, sizeof o);
        c.p = fr_params_default();
        c.L = k % 2 ? FR_BNSD : FR_BSH;
        c.dt = k == 2 ? FR_BF16 : k == 3 ? FR_F16 : FR_F32;
        c.B = 1 + k % 2, c.N2 = 1, c.G = 1 + k / 2, c.N1 = c.G;
        c.S1 = c.S2 = 1025 + fr_test_below(r, 40);
        c.Dk = 3, c.Dv = 2;
        c.p.sparse_mode = FR_SPARSE_LEFT_UP_CAUSAL + k % 2;
        c.p.pse_type = k / 2;
        c.p.scale_value = 0.5;
        o.mask = 1, o.cmask = cm, o.pse = 1, o.pse_shape = FR_GEN_PSE_COMP_B + k % 2, o.amp = 1.0;
        c.strided = k == 1;
        gt_make_inputs(&c, &o, r);
        gt_make_outputs(&c, 1, r);
        ok &= run_case(100000 + k, &c, 0);
        gt_case_free(&c);
        (*ncases)++;
    }
    return ok;
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129u;
    int64_t n = argc > 2 ? atoll(argv[2]) : 360;
    printf("test_golden_dense: seed %llu, %lld grid cases\n", (unsigned long long)seed, (long long)n);
    uint64_t r = seed;
    fr_tensor cm = gt_compressed_mask(FR_SPARSE_LEFT_UP_CAUSAL), cm6 = gt_compressed_mask(FR_SPARSE_PREFIX_COMPRESS);
    int64_t ncases = 0;
    for (int64_t k = 0; k < n; k++) {
        gt_case c;
        gt_opts o;
        make_case(k, &r, &c, &o, &cm, &cm6, 0);
        CHECK(run_case(k, &c, getenv("GT_VERBOSE") != NULL), "grid case %lld", (long long)k);
        ncases++;
        gt_case_free(&c);
    }
    /* lengths across the golden's block edges (63/64/65, 127..130) and the fp8 scale blocks */
    for (int64_t k = 0; k < 30; k++) {
        gt_case c;
        gt_opts o;
        make_case(k * 11 + 1, &r, &c, &o, &cm, &cm6, 1);
        CHECK(run_case(200000 + k, &c, getenv("GT_VERBOSE") != NULL), "edge case %lld", (long long)(200000 + k));
        ncases++;
        gt_case_free(&c);
    }
    CHECK(big_compressed_cases(&r, &cm, &ncases), "the large compressed-mask cases");
    gt_free(&cm);
    gt_free(&cm6);
    printf("test_golden_dense: %lld cases (seed %llu)\n", (long long)ncases, (unsigned long long)seed);
    return fr_test_exit("test_golden_dense");
}
