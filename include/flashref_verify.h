/* flashref verifier, in-process: run a suite set against a function of yours (a callback implementation under
 * test), against a built-in engine or any --impl spec; get every verdict as JSON; write the HTML report. Also the
 * precision metrics and the emulator studies, as JSON. This is the Python package's way in (docs/python.md); C callers
 * can use it the same way:
 *
 *   static fr_status my_impl(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo,
 *                            fr_error *err) {
 *       if (c->op != FR_VERIFY_FWD) return FR_E_UNSUPPORTED;        // SKIP
 *       return my_attention(c->params, &c->in->fwd, fo, err);        // write every element of fo
 *   }
 *   fr_verify_opts o = fr_verify_opts_default();  o.set = "quick";
 *   fr_verify_result *r;
 *   if (fr_verify_run_callback(&o, my_impl, NULL, &r, &err) == FR_OK) {
 *       char *json;  fr_verify_result_json(r, &json, &err);  ...  fr_verify_free(json);
 *       fr_verify_result_html(r, "out.html", &err);
 *       fr_verify_result_free(r);
 *   }
 *
 * The cases, the judge, the thresholds and the JSON are the command line's (`flashref suite`): a callback is judged
 * exactly as `--impl exec:...` is (fully masked rows implementation-defined, spec D1; no determinism re-runs).
 */
#ifndef FLASHREF_VERIFY_H
#define FLASHREF_VERIFY_H

#include "flashref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a struct below or the callback's contract changes. */
#define FR_VERIFY_ABI_VERSION 1
FR_API int fr_verify_abi_version(void);
/* sizeof of a public struct by name ("fr_tensor", "fr_params", "fr_fwd_inputs", "fr_bwd_inputs", "fr_fwd_outputs",
 * "fr_bwd_outputs", "fr_error", "fr_numerics", "fr_verify_case", "fr_verify_opts"); 0 for an unknown name. Bindings
 * that mirror the structs (ctypes) check their layout with it. */
FR_API size_t fr_verify_sizeof(const char *type);

typedef enum fr_verify_op { FR_VERIFY_FWD = 0, FR_VERIFY_BWD = 1 } fr_verify_op;

/* The outputs an fr_fwd (op FR_VERIFY_FWD, in->fwd read) or fr_bwd call writes, in the operator's dtypes: out[k] gets
 * dtype, ndim, shape and C-contiguous strides, data NULL; absent outputs dtype FR_DT_NONE. Order: attention_out,
 * softmax_max, softmax_sum (forward); dq, dk, dv, dq_rope, dk_rope, dsink (backward, out[3..8]). Validates the
 * problem's shapes first (the FR_E_* of validation). */
#define FR_VERIFY_NUM_OUTPUTS 9
FR_API fr_status fr_verify_output_specs(fr_verify_op op, const fr_params *p, const fr_bwd_inputs *in,
                                        fr_tensor out[FR_VERIFY_NUM_OUTPUTS], fr_error *err);

/* One case as the callback sees it. Everything is owned by the verifier and valid during the call only. */
typedef struct fr_verify_case {
    const char *name;        /* the suite case's name (order-invariance variants repeat their case's name) */
    const char *category;    /* "boundaries", "equivalence", ... */
    fr_verify_op op;
    fr_dtype dtype;          /* query/key/value (and dy, attention_in) */
    const fr_params *params;
    const fr_bwd_inputs *in; /* forward cases: in->fwd; backward cases also dy, attention_in, softmax_max/sum */
} fr_verify_case;

/* The implementation under test. fwd (forward cases) or bwd (backward cases) holds the outputs, allocated in the
 * operator's dtypes and shapes (attention_out in the out dtype, softmax_max/sum fp32 [B,N1,S1,8], gradients in the
 * input dtype, dsink fp32), C-contiguous, prefilled with a NaN payload: write every element. Return FR_OK when
 * written, FR_E_UNSUPPORTED to SKIP the case, any other status when the implementation failed (a FAIL with the
 * diagnosis error-status; put the reason in err->msg). */
typedef fr_status (*fr_verify_callback)(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                                        fr_error *err);

typedef struct fr_verify_opts {
    const char *set;    /* "quick", "default", "long", "all" (default "default") */
    const char *filter; /* only cases whose name contains it (NULL: all) */
    const char *exact;  /* only the case of exactly this name (NULL: no restriction); combines with filter */
    uint64_t seed;      /* case generator seed (default 20260101) */
    int threads;        /* threads of a built-in implementation (0: default) */
    /* Judge thresholds (defaults as `flashref suite`; printed by its --help). */
    double k_out, k_max, k_grad, k_stats, gain_warn, growth_warn;
    int external;       /* fully masked rows implementation-defined: 1 yes, 0 only for built-ins, -1 auto */
    const char *impl_name; /* the implementation's name in the JSON and the report (NULL: "callback" / the spec) */
    const char *standard;  /* precision standard (`--standard`): NULL or "flashref" (default), "ascend-L0",
                              "ascend-L1", "ascend-L2", "fa" (FlashAttention's rule, against its own baseline) */
} fr_verify_opts;

FR_API fr_verify_opts fr_verify_opts_default(void);

typedef struct fr_verify_result fr_verify_result;

/* Runs the set against fn (called once per case, twice or more for order variants, from the calling thread).
 * FR_OK when the suite ran, whatever the verdicts; FR_E_INVALID_ARG for an unknown set or a bad threshold. */
FR_API fr_status fr_verify_run_callback(const fr_verify_opts *o, fr_verify_callback fn, void *ud,
                                        fr_verify_result **res, fr_error *err);
/* The same with the callback's capability declaration (a JSON object, docs/exec-protocol.md "Runner capabilities"):
 * cases outside the declared space SKIP without calling fn ("outside the declared capabilities: AXIS");
 * FR_E_FORMAT when the declaration is refused. capabilities NULL: as fr_verify_run_callback. */
FR_API fr_status fr_verify_run_callback_caps(const fr_verify_opts *o, const char *capabilities, fr_verify_callback fn,
                                             void *ud, fr_verify_result **res, fr_error *err);
/* `flashref hunt` (docs/verifier.md "The hunt") against fn (impl NULL) or an --impl spec (fn NULL). opts_json: a JSON
 * object, every key optional: "seed", "budget_s" (default 600), "max_draws", "max_shrink", "threads", "out" (a
 * directory for findings.markdown / findings.json / cluster_K), "name", "no_corners", "capabilities" (the declaration's
 * JSON text). *findings_json receives the findings ("flashref-hunt/1"; fr_verify_free). fr_verify_hunt_stop() (from
 * a callback or a signal handler) ends the hunt after the current case: FR_E_INTERNAL "hunt: interrupted", nothing
 * written. */
FR_API fr_status fr_verify_hunt(const char *opts_json, const char *impl, fr_verify_callback fn, void *ud,
                                char **findings_json, fr_error *err);
FR_API void fr_verify_hunt_stop(void);
/* The same against an --impl spec: fast[:ISA], golden, emulate[:PRESET], plugin:PATH.so, exec:"CMD ARGS",
 * mutant:NAME. */
FR_API fr_status fr_verify_run_impl(const fr_verify_opts *o, const char *impl, fr_verify_result **res,
                                    fr_error *err);
/* msprobe dumps (docs/ascend.md): every npu_fusion_attention[_grad][_v2|_v3] call (and MindSpeed's) of the msprobe
 * dump at or below dump_dir rebuilt with torch_npu's argument names and defaults, a backward entry as the grad call
 * of its forward, and the NPU's dumped outputs judged against the golden, each result named by its dump name (as
 * `flashref verify --msprobe`). o: filter / exact select calls by name, thresholds and impl_name as for the suites
 * (set, seed, threads: unused). standard: "ascend-L1" when NULL (msprobe's level for these APIs), or "flashref",
 * "ascend-L0", "ascend-L2", "fa". write_dir (NULL: none): every rebuilt call also written as a case directory
 * write_dir/NAME with the NPU's outputs beside it. FR_OK when the dump was read (a call that cannot be read is its
 * result's FAIL "cannot load ..."); FR_E_IO / FR_E_FORMAT when there is no dump there. */
FR_API fr_status fr_verify_msprobe(const fr_verify_opts *o, const char *dump_dir, const char *standard,
                                   const char *write_dir, fr_verify_result **res, fr_error *err);
/* torch_npu's fusion-attention schemas as op-plugin publishes them (npu_fusion_attention, _grad, _v2, _grad_v2, _v3,
 * _grad_v3), NULL-terminated: the one copy the dump reader and the Python package (flashref.npu) parse. */
FR_API const char *const *fr_verify_npu_schemas(void);

/* Overall verdict: 0 PASS, 1 WARN, 2 FAIL, 3 SKIP (every case skipped); number of cases. */
FR_API int fr_verify_result_overall(const fr_verify_result *r);
FR_API int fr_verify_result_count(const fr_verify_result *r);
/* The result as `flashref suite --json` writes it (format "flashref-suite-result/1"); malloc'd, fr_verify_free. */
FR_API fr_status fr_verify_result_json(const fr_verify_result *r, char **json, fr_error *err);
/* The HTML report of `flashref suite --report`. */
FR_API fr_status fr_verify_result_html(const fr_verify_result *r, const char *path, fr_error *err);
FR_API void fr_verify_result_free(fr_verify_result *r);
FR_API void fr_verify_free(void *p);

/* Judges outputs of one problem of the caller's own (not a suite case) as a suite case is judged: against the fp64
 * golden, with bounds from the ideal pipeline and the plain reference of its dtype, o's thresholds (NULL:
 * defaults; fully masked rows implementation-defined unless o->external is 0). The outputs to judge are the present
 * tensors of fwd (op FR_VERIFY_FWD) or bwd; an absent one is filled with the golden rounded to the operator's dtype,
 * so only the given ones can fail. Values are converted to the operator's dtype; a shape other than the operator's
 * is a FAIL (diagnosis shape). *json: the case's record as `flashref suite --json` writes it ("verdict",
 * "diagnosis", "why", "outputs": {name: {"iut", "ideal", "plain", "bound_rel_l2", "bound_abs", "ratio", ...}});
 * malloc'd, fr_verify_free. Invalid params / inputs: their status (nothing judged). */
FR_API fr_status fr_verify_judge_outputs(fr_verify_op op, const fr_params *p, const fr_bwd_inputs *in,
                                         const fr_fwd_outputs *fwd, const fr_bwd_outputs *bwd,
                                         const fr_verify_opts *o, char **json, fr_error *err);

/* Lists the cases of a set: fn(ud, name, category, description) per case; returns the count (-1: unknown set). */
FR_API int fr_verify_list(const char *set, const char *filter,
                          void (*fn)(void *ud, const char *name, const char *category, const char *what), void *ud);
/* The set names, NULL-terminated. */
FR_API const char *const *fr_verify_set_names(void);

/* The metrics of the judge (docs/verification-method.md 2) of a against r (fp64, rows x row_len, C order), as a JSON object
 * {"rel_l2", "max_abs", "max_rel", "mean_rel", "nmse", "cos_diff", "max_ulp", "mean_ulp", "gain_rms", "gain_max",
 * "gain_mean", "gain_p50", "gain_p90", "gain_p99", "noise_floor", "gain_over_floor", "n", "n_anomaly",
 * "n_anomaly_mismatch", "rows_used"}. ulp_dtype FR_DT_NONE: no ulp metric. */
FR_API fr_status fr_verify_metrics_json(const double *a, const double *r, int64_t rows, int64_t row_len,
                                        fr_dtype ulp_dtype, char **json, fr_error *err);
/* The unit in the last place of x in dt (subnormals included; hif8 tapered). */
FR_API double fr_verify_ulp(fr_dtype dt, double x);

/* `flashref study order-invariance` (docs/emulator.md) as JSON: the parameters, the bf16 floor, and per
 * configuration ("lazy-N", "exact-0", "rowsum-rounded") out_rel_l2[first,last], gain_rms[first,last], the
 * difference between orders, dq/dk/dv[order][no fix, o_lo fix] (0 when bwd is 0). FR_E_INVALID_ARG for T, W, H,
 * Dl < 1, Dr < 0, T or W beyond int32 (the top-k indices) or threads < 0; FR_E_OVERFLOW when the buffers' sizes
 * overflow. */
FR_API fr_status fr_verify_study_order_invariance(int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr,
                                                  double beta, uint64_t seed, double lazy_threshold, int bwd,
                                                  int threads, char **json, fr_error *err);
/* `flashref study seqlen` as JSON: "lens", "pipelines", and [pipeline][len] "rel_l2", "gain_rms", "sum_rel",
 * "nonfinite". 1 to 16 lengths, each >= 1; S1, D >= 1, threads >= 0 (else FR_E_INVALID_ARG); FR_E_OVERFLOW when a
 * buffer's size overflows. */
FR_API fr_status fr_verify_study_seqlen(const int64_t *lens, int nlens, int64_t S1, int64_t D, uint64_t seed,
                                        int threads, char **json, fr_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FLASHREF_VERIFY_H */
