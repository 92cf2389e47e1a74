/* Case generation's refusals and options that the named sets do not exercise (src/verify/cases/casegen.c):
 *   - refusals, each with its status and message: a NULL spec, N1 <= 0, N1 not a multiple of N2, a TND batch count
 *     outside 1..16, a negative dimension, keep_prob outside [0, 1], an fp8 backward case, tensor sizes and drop mask
 *     sizes that overflow int64 (through the shapes-only fr_gen_check, which allocates nothing);
 *   - options: ALiBi slopes per batch and per head, a compressed [1,..] pse, a TND pse (Toeplitz rows), top-k lists
 *     per kv head in TND, rows with no key of their own (S1 > S2), peaked TND inputs, fp8 scales, a sink, rope, a
 *     mode-5 mask of one batch row with prefixes that differ (kept random), a mode-0 band written into a [B,1,S1,S2]
 *     mask, a backward case with the same-as-input softmax layout;
 *   - fr_gen_build_structure leaves a full pse's data out (shapes only) and keeps the mask's;
 *   - fr_gen_case_write: an invalid case writes nothing; inputs only; a backward case with its golden outputs;
 *   - defaults: a spec without a name, D = 0, the set lookups' NULLs, no slopes for no heads, a mode-5 formula per
 *     batch of a [B,1,S1,S2] mask (mask_any keeps the random one), a forward case written with its golden. */
#define _GNU_SOURCE
#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "verify/cases/casegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static fr_gen_spec spec(void) {
    fr_gen_spec s;
    memset(&s, 0, sizeof s);
    s.name = "cg";
    s.dtype = FR_F32;
    s.layout = FR_BNSD;
    s.B = 2;
    s.N1 = 2;
    s.S1 = 8;
    s.S2 = 8;
    s.D = 16;
    return s;
}

static void refused(const fr_gen_spec *s, fr_status want, const char *msg, bool check_only) {
    fr_gen_case c;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st = check_only ? fr_gen_check(s, &err) : fr_gen_build(s, 1, &c, &err);
    CHECK(st == want && strstr(err.msg, msg), "%s: %s (%s) expected %s '%s'", s->name, fr_status_str(st), err.msg,
          fr_status_str(want), msg);
    if (st == FR_OK) fr_gen_case_free(&c);
}

static void test_refusals(void) {
    fr_gen_case c;
    fr_error err;
    CHECK(fr_gen_build(NULL, 1, &c, &err) == FR_E_NULL && strstr(err.msg, "casegen: NULL spec or case"), "%s",
          err.msg);
    fr_gen_spec s = spec();
    s.N1 = 0;
    refused(&s, FR_E_INVALID_ARG, "casegen cg: N1 = 0 must be > 0", false);
    s = spec();
    s.N1 = 3, s.N2 = 2;
    refused(&s, FR_E_INVALID_ARG, "N1 = 3 not a multiple of N2 = 2", false);
    s = spec();
    s.layout = FR_TND;
    s.B = 0;
    refused(&s, FR_E_INVALID_ARG, "TND B = 0 outside 1..16", false);
    s.B = FR_GEN_MAX_BATCH + 1;
    refused(&s, FR_E_INVALID_ARG, "TND B = 17 outside 1..16", false);
    s = spec();
    s.Drope = -1;
    refused(&s, FR_E_INVALID_ARG, "casegen cg: negative dimension", false);
    s = spec();
    s.topk_w = -2;
    refused(&s, FR_E_INVALID_ARG, "negative dimension", false);
    s = spec();
    s.keep_prob = 1.5;
    refused(&s, FR_E_INVALID_ARG, "keep_prob = 1.5", false);
    s.keep_prob = -0.1;
    refused(&s, FR_E_INVALID_ARG, "keep_prob = -0.1", false);
    s = spec();
    s.dtype = FR_E4M3FN;
    s.bwd = true;
    s.S1 = s.S2 = 128;
    s.D = 128;
    refused(&s, FR_E_UNSUPPORTED, "fp8 backward cases are not generated", false);
    refused(&s, FR_E_UNSUPPORTED, "fp8 backward cases are not generated", true);
    /* Sizes past int64: shapes only, nothing allocated. */
    s = spec();
    s.B = 1, s.N1 = 1;
    s.S1 = INT64_C(1) << 40;
    s.S2 = 4;
    s.D = INT64_C(1) << 30;
    refused(&s, FR_E_OVERFLOW, "casegen: tensor size overflows", true);
    s.S1 = INT64_C(1) << 31;
    s.D = INT64_C(1) << 30; /* 2^61 elements: fine, their fp32 bytes are not */
    refused(&s, FR_E_OVERFLOW, "casegen: tensor bytes overflow", true);
    s = spec();
    s.B = 1, s.N1 = 4, s.D = 1; /* 4 x 2^62 bits */
    s.S1 = INT64_C(1) << 31;
    s.S2 = INT64_C(1) << 31;
    s.keep_prob = 0.5;
    refused(&s, FR_E_OVERFLOW, "drop mask size overflows", true);
}

static bool build(const fr_gen_spec *s, fr_gen_case *c) {
    fr_error err;
    return CHECKED(fr_gen_build(s, 7, c, &err) == FR_OK, "%s: %s", s->name, err.msg);
}

static void test_options(void) {
    fr_gen_case c;
    /* ALiBi slopes: per head, and per batch (batch b scaled by 1 + b/4). */
    fr_gen_spec s = spec();
    s.pse = FR_GEN_PSE_SLOPES_BN;
    s.pse_type = 2;
    if (build(&s, &c)) {
        const float *p = c.in.fwd.real_shift.data;
        CHECK(c.in.fwd.real_shift.ndim == 2 && c.in.fwd.real_shift.shape[0] == 2 && p[0] == exp2f(-4.0f) &&
                  p[2] == 1.25f * p[0] && p[3] == 1.25f * p[1],
              "slopes [B,N1]: %g %g %g %g", p[0], p[1], p[2], p[3]);
        fr_gen_case_free(&c);
    }
    s.pse = FR_GEN_PSE_SLOPES_N;
    s.pse_type = 3;
    if (build(&s, &c)) {
        CHECK(c.in.fwd.real_shift.ndim == 1 && ((const float *)c.in.fwd.real_shift.data)[1] == exp2f(-8.0f),
              "slopes [N1]");
        fr_gen_case_free(&c);
    }
    /* A compressed [1,N1,1024,S2] pse (S1 = S2 > 1024): constant along every diagonal. */
    s = spec();
    s.B = 1, s.N1 = 1, s.D = 8;
    s.S1 = s.S2 = 1030;
    s.pse = FR_GEN_PSE_COMP_1;
    s.pse_type = 0;
    if (build(&s, &c)) {
        const fr_tensor *t = &c.in.fwd.real_shift;
        CHECK(t->ndim == 4 && t->shape[0] == 1 && t->shape[2] == 1024 && t->shape[3] == 1030 &&
                  fr_load_f64(t, 0) == fr_load_f64(t, 1030 + 1) && fr_load_f64(t, 5) == fr_load_f64(t, 1030 * 3 + 8),
              "compressed pse");
        fr_gen_case_free(&c);
    }
    /* TND: a BNSS-shaped pse read as the compressed one (Toeplitz), per-kv-head top-k lists, peaked rows, and a
     * batch whose queries outnumber its keys (its rows list no own key). */
    s = spec();
    s.layout = FR_TND;
    s.B = 2;
    s.N1 = 4, s.N2 = 2;
    s.seq_q[0] = 3, s.seq_kv[0] = 6;
    s.seq_q[1] = 6, s.seq_kv[1] = 2;
    s.pse = FR_GEN_PSE_BNSS;
    s.pse_type = 0;
    s.topk_w = 4;
    s.topk_per_kv_head = true;
    s.beta = 0.5;
    if (build(&s, &c)) {
        const fr_tensor *t = &c.in.fwd.topk_indices;
        CHECK(t->ndim == 3 && t->shape[0] == 9 && t->shape[1] == 2 && t->shape[2] == 4, "TND top-k shape %lld %lld",
              (long long)t->shape[0], (long long)t->shape[1]);
        const int32_t *p = t->data;
        /* token 3 + i of batch 1 (S1 6 > S2 2): rows i < 4 hold no own key, i = 4, 5 list key i - 4 first */
        CHECK(p[(3 * 2) * 4] == -1 && p[(3 * 2) * 4 + 1] == -1 && p[(7 * 2) * 4] == 0 && p[(8 * 2 + 1) * 4] == 1,
              "top-k own keys: %d %d %d", p[24], p[56], p[68]);
        CHECK(p[0] == 3, "batch 0 row 0: own key %d (bottom-right aligned)", p[0]);
        const fr_tensor *ps = &c.in.fwd.real_shift;
        CHECK(fr_load_f64(ps, 0) == fr_load_f64(ps, ps->shape[3] + 1), "TND pse: not Toeplitz");
        fr_gen_case_free(&c);
    }
    /* fp8 forward: its three scale tensors; a sink; rope; the softmax layout of a backward case. */
    s = spec();
    s.dtype = FR_E5M2;
    s.S1 = s.S2 = 64;
    s.D = 64;
    s.out_dtype = FR_BF16;
    if (build(&s, &c)) {
        CHECK(fr_tensor_present(&c.in.fwd.d_scale_q) && fr_tensor_present(&c.in.fwd.d_scale_k) &&
                  fr_tensor_present(&c.in.fwd.d_scale_v) && c.params.out_dtype == FR_BF16,
              "fp8 scales");
        fr_gen_case_free(&c);
    }
    s = spec();
    s.bwd = true;
    s.sink = true;
    s.Drope = 8;
    s.dtype = FR_BF16;
    s.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT; /* TND only */
    s.layout = FR_TND;
    s.seq_q[0] = 4, s.seq_kv[0] = 8, s.seq_q[1] = 8, s.seq_kv[1] = 8;
    if (build(&s, &c)) {
        CHECK(fr_tensor_present(&c.in.fwd.sink) && c.in.fwd.sink.shape[0] == 2 &&
                  fr_tensor_present(&c.in.fwd.query_rope) && c.in.fwd.key_rope.shape[c.in.fwd.key_rope.ndim - 1] == 8 &&
                  fr_tensor_present(&c.in.dy) && c.in.attention_in.dtype == FR_BF16 &&
                  c.in.softmax_max.dtype == FR_F32 && c.params.softmax_layout == FR_SOFTMAX_SAME_AS_INPUT,
              "backward case with sink and rope");
        fr_gen_case_free(&c);
    }
    /* Mode 5 with a [1,1,S1,S2] mask and prefixes that differ by batch: one mask cannot be the formula of both, so it
     * stays random (some position masked below the causal line); with equal prefixes (B = 1) it is the formula. */
    s = spec();
    s.mask = FR_GEN_MASK_11SS;
    s.sparse_mode = 5;
    s.prefix = true;
    s.S1 = 8, s.S2 = 40;
    for (int b = 1; b <= 2; b++) {
        s.B = b;
        if (!build(&s, &c)) continue;
        bool differ = b == 2 && c.prefix[0] != c.prefix[1];
        const uint8_t *m = c.in.fwd.atten_mask.data;
        int64_t off = 0;
        for (int64_t i = 0; i < 8; i++)
            for (int64_t j = 0; j < 40; j++) {
                bool f = j > i + 32 && j >= c.prefix[0];
                off += (m[i * 40 + j] != 0) != f;
            }
        if (b == 1) CHECK(off == 0, "B 1: mask off the formula in %lld places", (long long)off);
        if (differ) CHECK(off > 0, "prefixes %lld %lld differ, yet the mask is the formula",
                          (long long)c.prefix[0], (long long)c.prefix[1]);
        fr_gen_case_free(&c);
    }
    /* Mode 0 with a band and a [B,1,S1,S2] mask: every position outside the band masked. */
    s = spec();
    s.mask = FR_GEN_MASK_B1SS;
    s.sparse_mode = 0;
    s.set_band = true;
    s.pre_tokens = 2;
    s.next_tokens = 1;
    if (build(&s, &c)) {
        const uint8_t *m = c.in.fwd.atten_mask.data;
        int64_t open = 0;
        for (int64_t b = 0; b < 2; b++)
            for (int64_t i = 0; i < 8; i++)
                for (int64_t j = 0; j < 8; j++)
                    open += (j - i > 1 || i - j > 2) && !m[(b * 8 + i) * 8 + j];
        CHECK(open == 0, "%lld band positions open", (long long)open);
        fr_gen_case_free(&c);
    }
    /* Structure only: the mask's data, a full pse's shape without data. */
    s = spec();
    s.mask = FR_GEN_MASK_SS;
    s.pse = FR_GEN_PSE_BNSS;
    s.pse_type = 1;
    fr_error err;
    if (CHECKED(fr_gen_build_structure(&s, 7, &c, &err) == FR_OK, "%s", err.msg)) {
        fr_gen_case full;
        if (build(&s, &full)) {
            CHECK(!memcmp(c.in.fwd.atten_mask.data, full.in.fwd.atten_mask.data, 64), "structure mask differs");
            fr_gen_case_free(&full);
        }
        CHECK(c.in.fwd.real_shift.ndim == 4 && c.in.fwd.real_shift.shape[3] == 8, "pse shape");
        fr_gen_case_free(&c); /* the shapes-only tensors are not freed (they point at no allocation) */
    }
}

static void test_write(void) {
    char tmp[300];
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%.200s/fr_casegen_paths_XXXXXX", t && *t ? t : "/tmp");
    if (!CHECKED(mkdtemp(tmp) != NULL)) return;
    fr_gen_spec s = spec();
    s.bwd = true;
    fr_gen_case c;
    fr_error err;
    char d[400];
    struct stat sb;
    if (build(&s, &c)) {
        snprintf(d, sizeof d, "%s/bwd", tmp);
        CHECK(fr_gen_case_write(&c, d, false, &err) == FR_OK, "%s", err.msg);
        CHECK(fr_test_file_contains(d, "case.json", "\"bwd\"") && stat(d, &sb) == 0, "case.json");
        char g[450];
        snprintf(g, sizeof g, "%s/dq.npy", d);
        CHECK(stat(g, &sb) == 0, "golden dq.npy missing");
        snprintf(d, sizeof d, "%s/inputs_only", tmp);
        CHECK(fr_gen_case_write(&c, d, true, &err) == FR_OK, "%s", err.msg);
        snprintf(g, sizeof g, "%s/dq.npy", d);
        CHECK(stat(g, &sb) != 0, "inputs only: dq.npy written");
        /* Invalid (a head count the tensors do not have): refused before anything is written. */
        c.params.head_num = 3;
        snprintf(d, sizeof d, "%s/invalid", tmp);
        fr_status st = fr_gen_case_write(&c, d, false, &err);
        CHECK(st != FR_OK && stat(d, &sb) != 0, "invalid case: %s, folder %s", fr_status_str(st),
              stat(d, &sb) == 0 ? "written" : "absent");
        fr_gen_case_free(&c);
    }
    fr_test_rm_rf(tmp);
}


/* Defaults and small options: a spec without a name ("case", seeded as ""), D = 0 (scale 1), the set lookups' NULLs,
 * no ALiBi slopes for no heads, more negative dimensions, a mode-5 formula per batch in a [B,1,S1,S2] mask, mask_any
 * keeping the random one, a forward case written with its golden and an invalid forward case refused. */
static void test_defaults(void) {
    fr_gen_spec s = spec();
    s.name = NULL;
    fr_gen_case c;
    fr_error err;
    if (build(&s, &c)) {
        CHECK(!strcmp(c.name, "case") && c.seed == fr_gen_case_seed(7, NULL) && c.seed == fr_gen_case_seed(7, ""),
              "unnamed: %s", c.name);
        fr_gen_case_free(&c);
    }
    s = spec();
    s.D = 0;
    if (build(&s, &c)) {
        CHECK(c.params.scale_value == 1.0, "D 0: scale %g", c.params.scale_value);
        fr_gen_case_free(&c);
    }
    int count = -1;
    CHECK(fr_gen_sets(NULL) != NULL && fr_gen_sets(&count) && count >= 2 && fr_gen_set_find(NULL) == NULL,
          "set lookups");
    float none[1] = {5.0f};
    fr_gen_alibi_slopes(0, none);
    CHECK(none[0] == 5.0f, "slopes for 0 heads written");
    s = spec();
    s.B = -1;
    refused(&s, FR_E_INVALID_ARG, "negative dimension", false);
    s = spec();
    s.Dv = -4;
    refused(&s, FR_E_INVALID_ARG, "negative dimension", false);
    /* Mode 5, [B,1,S1,S2]: each batch's mask is its own prefix's formula; mask_any keeps the random mask. */
    s = spec();
    s.mask = FR_GEN_MASK_B1SS;
    s.sparse_mode = 5;
    s.prefix = true;
    s.S1 = 6, s.S2 = 20;
    for (int any = 0; any < 2; any++) {
        s.mask_any = any;
        if (!build(&s, &c)) continue;
        const uint8_t *m = c.in.fwd.atten_mask.data;
        int64_t off = 0;
        for (int64_t b = 0; b < 2; b++)
            for (int64_t i = 0; i < 6; i++)
                for (int64_t j = 0; j < 20; j++)
                    off += (m[(b * 6 + i) * 20 + j] != 0) != (j > i + 14 && j >= c.prefix[b]);
        CHECK(any ? off > 0 : off == 0, "mask_any %d: %lld positions off the formula", any, (long long)off);
        fr_gen_case_free(&c);
    }
    char tmp[300];
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%.200s/fr_casegen_fwd_XXXXXX", t && *t ? t : "/tmp");
    if (!CHECKED(mkdtemp(tmp) != NULL)) return;
    s = spec();
    if (build(&s, &c)) {
        char d[400], g[450];
        struct stat sb;
        snprintf(d, sizeof d, "%s/fwd", tmp);
        CHECK(fr_gen_case_write(&c, d, false, &err) == FR_OK, "%s", err.msg);
        snprintf(g, sizeof g, "%s/attention_out.npy", d);
        CHECK(stat(g, &sb) == 0, "forward golden attention_out.npy missing");
        c.params.head_num = 3;
        snprintf(d, sizeof d, "%s/fwd_invalid", tmp);
        fr_status st = fr_gen_case_write(&c, d, false, &err);
        CHECK(st != FR_OK && stat(d, &sb) != 0, "invalid forward case: %s", fr_status_str(st));
        fr_gen_case_free(&c);
    }
    fr_test_rm_rf(tmp);
}

int main(void) {
    test_refusals();
    test_options();
    test_write();
    test_defaults();
    return fr_test_exit("test_casegen_paths");
}
