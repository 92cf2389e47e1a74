/* Long sequences: the blocked golden (golden_fwd.c) against the previous row algorithm (golden_rowref.c) at
 * S2 = 65536 keys, D = 128, fp32 inputs uniform in [-3, 3] (scores of a few units: many online-softmax rescales),
 * recomputed by the row reference on rows at the start, the block edges and the end: |out - ref| <= 1e-13 and the
 * softmax max / sum within 1e-13 relative. The two differ in rounding (fma chains vs mul-then-add), so the printed
 * error is not zero; a drift that grows with the length would show here.
 *
 *   test_golden_long [S1 [S2 [D [rows]]]]   (defaults 512 65536 128 8; make test-long runs S1 = S2 = 65536) */
#include "common/check.h"
#include "golden/golden_internal.h"
#include "golden/gt_case.h"

int main(int argc, char **argv) {
    int64_t S1 = argc > 1 ? atoll(argv[1]) : 512, S2 = argc > 2 ? atoll(argv[2]) : 65536;
    int64_t D = argc > 3 ? atoll(argv[3]) : 128, nrows = argc > 4 ? atoll(argv[4]) : 8;
    const uint64_t seed = 14065536;
    uint64_t r = seed;
    printf("test_golden_long: S1=%lld S2=%lld D=%lld, %lld reference rows (seed %llu)\n", (long long)S1, (long long)S2,
           (long long)D, (long long)nrows, (unsigned long long)seed);
    int64_t shq[4] = {1, 1, S1, D}, shk[4] = {1, 1, S2, D}, shs[4] = {1, 1, S1, 8};
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    in.query = gt_tensor(FR_F32, 4, shq, 0, &r);
    in.key = gt_tensor(FR_F32, 4, shk, 0, &r);
    in.value = gt_tensor(FR_F32, 4, shk, 0, &r);
    gt_fill_uniform(&in.query, &r, -3.0, 3.0);
    gt_fill_uniform(&in.key, &r, -3.0, 3.0);
    gt_fill_uniform(&in.value, &r, -1.0, 1.0);
    fr_fwd_outputs out = {gt_tensor(FR_F64, 4, shq, 0, &r), gt_tensor(FR_F64, 4, shs, 0, &r),
                          gt_tensor(FR_F64, 4, shs, 0, &r)};
    fr_fwd_outputs ref = {gt_tensor(FR_F64, 4, shq, 0, &r), gt_tensor(FR_F64, 4, shs, 0, &r),
                          gt_tensor(FR_F64, 4, shs, 0, &r)};
    fr_params p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BNSD;
    p.scale_value = 1.0 / sqrt((double)D);
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    fr_error err;
    fr_status st = fr_fwd(&p, &in, &out, &e, &err);
    if (!CHECKED(st == FR_OK, "golden: %s", err.msg)) return fr_test_exit("test_golden_long");
    double worst_o = 0, worst_rel = 0, worst_ml = 0;
    for (int64_t k = 0; k < nrows; k++) {
        /* rows 0, 1, then spread to the end, block edges included */
        int64_t i = k == 0 ? 0 : k == 1 ? 1 : k == nrows - 1 ? S1 - 1 : (S1 / nrows) * k + (k % 2 ? -1 : 0);
        if (i < 0 || i >= S1) continue;
        st = gd_rowref_fwd_rows(&p, &in, &ref, 0, 0, i, 1, &err);
        if (!CHECKED(st == FR_OK, "row reference: %s", err.msg)) return fr_test_exit("test_golden_long");
        double rowmax = 0;
        for (int64_t d = 0; d < D; d++) {
            int64_t idx[4] = {0, 0, i, d};
            double a = gt_get(&out.attention_out, idx), b = gt_get(&ref.attention_out, idx), dd = fabs(a - b);
            CHECK(dd <= 1e-13, "row %lld d %lld: out %.17g, reference %.17g", (long long)i, (long long)d, a, b);
            if (dd > worst_o) worst_o = dd;
            if (fabs(b) > rowmax) rowmax = fabs(b);
            if (b != 0 && dd / fabs(b) > worst_rel) worst_rel = dd / fabs(b);
        }
        int64_t si[4] = {0, 0, i, 0};
        double m = gt_get(&out.softmax_max, si), mr = gt_get(&ref.softmax_max, si);
        double l = gt_get(&out.softmax_sum, si), lr = gt_get(&ref.softmax_sum, si);
        double em = fabs(m - mr) / fabs(mr), el = fabs(l - lr) / fabs(lr);
        CHECK(em <= 1e-13 && el <= 1e-13, "row %lld: max %.17g vs %.17g, sum %.17g vs %.17g", (long long)i, m, mr, l,
              lr);
        if (em > worst_ml) worst_ml = em;
        if (el > worst_ml) worst_ml = el;
    }
    printf("test_golden_long: max |out - rowref| %.3e (max relative %.3e), max relative max/sum error %.3e\n", worst_o,
           worst_rel, worst_ml);
    gt_free(&in.query), gt_free(&in.key), gt_free(&in.value);
    gt_free(&out.attention_out), gt_free(&out.softmax_max), gt_free(&out.softmax_sum);
    gt_free(&ref.attention_out), gt_free(&ref.softmax_max), gt_free(&ref.softmax_sum);
    return fr_test_exit("test_golden_long");
}
