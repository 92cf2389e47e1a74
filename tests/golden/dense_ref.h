/* The plain dense reference of the golden's tests (test_golden_dense.c): written separately from src/golden, it
 * materialises the S1 x S2 score matrix of each (b, h), builds the sparse-mode mask as whole-matrix triu/tril
 * patterns, the pse as a full matrix (compressed pse read by diagonal), and does the forward and the backward as
 * plain matrix loops in fp64. naive(c, R, bwd) fills R (allocated here, [rows][heads][D] arrays, see ref). */
#ifndef FR_TESTS_GOLDEN_DENSE_REF_H
#define FR_TESTS_GOLDEN_DENSE_REF_H

#include "common/check.h"
#include "golden/gt_case.h"

static int64_t qrow(const gt_case *c, int64_t b, int64_t i) { return (c->L == FR_TND ? gt_q0(c, b) : b * c->S1) + i; }
static int64_t kvrow(const gt_case *c, int64_t b, int64_t j) {
    return (c->L == FR_TND ? gt_kv0(c, b) : b * c->S2) + j;
}

static int user_mask(const gt_case *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    const fr_tensor *t = &c->in.atten_mask;
    int64_t idx[4];
    if (t->ndim == 2) {
        idx[0] = i, idx[1] = j;
    } else {
        idx[0] = t->shape[0] > 1 ? b : 0;
        idx[1] = t->shape[1] > 1 ? h : 0;
        idx[2] = i, idx[3] = j;
    }
    return gt_get(t, idx) != 0.0;
}

/* M[i][j] = 1 where masked: whole-matrix patterns, triu(k): j - i >= k, tril(k): j - i <= k. */
static void mask_matrix(const gt_case *c, int64_t b, int64_t h, int64_t S1, int64_t S2, uint8_t *M) {
    memset(M, 0, (size_t)(S1 * S2));
    if (!fr_tensor_present(&c->in.atten_mask)) return;
    int mode = c->p.sparse_mode;
    int64_t first = -1, last = -1;
    for (int64_t bb = 0; bb < c->B; bb++)
        if (c->lq[bb]) {
            if (first < 0) first = bb;
            last = bb;
        }
    if (mode == FR_SPARSE_RIGHT_DOWN_CAUSAL_BAND) mode = b == last ? FR_SPARSE_BAND : FR_SPARSE_RIGHT_DOWN_CAUSAL;
    if (mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL) mode = b == first ? FR_SPARSE_BAND : FR_SPARSE_LEFT_UP_CAUSAL;
    int64_t pre = c->p.pre_tokens, next = c->p.next_tokens, pf = c->p.prefix ? c->p.prefix[b] : 0;
    for (int64_t i = 0; i < S1; i++)
        for (int64_t j = 0; j < S2; j++) {
            int64_t k = j - i;
            int triu_c = k >= S2 - S1 + 1; /* causal, bottom-right */
            int v = 0;
            switch (mode) {
            case FR_SPARSE_DEFAULT_MASK: v = user_mask(c, b, h, i, j) | (k >= next + 1) | (k <= -pre - 1); break;
            case FR_SPARSE_ALL_MASK: v = user_mask(c, b, h, i, j); break;
            case FR_SPARSE_LEFT_UP_CAUSAL: v = k >= 1; break;
            case FR_SPARSE_RIGHT_DOWN_CAUSAL: v = triu_c; break;
            case FR_SPARSE_BAND: v = (k >= next + (S2 - S1) + 1) | (k <= -(pre - (S2 - S1)) - 1); break;
            case FR_SPARSE_PREFIX: v = user_mask(c, b, h, i, j) | (triu_c & (j >= pf)); break;
            case FR_SPARSE_PREFIX_COMPRESS: v = triu_c & (j >= pf); break;
            default: /* a mode added to fr_sparse_mode without its rule here */
                CHECK(false, "sparse_mode %d: mask_matrix (dense_ref.h) has no rule for it (spec 4.2)", mode);
                break;
            }
            M[i * S2 + j] = (uint8_t)v;
        }
}

static void pse_matrix(const gt_case *c, int64_t b, int64_t h, int64_t S1, int64_t S2, double *P) {
    const fr_tensor *t = &c->in.real_shift;
    int pt = c->p.pse_type;
    for (int64_t i = 0; i < S1; i++)
        for (int64_t j = 0; j < S2; j++) {
            double v;
            if (pt == FR_PSE_INNER_MUL_ADD || pt == FR_PSE_INNER_MUL_ADD_SQRT) {
                int64_t idx[2] = {t->ndim == 2 ? b : h, h};
                double slope = gt_get(t, idx);
                int64_t qs = c->p.q_start_idx, ks = c->p.kv_start_idx;
                if (c->L == FR_TND && c->p.sparse_mode == FR_SPARSE_BAND_LEFT_UP_CAUSAL &&
                    fr_tensor_present(&c->in.atten_mask) && b > 0)
                    qs = ks = 0;
                double dist = fabs((double)((j + ks) - (i + qs)));
                v = -slope * (pt == FR_PSE_INNER_MUL_ADD_SQRT ? sqrt(dist) : dist);
            } else {
                int64_t idx[4] = {t->shape[0] > 1 ? b : 0, h, 0, 0};
                int64_t R = t->shape[2], S = t->shape[3];
                if (R == 1024 && (c->L == FR_TND || c->S1 != 1024)) {
                    /* Toeplitz: any stored element on diagonal d = j - i; the last row for d <= 0, the first else */
                    int64_t d = j - i;
                    if (d <= 0) idx[2] = R - 1, idx[3] = S - 1 + d;
                    else idx[2] = 0, idx[3] = S - R + d;
                    if (idx[3] < 0 || idx[3] >= S) {
                        v = 0.0; /* unrepresentable (never taking part in a valid case) */
                        P[i * S2 + j] = v;
                        continue;
                    }
                } else {
                    idx[2] = R == 1 ? 0 : i, idx[3] = j;
                }
                v = gt_get(t, idx);
            }
            P[i * S2 + j] = v;
        }
}

static double keepz(const gt_case *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (c->p.keep_prob >= 1.0) return 1.0;
    int64_t k;
    if (c->L == FR_TND) {
        int64_t base = 0;
        for (int64_t bb = 0; bb < b; bb++) base += c->N1 * c->lq[bb] * c->lkv[bb];
        k = base + (h * c->lq[b] + i) * c->lkv[b] + j;
    } else {
        k = ((b * c->N1 + h) * c->S1 + i) * c->S2 + j;
    }
    int64_t byte = k / 8;
    int bit = ((int)gt_get(&c->in.drop_mask, &byte) >> (k % 8)) & 1;
    return bit ? (double)(1.0f / (float)c->p.keep_prob) : 0.0;
}

typedef struct ref {
    double *out, *m, *l;             /* [T1][N1][Dv], [T1][N1] */
    double *dq, *dk, *dv, *dqr, *dkr; /* [T1][N1][Dk], [T2][N2][Dk], [T2][N2][Dv], ... */
    double *dsink;
} ref;

/* Score matrix X and multiplicity C of (b, h). */
static void scores(const gt_case *c, int64_t b, int64_t h, int64_t S1, int64_t S2, double *X, int *C, uint8_t *M,
                   double *P) {
    const fr_fwd_inputs *in = &c->in;
    int64_t n2 = h / c->G;
    mask_matrix(c, b, h, S1, S2, M);
    if (fr_tensor_present(&in->real_shift)) pse_matrix(c, b, h, S1, S2, P);
    int fp8 = fr_tensor_present(&in->d_scale_q);
    double sc = (double)(float)c->p.scale_value;
    for (int64_t i = 0; i < S1; i++) {
        for (int64_t j = 0; j < S2; j++) C[i * S2 + j] = fr_tensor_present(&in->topk_indices) ? 0 : 1;
        if (fr_tensor_present(&in->topk_indices))
            for (int64_t w = 0; w < c->W; w++) {
                int64_t idx[4], n = 0;
                if (c->L == FR_TND) idx[n++] = gt_q0(c, b) + i;
                else idx[n++] = b;
                if (c->topk_kv) idx[n++] = n2;
                if (c->L != FR_TND) idx[n++] = i;
                idx[n++] = w;
                int64_t j = (int64_t)gt_get(&in->topk_indices, idx);
                if (j >= 0 && j < S2) C[i * S2 + j]++;
            }
        for (int64_t j = 0; j < S2; j++) {
            if (M[i * S2 + j]) C[i * S2 + j] = 0;
            if (!C[i * S2 + j]) continue;
            double s = 0.0;
            for (int64_t d = 0; d < c->Dk; d++)
                s += gt_qkv(c, &in->query, 0, b, h, i, d, c->Dk) * gt_qkv(c, &in->key, 1, b, n2, j, d, c->Dk);
            double sr = 0.0;
            for (int64_t d = 0; d < c->Dr; d++)
                sr += gt_qkv(c, &in->query_rope, 0, b, h, i, d, c->Dr) *
                      gt_qkv(c, &in->key_rope, 1, b, n2, j, d, c->Dr);
            s += sr;
            if (fp8) {
                int64_t iq[4] = {b, h, i / 128, 0}, ik[4] = {b, n2, j / 256, 0};
                s = s * gt_get(&in->d_scale_q, iq) * gt_get(&in->d_scale_k, ik);
            }
            double x;
            if (!fr_tensor_present(&in->real_shift)) x = s * sc;
            else if (c->p.pse_type == FR_PSE_OUTER_ADD_MUL) x = (s + P[i * S2 + j]) * sc;
            else x = s * sc + P[i * S2 + j];
            X[i * S2 + j] = x;
        }
    }
}

static double vval(const gt_case *c, int64_t b, int64_t n2, int64_t j, int64_t d) {
    double v = gt_qkv(c, &c->in.value, 1, b, n2, j, d, c->Dv);
    if (fr_tensor_present(&c->in.d_scale_v)) {
        int64_t ik[4] = {b, n2, j / 256, 0};
        v *= gt_get(&c->in.d_scale_v, ik);
    }
    return v;
}

static void naive(const gt_case *c, ref *R, int bwd) {
    const int64_t N1 = c->N1, Dk = c->Dk, Dv = c->Dv, Dr = c->Dr, N2 = c->N2;
    const double sc = (double)(float)c->p.scale_value;
    const int sink = fr_tensor_present(&c->in.sink);
    int fp8 = fr_tensor_present(&c->in.d_scale_q);
    for (int64_t b = 0; b < c->B; b++) {
        int64_t S1 = c->lq[b], S2 = c->lkv[b];
        double *X = calloc((size_t)(S1 * S2 + 1), sizeof(double)), *P = calloc((size_t)(S1 * S2 + 1), sizeof(double));
        int *C = calloc((size_t)(S1 * S2 + 1), sizeof(int));
        uint8_t *M = calloc((size_t)(S1 * S2 + 1), 1);
        for (int64_t h = 0; h < N1; h++) {
            int64_t n2 = h / c->G;
            double sk = 0.0;
            if (sink) {
                int64_t ih = h;
                sk = gt_get(&c->in.sink, &ih);
            }
            scores(c, b, h, S1, S2, X, C, M, P);
            for (int64_t i = 0; i < S1; i++) {
                int64_t row = qrow(c, b, i);
                double m = sink ? sk : -INFINITY;
                int any = 0;
                for (int64_t j = 0; j < S2; j++)
                    if (C[i * S2 + j]) any = 1, m = X[i * S2 + j] > m ? X[i * S2 + j] : m;
                double l = sink ? exp(sk - m) : 0.0;
                for (int64_t j = 0; j < S2; j++)
                    if (C[i * S2 + j]) l += C[i * S2 + j] * exp(X[i * S2 + j] - m);
                double *o = R->out + (row * N1 + h) * Dv;
                for (int64_t d = 0; d < Dv; d++) o[d] = 0.0;
                if (!any && !sink) {
                    R->m[row * N1 + h] = -FLT_MAX;
                    R->l[row * N1 + h] = FLT_MAX;
                    continue;
                }
                R->m[row * N1 + h] = m;
                R->l[row * N1 + h] = l;
                for (int64_t j = 0; j < S2; j++) {
                    if (!C[i * S2 + j]) continue;
                    double z = keepz(c, b, h, i, j);
                    if (z == 0.0) continue;
                    double p = C[i * S2 + j] * exp(X[i * S2 + j] - m) / l * z;
                    for (int64_t d = 0; d < Dv; d++) o[d] += p * vval(c, b, n2, j, d);
                }
            }
            if (!bwd) continue;
            /* backward from the golden's stored forward (fp64 tensors), spec 8.2 */
            for (int64_t i = 0; i < S1; i++) {
                int64_t row = qrow(c, b, i), si[4];
                gt_sidx(c, b, h, i, 0, si);
                double m = gt_get(&c->smax, si), l = gt_get(&c->ssum, si);
                double Di = 0.0;
                for (int64_t d = 0; d < Dv; d++)
                    Di += gt_qkv(c, &c->dy, 0, b, h, i, d, Dv) * gt_qkv(c, &c->ain, 0, b, h, i, d, Dv);
                if (sink) R->dsink[h] -= exp(sk - m) / l * Di;
                double qsc = 1.0;
                if (fp8) {
                    int64_t iq[4] = {b, h, i / 128, 0};
                    qsc = gt_get(&c->in.d_scale_q, iq);
                }
                for (int64_t j = 0; j < S2; j++) {
                    int cn = C[i * S2 + j];
                    if (!cn) continue;
                    int64_t kr = kvrow(c, b, j);
                    double p = exp(X[i * S2 + j] - m) / l, z = keepz(c, b, h, i, j), dp = 0.0;
                    if (z != 0.0)
                        for (int64_t d = 0; d < Dv; d++) dp += gt_qkv(c, &c->dy, 0, b, h, i, d, Dv) * vval(c, b, n2, j, d);
                    double ds = cn * p * (z * dp - Di);
                    double ksc = 1.0;
                    if (fp8) {
                        int64_t ik[4] = {b, n2, j / 256, 0};
                        ksc = gt_get(&c->in.d_scale_k, ik);
                    }
                    for (int64_t d = 0; d < Dk; d++) {
                        R->dq[(row * N1 + h) * Dk + d] += sc * ds * gt_qkv(c, &c->in.key, 1, b, n2, j, d, Dk) * ksc;
                        R->dk[(kr * N2 + n2) * Dk + d] += sc * ds * gt_qkv(c, &c->in.query, 0, b, h, i, d, Dk) * qsc;
                    }
                    for (int64_t d = 0; d < Dr; d++) {
                        R->dqr[(row * N1 + h) * Dr + d] += sc * ds * gt_qkv(c, &c->in.key_rope, 1, b, n2, j, d, Dr);
                        R->dkr[(kr * N2 + n2) * Dr + d] += sc * ds * gt_qkv(c, &c->in.query_rope, 0, b, h, i, d, Dr);
                    }
                    if (z != 0.0)
                        for (int64_t d = 0; d < Dv; d++)
                            R->dv[(kr * N2 + n2) * Dv + d] += cn * p * z * gt_qkv(c, &c->dy, 0, b, h, i, d, Dv);
                }
            }
        }
        free(X);
        free(P);
        free(C);
        free(M);
    }
}

#endif
