/* Finite-difference checks of the golden backward in fp64: dq, dk, dv, dq_rope, dk_rope, dsink against central
 * differences with one Richardson step ((4 D(h/2) - D(h)) / 3, error O(h^4)) of the loss L = <dy, out>, out from
 * the golden forward in fp64. Inputs are fp32 multiples of 2^-20 in (-1, 1), so x +- h (h = 2^-10, 2^-11) is exact.
 *
 * Validation asks for attention_in in the operator's dtype (fp32 here), so the backward sees D~_i = dy . O~ with O~
 * the fp64 output rounded to fp32. Its gradient is then exactly that of L + sum_i (D_i - D~_i) * lse_i (lse = m +
 * log l, the c_i held constant), since d lse_i / dx_ij = p_ij: the finite differences use that loss.
 * Relative error: max |golden - fd| / max |fd| per tensor <= 1e-7. */
#include "common/check.h"
#include "golden/gt_case.h"

static double quant(double v) { return nearbyint(v * 1048576.0) / 1048576.0; }

static void quantize(fr_tensor *t) {
    if (!fr_tensor_present(t) || t->dtype != FR_F32) return;
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(t);
    for (int64_t e = 0; e < n; e++) {
        double v = quant(gt_get(t, idx));
        if (v >= 1.0) v = 1.0 - 1.0 / 1048576.0;
        if (v <= -1.0) v = -1.0 + 1.0 / 1048576.0;
        gt_put(t, idx, v);
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
}

typedef struct fdctx {
    gt_case *c;
    double *ci; /* per (b, h, i) row: D_i - D~_i */
} fdctx;

static int64_t nrows(const gt_case *c) { return c->T1 * c->N1; }
static int64_t rowid(const gt_case *c, int64_t b, int64_t h, int64_t i) {
    return ((c->L == FR_TND ? gt_q0(c, b) : b * c->S1) + i) * c->N1 + h;
}

static double loss(fdctx *f) {
    gt_case *c = f->c;
    fr_error err;
    fr_status st = gt_run_fwd(c, 1, &err);
    if (st != FR_OK) {
        printf("fr_fwd: %s\n", err.msg);
        return NAN;
    }
    double L = 0.0;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->N1; h++)
            for (int64_t i = 0; i < c->lq[b]; i++) {
                for (int64_t d = 0; d < c->Dv; d++)
                    L += gt_qkv(c, &c->dy, 0, b, h, i, d, c->Dv) * gt_qkv(c, &c->out, 0, b, h, i, d, c->Dv);
                double ci = f->ci ? f->ci[rowid(c, b, h, i)] : 0.0;
                if (ci != 0.0) {
                    int64_t si[4];
                    gt_sidx(c, b, h, i, 0, si);
                    L += ci * (gt_get(&c->smax, si) + log(gt_get(&c->ssum, si)));
                }
            }
    return L;
}

static double fd_at(fdctx *f, fr_tensor *t, const int64_t *idx) {
    double x0 = gt_get(t, idx), D[2];
    for (int s = 0; s < 2; s++) {
        double h = s == 0 ? 0x1p-10 : 0x1p-11;
        gt_put(t, idx, x0 + h);
        double lp = loss(f);
        gt_put(t, idx, x0 - h);
        double lm = loss(f);
        D[s] = (lp - lm) / (2.0 * h);
    }
    gt_put(t, idx, x0);
    return (4.0 * D[1] - D[0]) / 3.0;
}

/* Compares gradient tensor g (same logical shape as input t) with finite differences at every element. */
static int check_grad(fdctx *f, const char *name, fr_tensor *t, const fr_tensor *g, int64_t id) {
    int64_t idx[FR_MAX_DIMS] = {0}, n = gt_numel(t);
    double maxfd = 0.0, maxerr = 0.0;
    int nonfinite = 0;
    for (int64_t e = 0; e < n; e++) {
        double fd = fd_at(f, t, idx), an = gt_get(g, idx);
        if (!isfinite(an) || !isfinite(fd)) nonfinite++;
        if (fabs(fd) > maxfd) maxfd = fabs(fd);
        if (fabs(fd - an) > maxerr) maxerr = fabs(fd - an);
        for (int k = t->ndim - 1; k >= 0; k--) {
            if (++idx[k] < t->shape[k]) break;
            idx[k] = 0;
        }
    }
    double rel = maxerr / (maxfd > 0 ? maxfd : 1.0);
    int ok = !nonfinite && rel <= 1e-7 && (n == 0 || maxfd > 0);
    printf("  case %lld %-8s %5lld elements  max|fd| %.3e  max err %.3e  rel %.2e  %s\n", (long long)id, name,
           (long long)n, maxfd, maxerr, rel, ok ? "ok" : "FAIL");
    return ok;
}

typedef struct cfg {
    const char *what;
    fr_layout L;
    int64_t B, N1, N2, S1, S2, Dk, Dv, Dr, W;
    int64_t lq[4], lkv[4];
    int mask, mode, pse, pse_type; /* mode: an fr_sparse_mode; pse_type: an fr_pse_type */
    fr_gen_pse pse_shape;
    int drop, sink, topk;
    int64_t pre, next;
} cfg;

#define M_(m) FR_SPARSE_##m
#define T_(t) FR_PSE_##t
#define P_(p) FR_GEN_PSE_##p
static const cfg cfgs[] = {
    {"plain MHA", FR_BNSD, 2, 2, 2, 4, 5, 3, 3, 0, 0, {0}, {0}, 0, M_(DEFAULT_MASK), 0, T_(OUTER_ADD_MUL), P_(NONE), 0,
     0, 0, 0, 0},
    {"GQA, mode 0 user mask + band", FR_BSH, 1, 4, 2, 5, 6, 3, 2, 0, 0, {0}, {0}, 1, M_(DEFAULT_MASK), 0,
     T_(OUTER_ADD_MUL), P_(NONE), 0, 0, 0, 3, 1},
    {"dropout, GQA", FR_SBH, 2, 2, 1, 4, 4, 3, 3, 0, 0, {0}, {0}, 0, M_(DEFAULT_MASK), 0, T_(OUTER_ADD_MUL), P_(NONE),
     1, 0, 0, 0, 0},
    {"pse_type 1 full, mode 3", FR_BSND, 1, 2, 2, 4, 6, 3, 2, 0, 0, {0}, {0}, 1, M_(RIGHT_DOWN_CAUSAL), 1,
     T_(OUTER_ADD_MUL), P_(BNSS), 0, 0, 0, 0, 0},
    {"pse_type 0 row-broadcast, mode 1", FR_BNSD, 2, 2, 1, 4, 4, 2, 2, 0, 0, {0}, {0}, 1, M_(ALL_MASK), 1,
     T_(OUTER_MUL_ADD), P_(BN1S), 0, 0, 0, 0, 0},
    {"TND alibi pse_type 2, mode 2", FR_TND, 2, 2, 1, 0, 0, 3, 3, 0, 0, {3, 4}, {3, 4}, 1, M_(LEFT_UP_CAUSAL), 1,
     T_(INNER_MUL_ADD), P_(SLOPES_BN), 0, 0, 0, 0, 0},
    {"sink + rope, MQA", FR_BSH, 1, 3, 1, 4, 5, 3, 2, 2, 0, {0}, {0}, 0, M_(DEFAULT_MASK), 0, T_(OUTER_ADD_MUL),
     P_(NONE), 0, 1, 0, 0, 0},
    {"top-k duplicates + sink + dropout", FR_BNSD, 1, 2, 1, 4, 6, 3, 3, 0, 5, {0}, {0}, 0, M_(DEFAULT_MASK), 0,
     T_(OUTER_ADD_MUL), P_(NONE), 1, 1, 1, 0, 0},
    {"TND empty seq, mode 6 prefix, dropout, rope", FR_TND, 3, 2, 2, 0, 0, 2, 2, 2, 0, {3, 0, 4}, {4, 2, 5}, 1,
     M_(PREFIX_COMPRESS), 0, T_(OUTER_ADD_MUL), P_(NONE), 1, 0, 0, 0, 0},
    {"TND mode 8, pse_type 3, sink", FR_TND, 2, 2, 2, 0, 0, 3, 2, 0, 0, {3, 4}, {3, 4}, 1, M_(BAND_LEFT_UP_CAUSAL), 1,
     T_(INNER_MUL_ADD_SQRT), P_(SLOPES_BN), 0, 1, 0, 0, 0},
};
#undef M_
#undef T_
#undef P_

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 777u;
    printf("test_golden_fd: seed %llu\n", (unsigned long long)seed);
    uint64_t r = seed;
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        const cfg *g = &cfgs[k];
        gt_case c;
        gt_opts o;
        memset(&c, 0, sizeof c);
        memset(&o, 0, sizeof o);
        c.p = fr_params_default();
        c.L = g->L, c.dt = FR_F32, c.B = g->B, c.N1 = g->N1, c.N2 = g->N2, c.S1 = g->S1, c.S2 = g->S2;
        c.Dk = g->Dk, c.Dv = g->Dv, c.Dr = g->Dr, c.W = g->W;
        for (int b = 0; b < 4; b++) c.lq[b] = g->lq[b], c.lkv[b] = g->lkv[b];
        c.strided = (int)(k % 2);
        c.p.scale_value = 0.7;
        c.p.sparse_mode = g->mode;
        c.p.pse_type = g->pse_type;
        if (g->mode == FR_SPARSE_DEFAULT_MASK && g->mask) c.p.pre_tokens = g->pre, c.p.next_tokens = g->next;
        if (g->mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL) c.p.pre_tokens = 4, c.p.next_tokens = 0;
        if (g->pse_type >= FR_PSE_INNER_MUL_ADD) c.p.q_start_idx = 1, c.p.kv_start_idx = -1;
        if (g->drop) c.p.keep_prob = 0.7;
        o.mask = g->mask, o.mask_shape = FR_GEN_MASK_BNSS, o.mask_density = 0.3, o.pse = g->pse;
        o.pse_shape = g->pse_shape;
        if (g->L == FR_TND && g->pse && g->pse_type < FR_PSE_INNER_MUL_ADD) o.pse_shape = FR_GEN_PSE_COMP_B;
        o.drop = g->drop, o.sink = g->sink, o.rope = g->Dr > 0, o.topk = g->W > 0, o.topk_kv = 0, o.amp = 1.0;
        gt_make_inputs(&c, &o, &r);
        gt_make_outputs(&c, 1, &r);
        fr_tensor *qt[] = {&c.in.query, &c.in.key, &c.in.value, &c.in.query_rope, &c.in.key_rope, &c.in.real_shift,
                           &c.in.sink, &c.dy};
        for (size_t q = 0; q < sizeof qt / sizeof qt[0]; q++)
            if (qt[q] != &c.in.real_shift || c.p.pse_type < FR_PSE_INNER_MUL_ADD) quantize(qt[q]);
        printf("case %zu: %s (%s)\n", k, g->what, fr_layout_name(c.L));
        fr_error err;
        fr_status st = gt_run_fwd(&c, 1, &err);
        if (st == FR_OK) st = gt_run_bwd(&c, 1, &err);
        if (!CHECKED(st == FR_OK, "case %zu: %s: %s", k, fr_status_name(st), err.msg)) {
            gt_case_free(&c);
            continue;
        }
        /* c_i = D_i - D~_i from the base forward (fp64 out) and the fp32 attention_in the backward saw */
        fdctx f = {&c, calloc((size_t)nrows(&c) + 1, sizeof(double))};
        for (int64_t b = 0; b < c.B; b++)
            for (int64_t h = 0; h < c.N1; h++)
                for (int64_t i = 0; i < c.lq[b]; i++) {
                    double D = 0.0, Dt = 0.0;
                    for (int64_t d = 0; d < c.Dv; d++) {
                        double dy = gt_qkv(&c, &c.dy, 0, b, h, i, d, c.Dv);
                        D += dy * gt_qkv(&c, &c.out, 0, b, h, i, d, c.Dv);
                        Dt += dy * gt_qkv(&c, &c.ain, 0, b, h, i, d, c.Dv);
                    }
                    f.ci[rowid(&c, b, h, i)] = D - Dt;
                }
        /* the gradients are kept: the loss evaluations below overwrite only the forward outputs */
        int ok = 1;
        ok &= check_grad(&f, "dq", &c.in.query, &c.dq, (int64_t)k);
        ok &= check_grad(&f, "dk", &c.in.key, &c.dk, (int64_t)k);
        ok &= check_grad(&f, "dv", &c.in.value, &c.dv, (int64_t)k);
        if (c.Dr) {
            ok &= check_grad(&f, "dq_rope", &c.in.query_rope, &c.dqr, (int64_t)k);
            ok &= check_grad(&f, "dk_rope", &c.in.key_rope, &c.dkr, (int64_t)k);
        }
        if (fr_tensor_present(&c.in.sink)) ok &= check_grad(&f, "dsink", &c.in.sink, &c.dsink, (int64_t)k);
        CHECK(ok, "case %zu: %s: a gradient differs from its finite differences", k, g->what);
        free(f.ci);
        gt_case_free(&c);
    }
    printf("test_golden_fd: %zu cases (seed %llu)\n", sizeof cfgs / sizeof cfgs[0], (unsigned long long)seed);
    return fr_test_exit("test_golden_fd");
}
