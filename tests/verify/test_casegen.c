/* src/verify/cases/casegen.c: every case of every set builds and validates, is a pure function of (spec, seed), and the
 * xcheck grid covers what golden_vs_numpy promises (every sparse mode, pse type and shape, layout, dtype, ...).
 * Content checks: canonical masks, ALiBi slopes (spec 5.1), top-k rows (causal, own key, sentinels), drop-mask size
 * and rate, dtype rounding of the normal samples, peaked rows. usage: test_casegen [seed] */
#include "common/check.h"
#include "common/seed.h"
#include "core/rng.h"
#include "verify/cases/casegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static fr_tensor *slot(fr_gen_case *c, int k) {
    fr_tensor *ts[] = {&c->in.fwd.query,        &c->in.fwd.key,
                       &c->in.fwd.value,        &c->in.fwd.real_shift,
                       &c->in.fwd.drop_mask,    &c->in.fwd.atten_mask,
                       &c->in.fwd.d_scale_q,    &c->in.fwd.d_scale_k,
                       &c->in.fwd.d_scale_v,    &c->in.fwd.query_rope,
                       &c->in.fwd.key_rope,     &c->in.fwd.sink,
                       &c->in.fwd.topk_indices, &c->in.dy,
                       &c->in.attention_in,     &c->in.softmax_max,
                       &c->in.softmax_sum};
    return k < (int)(sizeof ts / sizeof ts[0]) ? ts[k] : NULL;
}

static size_t nbytes(const fr_tensor *t) { return (size_t)fr_tensor_numel(t) * fr_dtype_size(t->dtype); }

static bool same_case(fr_gen_case *a, fr_gen_case *b) {
    for (int k = 0; slot(a, k); k++) {
        fr_tensor *x = slot(a, k), *y = slot(b, k);
        if (x->dtype != y->dtype || x->ndim != y->ndim) return false;
        if (memcmp(x->shape, y->shape, sizeof x->shape) != 0) return false;
        if (x->dtype != FR_DT_NONE && memcmp(x->data, y->data, nbytes(x)) != 0) return false;
    }
    return true;
}

static void test_sets(uint64_t seed) {
    int nsets;
    const fr_gen_set *sets = fr_gen_sets(&nsets);
    CHECK(nsets >= 2 && fr_gen_set_find("xcheck") && fr_gen_set_find("smoke") && !fr_gen_set_find("nope"), "sets");
    for (int s = 0; s < nsets; s++) {
        /* only the small sets: a "long" set added later must not make this unit test slow */
        if (strcmp(sets[s].name, "smoke") != 0 && strcmp(sets[s].name, "xcheck") != 0) continue;
        for (int k = 0; k < sets[s].count; k++) {
            const fr_gen_spec *sp = &sets[s].specs[k];
            for (int j = 0; j < k; j++) CHECK(strcmp(sp->name, sets[s].specs[j].name) != 0, "duplicate %s", sp->name);
            fr_error err;
            fr_gen_case a, b, c;
            fr_status st = fr_gen_build(sp, seed, &a, &err);
            CHECK(st == FR_OK, "%s/%s: %s %s", sets[s].name, sp->name, fr_status_name(st), err.msg);
            if (st != FR_OK) continue;
            st = sp->bwd ? fr_validate_bwd(&a.params, &a.in, NULL, &err)
                         : fr_validate_fwd(&a.params, &a.in.fwd, NULL, &err);
            CHECK(st == FR_OK, "%s does not validate: %s", sp->name, err.msg);
            CHECK(fr_gen_build(sp, seed, &b, &err) == FR_OK && same_case(&a, &b), "%s: not deterministic", sp->name);
            CHECK(fr_gen_build(sp, seed + 1, &c, &err) == FR_OK, "%s seed+1", sp->name);
            if (fr_tensor_numel(&a.in.fwd.query) > 0)
                CHECK(memcmp(a.in.fwd.query.data, c.in.fwd.query.data, nbytes(&a.in.fwd.query)) != 0,
                      "%s: the seed does not change the query", sp->name);
            CHECK(a.bwd == sp->bwd &&
                      (!sp->bwd || (fr_tensor_present(&a.in.dy) && fr_tensor_present(&a.in.attention_in) &&
                                    fr_tensor_present(&a.in.softmax_sum))),
                  "%s: backward inputs", sp->name);
            fr_gen_case_free(&a);
            fr_gen_case_free(&b);
            fr_gen_case_free(&c);
        }
    }
}

static void test_xcheck_coverage(void) {
    const fr_gen_set *x = fr_gen_set_find("xcheck");
    bool mode[FR_SPARSE_MODE_COUNT] = {0}, ptype[FR_PSE_TYPE_COUNT] = {0}, pshape[FR_GEN_PSE_COUNT] = {0}, lay[FR_TND + 1] = {0};
    bool dt[FR_DTYPE_COUNT] = {0}, mshape[FR_GEN_MASK_COUNT] = {0};
    bool bwd = false, drop = false, sink = false, topk = false, topk_kv = false, rope = false, beta = false,
         empty_seq = false, prefix = false, bwd_tnd = false, sml = false;
    for (int k = 0; k < x->count; k++) {
        const fr_gen_spec *s = &x->specs[k];
        if (s->mask != FR_GEN_MASK_NONE) mode[s->sparse_mode] = true;
        if (s->pse != FR_GEN_PSE_NONE) ptype[s->pse_type] = true;
        pshape[s->pse] = mshape[s->mask] = true;
        lay[s->layout ? s->layout : FR_BNSD] = true;
        dt[s->dtype ? s->dtype : FR_F32] = true;
        bwd |= s->bwd;
        bwd_tnd |= s->bwd && s->layout == FR_TND;
        drop |= s->keep_prob > 0 && s->keep_prob < 1;
        sink |= s->sink;
        topk |= s->topk_w > 0;
        topk_kv |= s->topk_per_kv_head;
        rope |= s->Drope > 0;
        beta |= s->beta != 0;
        prefix |= s->prefix;
        sml |= s->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT;
        for (int b = 0; s->layout == FR_TND && b < s->B; b++) empty_seq |= s->seq_q[b] == 0;
    }
    CHECK(x->count >= 50, "xcheck has %d cases", x->count);
    for (int m = 0; m < FR_SPARSE_MODE_COUNT; m++) CHECK(mode[m], "xcheck lacks sparse mode %d", m);
    for (int t = 0; t < FR_PSE_TYPE_COUNT; t++) CHECK(ptype[t], "xcheck lacks pse type %d", t);
    for (int t = 1; t < FR_GEN_PSE_COUNT; t++) CHECK(pshape[t], "xcheck lacks pse shape %d", t);
    for (int t = 1; t < FR_GEN_MASK_COUNT; t++) CHECK(mshape[t], "xcheck lacks mask shape %d", t);
    for (int l = FR_BSH; l <= FR_TND; l++) CHECK(lay[l], "xcheck lacks layout %s", fr_layout_name((fr_layout)l));
    const fr_dtype dts[] = {FR_F32, FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};
    for (int k = 0; k < 6; k++) CHECK(dt[dts[k]], "xcheck lacks dtype %s", fr_dtype_name(dts[k]));
    CHECK(bwd && bwd_tnd && drop && sink && topk && topk_kv && rope && beta && empty_seq && prefix && sml,
          "xcheck lacks a feature");
}

static void test_alibi(void) {
    float s8[8], s6[6];
    fr_gen_alibi_slopes(8, s8);
    for (int k = 0; k < 8; k++) CHECK(s8[k] == ldexpf(1.0f, -(k + 1)), "alibi N=8 slope %d = %g", k, s8[k]);
    /* N = 6: n = 4 -> 2^-2, 2^-4, 2^-6, 2^-8, then 2^-(4(2k-1)/4) = 2^-1, 2^-3 */
    const int e6[6] = {-2, -4, -6, -8, -1, -3};
    fr_gen_alibi_slopes(6, s6);
    for (int k = 0; k < 6; k++) CHECK(s6[k] == ldexpf(1.0f, e6[k]), "alibi N=6 slope %d = %g", k, s6[k]);
}

static const fr_gen_spec *find_spec(const char *name) {
    const fr_gen_set *x = fr_gen_set_find("xcheck");
    for (int k = 0; k < x->count; k++)
        if (!strcmp(x->specs[k].name, name)) return &x->specs[k];
    return NULL;
}

static void test_contents(uint64_t seed) {
    fr_error err;
    fr_gen_case c;
    /* canonical masks */
    const fr_gen_spec *m2 = find_spec("m2_causal"), *m6 = find_spec("m6_prefix");
    CHECK(m2 && m6, "specs");
    if (m2 && fr_gen_build(m2, seed, &c, &err) == FR_OK) {
        const uint8_t *m = c.in.fwd.atten_mask.data;
        CHECK(c.in.fwd.atten_mask.ndim == 2 && c.in.fwd.atten_mask.shape[0] == 2048 &&
                  c.in.fwd.atten_mask.shape[1] == 2048,
              "mode 2 mask shape");
        int bad = 0;
        for (int i = 0; i < 2048; i++)
            for (int j = 0; j < 2048; j++) bad += m[i * 2048 + j] != (j > i);
        CHECK(bad == 0, "mode 2 mask is not triu(1): %d wrong", bad);
        fr_gen_case_free(&c);
    }
    if (m6 && fr_gen_build(m6, seed, &c, &err) == FR_OK) {
        const uint8_t *m = c.in.fwd.atten_mask.data;
        CHECK(c.in.fwd.atten_mask.shape[0] == 3072, "mode 6 mask rows");
        CHECK(m[2048 * 2048 + 1023] == 0 && m[2048 * 2048 + 1024] == 1 && m[3071 * 2048 + 2047] == 1 &&
                  m[3071 * 2048] == 0 && m[5 * 2048 + 6] == 1 && m[6 * 2048 + 5] == 0,
              "mode 6 mask layout");
        CHECK(c.params.prefix && c.params.prefix_len == 2, "mode 6 prefix");
        for (int b = 0; c.params.prefix && b < 2; b++)
            CHECK(c.params.prefix[b] >= 14 - 10 && c.params.prefix[b] <= 14, "prefix[%d] = %lld", b,
                  (long long)c.params.prefix[b]);
        fr_gen_case_free(&c);
    }
    /* top-k rows: slot 0 is the own (bottom-right causal) key, others -1, past S2, or not later than it */
    const fr_gen_spec *tk = find_spec("topk_bsnd_bf16");
    if (tk && fr_gen_build(tk, seed, &c, &err) == FR_OK) {
        const int32_t *t = c.in.fwd.topk_indices.data;
        int64_t W = tk->topk_w, S1 = tk->S1, S2 = tk->S2, sentinels = 0;
        for (int64_t b = 0; b < tk->B; b++)
            for (int64_t i = 0; i < S1; i++) {
                const int32_t *r = t + (b * S1 + i) * W;
                int64_t own = i + S2 - S1;
                CHECK(r[0] == own, "topk row %lld slot 0 = %d, own key %lld", (long long)i, r[0], (long long)own);
                for (int64_t w = 1; w < W; w++) {
                    CHECK(r[w] == -1 || r[w] >= S2 || (r[w] >= 0 && r[w] <= own), "topk slot %d", r[w]);
                    sentinels += r[w] == -1;
                }
            }
        CHECK(sentinels > 0, "no -1 sentinels");
        fr_gen_case_free(&c);
    }
    /* top-k rows list a key at most once (D7's readings agree), unless topk_dup keeps the repeats */
    for (int dup = 0; tk && dup < 2; dup++) {
        fr_gen_spec sp = *tk;
        sp.topk_dup = dup;
        if (fr_gen_build(&sp, seed, &c, &err) != FR_OK) continue;
        const int32_t *t = c.in.fwd.topk_indices.data;
        int64_t W = sp.topk_w, rows = sp.B * sp.S1, repeats = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t w = 1; w < W; w++)
                for (int64_t v = 0; v < w; v++)
                    repeats += t[r * W + w] >= 0 && t[r * W + w] < sp.S2 && t[r * W + w] == t[r * W + v];
        CHECK(dup ? repeats > 0 : repeats == 0, "topk_dup %d: %lld repeated keys", dup, (long long)repeats);
        fr_gen_case_free(&c);
    }
    /* random masks: element k is uniform01(case seed, mask stream, k) < 0.25 (mode 1 keeps it as drawn) */
    const fr_gen_spec *m1 = find_spec("m1_11ss_fp16");
    if (m1 && fr_gen_build(m1, seed, &c, &err) == FR_OK) {
        const uint8_t *m = c.in.fwd.atten_mask.data;
        int64_t n = fr_tensor_numel(&c.in.fwd.atten_mask), bad = 0;
        for (int64_t k = 0; k < n; k++)
            bad += m[k] != (fr_rng_uniform01(c.seed, 5 /* mask stream */, (uint64_t)k) < 0.25);
        CHECK(bad == 0, "random mask differs from uniform01 < 0.25 at %lld of %lld", (long long)bad, (long long)n);
        fr_gen_case_free(&c);
    }
    /* mode 0: the mask holds the band (masked wherever j - i > next or i - j > pre; TND: the top-left corner), unless
     * mask_any; mode 5 without a prefix: nothing masked (the formula's "full compute") */
    const char *m0s[] = {"m0_band_ss", "m0_b1ss_negnext", "m0_negpre", "m0_tnd_band"};
    for (size_t q = 0; q < sizeof m0s / sizeof m0s[0]; q++)
        for (int any = 0; any < 2; any++) {
            const fr_gen_spec *m0 = find_spec(m0s[q]);
            if (!CHECKED(m0 != NULL, "%s", m0s[q])) continue;
            fr_gen_spec sp = *m0;
            sp.mask_any = any;
            if (!CHECKED(fr_gen_build(&sp, seed, &c, &err) == FR_OK, "%s: %s", m0s[q], err.msg)) continue;
            const fr_tensor *am = &c.in.fwd.atten_mask;
            int64_t S1 = am->shape[am->ndim - 2], S2 = am->shape[am->ndim - 1], n = fr_tensor_numel(am), open = 0;
            for (int64_t k = 0; k < n; k++) {
                int64_t i = (k / S2) % S1, j = k % S2;
                open += (j - i > sp.next_tokens || i - j > sp.pre_tokens) && !((const uint8_t *)am->data)[k];
            }
            CHECK(any ? open > 0 : open == 0, "%s mask_any %d: %lld band positions left open", m0s[q], any,
                  (long long)open);
            fr_gen_case_free(&c);
        }
    fr_gen_spec m5 = {.name = "m5_no_prefix", .B = 2, .N1 = 2, .S1 = 6, .S2 = 9, .D = 8, .sparse_mode = 5,
                      .mask = FR_GEN_MASK_B1SS};
    if (CHECKED(fr_gen_build(&m5, seed, &c, &err) == FR_OK, "m5: %s", err.msg)) {
        int64_t n = fr_tensor_numel(&c.in.fwd.atten_mask), ones = 0;
        for (int64_t k = 0; k < n; k++) ones += ((const uint8_t *)c.in.fwd.atten_mask.data)[k] != 0;
        CHECK(ones == 0, "mode 5 without a prefix: %lld positions masked", (long long)ones);
        fr_gen_case_free(&c);
    }
    /* the structure build: the same mask, pse (compressed) and top-k as the full build, and no q/k/v data drawn */
    const char *sts[] = {"m0_tnd_band", "pse1_compressed_tnd", "topk_tnd_per_kv_fp32", "bwd_m5_prefix"};
    for (size_t q = 0; q < sizeof sts / sizeof sts[0]; q++) {
        const fr_gen_spec *sp = find_spec(sts[q]);
        fr_gen_case f, g;
        if (!CHECKED(sp && fr_gen_build(sp, seed, &f, &err) == FR_OK, "%s", sts[q])) continue;
        if (CHECKED(fr_gen_build_structure(sp, seed, &g, &err) == FR_OK, "%s structure: %s", sts[q], err.msg)) {
            const fr_tensor *a[3] = {&f.in.fwd.atten_mask, &f.in.fwd.real_shift, &f.in.fwd.topk_indices};
            const fr_tensor *b[3] = {&g.in.fwd.atten_mask, &g.in.fwd.real_shift, &g.in.fwd.topk_indices};
            for (int t = 0; t < 3; t++) {
                if (!fr_tensor_present(a[t])) continue;
                size_t bytes = (size_t)fr_tensor_numel(a[t]) * fr_dtype_size(a[t]->dtype);
                CHECK(fr_tensor_present(b[t]) && !memcmp(a[t]->data, b[t]->data, bytes), "%s: tensor %d differs",
                      sts[q], t);
            }
            CHECK(g.in.fwd.query.data != f.in.fwd.query.data && g.in.fwd.query.ndim == f.in.fwd.query.ndim,
                  "%s: query shape", sts[q]);
            fr_gen_case_free(&g);
        }
        fr_gen_case_free(&f);
    }
    /* drop mask: ceil(bits / 8) bytes, keep rate near keep_prob */
    const fr_gen_spec *dr = find_spec("drop_bnsd_fp32");
    if (dr && fr_gen_build(dr, seed, &c, &err) == FR_OK) {
        int64_t bits = dr->B * dr->N1 * dr->S1 * dr->S2, ones = 0;
        CHECK(c.in.fwd.drop_mask.dtype == FR_U8 && c.in.fwd.drop_mask.shape[0] == (bits + 7) / 8, "drop mask size");
        for (int64_t k = 0; k < bits; k++) ones += (((const uint8_t *)c.in.fwd.drop_mask.data)[k / 8] >> (k % 8)) & 1;
        CHECK(fabs((double)ones / (double)bits - dr->keep_prob) < 0.1, "keep rate %lld / %lld", (long long)ones,
              (long long)bits);
        fr_gen_case_free(&c);
    }
    /* dtype: bf16 inputs are the RNE bf16 rounding of the fp32 normal samples (key: never peaked) */
    const fr_gen_spec *bf = find_spec("fwd_bsh_bf16_mqa");
    if (bf && fr_gen_build(bf, seed, &c, &err) == FR_OK) {
        float f[64];
        fr_rng_normal_f32(f, 64, c.seed, 2 /* key stream */, 0, 0.0, 1.0);
        const uint16_t *k = c.in.fwd.key.data;
        int bad = 0;
        for (int i = 0; i < 64; i++) bad += k[i] != fr_f32_to_bf16(f[i], FR_ROUND_NEAREST_EVEN, FR_SAT);
        CHECK(bad == 0, "bf16 key is not the rounded normal sample (%d of 64)", bad);
        fr_gen_case_free(&c);
    }
    /* peaked: q_i - (its normal sample) = beta * k_i for i < min(S1, S2), BNSD fp32 */
    const fr_gen_spec *pk = find_spec("peaked_beta025_fp32");
    if (pk && fr_gen_build(pk, seed, &c, &err) == FR_OK) {
        int64_t n = pk->N1 * pk->S1 * pk->D;
        float *nq = malloc(sizeof(float) * (size_t)n);
        fr_rng_normal_f32(nq, n, c.seed, 1 /* query stream */, 0, 0.0, 1.0);
        const float *q = c.in.fwd.query.data, *k = c.in.fwd.key.data;
        double worst = 0;
        for (int64_t x = 0; x < n; x++)
            worst = fmax(worst, fabs((double)q[x] - nq[x] - 0.25 * k[x]) / (1 + fabs(q[x])));
        CHECK(worst < 1e-6, "peaked rows: worst %g", worst);
        free(nq);
        fr_gen_case_free(&c);
    }
    /* cases of one set draw different inputs; the case seed depends on both the set seed and the name */
    CHECK(fr_gen_case_seed(seed, "a") != fr_gen_case_seed(seed, "b") &&
              fr_gen_case_seed(seed, "a") != fr_gen_case_seed(seed + 1, "a") &&
              fr_gen_case_seed(seed, "a") == fr_gen_case_seed(seed, "a"),
          "case seeds");
    /* errors */
    fr_gen_spec bad = {.name = "bad", .N1 = 0, .S1 = 2, .S2 = 2, .D = 4, .B = 1};
    CHECK(fr_gen_build(&bad, seed, &c, &err) == FR_E_INVALID_ARG && strstr(err.msg, "N1"), "N1 = 0: %s", err.msg);
    fr_gen_spec fp8b = {.name = "fp8bwd", .bwd = true, .dtype = FR_E4M3FN, .N1 = 1, .S1 = 2, .S2 = 2, .D = 4, .B = 1};
    CHECK(fr_gen_build(&fp8b, seed, &c, &err) == FR_E_UNSUPPORTED, "fp8 backward: %s", err.msg);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_casegen");
    test_sets(seed);
    test_xcheck_coverage();
    test_alibi();
    test_contents(seed);
    return fr_test_exit("test_casegen");
}
