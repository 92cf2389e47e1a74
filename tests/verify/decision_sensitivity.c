/* Decision sensitivity (docs/semantics-decisions.md, "Readings that could decide a verdict"): no case may hinge on a
 * reading the spec leaves open. Every case of every set (quick, default, long, all; casegen's cross-check grid), the
 * regression cases on disk and the draws of many random seeds (the option matrix, as `flashref suite --random N
 * --seed S` draws them) are checked against each alternative reading the golden can run (src/golden/golden_alt.h):
 *   1. structure: the golden's own rules under the decision and under the alternative, position by position (which
 *      positions take part, how often, with which pse), from the case's mask / pse / top-k / prefix only
 *      (casegen's structure build: no q, k, v), so cases with 256K-1M keys cost a few walks at most;
 *   2. only where the structure differs: the golden forward / backward under both readings; a case whose output
 *      changes hinges on the reading: FAIL, naming the case and the rule.
 * Implementation-defined cases are the exception, and the other way round: each must hinge on the rule it reports
 * on. Rules checked without the golden (the check is the structure itself): compressed-mask modes get the canonical
 * mask (its content ignored vs read), and no case puts non-finite K / V under dropout (D16: a dropped position
 * skipped vs multiplied by 0). Controls: the eight mode-0 cases with their old masks (mask_any: band positions left
 * open) must each be flagged, so the check can fail.
 * usage: decision_sensitivity REGRESSION_DIR [seeds [draws_per_seed]] (default 1000 seeds x 2 draws) */
#include "common/check.h"
#include "core/core.h"
#include "golden/golden_alt.h"
#include "io/casedir.h"
#include "verify/cases/case_shapes.h"
#include "verify/judge/judge.h"
#include "verify/suite/suite_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    long cases, walks, differs, golden_runs, draws;
    long flagged[FR_GALT_COUNT], walked[FR_GALT_COUNT];
    long unrun[FR_GALT_COUNT]; /* structure differs, golden pair not run (the rule already has kMaxFlagged) */
    double walk_s[FR_GALT_COUNT];
} st;

static double now_s(void);

/* Once a rule has this many hinging cases the test has failed: later cases whose structure differs are counted, not
 * run through the golden (with a whole set of old masks back, the pairs of large draws would take many minutes). */
enum { kMaxFlagged = 12 };

/* The suite post-processing that changes the mask or the pse: those cases are built whole and modified as the
 * suite does; the others need only their structure. */
static bool mod_changes_structure(fr_suite_mod m) {
    return m == FR_MOD_NAN_KV || m == FR_MOD_SENTINEL || m == FR_MOD_SENTINEL_1E4 || m == FR_MOD_FIRST_TILE_MASKED;
}

static fr_status build_case(const fr_gen_spec *s, fr_suite_mod mod, uint64_t seed, bool whole, fr_gen_case *g,
                            fr_error *err) {
    if (!whole && !mod_changes_structure(mod)) return fr_gen_build_structure(s, seed, g, err);
    fr_status r = fr_gen_build(s, seed, g, err);
    if (r == FR_OK && (r = fr_suite_apply_mod(g, mod, err)) != FR_OK) fr_gen_case_free(g);
    return r;
}

/* rel-L2 of every output of a against b over the elements finite in both (the largest). */
static double outputs_rel_l2(const fr_case_outputs *a, const fr_case_outputs *b) {
    double w = 0;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) w = fmax(w, fr_suite_out_rel_l2(a, b, (fr_case_output)k));
    return w;
}

/* The golden under the decision and under reading a on c; *changed when any output differs in any bit. */
static fr_status golden_pair(const fr_case *c, fr_golden_alt a, bool *changed, double *rel, fr_error *err) {
    fr_problem pb;
    fr_status r = c->op == FR_CASE_FWD ? fr_problem_from_fwd(&c->params, &c->in.fwd, &pb, err)
                                       : fr_problem_from_bwd(&c->params, &c->in, &pb, err);
    if (r != FR_OK) return r;
    fr_case_outputs o0, o1;
    if ((r = fr_case_alloc_outputs(c, true, &o0, err)) != FR_OK) return r;
    if ((r = fr_case_alloc_outputs(c, true, &o1, err)) != FR_OK) {
        fr_case_outputs_free(&o0);
        return r;
    }
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    for (int k = 0; k < 2 && r == FR_OK; k++) {
        fr_golden_alt ak = k ? a : FR_GALT_NONE;
        fr_case_outputs *o = k ? &o1 : &o0;
        r = c->op == FR_CASE_FWD ? fr_golden_fwd_alt(&pb, &c->params, &c->in.fwd, &o->fwd, &e, ak, err)
                                 : fr_golden_bwd_alt(&pb, &c->params, &c->in, &o->bwd, &e, ak, err);
    }
    st.golden_runs++;
    int first;
    if (r == FR_OK) {
        *changed = !fr_outputs_identical(&o0, &o1, &first);
        *rel = outputs_rel_l2(&o1, &o0);
    }
    fr_case_outputs_free(&o0);
    fr_case_outputs_free(&o1);
    return r;
}

/* The rules checked on the case itself rather than by a golden run. */
static void structural_rules(const char *where, const fr_gen_spec *s, fr_suite_mod mod, const fr_case *c) {
    int m = c->params.sparse_mode;
    const fr_tensor *am = &c->in.fwd.atten_mask;
    if (fr_tensor_present(am) && fr_gen_mask_compressed(m) && am->data) {
        /* compressed modes: the canonical mask (built here, not by casegen), on which computing the formula and
         * reading the content agree */
        int64_t rows = m == FR_SPARSE_PREFIX_COMPRESS ? 3072 : 2048, bad = 0;
        bool shape_ok = am->ndim == 2 && am->shape[0] == rows && am->shape[1] == 2048;
        bool bytes = shape_ok && (am->dtype == FR_BOOL || am->dtype == FR_U8) && am->strides[1] == 1 &&
                     am->strides[0] == 2048;
        static uint8_t canon[3072 * 2048];
        if (!canon[2048 * 1024 + 1024])
            for (int64_t i = 0; i < 3072; i++)
                for (int64_t j = 0; j < 2048; j++) canon[i * 2048 + j] = (uint8_t)(i < 2048 ? j > i : j >= 1024);
        if (bytes && !memcmp(am->data, canon, (size_t)(rows * 2048))) shape_ok = true, bytes = false, rows = 0;
        for (int64_t i = 0; shape_ok && i < rows; i++)
            for (int64_t j = 0; j < 2048; j++)
                bad += (fr_load_f64(am, i * am->strides[0] + j * am->strides[1]) != 0) != canon[i * 2048 + j];
        CHECK(shape_ok && bad == 0,
              "%s: sparse mode %d with a non-canonical compressed mask (%lld positions differ): the verdict would "
              "hinge on whether the mask's content is read",
              where, m, (long long)bad);
    }
    /* D16: non-finite values where dropout acts */
    CHECK(!(mod == FR_MOD_NAN_KV && s->keep_prob > 0 && s->keep_prob < 1),
          "%s: NaN/Inf K/V together with dropout: the verdict would hinge on D16 (dropped positions skipped or x 0)",
          where);
}

/* One case: every alternative's structure, the golden pair where it differs. expect: the alternatives an
 * implementation-defined case must hinge on (bits), or 0 for a case that must hinge on none. Returns the bits of
 * the alternatives whose golden output changed. */
static unsigned check_case(const char *where, const fr_gen_spec *s, fr_suite_mod mod, uint64_t seed, bool impldef,
                           bool quiet) {
    fr_error err;
    fr_gen_case g;
    fr_status r = build_case(s, mod, seed, false, &g, &err);
    if (r == FR_E_UNSUPPORTED) return 0; /* fp8 backward: not generated */
    if (!CHECKED(r == FR_OK, "%s: build: %s", where, err.msg)) return 0;
    st.cases++;
    fr_case c;
    fr_suite_case_view(&g, &c);
    if (!quiet) structural_rules(where, s, mod, &c);
    fr_problem pb;
    r = c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, &err)
                            : fr_problem_from_bwd(&c.params, &c.in, &pb, &err);
    unsigned hinges = 0;
    if (!CHECKED(r == FR_OK, "%s: problem: %s", where, err.msg)) goto out;
    fr_gen_case whole;
    bool have_whole = false;
    for (int a = 1; a < FR_GALT_COUNT; a++) {
        fr_golden_alt_diff d;
        double t0 = now_s();
        if (!CHECKED(fr_golden_alt_differs(&pb, &c.params, &c.in.fwd, (fr_golden_alt)a, &d, &err) == FR_OK,
                     "%s: %s", where, err.msg))
            continue;
        st.walk_s[a] += now_s() - t0;
        st.walked[a] += d.applies;
        st.walks += d.applies;
        if (!d.count) continue;
        st.differs++;
        if (!impldef && !quiet && st.flagged[a] >= kMaxFlagged) { /* already failing: no more golden pairs */
            st.unrun[a]++;
            continue;
        }
        if (!have_whole) {
            if (!CHECKED(build_case(s, mod, seed, true, &whole, &err) == FR_OK, "%s: build: %s", where, err.msg))
                break;
            have_whole = true;
        }
        fr_case cw;
        fr_suite_case_view(&whole, &cw);
        bool changed = false;
        double rel = 0;
        if (!CHECKED(golden_pair(&cw, (fr_golden_alt)a, &changed, &rel, &err) == FR_OK, "%s: golden: %s", where,
                     err.msg))
            continue;
        if (!changed) {
            if (!quiet)
                printf("note: %s: %lld positions differ under '%s', the golden output does not\n", where,
                       (long long)d.count, fr_golden_alt_name((fr_golden_alt)a));
            continue;
        }
        hinges |= 1u << a;
        if (!impldef && !quiet) {
            st.flagged[a]++;
            CHECK(false,
                  "%s hinges on a reading: %s: %lld positions differ (first b %lld h %lld i %lld j %lld: takes part "
                  "%d x under the decision, %d x under the alternative), golden output rel-L2 %.3g: make its inputs "
                  "agree with both readings or move it to implementation-defined",
                  where, fr_golden_alt_name((fr_golden_alt)a), (long long)d.count, (long long)d.b, (long long)d.h,
                  (long long)d.i, (long long)d.j, d.m0, d.m1, rel);
        }
    }
    if (have_whole) fr_gen_case_free(&whole);
out:
    fr_gen_case_free(&g);
    return hinges;
}

static const char *set_names(unsigned bits, char *buf, size_t n) {
    snprintf(buf, n, "%s%s%s%s", bits & FR_SET_QUICK ? "quick " : "", bits & FR_SET_DEFAULT ? "default " : "",
             bits & FR_SET_LONG ? "long " : "", bits & FR_SET_ALL_ONLY ? "all " : "");
    return buf;
}

/* The rule an implementation-defined case reports on, by its name. */
static unsigned impldef_expect(const char *name) {
    if (!strncmp(name, "impldef_m0_", 11)) return 1u << FR_GALT_M0_MASK_ONLY;
    if (!strncmp(name, "impldef_m5_", 11)) return 1u << FR_GALT_M5_FORMULA_ONLY | 1u << FR_GALT_M5_MASK_ONLY;
    if (!strncmp(name, "impldef_topk_", 13)) return 1u << FR_GALT_D7_TOPK_ONCE;
    return 0;
}

static void check_sets(uint64_t seed) {
    char where[256], sets[64];
    for (int k = 0; k < fr_suite_entry_count; k++) {
        const fr_suite_entry *e = &fr_suite_entries[k];
        bool impldef = e->cat == FR_CAT_IMPLDEF;
        snprintf(where, sizeof where, "case %s (set %s)", e->spec.name, set_names(e->sets, sets, sizeof sets));
        unsigned h = check_case(where, &e->spec, e->mod, seed, impldef, false);
        if (impldef) {
            unsigned want = impldef_expect(e->spec.name);
            CHECK(want != 0, "%s: implementation-defined, but about which rule? (impldef_expect)", where);
            CHECK(h & want, "%s: implementation-defined, but hinges on %#x, not on its rule (one of %#x)", where, h,
                  want);
        }
    }
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    for (int k = 0; xs && k < xs->count; k++) {
        snprintf(where, sizeof where, "case %s (set default: casegen xcheck)", xs->specs[k].name);
        check_case(where, &xs->specs[k], FR_MOD_NONE, seed, false, false);
    }
}

static void check_regression(const char *dir) {
    char **paths = NULL;
    int n = fr_suite_list_case_dirs(dir, &paths);
    if (!CHECKED(n > 0, "no regression cases in %s", dir)) return;
    for (int k = 0; k < n; k++) {
        fr_case c;
        fr_error err;
        if (!CHECKED(fr_case_load(paths[k], &c, &err) == FR_OK, "%s: %s", paths[k], err.msg)) continue;
        st.cases++;
        fr_problem pb;
        fr_status r = c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, &err)
                                          : fr_problem_from_bwd(&c.params, &c.in, &pb, &err);
        for (int a = 1; r == FR_OK && a < FR_GALT_COUNT; a++) {
            fr_golden_alt_diff d;
            if (fr_golden_alt_differs(&pb, &c.params, &c.in.fwd, (fr_golden_alt)a, &d, &err) != FR_OK) break;
            st.walks += d.applies;
            if (!d.count) continue;
            bool changed = false;
            double rel = 0;
            if (golden_pair(&c, (fr_golden_alt)a, &changed, &rel, &err) != FR_OK) break;
            if (changed) st.flagged[a]++;
            CHECK(!changed, "regression case %s hinges on a reading: %s: %lld positions differ, golden rel-L2 %.3g",
                  fr_suite_base_name(paths[k]), fr_golden_alt_name((fr_golden_alt)a), (long long)d.count, rel);
        }
        CHECK(r == FR_OK, "%s: %s", paths[k], err.msg);
        fr_case_free(&c);
        free(paths[k]);
    }
    free(paths);
}

/* `flashref suite --random N --seed S` for many S: each batch starts from the default set's coverage. */
static void check_draws(int seeds, int per_seed) {
    fr_error err;
    fr_coverage base, cv;
    if (!CHECKED(fr_coverage_init(&base, &err) == FR_OK && fr_suite_set_coverage("default", &base, &err) == FR_OK,
                 "coverage: %s", err.msg))
        return;
    uint8_t *allowed = malloc((size_t)fr_coverage_npairs());
    fr_draw *d = calloc((size_t)per_seed, sizeof *d);
    if (!CHECKED(allowed && d && fr_coverage_init(&cv, &err) == FR_OK, "out of memory")) return;
    if (!CHECKED(fr_matrix_allowed(allowed, &err) == FR_OK, "allowed pairs: %s", err.msg)) return;
    fr_draw_limits lim = fr_draw_limits_default();
    char where[512], cfg[400];
    for (int s = 1; s <= seeds; s++) {
        uint64_t seed = (uint64_t)s * UINT64_C(0x2545f4914f6cdd1d); /* spread: --seed takes any 64-bit value */
        memcpy(cv.hits, base.hits, (size_t)cv.npairs * sizeof *cv.hits);
        if (!CHECKED(fr_random_batch_allowed(seed, per_seed, &cv, &lim, allowed, d, &err) == FR_OK, "seed %llu: %s",
                     (unsigned long long)seed, err.msg))
            continue;
        for (int k = 0; k < per_seed; k++) {
            fr_matrix_describe(&d[k].spec, cfg, sizeof cfg);
            snprintf(where, sizeof where, "draw rnd_%d of --seed %llu (%s)", k, (unsigned long long)seed, cfg);
            check_case(where, &d[k].spec, FR_MOD_NONE, seed, false, false);
            st.draws++;
        }
    }
    free(allowed);
    free(d);
    fr_coverage_free(&cv);
    fr_coverage_free(&base);
}

/* The golden's walk reads byte masks row by row and other masks position by position: both must find the same
 * positions (the mask of s copied to fp32 takes the second way). */
static void check_walk_paths(const fr_gen_spec *s, uint64_t seed) {
    fr_error err;
    fr_gen_case g;
    if (!CHECKED(fr_gen_build_structure(s, seed, &g, &err) == FR_OK, "%s: %s", s->name, err.msg)) return;
    fr_case c;
    fr_suite_case_view(&g, &c);
    fr_tensor *am = &c.in.fwd.atten_mask;
    int64_t n = fr_tensor_numel(am);
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    fr_problem pb;
    if (f && am->ndim >= 2 && fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, &err) == FR_OK) {
        for (int64_t k = 0; k < n; k++) f[k] = (float)fr_load_f64(am, k);
        fr_fwd_inputs in2 = c.in.fwd;
        in2.atten_mask = fr_tensor_make(FR_F32, f, am->ndim, am->shape);
        for (int a = 1; a < FR_GALT_COUNT; a++) {
            fr_golden_alt_diff d1, d2;
            fr_golden_alt_differs(&pb, &c.params, &c.in.fwd, (fr_golden_alt)a, &d1, &err);
            fr_golden_alt_differs(&pb, &c.params, &in2, (fr_golden_alt)a, &d2, &err);
            CHECK(d1.count == d2.count && d1.b == d2.b && d1.h == d2.h && d1.i == d2.i && d1.j == d2.j,
                  "%s, '%s': byte rows find %lld positions (first %lld,%lld,%lld,%lld), position by position %lld "
                  "(first %lld,%lld,%lld,%lld)",
                  s->name, fr_golden_alt_name((fr_golden_alt)a), (long long)d1.count, (long long)d1.b,
                  (long long)d1.h, (long long)d1.i, (long long)d1.j, (long long)d2.count, (long long)d2.b,
                  (long long)d2.h, (long long)d2.i, (long long)d2.j);
        }
    }
    free(f);
    fr_gen_case_free(&g);
}

/* The check can fail: the eight mode-0 cases with their old masks (band positions left open) are each flagged. */
static void check_controls(uint64_t seed) {
    static const char *const kOld[] = {"m0_band_ss",         "m0_negpre",          "m0_b1ss_negnext",
                                       "m0_tnd_band",        "bd_d1_rows_band",    "ln_m0_band_ss_4097",
                                       "ln_m0_11ss_negnext_2049", "bwd_m0_bnss_band_pse0"};
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    for (size_t k = 0; k < sizeof kOld / sizeof kOld[0]; k++) {
        const fr_gen_spec *s = NULL;
        for (int q = 0; !s && q < fr_suite_entry_count; q++)
            if (!strcmp(fr_suite_entries[q].spec.name, kOld[k])) s = &fr_suite_entries[q].spec;
        for (int q = 0; !s && xs && q < xs->count; q++)
            if (!strcmp(xs->specs[q].name, kOld[k])) s = &xs->specs[q];
        if (!CHECKED(s != NULL, "control case %s not found", kOld[k])) continue;
        fr_gen_spec old = *s;
        old.mask_any = true;
        unsigned h = check_case(kOld[k], &old, FR_MOD_NONE, seed, false, true);
        CHECK(h & (1u << FR_GALT_M0_MASK_ONLY), "control: %s with its old mask is not flagged under '%s'", kOld[k],
              fr_golden_alt_name(FR_GALT_M0_MASK_ONLY));
        if (!s->bwd) check_walk_paths(&old, seed);
    }
    for (int q = 0; q < fr_suite_entry_count; q++)
        if (fr_suite_entries[q].cat == FR_CAT_IMPLDEF) check_walk_paths(&fr_suite_entries[q].spec, seed);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: decision_sensitivity REGRESSION_DIR [seeds [draws_per_seed]]\n");
        return 2;
    }
    int seeds = argc > 2 ? atoi(argv[2]) : 1000, per_seed = argc > 3 ? atoi(argv[3]) : 2;
    uint64_t seed = fr_suite_opts_default().seed;
    double t0 = now_s();
    check_sets(seed);
    double t1 = now_s();
    check_regression(argv[1]);
    double t2 = now_s();
    check_controls(seed);
    double t3 = now_s();
    check_draws(seeds, per_seed);
    double t4 = now_s();
    printf("decision_sensitivity: %ld cases (%ld random draws of %d seeds), %ld structure walks, %ld differing, "
           "%ld golden "
           "pairs; sets %.1f s, regression %.1f s, controls %.1f s, draws %.1f s\n",
           st.cases, st.draws, seeds, st.walks, st.differs, st.golden_runs, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    for (int a = 1; a < FR_GALT_COUNT; a++)
        printf("  '%s': %ld walks, %.2f s\n", fr_golden_alt_name((fr_golden_alt)a), st.walked[a], st.walk_s[a]);
    for (int a = 1; a < FR_GALT_COUNT; a++)
        if (st.flagged[a])
            printf("  hinging on '%s': %ld cases, and %ld more whose structure differs (golden not run)\n",
                   fr_golden_alt_name((fr_golden_alt)a), st.flagged[a], st.unrun[a]);
    return fr_test_exit("decision_sensitivity");
}
