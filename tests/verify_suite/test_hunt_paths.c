/* The hunt's paths that test_hunt (mutants, learning) and test_verify_api_entry (the API's options) leave out, each
 * with small draws so that the whole test takes seconds:
 *   1. fr_hunt_caps_admit names the first axis a declaration refuses, for every axis it checks (dtypes, layouts,
 *      sparse modes, mask and pse shapes, band, prefix, dropout, sink, top-k, rope, gqa, Dv != Dk, head_dim min /
 *      max / multiple, both scale rules, empty, S1 <= S2, mask handover) and admits what it allows;
 *   2. learning: which axes a declaration shields (fr_hunt_learn_applies), a declared value excluded only with twice
 *      the evidence, a pair excluded (fr_hunt_learn_pair_in);
 *   3. draws under declarations of one direction, of both, with rope / Dv != Dk / an odd head_dim_multiple, TND and
 *      every sparse mode: each draw inside is admitted, a backward-only declaration draws backward only;
 *   4. fr_hunt_run against a callback that fails only some draws (fp16 wrong, fp32 imprecise, bf16 unwritten, a sink
 *      an error status): wrong clusters before imprecise ones, the first shrunk, written with a reproducer from the
 *      callback's repro hook (or the note why not), the trace and progress; a second hunt into the same folder
 *      replaces the first's clusters; a stop during shrinking writes nothing; an implementation that fails every
 *      draw identically or whose declaration was refused stops the hunt; a time budget ends it; option errors;
 *   5. the findings' JSON and markdown of a result with every optional part. */
#define _GNU_SOURCE
#include "common/check.h"
#include "common/kit.h"
#include "core/core.h"
#include "verify/iut/iut_callback.h"
#include "verify/suite/hunt.h"
#include "verify/zoo/mutants.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[256];

/* The write-fault hook (src/core/alloc_hook.h), present only in a build with -DFR_ALLOC_HOOK=ON: weak, so that this
 * test links without it. */
void fr_fault_write_set(long fail_at) __attribute__((weak));
int fr_fault_write_hit(void) __attribute__((weak));

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

static bool exists(const char *dir, const char *name) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0;
}

static fr_gen_spec base_spec(void) {
    fr_gen_spec s;
    memset(&s, 0, sizeof s);
    s.name = "admit";
    s.dtype = FR_F16;
    s.layout = FR_BNSD;
    s.B = 1;
    s.N1 = 2;
    s.S1 = 16;
    s.S2 = 16;
    s.D = 64;
    return s;
}

static void parse_caps(const char *j, fr_caps *c) {
    fr_error err;
    CHECK(fr_caps_parse(j, strlen(j), c, &err) == FR_OK, "caps: %s", err.msg);
}

/* ---- 1. admission ---- */

static const char kNarrow[] =
    "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp16\"],\"layouts\":[\"BNSD\"],"
    "\"sparse_modes\":[0],\"mask_shapes\":[\"SS\"],\"band\":false,\"prefix\":false,\"pse_types\":[0],"
    "\"pse_shapes\":[\"BNSS\"],\"dropout\":false,\"sink\":false,\"topk\":\"unique\",\"rope\":false,\"gqa\":false,"
    "\"dv_ne_dk\":false,\"head_dim\":[16,128],\"head_dim_multiple\":16,\"empty\":false,\"s1_le_s2\":true,"
    "\"scale\":\"2^k/sqrt(D)\",\"mask_handover\":[\"bool\"]}}}";

static void test_admit(void) {
    fr_caps c;
    parse_caps(kNarrow, &c);
    const char *why = "unset";
    fr_gen_spec s = base_spec();
    CHECK(fr_hunt_caps_admit(&c, &s, FR_MASK_HINT_DEFAULT, &why) && why == NULL, "base refused: %s", why);
    s.scale = 0.25; /* 2 / sqrt(64): a power of two over sqrt(D) */
    CHECK(fr_hunt_caps_admit(&c, &s, FR_MASK_HINT_DEFAULT, &why) && why == NULL, "2/sqrt(D) refused: %s", why);
    s.mask = FR_GEN_MASK_SS;
    CHECK(fr_hunt_caps_admit(&c, &s, FR_MASK_HINT_BOOL, &why) && why == NULL, "bool hint refused: %s", why);
    CHECK(fr_hunt_caps_admit(&c, &s, FR_MASK_HINT_DEFAULT, NULL), "NULL why");
    static const struct {
        const char *axis;
        int field;
    } kRows[] = {{"bwd", 0},          {"dtypes", 1},    {"layouts", 2},      {"sparse_modes", 3}, {"mask_shapes", 4},
                 {"band", 5},         {"prefix", 6},    {"pse_types", 7},    {"pse_shapes", 8},   {"pse_shapes", 9},
                 {"pse_shapes", 10},  {"pse_shapes", 11}, {"dropout", 12},   {"sink", 13},        {"topk", 14},
                 {"rope", 15},        {"gqa", 16},      {"dv_ne_dk", 17},    {"head_dim", 18},    {"head_dim", 19},
                 {"head_dim", 20},    {"scale", 21},    {"empty", 22},       {"s1_le_s2", 23},    {"mask_handover", 24},
                 {"mask_handover", 25}};
    for (size_t k = 0; k < sizeof kRows / sizeof kRows[0]; k++) {
        s = base_spec();
        fr_mask_hint h = FR_MASK_HINT_DEFAULT;
        switch (kRows[k].field) {
        case 0: s.bwd = true; break;
        case 1: s.dtype = FR_BF16; break;
        case 2: s.layout = FR_BSND; break;
        case 3: s.mask = FR_GEN_MASK_SS, s.sparse_mode = 2; break;
        case 4: s.mask = FR_GEN_MASK_B1SS; break;
        case 5: s.mask = FR_GEN_MASK_SS, s.set_band = true; break;
        case 6: s.mask = FR_GEN_MASK_SS, s.prefix = true; break;
        case 7: s.pse = FR_GEN_PSE_BNSS, s.pse_type = 1; break;
        case 8: s.pse = FR_GEN_PSE_BN1S; break;
        case 9: s.pse = FR_GEN_PSE_1NSS; break;
        case 10: s.pse = FR_GEN_PSE_COMP_B; break;
        case 11: s.pse = FR_GEN_PSE_COMP_1; break;
        case 12: s.keep_prob = 0.9; break;
        case 13: s.sink = true; break;
        case 14: s.topk_w = 8; break;
        case 15: s.Drope = 16; break;
        case 16: s.N2 = 1; break;
        case 17: s.Dv = 32; break;
        case 18: s.D = 8; break;
        case 19: s.D = 256; break;
        case 20: s.D = 24; break;
        case 21: s.scale = 0.3; break;
        case 22: s.S1 = 0; break;
        case 23: s.S1 = 32; break;
        case 24: s.mask = FR_GEN_MASK_SS, h = FR_MASK_HINT_ADD_INF; break;
        case 25: h = FR_MASK_HINT_BOOL; break; /* a hint without a mask */
        }
        why = NULL;
        bool ok = fr_hunt_caps_admit(&c, &s, h, &why);
        CHECK(!ok && why && !strcmp(why, kRows[k].axis), "row %zu: admitted %d, why %s (expected %s)", k, ok,
              why ? why : "NULL", kRows[k].axis);
    }
    /* A canonical mask of modes 0, 1, 5 is a random [S1,S2] one: refused without SS, admitted for mode 2. Empty TND
     * sequences and longer query sequences; the dtype scale rule. */
    fr_caps t;
    parse_caps("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"layouts\":[\"TND\",\"BNSD\"],"
               "\"mask_shapes\":[\"B1SS\"],\"scale\":\"dtype\",\"s1_le_s2\":true}}}",
               &t);
    s = base_spec();
    s.mask = FR_GEN_MASK_CANONICAL;
    s.sparse_mode = 1;
    CHECK(!fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why) && why && !strcmp(why, "mask_shapes"), "%s", why);
    s.sparse_mode = 2;
    CHECK(fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why), "mode 2 canonical refused: %s", why);
    s = base_spec();
    s.scale = 0.1; /* not an fp16 value */
    CHECK(!fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why) && why && !strcmp(why, "scale"), "%s", why);
    s.scale = 0.125;
    CHECK(fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why), "0.125 refused: %s", why);
    s.dtype = FR_BF16;
    s.scale = 0.1;
    CHECK(!fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why) && why && !strcmp(why, "scale"), "%s", why);
    s.dtype = FR_F32; /* not 16-bit: any scale */
    CHECK(fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why), "fp32 0.1 refused: %s", why);
    s = base_spec();
    s.layout = FR_TND;
    s.B = 2;
    s.seq_q[0] = 4, s.seq_kv[0] = 8, s.seq_q[1] = 8, s.seq_kv[1] = 4;
    CHECK(!fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why) && why && !strcmp(why, "s1_le_s2"), "%s", why);
    s.seq_q[1] = 0;
    CHECK(fr_hunt_caps_admit(&t, &s, FR_MASK_HINT_DEFAULT, &why), "empty TND sequence refused (empty undeclared): %s",
          why);
    CHECK(!fr_hunt_caps_admit(&c, &s, FR_MASK_HINT_DEFAULT, &why) && why && !strcmp(why, "layouts"), "%s", why);
}

/* ---- 2. learning ---- */

static void test_learning(void) {
    fr_caps c;
    parse_caps(kNarrow, &c);
    /* Every axis the narrow declaration names is shielded from single-value learning in its direction; the others
     * (and an undeclared direction's, and no declaration at all) are learned. */
    static const int kShielded[] = {FR_AX_DIR, FR_AX_LAYOUT, FR_AX_VARLEN, FR_AX_DTYPE, FR_AX_HEADS, FR_AX_HEADDIM,
                                    FR_AX_SPARSE, FR_AX_MASK, FR_AX_BAND, FR_AX_PSE, FR_AX_DROPOUT, FR_AX_SINK,
                                    FR_AX_TOPK};
    for (int a = 0; a < FR_AX_COUNT; a++) {
        bool shielded = false;
        for (size_t k = 0; k < sizeof kShielded / sizeof kShielded[0]; k++) shielded |= kShielded[k] == a;
        CHECK(fr_hunt_learn_applies(&c, 0, a) == !shielded, "axis %d: applies %d", a, fr_hunt_learn_applies(&c, 0, a));
        CHECK(fr_hunt_learn_applies(NULL, 0, a) && fr_hunt_learn_applies(&c, -1, a), "axis %d", a);
    }
    CHECK(!fr_hunt_learn_applies(&c, 1, FR_AX_DIR) && fr_hunt_learn_applies(&c, 1, FR_AX_DTYPE),
          "the undeclared bwd op: its axes are learned");
    fr_hunt_learn *l = calloc(1, sizeof *l);
    if (!CHECKED(l != NULL)) return;
    int cell[FR_AX_COUNT] = {0};
    fr_hunt_learn_note(l, cell, true); /* everything at value 0 judged */
    int bf16[FR_AX_COUNT] = {0};
    bf16[FR_AX_DTYPE] = FR_AXV_DTYPE_BF16;
    for (int k = 0; k < FR_HUNT_LEARN_SKIPS; k++) fr_hunt_learn_note(l, bf16, false);
    CHECK(fr_hunt_learn_excluded(l, FR_AX_DTYPE, FR_AXV_DTYPE_BF16), "bf16 not excluded after %d sole SKIPs",
          FR_HUNT_LEARN_SKIPS);
    CHECK(!fr_hunt_learn_excludes(l, &c, 0, FR_AX_DTYPE, FR_AXV_DTYPE_BF16), "a declared axis learned too early");
    CHECK(fr_hunt_learn_excludes(l, NULL, 0, FR_AX_DTYPE, FR_AXV_DTYPE_BF16), "undeclared: excluded");
    for (int k = 0; k < FR_HUNT_LEARN_SKIPS; k++) fr_hunt_learn_note(l, bf16, false);
    CHECK(fr_hunt_learn_excludes(l, &c, 0, FR_AX_DTYPE, FR_AXV_DTYPE_BF16), "twice the evidence: excluded");
    CHECK(!fr_hunt_learn_excluded(l, FR_AX_DTYPE, FR_AX_MAX_VALUES) && !fr_hunt_learn_excluded(l, FR_AX_DTYPE, -1) &&
              !fr_hunt_learn_excluded(NULL, FR_AX_DTYPE, FR_AXV_DTYPE_BF16),
          "out of range values");
    /* A pair: fp16 judged, sink judged, never together; three SKIPs of the pair exclude it. */
    int fp16[FR_AX_COUNT] = {0}, sink[FR_AX_COUNT] = {0}, both[FR_AX_COUNT] = {0};
    fp16[FR_AX_DTYPE] = both[FR_AX_DTYPE] = FR_AXV_DTYPE_FP16;
    sink[FR_AX_SINK] = both[FR_AX_SINK] = 1;
    fr_hunt_learn_note(l, fp16, true);
    fr_hunt_learn_note(l, sink, true);
    CHECK(!fr_hunt_learn_pair_in(l, both) && !fr_hunt_learn_pair_in(NULL, both));
    for (int k = 0; k < FR_HUNT_LEARN_PAIR_SKIPS; k++) fr_hunt_learn_note(l, both, false);
    CHECK(fr_hunt_learn_pair_in(l, both), "the pair fp16 & sink was not excluded");
    CHECK(!fr_hunt_learn_pair_in(l, fp16), "fp16 alone counts as the pair");
    /* Draws honour it: no draw inside holds the pair or bf16. */
    fr_draw_limits lim = fr_draw_limits_default();
    lim.max_s1 = 64, lim.max_s2 = 256, lim.max_work = 1 << 16;
    int held = 0;
    for (int k = 0; k < 60; k++) {
        fr_hunt_draw d;
        bool inside;
        fr_hunt_draw_one(5, k, NULL, l, &lim, false, &d, &inside);
        int dc[FR_AX_COUNT];
        fr_matrix_classify(&d.d.spec, dc);
        held += inside && (dc[FR_AX_DTYPE] == FR_AXV_DTYPE_BF16 || fr_hunt_learn_pair_in(l, dc));
    }
    CHECK(held == 0, "%d draws inside held an excluded value or pair", held);
    free(l);
}

/* ---- 3. draws under declarations ---- */

static void draws_under(const char *json, uint64_t seed, int n, int *bwd_out, int *tnd_out) {
    fr_caps c;
    parse_caps(json, &c);
    fr_draw_limits lim = fr_draw_limits_default();
    lim.max_s1 = 96, lim.max_s2 = 200, lim.max_work = 1 << 17; /* odd-key corners past max_s2 are redrawn */
    int bad = 0, bwd = 0, tnd = 0, inside_n = 0;
    for (int k = 0; k < n; k++) {
        fr_hunt_draw d;
        bool inside;
        fr_hunt_draw_one(seed, k, &c, NULL, &lim, false, &d, &inside);
        const char *why = NULL;
        bool ok = fr_hunt_caps_admit(&c, &d.d.spec, d.hint, &why);
        bad += inside && !ok;
        inside_n += inside;
        bwd += d.d.spec.bwd;
        tnd += d.d.spec.layout == FR_TND;
        if (inside && !ok) printf("draw %d inside yet refused for %s\n", k, why);
    }
    CHECK(bad == 0 && inside_n >= n - 2, "%d draws inside refused, %d of %d inside", bad, inside_n, n);
    *bwd_out = bwd;
    *tnd_out = tnd;
}

static void test_draws(void) {
    int bwd, tnd;
    draws_under("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"bwd\":{\"dtypes\":[\"fp32\",\"bf16\"]}}}", 2, 60,
                &bwd, &tnd);
    CHECK(bwd == 60, "a backward-only declaration drew %d backward of 60", bwd);
    draws_under("{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"layouts\":[\"TND\"],\"rope\":true,"
                "\"dv_ne_dk\":true,\"head_dim_multiple\":8,\"mask_handover\":[\"additive_inf\",\"bool\"]},"
                "\"bwd\":{\"layouts\":[\"TND\"],\"sparse_modes\":[0,1,2,3,4,5,6,7,8],\"pse_types\":[0,1,2,3],"
                "\"topk\":\"any\",\"sink\":true,\"dropout\":true,\"band\":true,\"gqa\":true}}}",
                3, 120, &bwd, &tnd);
    CHECK(bwd > 10 && bwd < 110 && tnd == 120, "both directions, TND only: %d backward, %d TND of 120", bwd, tnd);
}

/* ---- 4. hunts against a callback that fails some draws ---- */

typedef struct cb_state {
    int calls;
    int stop_at;                 /* > 0: set *stop on this call */
    volatile sig_atomic_t *stop;
    bool correct;                /* no defect at all */
    bool fail_all;               /* every call fails identically */
    bool skip_all;
} cb_state;

static void scale_out(const fr_tensor *t, double f) {
    int64_t n = fr_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) fr_store_f64(t, i, fr_load_f64(t, i) * f);
}

/* fp16: attention_out 1.5 x (wrong); fp32: 1 + 1e-3 (imprecise); bf16: nothing written; a sink: an error status;
 * fp8: SKIP; backward: correct. */
static fr_status partly(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd, fr_error *err) {
    cb_state *s = ud;
    s->calls++;
    if (s->stop_at > 0 && s->calls == s->stop_at) *s->stop = 1;
    if (s->fail_all) return fr_fail(err, FR_E_INTERNAL, "the runtime is missing");
    if (s->skip_all) return fr_fail(err, FR_E_UNSUPPORTED, "nothing here");
    if (c->op == FR_VERIFY_BWD) return fr_mutant_base_bwd(c->params, c->in, bwd, err);
    if (c->dtype != FR_F32 && c->dtype != FR_F16 && c->dtype != FR_BF16)
        return fr_fail(err, FR_E_UNSUPPORTED, "no fp8");
    if (s->correct) return fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
    if (fr_tensor_present(&c->in->fwd.sink)) return fr_fail(err, FR_E_INTERNAL, "sinks are not implemented");
    if (c->dtype == FR_BF16) return FR_OK;
    fr_status st = fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
    if (st == FR_OK) scale_out(&fwd->attention_out, c->dtype == FR_F16 ? 1.5 : 1.001);
    return st;
}

static int g_repro_calls;
static fr_status repro_hook(void *ud, const char *case_dir, const char *out_path, fr_error *err) {
    (void)ud;
    if (++g_repro_calls > 1) return fr_fail(err, FR_E_UNSUPPORTED, "only the first finding is reproduced here");
    FILE *f = fopen(out_path, "w");
    if (!f) return fr_fail(err, FR_E_IO, "%s: cannot write", out_path);
    fprintf(f, "# reproducer of %s\n", case_dir);
    fclose(f);
    return FR_OK;
}

typedef struct prog_state {
    int drawing, shrinking;
    volatile sig_atomic_t *stop_on_shrink; /* non-NULL: set when shrinking is reported */
} prog_state;

static void on_progress(void *ud, const fr_hunt_progress *p) {
    prog_state *s = ud;
    if (!strcmp(p->phase, "drawing")) s->drawing++;
    if (!strcmp(p->phase, "shrinking")) {
        s->shrinking++;
        if (s->stop_on_shrink) *s->stop_on_shrink = 1;
    }
}

static fr_hunt_opts small_opts(uint64_t seed, int draws) {
    fr_hunt_opts o = fr_hunt_opts_default();
    o.seed = seed;
    o.budget_s = 0;
    o.max_draws = draws;
    o.max_shrink = 0;
    o.lim.max_s2 = 130;
    o.lim.max_s1 = 40;
    o.lim.max_work = 1 << 13;
    return o;
}

static int find_cluster(const fr_hunt_result *r, fr_diag d, fr_hunt_kind k) {
    for (int i = 0; i < r->nclusters; i++)
        if (r->clusters[i].diag == d && r->clusters[i].kind == k) return i;
    return -1;
}

static void test_hunt_partly(void) {
    cb_state s = {0};
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_callback_open(partly, &s, "partly", &iut, &err) == FR_OK, "%s", err.msg)) return;
    fr_iut_callback_set_repro(iut, repro_hook, NULL);
    char out[400];
    snprintf(out, sizeof out, "%s/hunt_out", g_tmp);
    fr_hunt_opts o = small_opts(21, 40);
    o.max_shrink = 1;
    o.out_dir = out;
    char *trace = NULL;
    size_t trace_n = 0;
    o.trace = open_memstream(&trace, &trace_n);
    prog_state ps = {0};
    o.progress = on_progress;
    o.progress_ud = &ps;
    fr_hunt_result r;
    fr_status st = fr_hunt_run(iut, &o, &r, &err);
    fclose(o.trace);
    CHECK(st == FR_OK, "%s", err.msg);
    printf("partly: %d draws, %d judged, %d skipped, %d FAIL, %d clusters\n", r.draws, r.judged, r.skipped, r.failed,
           r.nclusters);
    for (int i = 0; i < r.nclusters; i++)
        printf("  %d. %s %s %s (%s) x%d shrunk %d: %s\n", i + 1, fr_hunt_kind_name(r.clusters[i].kind),
               fr_verdict_name(r.clusters[i].verdict), fr_diag_name(r.clusters[i].diag), r.clusters[i].key,
               r.clusters[i].count, r.clusters[i].shrink_runs, r.clusters[i].smallest_config);
    CHECK(r.draws == 40 && r.judged + r.skipped == 40 && r.passed + r.warned + r.failed == r.judged, "counts");
    CHECK(ps.drawing == 40 && ps.shrinking == 1, "progress: %d drawing, %d shrinking", ps.drawing, ps.shrinking);
    CHECK(trace && strstr(trace, "hunt_0 ") && strstr(trace, "hunt_39 "), "trace: %.200s", trace ? trace : "");
    free(trace);
    for (int i = 1; i < r.nclusters; i++)
        CHECK(r.clusters[i - 1].kind <= r.clusters[i].kind, "cluster %d: imprecise before wrong", i);
    int wrong16 = -1, imprecise = find_cluster(&r, FR_DIAG_PRECISION, FR_HUNT_IMPRECISE);
    for (int i = 0; i < r.nclusters; i++)
        if (r.clusters[i].kind == FR_HUNT_WRONG && strstr(r.clusters[i].key, "fp16") &&
            r.clusters[i].diag != FR_DIAG_ERROR_STATUS)
            wrong16 = i;
    int errst = find_cluster(&r, FR_DIAG_ERROR_STATUS, FR_HUNT_WRONG);
    int unwritten = find_cluster(&r, FR_DIAG_UNWRITTEN, FR_HUNT_WRONG);
    CHECK(wrong16 >= 0, "no wrong fp16 cluster");
    CHECK(errst >= 0 && strstr(r.clusters[errst].why, "sinks are not implemented"), "no error-status cluster");
    CHECK(unwritten >= 0, "no unwritten cluster (bf16)");
    if (imprecise < 0) /* the diagnosis of a uniform 1e-3 error may be another one; the kind is what matters */
        for (int i = 0; i < r.nclusters; i++)
            if (r.clusters[i].kind == FR_HUNT_IMPRECISE) imprecise = i;
    CHECK(imprecise >= 0 && strstr(r.clusters[imprecise].key, "fp32"), "no imprecise fp32 cluster");
    if (r.nclusters > 0) {
        const fr_hunt_cluster *c0 = &r.clusters[0];
        CHECK(c0->shrink_runs > 0 && c0->case_dir[0] && c0->repro[0], "cluster 1: shrunk %d, case %s, repro %s",
              c0->shrink_runs, c0->case_dir, c0->repro);
        CHECK(exists(out, "cluster_1/case/case.json") && exists(out, "cluster_1/case/golden") &&
                  exists(out, "cluster_1/repro.py"),
              "cluster_1 files");
        CHECK(fr_test_file_contains(out, "cluster_1/repro.py", "# reproducer of"), "repro.py content");
    }
    if (r.nclusters > 1) {
        const fr_hunt_cluster *c1 = &r.clusters[1];
        CHECK(c1->shrink_runs == 0 && !c1->repro[0] && strstr(c1->repro_note, "only the first finding"),
              "cluster 2: shrunk %d, repro '%s', note '%s'", c1->shrink_runs, c1->repro, c1->repro_note);
        CHECK(fr_test_file_contains(out, "findings.markdown", "- no reproducer: only the first finding") &&
                  fr_test_file_contains(out, "findings.markdown", "- not shrunk") &&
                  fr_test_file_contains(out, "findings.markdown", "- smallest ("),
              "findings.markdown");
    }
    CHECK(fr_test_file_contains(out, "findings.json", "\"flashref-hunt/1\""), "findings.json");
    char last[64];
    snprintf(last, sizeof last, "cluster_%d", r.nclusters);
    CHECK(r.nclusters >= 4 && exists(out, last), "%d clusters, %s", r.nclusters, last);
    int n_first = r.nclusters;
    fr_hunt_result_free(&r);
    CHECK(r.clusters == NULL && r.nclusters == 0, "freed result not cleared");
    fr_hunt_result_free(NULL);

    /* The same folder, a correct implementation: the first hunt's clusters go, the new findings say none. */
    s.correct = true;
    o = small_opts(21, 6);
    o.out_dir = out;
    st = fr_hunt_run(iut, &o, &r, &err);
    CHECK(st == FR_OK && r.nclusters == 0, "%s; %d clusters", err.msg, r.nclusters);
    CHECK(!exists(out, "cluster_1") && !exists(out, last), "clusters of the previous hunt left (%d)", n_first);
    CHECK(fr_test_file_contains(out, "findings.markdown", "0 clusters (wrong before imprecise)"), "markdown");
    fr_hunt_result_free(&r);

    /* Stopped while shrinking: interrupted, FR_OK, nothing written. */
    s.correct = false;
    volatile sig_atomic_t stop = 0;
    char out2[400];
    snprintf(out2, sizeof out2, "%s/hunt_stopped", g_tmp);
    o = small_opts(21, 12);
    o.max_shrink = 3;
    o.out_dir = out2;
    o.stop = &stop;
    prog_state ps2 = {0, 0, &stop};
    o.progress = on_progress;
    o.progress_ud = &ps2;
    st = fr_hunt_run(iut, &o, &r, &err);
    CHECK(st == FR_OK && r.interrupted && ps2.shrinking == 1, "%s; interrupted %d, %d shrinks", err.msg,
          r.interrupted, ps2.shrinking);
    CHECK(!exists(out2, "findings.json") && !exists(out2, "cluster_1"), "an interrupted hunt wrote findings");
    fr_hunt_result_free(&r);

    /* Stopped from inside a shrinking judgement: the shrinker's next step sees it. */
    stop = 0;
    s.calls = 0;
    s.stop = &stop;
    s.stop_at = 12 + 3;
    o = small_opts(21, 12);
    o.max_shrink = 2;
    o.stop = &stop;
    st = fr_hunt_run(iut, &o, &r, &err);
    CHECK(st == FR_OK && r.interrupted && r.draws == 12, "%s; interrupted %d, %d draws", err.msg, r.interrupted,
          r.draws);
    CHECK(s.calls == 12 + 3, "%d calls: the shrinking went on after the stop", s.calls);
    fr_hunt_result_free(&r);
    s.stop_at = 0;
    fr_iut_close(iut);
}

static void test_hunt_stops(void) {
    fr_error err;
    fr_hunt_result r;
    fr_hunt_opts o = small_opts(1, 20);
    /* Option errors. */
    CHECK(fr_hunt_run(NULL, &o, &r, &err) == FR_E_NULL && strstr(err.msg, "hunt: NULL"), "%s", err.msg);
    cb_state s = {0};
    fr_iut *iut;
    if (!CHECKED(fr_iut_callback_open(partly, &s, "stops", &iut, &err) == FR_OK, "%s", err.msg)) return;
    CHECK(fr_hunt_run(iut, NULL, &r, &err) == FR_E_NULL, "NULL opts");
    o.max_draws = 0;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "neither a budget nor a draw cap"),
          "%s", err.msg);
    o = small_opts(1, 5);
    o.budget_s = -1;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "hunt: budget -1"), "%s", err.msg);
    o.budget_s = INFINITY;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "hunt: budget inf"), "%s", err.msg);
    /* An out folder below a file cannot be made: FR_E_IO before any draw. */
    char file[400], below[420];
    snprintf(file, sizeof file, "%s/a_file", g_tmp);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    snprintf(below, sizeof below, "%s/sub", file);
    o = small_opts(1, 5);
    o.out_dir = below;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_E_IO && strstr(err.msg, "a_file") && s.calls == 0, "%s", err.msg);
    o.out_dir = file;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_E_IO && strstr(err.msg, "exists and is not a directory"), "%s",
          err.msg);

    /* Every draw fails the same way: the hunt stops after FR_IUT_GIVE_UP_AFTER, unshrunk. */
    s.fail_all = true;
    o = small_opts(1, 20);
    o.max_shrink = 4;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    CHECK(r.draws == FR_IUT_GIVE_UP_AFTER && strstr(r.stopped, "the runtime is missing"), "%d draws, stopped '%s'",
          r.draws, r.stopped);
    for (int i = 0; i < r.nclusters; i++)
        CHECK(r.clusters[i].diag == FR_DIAG_ERROR_STATUS && r.clusters[i].shrink_runs == 0, "cluster %d", i);
    char *md = NULL, *js = NULL;
    CHECK(fr_hunt_markdown(&r, iut, &o, &md, &err) == FR_OK && md &&
              strstr(md, "- stopped early: the runtime is missing") && strstr(md, "- draw cap 20"),
          "%s", md ? md : err.msg);
    CHECK(fr_hunt_json(&r, iut, &o, &js, &err) == FR_OK && js && strstr(js, "\"stopped\":\t\"the runtime is missing"),
          "%s", js ? js : err.msg);
    free(md);
    free(js);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);

    /* Everything SKIPped: nothing judged, no pairwise coverage, learned exclusions named. */
    s = (cb_state){0};
    s.skip_all = true;
    if (!CHECKED(fr_iut_callback_open(partly, &s, "skips", &iut, &err) == FR_OK, "%s", err.msg)) return;
    o = small_opts(2, 12);
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    CHECK(r.judged == 0 && r.skipped == 12 && r.pairs_allowed == 0 && r.nclusters == 0 &&
              !strcmp(r.caps, "nothing declared"),
          "%d judged, %d pairs allowed, caps '%s'", r.judged, r.pairs_allowed, r.caps);
    fr_hunt_result_free(&r);
    /* A disk that fills while the findings are written: FR_E_IO naming the file, and nothing left in the folder
     * (neither findings nor the staging folder). */
    if (fr_fault_write_set && fr_fault_write_hit) {
        s.skip_all = false;
        s.correct = true;
        char full[400];
        snprintf(full, sizeof full, "%s/hunt_full", g_tmp);
        static const char *const kNames[] = {"findings.markdown", "findings.json"};
        for (int k = 0; k < 2; k++) {
            o = small_opts(2, 3);
            o.out_dir = full;
            fr_fault_write_set(k + 1);
            fr_status st = fr_hunt_run(iut, &o, &r, &err);
            int hit = fr_fault_write_hit();
            fr_fault_write_set(0);
            CHECK(hit && st == FR_E_IO && strstr(err.msg, kNames[k]) && strstr(err.msg, "write failed"),
                  "disk full at write %d: %s: %s", k + 1, fr_status_str(st), err.msg);
            CHECK(entries(full) == 0, "disk full at write %d: %d entries left in the folder", k + 1, entries(full));
            fr_hunt_result_free(&r);
        }
    } else {
        printf("SKIP disk full: built without -DFR_ALLOC_HOOK=ON\n");
    }
    /* A time budget (no draw cap) ends the hunt. */
    s.skip_all = false;
    s.correct = true;
    o = small_opts(2, 0);
    o.budget_s = 0.3;
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK && r.draws > 0 && r.seconds >= 0.3 && r.nclusters == 0,
          "%s; %d draws in %.2f s", err.msg, r.draws, r.seconds);
    md = NULL;
    CHECK(fr_hunt_markdown(&r, iut, &o, &md, &err) == FR_OK && md && strstr(md, "budget 0.3 s,") &&
              !strstr(md, "draw cap"),
          "%s", md ? md : err.msg);
    free(md);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);

    /* A refused declaration stops the hunt before its first draw. */
    s = (cb_state){0};
    if (!CHECKED(fr_iut_callback_open(partly, &s, "refused", &iut, &err) == FR_OK, "%s", err.msg)) return;
    const char *bad = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp99\"]}}}";
    CHECK(fr_iut_declare(iut, bad, strlen(bad), &err) == FR_E_FORMAT, "declared fp99");
    o = small_opts(2, 10);
    CHECK(fr_hunt_run(iut, &o, &r, &err) == FR_OK, "%s", err.msg);
    CHECK(r.draws == 0 && s.calls == 0 && strstr(r.stopped, "fp99"), "%d draws, stopped '%s'", r.draws, r.stopped);
    fr_hunt_result_free(&r);
    fr_iut_close(iut);
}

/* ---- 5. findings of a hand-made result ---- */

static void test_findings_text(void) {
    fr_hunt_result r;
    memset(&r, 0, sizeof r);
    r.draws = 3, r.judged = 2, r.skipped = 1, r.failed = 2;
    snprintf(r.caps, sizeof r.caps, "nothing declared");
    snprintf(r.learned, sizeof r.learned, "dtype=bf16");
    fr_hunt_cluster cl[2];
    memset(cl, 0, sizeof cl);
    cl[0].diag = FR_DIAG_NAN;
    cl[0].kind = FR_HUNT_WRONG;
    cl[0].verdict = FR_FAIL;
    cl[0].count = 2;
    cl[0].rel_l2 = INFINITY;
    cl[0].first.corner = FR_CORNER_NAN_MASKED;
    cl[0].first.hint = FR_MASK_HINT_ADD_MIN;
    snprintf(cl[0].key, sizeof cl[0].key, "fwd fp16, mask as additive_min");
    snprintf(cl[0].first.d.name, sizeof cl[0].first.d.name, "hunt_7");
    snprintf(cl[0].case_dir, sizeof cl[0].case_dir, "out/cluster_1/case");
    snprintf(cl[0].repro, sizeof cl[0].repro, "out/cluster_1/repro.py");
    cl[0].shrink_runs = 9;
    cl[1] = cl[0];
    cl[1].kind = FR_HUNT_IMPRECISE;
    cl[1].rel_l2 = 0.002;
    cl[1].repro[0] = 0;
    cl[1].shrink_runs = 0;
    r.clusters = cl;
    r.nclusters = 2;
    fr_hunt_opts o = small_opts(4, 3);
    fr_iut *iut;
    fr_error err;
    cb_state s = {0};
    if (!CHECKED(fr_iut_callback_open(partly, &s, "text", &iut, &err) == FR_OK, "%s", err.msg)) return;
    char *js = NULL, *md = NULL;
    CHECK(fr_hunt_json(&r, iut, &o, &js, &err) == FR_OK, "%s", err.msg);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "clusters");
    const cJSON *c0 = cJSON_GetArrayItem(arr, 0), *c1 = cJSON_GetArrayItem(arr, 1);
    const cJSON *rl0 = cJSON_GetObjectItemCaseSensitive(c0, "rel_l2"), *rl1 = cJSON_GetObjectItemCaseSensitive(c1, "rel_l2");
    CHECK(cJSON_IsString(rl0) && !strcmp(rl0->valuestring, "inf") && cJSON_IsNumber(rl1) && rl1->valuedouble == 0.002,
          "rel_l2: %s", js ? js : "");
    const cJSON *corner = cJSON_GetObjectItemCaseSensitive(c0, "corner"),
                *hand = cJSON_GetObjectItemCaseSensitive(c0, "mask_handover"),
                *fname = cJSON_GetObjectItemCaseSensitive(c0, "first_name"),
                *share = cJSON_GetObjectItemCaseSensitive(j, "judged_share");
    CHECK(cJSON_IsString(corner) && !strcmp(corner->valuestring, "nan-in-masked") && cJSON_IsString(hand) &&
              !strcmp(hand->valuestring, "additive_min") && cJSON_IsString(fname) &&
              !strcmp(fname->valuestring, "hunt_7") && cJSON_IsNumber(share) && fabs(share->valuedouble - 2.0 / 3) < 1e-12,
          "cluster fields");
    CHECK(!cJSON_GetObjectItemCaseSensitive(j, "declared"), "nothing declared, yet a \"declared\" key");
    cJSON_Delete(j);
    free(js);
    CHECK(fr_hunt_markdown(&r, iut, &o, &md, &err) == FR_OK && md, "%s", err.msg);
    CHECK(md && strstr(md, "# flashref hunt: text\n") && strstr(md, "2 clusters (wrong before imprecise)") &&
              strstr(md, "## 1. wrong FAIL: nan (fwd fp16, mask as additive_min)") && strstr(md, "## 2. imprecise FAIL: nan") &&
              strstr(md, "- smallest (9 judgements)") && strstr(md, "- reproducer: `out/cluster_1/repro.py`") &&
              strstr(md, "- learned from SKIPs: dtype=bf16") && strstr(md, "- case (regression format): `out/"),
          "%s", md ? md : "");
    free(md);
    /* One cluster, nothing learned, no draws. */
    r.nclusters = 1;
    r.learned[0] = 0;
    r.draws = r.judged = r.skipped = 0;
    cl[0].repro[0] = 0;
    cl[0].case_dir[0] = 0;
    CHECK(fr_hunt_markdown(&r, iut, &o, &md, &err) == FR_OK && md && strstr(md, "1 cluster (wrong") &&
              strstr(md, "nothing excluded") && strstr(md, "judged 0 (0.0 %)") && !strstr(md, "reproducer"),
          "%s", md ? md : "");
    free(md);
    CHECK(fr_hunt_markdown(&r, NULL, &o, &md, &err) == FR_OK && md && !strncmp(md, "# flashref hunt: \n", 18),
          "no implementation: %.40s", md ? md : "");
    free(md);
    CHECK(fr_hunt_json(&r, NULL, &o, &js, &err) == FR_OK && js && strstr(js, "\"judged_share\":\t0,") &&
              strstr(js, "\"impl\":\t\"\""),
          "no draws: %.300s", js ? js : "");
    free(js);
    CHECK(!strcmp(fr_hunt_corner_name(FR_CORNER_COUNT), "invalid") &&
              !strcmp(fr_hunt_corner_name((fr_hunt_corner)-1), "invalid") &&
              !strcmp(fr_hunt_corner_name(FR_CORNER_VARLEN_EMPTY), "varlen-empty"),
          "corner names");
    CHECK(!strcmp(fr_hunt_kind_name(FR_HUNT_WRONG), "wrong") && !strcmp(fr_hunt_kind_name(FR_HUNT_IMPRECISE),
                                                                        "imprecise"));
    fr_iut_close(iut);
}


/* ---- 6. mask handovers, corner modifiers in shrinking, a stop before the first draw, a full disk per write ---- */

/* bf16 forward: nothing written (diagnosis unwritten whatever the configuration); the rest correct. */
static fr_status bf16_unwritten(void *ud, const fr_verify_case *c, fr_fwd_outputs *fwd, fr_bwd_outputs *bwd,
                                fr_error *err) {
    ++*(int *)ud;
    if (c->op == FR_VERIFY_BWD) return fr_mutant_base_bwd(c->params, c->in, bwd, err);
    if (c->dtype == FR_BF16) return FR_OK;
    return fr_mutant_base_fwd(c->params, &c->in->fwd, fwd, err);
}

static const char kBf16Caps[] =
    "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"bf16\"],\"layouts\":[\"BNSD\",\"BSND\"],"
    "\"sparse_modes\":[0],\"mask_shapes\":[\"SS\",\"B1SS\"],\"topk\":\"none\",\"pse_types\":[],\"rope\":false,"
    "\"mask_handover\":[\"bool\",\"additive_min\"]}}}";

static void shrink_with_mod(fr_iut *iut, fr_suite_mod mod, fr_hunt_corner corner, fr_gen_mask mask) {
    fr_hunt_cluster c;
    memset(&c, 0, sizeof c);
    c.diag = FR_DIAG_UNWRITTEN;
    c.kind = FR_HUNT_WRONG;
    c.verdict = FR_FAIL;
    fr_gen_spec sp = base_spec();
    sp.dtype = FR_BF16;
    sp.B = 2;
    sp.N1 = 1;
    sp.S1 = 8;
    sp.S2 = 24;
    sp.D = 16;
    sp.mask = mask;
    c.first.d.spec = sp;
    snprintf(c.first.d.name, sizeof c.first.d.name, "hunt_mod_%d", (int)mod);
    c.first.d.spec.name = c.first.d.name;
    c.first.mod = mod;
    c.first.corner = corner;
    c.first.hint = FR_MASK_HINT_BOOL;
    c.smallest = c.first;
    fr_hunt_opts o = small_opts(5, 1);
    fr_error err;
    fr_status st = fr_hunt_shrink_cluster(iut, &o, &c, &err);
    char want[64];
    snprintf(want, sizeof want, " + %s, mask as bool", fr_hunt_corner_name(corner));
    CHECK(st == FR_OK && c.shrink_runs > 1 && c.smallest.d.spec.mask == mask && strstr(c.smallest_config, want) &&
              c.smallest.d.spec.S2 < 24,
          "%s: %s, %d runs, smallest %s", fr_hunt_corner_name(corner), err.msg, c.shrink_runs, c.smallest_config);
}

static void test_hunt_handover(void) {
    int calls = 0;
    fr_iut *iut;
    fr_error err;
    if (!CHECKED(fr_iut_callback_open(bf16_unwritten, &calls, "unwritten", &iut, &err) == FR_OK, "%s", err.msg))
        return;
    CHECK(fr_iut_declare(iut, kBf16Caps, strlen(kBf16Caps), &err) == FR_OK, "%s", err.msg);
    /* Mask handovers drawn: clusters keyed by them, the trace names them, the findings hold the declaration. */
    fr_hunt_opts o = small_opts(8, 12);
    o.judge.external = true;
    char *trace = NULL;
    size_t tn = 0;
    o.trace = open_memstream(&trace, &tn);
    fr_hunt_result r;
    fr_status st = fr_hunt_run(iut, &o, &r, &err);
    fclose(o.trace);
    CHECK(st == FR_OK && r.draws == 12 && r.skipped == 0, "%s; %d draws, %d skipped", err.msg, r.draws, r.skipped);
    int hinted = 0;
    for (int i = 0; i < r.nclusters; i++) {
        CHECK(r.clusters[i].diag == FR_DIAG_UNWRITTEN, "cluster %d: %s", i, fr_diag_name(r.clusters[i].diag));
        hinted += strstr(r.clusters[i].key, "fwd bf16, mask as ") != NULL;
    }
    CHECK(hinted > 0 && trace && strstr(trace, ", mask as "), "no mask handover drawn (%d clusters)", r.nclusters);
    free(trace);
    CHECK(strstr(r.caps, "bf16") != NULL, "caps: %s", r.caps);
    char *js = NULL;
    CHECK(fr_hunt_json(&r, iut, &o, &js, &err) == FR_OK && js && strstr(js, "\"declared\":") &&
              strstr(js, "\"mask_handover\":"),
          "findings: %.300s", js ? js : err.msg);
    free(js);
    fr_hunt_result_free(&r);
    /* Shrinking a cluster whose first draw had a corner's mask rewrite: smaller configurations that lose the mask
     * the rewrite needs are not taken. */
    shrink_with_mod(iut, FR_MOD_ONE_KEY, FR_CORNER_NEARLY_MASKED, FR_GEN_MASK_SS);
    shrink_with_mod(iut, FR_MOD_NAN_KV, FR_CORNER_NAN_MASKED, FR_GEN_MASK_SS);
    shrink_with_mod(iut, FR_MOD_PAD_RIGHT, FR_CORNER_PAD_RIGHT, FR_GEN_MASK_B1SS);
    /* A declaration nothing fits (head dim 3 and a multiple of 2): each draw is outside, counted, and SKIPped without
     * a call. */
    int calls2 = 0;
    fr_iut *none_fits;
    if (CHECKED(fr_iut_callback_open(bf16_unwritten, &calls2, "nothing fits", &none_fits, &err) == FR_OK, "%s",
                err.msg)) {
        const char *nf = "{\"format\":\"flashref-capabilities/1\",\"ops\":{\"fwd\":{\"dtypes\":[\"fp32\"],"
                         "\"head_dim\":[3,3],\"head_dim_multiple\":2}}}";
        CHECK(fr_iut_declare(none_fits, nf, strlen(nf), &err) == FR_OK, "%s", err.msg);
        o = small_opts(8, 2);
        st = fr_hunt_run(none_fits, &o, &r, &err);
        CHECK(st == FR_OK && r.not_drawable == 2 && r.skipped == 2 && calls2 == 0, "%s; %d outside, %d skipped, %d calls",
              err.msg, r.not_drawable, r.skipped, calls2);
        fr_hunt_result_free(&r);
        fr_iut_close(none_fits);
    }
    /* Stopped before the first draw: interrupted, nothing drawn, nothing written. */
    char out[400];
    snprintf(out, sizeof out, "%s/hunt_prestop", g_tmp);
    volatile sig_atomic_t stop = 1;
    o = small_opts(8, 5);
    o.out_dir = out;
    o.stop = &stop;
    calls = 0;
    st = fr_hunt_run(iut, &o, &r, &err);
    CHECK(st == FR_OK && r.interrupted && r.draws == 0 && calls == 0 && entries(out) == 0,
          "%s; interrupted %d, %d draws, %d entries", err.msg, r.interrupted, r.draws, entries(out));
    fr_hunt_result_free(&r);
    /* A disk that fills at each write of a hunt with findings (the cluster's case, its golden, the findings): FR_E_IO
     * and nothing in the folder, until the writes are done. */
    if (fr_fault_write_set && fr_fault_write_hit) {
        snprintf(out, sizeof out, "%s/hunt_full_cluster", g_tmp);
        int refused = 0;
        bool done = false;
        for (long k = 1; k <= 80 && !done; k++) {
            o = small_opts(8, 2);
            o.out_dir = out;
            fr_fault_write_set(k);
            st = fr_hunt_run(iut, &o, &r, &err);
            int hit = fr_fault_write_hit();
            fr_fault_write_set(0);
            if (!hit) {
                CHECK(st == FR_OK && r.nclusters > 0 && exists(out, "findings.json") &&
                          exists(out, "cluster_1/case/case.json"),
                      "write %ld: %s, %d clusters", k, err.msg, r.nclusters);
                done = true;
            } else {
                refused++;
                CHECK(st == FR_E_IO && entries(out) == 0, "disk full at write %ld: %s: %s; %d entries", k,
                      fr_status_str(st), err.msg, entries(out));
            }
            fr_hunt_result_free(&r);
        }
        CHECK(done && refused > 4, "%d writes refused, done %d", refused, done);
    }
    fr_iut_close(iut);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "%s/fr_hunt_paths_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_admit();
    test_learning();
    test_draws();
    test_findings_text();
    test_hunt_stops();
    test_hunt_partly();
    test_hunt_handover();
    fr_test_rm_rf(g_tmp);
    return fr_test_exit("test_hunt_paths");
}
