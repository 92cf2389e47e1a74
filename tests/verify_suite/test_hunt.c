/* The hunt (src/verify/suite/hunt.c, hunt_draw.c) against the built-in mutants with fixed seeds and a draw cap (never
 * a time budget, so the test is deterministic): each hunt must find its mutant's defect (a cluster with the mutant's
 * diagnosis) and shrink it to the mutant's known minimal trigger (mutants.h: the feature the defect needs kept, the
 * features it does not need switched off). The correct base of the zoo must give no cluster. Capability-aware drawing:
 * a declared space is honoured by every draw, and SKIPs teach the drawing what an implementation lacks. */
#include "common/check.h"
#include "core/core.h"
#include "verify/iut/iut_callback.h"
#include "verify/suite/hunt.h"
#include "verify/zoo/mutants.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

typedef bool (*trigger_fn)(const fr_gen_spec *s);

static int64_t n2_of(const fr_gen_spec *s) { return s->N2 ? s->N2 : s->N1; }
static bool tnd(const fr_gen_spec *s) { return s->layout == FR_TND; }
static bool any_s2(const fr_gen_spec *s, bool (*f)(int64_t)) {
    if (!tnd(s)) return f(s->S2);
    for (int b = 0; b < s->B; b++)
        if (f(s->seq_kv[b])) return true;
    return false;
}
static bool any_s1(const fr_gen_spec *s, bool (*f)(int64_t)) {
    if (!tnd(s)) return f(s->S1);
    for (int b = 0; b < s->B; b++)
        if (f(s->seq_q[b])) return true;
    return false;
}
static bool not64(int64_t n) { return n % 64 != 0; }
static bool over64(int64_t n) { return n > 64; }
static bool masked(const fr_gen_spec *s) { return s->mask != FR_GEN_MASK_NONE; }
static bool dropout(const fr_gen_spec *s) { return s->keep_prob > 0 && s->keep_prob < 1; }

static bool t_mask(const fr_gen_spec *s) { return masked(s); }
static bool t_large(const fr_gen_spec *s) { return s->in_scale >= 4 || s->beta != 0; }
static bool t_causal(const fr_gen_spec *s) { return masked(s) && s->sparse_mode == 3 && (tnd(s) || s->S1 != s->S2); }
static bool t_tail(const fr_gen_spec *s) { return any_s2(s, not64); }
static bool t_head_dim(const fr_gen_spec *s) { return s->D % 16 != 0; }
static bool t_varlen(const fr_gen_spec *s) { return tnd(s); }
static bool t_drop_bwd(const fr_gen_spec *s) { return s->bwd && dropout(s); }
static bool t_drop(const fr_gen_spec *s) { return dropout(s); }
/* stale-max: its documented trigger is S2 > 64; the hunt also shrinks it to S2 < 64 with a sink (the sink's score
 * enters the running max before the first key tile), which is the same defect. */
static bool t_stale(const fr_gen_spec *s) {
    return (s->dtype == FR_BF16 || s->dtype == FR_F16) && (any_s2(s, over64) || s->sink);
}
static bool t_unwritten(const fr_gen_spec *s) { return any_s1(s, not64); }
static bool t_gqa(const fr_gen_spec *s) { return n2_of(s) > 1 && n2_of(s) < s->N1; }
static bool t_pse(const fr_gen_spec *s) { return s->pse != FR_GEN_PSE_NONE && s->pse_type == 1; }
static bool t_fwd(const fr_gen_spec *s) { return !s->bwd; }
static bool t_maxlast(const fr_gen_spec *s) { return any_s2(s, over64) || s->sink; }
static bool t_dksum(const fr_gen_spec *s) { return s->bwd && s->N1 > n2_of(s); }
static bool t_seed000(const fr_gen_spec *s) { return !tnd(s) && s->S1 == 1 && s->S2 > 1; }

/* mask-sentinel: the suite's sentinel cases (designed for it) diagnose mask-sentinel; a hunt meets its other
 * trigger first, fully masked rows given the mean of V instead of 0, diagnosed fully-masked: the same defect.
 * Mutants the hunt cannot reach by design, and why: index32 needs a tensor past 2^31 elements (beyond the hunt's
 * size limits), split-kv-order repeated runs (the hunt judges each draw once; the suite's determinism cases catch
 * it), fp16-row-sum more than 65536 keys of near-equal weight. */
static const struct {
    const char *name;
    trigger_fn trigger;
    uint64_t seed;
    int draws;
    fr_diag also; /* another diagnosis that names the same defect (FR_DIAG_NONE: none) */
    const char *caps; /* declared for the mutant (fr_iut_declare; NULL: nothing, learned from its SKIPs) */
} kCases[] = {
    {"nan-fully-masked", t_mask, 1, 60, FR_DIAG_NONE, NULL},
    {"mask-sentinel", t_mask, 1, 60, FR_DIAG_FULLY_MASKED, NULL},
    {"nan-leak", t_mask, 1, 60, FR_DIAG_NONE, NULL},
    {"overflow-no-max", t_large, 1, 60, FR_DIAG_NONE, NULL},
    {"causal-top-left", t_causal, 1, 60, FR_DIAG_NONE, NULL},
    {"tile-tail", t_tail, 1, 30, FR_DIAG_NONE, NULL},
    {"head-dim-tail", t_head_dim, 1, 30, FR_DIAG_NONE, NULL},
    {"varlen-zero-len", t_varlen, 1, 80, FR_DIAG_NONE, NULL},
    {"dropout-bwd-shift", t_drop_bwd, 3, 60, FR_DIAG_NONE, NULL},
    {"dropout-scale-twice", t_drop, 1, 40, FR_DIAG_NONE, NULL},
    {"stale-max-bf16", t_stale, 1, 40, FR_DIAG_NONE, NULL},
    {"rows-unwritten", t_unwritten, 1, 30, FR_DIAG_NONE, NULL},
    {"gqa-mod", t_gqa, 1, 40, FR_DIAG_NONE, NULL},
    {"pse-order", t_pse, 1, 60, FR_DIAG_NONE, NULL},
    {"lse-for-sum", t_fwd, 1, 20, FR_DIAG_NONE, NULL},
    {"max-before-last-tile", t_maxlast, 1, 30, FR_DIAG_NONE, NULL},
    {"dk-not-summed", t_dksum, 1, 60, FR_DIAG_NONE, NULL},
    /* seed000 SKIPs all but decode without mask, pse or TND: declared, so that its draws land there. */
    {"seed000", t_seed000, 1, 40, FR_DIAG_NONE,
     "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\",\"fp16\",\"bf16\"],"
     "\"layouts\":[\"BSH\",\"SBH\",\"BSND\",\"BNSD\"],\"sparse_modes\":[],\"mask_shapes\":[],\"pse_types\":[],"
     "\"dropout\":false,\"sink\":false,\"rope\":false,\"topk\":\"none\",\"gqa\":false,\"dv_ne_dk\":false}}}"},
};

static fr_hunt_opts small_opts(uint64_t seed, int draws) {
    fr_hunt_opts o = fr_hunt_opts_default();
    o.seed = seed;
    o.budget_s = 0;
    o.max_draws = draws;
    o.max_shrink = 0;
    o.lim.max_s2 = 400;
    o.lim.max_s1 = 200;
    o.lim.max_work = 1 << 16;
    if (getenv("FLASHREF_HUNT_TRACE")) o.trace = stdout;
    return o;
}

/* Features the defect does not need must be gone after shrinking. */
static void check_minimal(const char *name, const fr_gen_spec *s) {
    bool drop = strstr(name, "dropout") != NULL, pse = !strcmp(name, "pse-order");
    CHECK(drop || !dropout(s), "%s: dropout kept", name);
    CHECK(pse || s->pse == FR_GEN_PSE_NONE, "%s: pse kept", name);
    CHECK(!strcmp(name, "max-before-last-tile") || !strcmp(name, "stale-max-bf16") || !s->sink, "%s: sink kept",
          name);
    CHECK(s->topk_w == 0, "%s: top-k kept", name);
    CHECK(s->Drope == 0, "%s: rope kept", name);
    CHECK(tnd(s) || s->B <= 2, "%s: batch %lld", name, (long long)s->B);
}

static void hunt_mutant(int k) {
    const char *name = kCases[k].name;
    const fr_mutant *m = fr_mutant_find(name);
    if (!CHECKED(m, "%s: no such mutant", name)) return;
    char spec[80];
    snprintf(spec, sizeof spec, "mutant:%s", name);
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_open(spec, &iut, &err) == FR_OK, "%s: %s", spec, err.msg)) return;
    if (kCases[k].caps)
        CHECK(fr_iut_declare(iut, kCases[k].caps, strlen(kCases[k].caps), &err) == FR_OK, "%s: %s", name, err.msg);
    fr_hunt_opts o = small_opts(kCases[k].seed, kCases[k].draws);
    fr_hunt_result r;
    fr_status st = fr_hunt_run(iut, &o, &r, &err);
    CHECK(st == FR_OK, "%s: %s", name, err.msg);
    CHECK(r.draws == kCases[k].draws, "%s: %d draws", name, r.draws);
    fr_hunt_cluster *c = NULL;
    for (int i = 0; i < r.nclusters && !c; i++)
        if (r.clusters[i].diag == m->expected || (kCases[k].also && r.clusters[i].diag == kCases[k].also))
            c = &r.clusters[i];
    for (int i = 1; i < r.nclusters; i++) /* wrong before imprecise */
        CHECK(r.clusters[i - 1].kind <= r.clusters[i].kind, "%s: cluster order", name);
    if (CHECKED(c, "%s: no cluster with diagnosis %s in %d draws (%d judged, %d clusters)", name,
                fr_diag_name(m->expected), r.draws, r.judged, r.nclusters)) {
        st = fr_hunt_shrink_cluster(iut, &o, c, &err);
        CHECK(st == FR_OK, "%s: shrink: %s", name, err.msg);
        printf("%-22s %3d draws %3d judged, %d clusters; %s %s %s, %d draws\n  first:    %s\n  smallest: %s (%d "
               "judgements)\n",
               name, r.draws, r.judged, r.nclusters, fr_hunt_kind_name(c->kind), fr_verdict_name(c->verdict),
               fr_diag_name(c->diag), c->count, c->first_config, c->smallest_config, c->shrink_runs);
        CHECK(c->verdict == m->expected_verdict, "%s: verdict %s", name, fr_verdict_name(c->verdict));
        CHECK(kCases[k].trigger(&c->smallest.d.spec), "%s: the smallest configuration lost the trigger (%s): %s", name,
              m->trigger, c->smallest_config);
        check_minimal(name, &c->smallest.d.spec);
    }
    fr_hunt_result_free(&r);
    fr_iut_close(iut);
}

/* The correct base finds nothing. */
static fr_status base_run(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                          fr_error *err) {
    int *skips = ud;
    /* Declares nothing, but SKIPs bf16 and every backward: the hunt must learn to stop drawing them. */
    if (c->dtype == FR_BF16 || c->op == FR_VERIFY_BWD || c->dtype == FR_E4M3FN || c->dtype == FR_E5M2 ||
        c->dtype == FR_HIF8 || fr_tensor_present(&c->in->fwd.topk_indices)) {
        ++*skips;
        return fr_fail(err, FR_E_UNSUPPORTED, "not here");
    }
    (void)bwd;
    return fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
}

/* Judges fp16 and sinks, but not the two together (a framework whose 16-bit tensors cannot hold a sink exactly): no
 * single value is to blame, the pair is. */
static fr_status pair_run(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                          fr_error *err) {
    int *skips = ud;
    (void)bwd;
    if (c->dtype == FR_F16 && fr_tensor_present(&c->in->fwd.sink)) {
        ++*skips;
        return fr_fail(err, FR_E_UNSUPPORTED, "a sink in fp16 would round");
    }
    return fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
}

static void test_learn_pairs(void) {
    int skips = 0;
    fr_iut *iut;
    fr_error err;
    CHECK(fr_iut_callback_open(pair_run, &skips, "pair", &iut, &err) == FR_OK, "%s", err.msg);
    const char *caps = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\",\"fp16\"],"
                       "\"topk\":\"none\",\"sink\":true}}}";
    CHECK(fr_iut_declare(iut, caps, strlen(caps), &err) == FR_OK, "%s", err.msg);
    fr_hunt_opts o = small_opts(11, 120);
    fr_hunt_result r;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    printf("pairs: %d draws, %d judged, %d skipped; excluded %s\n", r.draws, r.judged, r.skipped, r.learned);
    CHECK(strstr(r.learned, "dtype=fp16 & sink=on") != NULL, "the pair was not learned: %s", r.learned);
    CHECK(r.skipped <= FR_HUNT_LEARN_PAIR_SKIPS + 5, "%d of %d draws skipped after learning", r.skipped, r.draws);
    CHECK(r.nclusters == 0, "the correct base gave %d clusters", r.nclusters);
    fr_hunt_result_free(&r);
    /* Without learning, the same draws keep SKIPping: the test above can fail. */
    o.no_learn = true;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    printf("pairs, no learning: %d draws, %d skipped\n", r.draws, r.skipped);
    CHECK(r.skipped > FR_HUNT_LEARN_PAIR_SKIPS + 5, "no learning yet only %d skipped", r.skipped);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);
}

static void test_learn_and_caps(void) {
    int skips = 0;
    fr_iut *iut;
    fr_error err;
    CHECK(fr_iut_callback_open(base_run, &skips, "base", &iut, &err) == FR_OK, "%s", err.msg);
    fr_hunt_opts o = small_opts(7, 60);
    fr_hunt_result r;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    printf("learning: %d draws, %d judged, %d skipped; excluded %s\n", r.draws, r.judged, r.skipped, r.learned);
    CHECK(r.nclusters == 0, "the correct base gave %d clusters (first: %s %s)", r.nclusters,
          r.nclusters ? fr_diag_name(r.clusters[0].diag) : "", r.nclusters ? r.clusters[0].why : "");
    CHECK(strstr(r.learned, "direction=bwd") && strstr(r.learned, "dtype=bf16"), "learned: %s", r.learned);
    int skipped_learning = r.skipped;
    fr_hunt_result_free(&r);
    /* The same, declared: fwd fp32/fp16 only; every draw inside (no SKIP at all). */
    const char *caps = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\",\"fp16\"],"
                       "\"topk\":\"none\"}}}";
    CHECK(fr_iut_declare(iut, caps, strlen(caps), &err) == FR_OK, "%s", err.msg);
    skips = 0;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    printf("declared: %d draws, %d judged, %d skipped (learning alone: %d skipped)\n", r.draws, r.judged, r.skipped,
           skipped_learning);
    CHECK(r.skipped == 0 && skips == 0 && r.judged == r.draws && r.not_drawable == 0,
          "declared space: %d skipped, %d outside", r.skipped, r.not_drawable);
    CHECK(r.nclusters == 0, "the correct base gave %d clusters", r.nclusters);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);
}

/* flashref's own fast engine, forward and backward, every corner: no FAIL cluster (a corner that made the case
 * inconsistent, such as a mask rewritten under a backward case's forward statistics, would show up here). */
static void test_correct_engine(void) {
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_open("fast", &iut, &err) == FR_OK, "%s", err.msg)) return;
    fr_hunt_opts o = small_opts(11, 40);
    fr_hunt_result r;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    printf("fast: %d draws, %d judged, %d FAIL, %d clusters\n", r.draws, r.judged, r.failed, r.nclusters);
    for (int i = 0; i < r.nclusters; i++)
        CHECK(r.clusters[i].verdict != FR_FAIL, "fast: FAIL %s: %s (%s)", fr_diag_name(r.clusters[i].diag),
              r.clusters[i].why, r.clusters[i].first_config);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);
}

/* Draws honour a declaration, and the corners show up. */
static void test_draws(void) {
    fr_caps c;
    fr_error err;
    const char *j = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp16\"],\"layouts\":"
                    "[\"BNSD\",\"BSND\"],\"mask_shapes\":[\"SS\",\"B1SS\"],\"sparse_modes\":[0],\"gqa\":true,"
                    "\"dropout\":false,\"sink\":false,\"rope\":false,\"topk\":\"none\",\"pse_types\":[],"
                    "\"mask_handover\":[\"bool\",\"additive_min\"],\"head_dim\":[1,256],\"scale\":\"dtype\"}}}";
    CHECK(fr_caps_parse(j, strlen(j), &c, &err) == FR_OK, "%s", err.msg);
    fr_draw_limits lim = fr_draw_limits_default();
    int corners[FR_CORNER_COUNT] = {0}, hints[FR_MASK_HINT_COUNT] = {0}, outside = 0;
    for (int k = 0; k < 400; k++) {
        fr_hunt_draw d;
        bool inside;
        fr_hunt_draw_one(3, k, &c, NULL, &lim, false, &d, &inside);
        const char *why = NULL;
        bool ok = fr_hunt_caps_admit(&c, &d.d.spec, d.hint, &why);
        if (!inside || !ok) outside++;
        CHECK(inside == ok, "draw %d: inside %d but admit says %s", k, inside, why ? why : "yes");
        corners[d.corner]++;
        hints[d.hint]++;
        /* "scale": "dtype": the fp16 case's scale is one fp16 holds (1/sqrt(D) rounded to it) */
        double sc = d.d.spec.scale;
        CHECK(sc > 0 && fr_f16_to_f32(fr_f32_to_f16((float)sc, FR_ROUND_NEAREST_EVEN, FR_SAT)) == sc &&
                  fabs(sc * sqrt((double)d.d.spec.D) - 1) < 1e-3,
              "draw %d: scale %.17g with D %lld is not 1/sqrt(D) in fp16", k, sc, (long long)d.d.spec.D);
    }
    printf("corners:");
    for (int i = 0; i < FR_CORNER_COUNT; i++)
        printf(" %s %d", fr_hunt_corner_name((fr_hunt_corner)i), corners[i]);
    printf("; hints: default %d bool %d additive_inf %d additive_min %d; outside %d\n", hints[0], hints[1], hints[2],
           hints[3], outside);
    CHECK(outside <= 4, "%d of 400 draws outside the declared space", outside);
    CHECK(hints[FR_MASK_HINT_BOOL] > 0 && hints[FR_MASK_HINT_ADD_MIN] > 0 && hints[FR_MASK_HINT_ADD_INF] == 0);
    for (int i = 1; i < FR_CORNER_COUNT; i++)
        CHECK(corners[i] > 0 || i == FR_CORNER_CAUSAL_NE || i == FR_CORNER_VARLEN_EMPTY, /* outside: mode 0, no TND */
              "corner %s never drawn", fr_hunt_corner_name((fr_hunt_corner)i));
    /* A mask rewritten after generation never goes with a backward case (its forward statistics would not match). */
    int bwd_mods = 0, bwd = 0;
    for (int k = 0; k < 400; k++) {
        fr_hunt_draw d;
        bool inside;
        fr_hunt_draw_one(5, k, NULL, NULL, &lim, false, &d, &inside);
        bwd += d.d.spec.bwd;
        bwd_mods += d.d.spec.bwd && d.mod != FR_MOD_NONE;
    }
    CHECK(bwd > 50 && bwd_mods == 0, "%d backward draws, %d with a rewritten mask", bwd, bwd_mods);
    /* Deterministic: the same seed, the same draws. */
    fr_hunt_draw a, b;
    bool ia, ib;
    fr_hunt_draw_one(3, 17, &c, NULL, &lim, false, &a, &ia);
    fr_hunt_draw_one(3, 17, &c, NULL, &lim, false, &b, &ib);
    char da[400], db[400];
    fr_matrix_describe(&a.d.spec, da, sizeof da);
    fr_matrix_describe(&b.d.spec, db, sizeof db);
    CHECK(!strcmp(da, db) && a.mod == b.mod && a.hint == b.hint);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    test_draws();
    if (!only) test_learn_and_caps();
    if (!only || !strcmp(only, "pairs")) test_learn_pairs();
    if (!only) test_correct_engine();
    for (int k = 0; k < (int)(sizeof kCases / sizeof kCases[0]); k++)
        if (!only || !strcmp(only, kCases[k].name)) hunt_mutant(k);
    return fr_test_exit("test_hunt");
}
