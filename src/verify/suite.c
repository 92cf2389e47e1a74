/* The suite runner (suite.h): builds each case, post-processes it, runs the IUT first (hygiene: before the golden
 * allocates anything), then the golden and the ideal pipeline, judges, and adds what the category checks on top
 * (explicit softmax properties, order variants, determinism runs). */
#include "verify/suite_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/rng.h"
#include "flashref_emulate.h"
#include "io/npy.h"
#include "verify/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *const fr_suite_set_names[] = {"quick", "default", "long", "all", NULL};

static const char *const kCatNames[FR_CAT_COUNT] = {"regression",       "boundaries", "equivalence", "properties",
                                                    "order invariance", "gradients",  "determinism",
                                                    "implementation-defined"};

const char *fr_suite_cat_name(fr_suite_cat c) { return (unsigned)c < FR_CAT_COUNT ? kCatNames[c] : "invalid"; }

static unsigned set_bits(const char *set) {
    if (!set || !strcmp(set, "default")) return FR_SET_DEFAULT;
    if (!strcmp(set, "quick")) return FR_SET_QUICK;
    if (!strcmp(set, "long")) return FR_SET_LONG;
    if (!strcmp(set, "all")) return FR_SET_QUICK | FR_SET_DEFAULT | FR_SET_LONG | FR_SET_ALL_ONLY;
    return 0;
}

bool fr_suite_set_known(const char *set) { return set_bits(set) != 0; }

fr_suite_opts fr_suite_opts_default(void) {
    fr_suite_opts o;
    memset(&o, 0, sizeof o);
    o.set = "default";
    o.seed = 20260101;
    o.judge = fr_judge_opts_default();
    return o;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The case list: the table of suite_cases.c plus casegen's cross-check grid in the default set. */

typedef struct item {
    const fr_suite_entry *e; /* NULL for an xcheck case or a random draw */
    const fr_gen_spec *spec;
    fr_suite_cat cat;
    unsigned tags;
    fr_suite_mod mod;
    const char *what;
    bool drawn; /* a random draw (matrix.h) */
} item;

static unsigned spec_tags(const fr_gen_spec *s) {
    unsigned t = 0;
    int64_t n2 = s->N2 ? s->N2 : s->N1;
    if (n2 != s->N1) t |= FR_TAG_GQA;
    if (s->mask != FR_GEN_MASK_NONE) t |= FR_TAG_MASK;
    if (s->pse != FR_GEN_PSE_NONE) t |= FR_TAG_PSE;
    if (s->keep_prob > 0 && s->keep_prob < 1) t |= FR_TAG_DROPOUT;
    if (s->beta > 0) t |= FR_TAG_PEAKED;
    if (s->D % 8 != 0 || (s->Dv && s->Dv % 8 != 0)) t |= FR_TAG_HEADDIM;
    if (s->mask != FR_GEN_MASK_NONE && (s->sparse_mode == 2 || s->sparse_mode == 3)) {
        bool ne = s->S1 != s->S2;
        if (s->layout == FR_TND)
            for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
                ne |= s->seq_q[b] != s->seq_kv[b];
        if (ne) t |= FR_TAG_CAUSAL_NE;
    }
    if (s->layout == FR_TND)
        for (int64_t b = 0; b < s->B && b < FR_GEN_MAX_BATCH; b++)
            if (s->seq_q[b] == 0 || s->seq_kv[b] == 0) t |= FR_TAG_VARLEN;
    return t;
}

/* The case selection: --filter (substring) and --only (exact name). */
typedef struct select {
    const char *filter, *only;
} select_t;

static bool name_ok(const char *name, const char *filter) { return !filter || !*filter || strstr(name, filter); }
static bool selected(const char *name, const select_t *sel) {
    return name_ok(name, sel->filter) && (!sel->only || !*sel->only || !strcmp(name, sel->only));
}

/* Fills items (when non-NULL) and returns the count: the random draws when there are any, else the set's cases. */
static int collect(unsigned bits, const select_t *sel, const fr_draw *draws, int ndraws, item *items) {
    int n = 0;
    if (draws) {
        for (int k = 0; k < ndraws; k++) {
            const fr_gen_spec *s = &draws[k].spec;
            if (!selected(s->name, sel)) continue;
            if (items)
                items[n] = (item){NULL,         s,           s->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE,
                                  spec_tags(s), FR_MOD_NONE, "random draw from the option matrix", true};
            n++;
        }
        return n;
    }
    for (int k = 0; k < fr_suite_entry_count; k++) {
        const fr_suite_entry *e = &fr_suite_entries[k];
        if (!(e->sets & bits) || !selected(e->spec.name, sel)) continue;
        if (items) items[n] = (item){e, &e->spec, e->cat, e->tags | spec_tags(&e->spec), e->mod, e->what, false};
        n++;
    }
    const fr_gen_set *xs = fr_gen_set_find("xcheck");
    if (xs && (bits & FR_SET_DEFAULT))
        for (int k = 0; k < xs->count; k++) {
            const fr_gen_spec *s = &xs->specs[k];
            if (!selected(s->name, sel)) continue;
            if (items)
                items[n] = (item){NULL,         s,           s->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE,
                                  spec_tags(s), FR_MOD_NONE, "cross-check grid (casegen xcheck)", false};
            n++;
        }
    return n;
}

int fr_suite_list(const char *set, const char *filter,
                  void (*fn)(void *ud, const char *name, fr_suite_cat cat, unsigned tags, const char *what), void *ud) {
    unsigned bits = set_bits(set);
    if (!bits) return 0;
    select_t sel = {filter, NULL};
    int n = collect(bits, &sel, NULL, 0, NULL);
    item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) return 0;
    collect(bits, &sel, NULL, 0, it);
    for (int k = 0; k < n && fn; k++)
        fn(ud, it[k].spec->name, it[k].cat, it[k].tags, it[k].what);
    free(it);
    return n;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Post-processing. */

/* Alike tests/kernels/kt_harness.c:kt_build: kept apart because only the shape is alike (field-by-field assignments of
 * different structs). Alike tests/panel/test_exec_optional_outputs.c:case_of: kept apart because this is private to the
 * suite and that test rebuilds the view to hand the exec IUT what the suite hands it. */
static void case_view(const fr_gen_case *g, fr_case *c) {
    memset(c, 0, sizeof *c);
    c->op = g->bwd ? FR_CASE_BWD : FR_CASE_FWD;
    c->dtype = g->dtype;
    c->params = g->params;
    c->prefix = g->prefix;
    c->actual_seq_qlen = g->cu_q;
    c->actual_seq_kvlen = g->cu_kv;
    c->in = g->in;
}

/* Sets element (b, n, j, all d) of a K/V-like tensor to v. */
static void set_kv_row(const fr_problem *pb, const fr_tensor *t, int64_t D, int64_t b, int64_t n, int64_t j, double v) {
    for (int64_t d = 0; d < D; d++)
        fr_store_f64(t, fr_layout_offset(t, pb->layout, D, 0, b, n, j, d), v);
}

static fr_status apply_mod(fr_gen_case *g, fr_suite_mod mod, fr_error *err) {
    if (mod == FR_MOD_NONE) return FR_OK;
    fr_problem pb;
    fr_status st = fr_problem_from_fwd(&g->params, &g->in.fwd, &pb, err);
    if (st != FR_OK) return st;
    fr_fwd_inputs *in = &g->in.fwd;
    const fr_tensor *mask = &in->atten_mask;
    switch (mod) {
    case FR_MOD_NAN_KV:
    case FR_MOD_FIRST_TILE_MASKED: {
        if (pb.layout == FR_TND || mask->ndim != 2 || mask->shape[0] != pb.S1 || mask->shape[1] != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s needs a [S1,S2] mask and a non-TND layout", g->name);
        if (mod == FR_MOD_NAN_KV) {
            /* Two key columns (one inside, one at the end) masked for every row; their K/V poisoned. */
            int64_t cols[2] = {pb.S2 / 2, pb.S2 - 1};
            for (int c = 0; c < 2; c++) {
                for (int64_t i = 0; i < pb.S1; i++)
                    fr_store_f64(mask, i * pb.S2 + cols[c], 1);
                for (int64_t b = 0; b < pb.B; b++)
                    for (int64_t n = 0; n < pb.N2; n++) {
                        set_kv_row(&pb, &in->key, pb.Dk, b, n, cols[c], c ? INFINITY : NAN);
                        set_kv_row(&pb, &in->value, pb.Dv, b, n, cols[c], c ? NAN : INFINITY);
                    }
            }
        } else {
            for (int64_t i = 0; i < pb.S1; i++)
                for (int64_t j = 0; j < pb.S2; j++)
                    if (j < 128 || i % 7 == 3) fr_store_f64(mask, i * pb.S2 + j, 1);
        }
        return FR_OK;
    }
    case FR_MOD_KEY_PAST_2G: {
        const fr_tensor *k = &in->key;
        if (pb.layout != FR_BNSD || k->ndim != 4)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s: the strided key needs BNSD", g->name);
        /* Row stride 2^22 elements: key row j starts at j * 2^22, so rows past 512 live beyond 2^31. */
        const int64_t rs = INT64_C(1) << 22;
        int64_t rows = pb.B * pb.N2 * pb.S2, bytes;
        if (!fr_mul_ok(rows, rs, &bytes) || !fr_mul_ok(bytes, (int64_t)fr_dtype_size(k->dtype), &bytes))
            return fr_fail(err, FR_E_OVERFLOW, "suite: %s: strided key size", g->name);
        void *big = calloc((size_t)bytes, 1); /* untouched pages stay unmapped */
        if (!big)
            return fr_fail(err, FR_E_UNSUPPORTED, "suite: %s: cannot reserve %lld bytes", g->name, (long long)bytes);
        fr_tensor nk = *k;
        nk.data = big;
        nk.strides[3] = 1;
        nk.strides[2] = rs;
        nk.strides[1] = pb.S2 * rs;
        nk.strides[0] = pb.N2 * pb.S2 * rs;
        for (int64_t b = 0; b < pb.B; b++)
            for (int64_t n = 0; n < pb.N2; n++)
                for (int64_t j = 0; j < pb.S2; j++)
                    for (int64_t d = 0; d < pb.Dk; d++)
                        fr_store_f64(&nk, fr_layout_offset(&nk, pb.layout, pb.Dk, 0, b, n, j, d),
                                     fr_load_f64(k, fr_layout_offset(k, pb.layout, pb.Dk, 0, b, n, j, d)));
        free(in->key.data);
        in->key = nk;
        return FR_OK;
    }
    case FR_MOD_SENTINEL_1E4: {
        const fr_tensor *ps = &in->real_shift;
        if (pb.layout == FR_TND || mask->ndim != 2 || ps->ndim != 4 || ps->shape[2] != pb.S1 || ps->shape[3] != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s needs a [S1,S2] mask and a [B,N1,S1,S2] pse", g->name);
        int64_t n = fr_tensor_numel(ps);
        for (int64_t k = 0; k < n; k++) {
            int64_t ij = k % (pb.S1 * pb.S2);
            fr_store_f64(ps, k, fr_load_f64(mask, ij) != 0 ? 0.0 : -1e4);
        }
        return FR_OK;
    }
    case FR_MOD_SENTINEL: {
        const fr_tensor *ps = &in->real_shift;
        int64_t n = fr_tensor_numel(ps);
        for (int64_t k = 0; k < n; k++)
            fr_store_f64(ps, k, -1e30 - 2e30 * fr_rng_uniform01(g->seed, 77, (uint64_t)k));
        return FR_OK;
    }
    case FR_MOD_V_IDENTITY: {
        if (pb.layout != FR_BNSD || pb.Dv != pb.S2)
            return fr_fail(err, FR_E_INTERNAL, "suite: %s: V = I needs BNSD and Dv = S2", g->name);
        const fr_tensor *v = &in->value;
        for (int64_t b = 0; b < pb.B; b++)
            for (int64_t h = 0; h < pb.N2; h++)
                for (int64_t j = 0; j < pb.S2; j++)
                    for (int64_t d = 0; d < pb.Dv; d++)
                        fr_store_f64(v, fr_layout_offset(v, pb.layout, pb.Dv, 0, b, h, j, d), j == d ? 1.0 : 0.0);
        return FR_OK;
    }
    default: return FR_OK;
    }
}

/* Top-k order variant k (1..3) of the base indices: reversed, a seeded shuffle, rotated by half a row (the
 * dominant own key moves from the first slot to the middle, a tile edge for W = 2 x 64k). */
static void permute_topk(const fr_tensor *t, int variant, uint64_t seed) {
    int64_t W = t->shape[t->ndim - 1], rows = W ? fr_tensor_numel(t) / W : 0;
    int32_t *p = t->data, *tmp = malloc(sizeof(int32_t) * (size_t)(W ? W : 1));
    if (!tmp) return;
    for (int64_t r = 0; r < rows; r++) {
        int32_t *row = p + r * W;
        memcpy(tmp, row, sizeof(int32_t) * (size_t)W);
        for (int64_t w = 0; w < W; w++) {
            if (variant == 1)
                row[w] = tmp[W - 1 - w];
            else if (variant == 3)
                row[w] = tmp[(w + W / 2) % W];
        }
        if (variant == 2)
            for (int64_t w = W - 1; w > 0; w--) {
                int64_t s = (int64_t)(fr_rng_uniform01(seed, 91, (uint64_t)(r * W + w)) * (double)(w + 1));
                if (s > w) s = w;
                int32_t x = row[w];
                row[w] = row[s];
                row[s] = x;
            }
    }
    free(tmp);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Running one case. */

static fr_status run_engine(const fr_case *c, fr_engine_kind kind, fr_case_outputs *o, fr_error *err) {
    fr_status st = fr_case_alloc_outputs(c, kind == FR_ENGINE_GOLDEN, o, err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(kind);
    st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, err)
                              : fr_bwd(&c->params, &c->in, &o->bwd, &e, err);
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}

/* Explicit softmax properties of a V = I case: attention_out rows are P rows. */
static void check_props(const fr_case *c, const fr_case_outputs *iut, const fr_case_outputs *ideal,
                        fr_case_result *cr) {
    const fr_tensor *q = &c->in.fwd.query, *k = &c->in.fwd.key, *o = &iut->fwd.attention_out;
    int64_t B = q->shape[0], N1 = q->shape[1], S1 = q->shape[2], D = q->shape[3], S2 = k->shape[2], N2 = k->shape[1];
    int64_t rows = B * N1 * S1, G = N2 ? N1 / N2 : 1;
    double *p = malloc(sizeof(double) * (size_t)(rows * S2 + 1)), *x = malloc(sizeof(double) * (size_t)(rows * S2 + 1));
    double *pe = ideal ? malloc(sizeof(double) * (size_t)(rows * S2 + 1)) : NULL;
    if (!p || !x) goto out;
    double sc = (double)(float)c->params.scale_value;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < N1; h++)
            for (int64_t i = 0; i < S1; i++) {
                int64_t r = (b * N1 + h) * S1 + i;
                for (int64_t j = 0; j < S2; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < D; d++)
                        s += fr_load_f64(q, ((b * N1 + h) * S1 + i) * D + d) *
                             fr_load_f64(k, ((b * N2 + h / G) * S2 + j) * D + d);
                    x[r * S2 + j] = s * sc;
                    p[r * S2 + j] = fr_load_f64(o, r * S2 + j);
                    if (pe) pe[r * S2 + j] = fr_load_f64(&ideal->fwd.attention_out, r * S2 + j);
                }
            }
    fr_softmax_props sp, se;
    double tol_floor = 8.0 * (o->dtype == FR_F32   ? ldexp(1.0, -24)
                              : o->dtype == FR_F16 ? ldexp(1.0, -11)
                                                   : ldexp(1.0, -8));
    double tol = tol_floor;
    if (pe) {
        fr_softmax_props_rows(pe, x, rows, S2, 1.0, &se);
        tol = fmax(tol_floor, 4.0 * se.max_sum_err);
    }
    fr_softmax_props_rows(p, x, rows, S2, tol, &sp);
    snprintf(cr->extra, sizeof cr->extra,
             "explicit P: %lld rows, max |sum-1| %.3g (tol %.3g), negative %lld, argmax wrong %lld", (long long)rows,
             sp.max_sum_err, tol, (long long)sp.negative, (long long)sp.argmax_wrong);
    if ((sp.bad_sum || sp.negative || sp.argmax_wrong) && cr->j.verdict != FR_FAIL) {
        cr->j.verdict = FR_FAIL;
        cr->j.diag = sp.bad_sum ? FR_DIAG_STALE_MAX : FR_DIAG_PRECISION;
        snprintf(cr->j.why, sizeof cr->j.why, "softmax properties violated: %s", cr->extra);
    }
out:
    free(p);
    free(x);
    free(pe);
}

/* Runs, judges and fills cr. c: the case; golden may be given (regression: stored) or NULL (computed here). */
static fr_status judge_one(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden, unsigned tags,
                           const fr_suite_opts *o, fr_case_outputs *iut_out_keep, fr_case_result *cr, fr_error *err) {
    fr_case_outputs io, go, eo;
    memset(&io, 0, sizeof io);
    fr_error ie;
    memset(&ie, 0, sizeof ie);
    fr_status ist = fr_iut_run(iut, c, o->threads, &io, &ie);
    fr_status st = FR_OK;
    const fr_case_outputs *g = stored_golden;
    if (!g) {
        fr_error ge;
        if ((st = run_engine(c, FR_ENGINE_GOLDEN, &go, &ge)) != FR_OK) {
            fr_case_outputs_free(&io);
            if (iut_out_keep) memset(iut_out_keep, 0, sizeof *iut_out_keep);
            memset(&cr->j, 0, sizeof cr->j);
            cr->j.verdict = FR_FAIL;
            cr->j.diag = FR_DIAG_ERROR_STATUS;
            cr->j.ratio = INFINITY;
            snprintf(cr->j.why, sizeof cr->j.why, "the golden rejects the case (suite defect?): %s: %.300s",
                     fr_status_name(st), ge.msg);
            return FR_OK;
        }
        g = &go;
    }
    fr_error ee;
    bool have_ideal = run_engine(c, FR_ENGINE_EMULATE, &eo, &ee) == FR_OK;
    fr_case_outputs po;
    bool have_plain = ist == FR_OK && fr_judge_run_plain(c, &po, &ee) == FR_OK;
    st = fr_judge_plain(c, tags, cr->purpose, &o->judge, ist, ie.msg, &io, g, have_ideal ? &eo : NULL,
                        have_plain ? &po : NULL, &cr->j, err);
    if (have_plain) fr_case_outputs_free(&po);
    if (cr->j.d1_rows) cr->tags |= FR_TAG_D1;
    if (st == FR_OK && ist == FR_OK && c->op == FR_CASE_FWD && cr->cat == FR_CAT_PROPERTIES &&
        c->params.input_layout == FR_BNSD && c->in.fwd.value.shape[3] == c->in.fwd.key.shape[2] &&
        c->in.fwd.value.shape[3] > 1 && cr->j.verdict != FR_SKIP && cr->j.diag != FR_DIAG_SHAPE)
        check_props(c, &io, have_ideal ? &eo : NULL, cr); /* a wrong-shaped output is never indexed */
    if (have_ideal) fr_case_outputs_free(&eo);
    if (!stored_golden) fr_case_outputs_free(&go);
    if (iut_out_keep && ist == FR_OK)
        *iut_out_keep = io;
    else
        fr_case_outputs_free(&io);
    if (iut_out_keep && ist != FR_OK) memset(iut_out_keep, 0, sizeof *iut_out_keep);
    return st;
}

static double out_rel_l2(const fr_case_outputs *a, const fr_case_outputs *b, fr_case_output k) {
    const fr_tensor *x = fr_case_output_cslot(a, k), *y = fr_case_output_cslot(b, k);
    if (!fr_tensor_present(x) || !fr_tensor_present(y)) return 0;
    int64_t n = fr_tensor_numel(x);
    double ee = 0, rr = 0;
    for (int64_t i = 0; i < n; i++) {
        double u = fr_load_f64(x, i), v = fr_load_f64(y, i);
        if (!isfinite(u) || !isfinite(v)) continue;
        ee += (u - v) * (u - v);
        rr += v * v;
    }
    return rr > 0 ? sqrt(ee / rr) : sqrt(ee);
}

static void downgrade(fr_case_result *cr, fr_verdict v, fr_diag d, const char *why) {
    if (cr->j.verdict == FR_FAIL || cr->j.verdict == FR_SKIP) return;
    if (v == FR_WARN && cr->j.verdict == FR_WARN) return;
    cr->j.verdict = v;
    cr->j.diag = d;
    snprintf(cr->j.why, sizeof cr->j.why, "%s", why);
}

/* rel-L2 of the IUT's attention_out against the golden of case c with params p and mask m (NULL: c's). */
static double reading_err(const fr_case *c, const fr_params *p, const fr_tensor *m, const fr_case_outputs *iut) {
    fr_case alt = *c;
    alt.params = *p;
    if (m) alt.in.fwd.atten_mask = *m;
    fr_case_outputs g;
    fr_error e;
    if (fr_case_alloc_outputs(&alt, true, &g, &e) != FR_OK) return INFINITY;
    fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
    double r = fr_fwd(&alt.params, &alt.in.fwd, &g.fwd, &ge, &e) == FR_OK
                   ? out_rel_l2(iut, &g, FR_CO_ATTENTION_OUT)
                   : INFINITY;
    fr_case_outputs_free(&g);
    return r;
}

/* Implementation-defined cases (issue 10 item 4): mode 5 with a prefix and a user mask that contradicts the formula.
 * Which reading the implementation follows is reported (INFO), never judged: (A) masked iff mask OR formula (our
 * decision, docs/semantics-decisions.md 4), (B) the formula alone (the mask's content ignored, as mode 6 reads it),
 * (C) the mask alone (no causal / prefix band, as mode 1). A numeric mismatch with A is not a FAIL; a crash, a
 * wrong shape or NaN still is. */
static void impldef_reading(const fr_case *c, const fr_case_outputs *iut, fr_case_result *cr) {
    fr_verdict v = cr->j.verdict;
    if (v == FR_SKIP || c->op != FR_CASE_FWD || !fr_tensor_present(&iut->fwd.attention_out)) return;
    if (v == FR_FAIL && (cr->j.diag == FR_DIAG_ERROR_STATUS || cr->j.diag == FR_DIAG_SHAPE ||
                         cr->j.diag == FR_DIAG_UNWRITTEN || cr->j.out[FR_CO_ATTENTION_OUT].m.n_anomaly_mismatch))
        return;
    const fr_tensor *um = &c->in.fwd.atten_mask;
    fr_params pa = c->params;
    double ea = reading_err(c, &pa, NULL, iut), eb = INFINITY, ec;
    fr_tensor fm = *um; /* the formula as a mask of the user mask's shape: reading A on it is reading B */
    int64_t n = fr_tensor_numel(um);
    fm.data = malloc((size_t)(n > 0 ? n : 1));
    if (fm.data && um->ndim == 4 && c->params.prefix) {
        int64_t S1 = um->shape[2], S2 = um->shape[3];
        uint8_t *m = fm.data;
        for (int64_t k = 0; k < n; k++) {
            int64_t j = k % S2, i = (k / S2) % S1, b = k / (S2 * S1 * um->shape[1]);
            int64_t pre = b < c->params.prefix_len ? c->params.prefix[b] : 0;
            m[k] = (uint8_t)(j > i + S2 - S1 && j >= pre);
        }
        eb = reading_err(c, &pa, &fm, iut);
    }
    free(fm.data);
    fr_params pc = c->params;
    pc.sparse_mode = 1;
    ec = reading_err(c, &pc, NULL, iut);
    double best = fmin(ea, fmin(eb, ec)), bound = cr->j.out[FR_CO_ATTENTION_OUT].bound_l2;
    const char *which = !(best <= fmax(bound, 1e-2)) ? "none of the readings"
                        : best == ea                 ? "reading A (mask OR formula: flashref's decision)"
                        : best == eb                 ? "reading B (the formula alone, mask content ignored)"
                                                     : "reading C (the mask alone, no causal/prefix band)";
    double tie = fmax(bound, 1e-2);
    int ties = (ea <= tie) + (eb <= tie) + (ec <= tie);
    snprintf(cr->info, sizeof cr->info, "mode 5 + prefix with a contradicting mask: follows %s%s; rel-L2 vs A %.3g, "
             "B %.3g, C %.3g", which, ties > 1 ? " (another reading gives the same here)" : "", ea, eb, ec);
    cr->j.verdict = FR_PASS;
    cr->j.diag = FR_DIAG_NONE;
    snprintf(cr->j.why, sizeof cr->j.why, "INFO: %s", cr->info);
}

static fr_status run_item(fr_iut *iut, const item *it, const fr_suite_opts *o, fr_case_result *cr, fr_error *err) {
    memset(cr, 0, sizeof *cr);
    snprintf(cr->name, sizeof cr->name, "%s", it->spec->name);
    cr->cat = it->cat;
    cr->tags = it->tags;
    cr->purpose = it->e ? it->e->tags : 0;
    if (it->e && it->e->series) snprintf(cr->series, sizeof cr->series, "%s", it->e->series);
    cr->bwd = it->spec->bwd;
    cr->has_cell = true;
    fr_matrix_classify(it->spec, cr->cell);
    if (it->drawn) fr_matrix_describe(it->spec, cr->config, sizeof cr->config);
    double t0 = now_s();
    fr_gen_case g;
    fr_status st = fr_gen_build(it->spec, o->seed, &g, err);
    if (st == FR_OK) st = apply_mod(&g, it->mod, err);
    if (st != FR_OK) {
        cr->j.verdict = st == FR_E_UNSUPPORTED ? FR_SKIP : FR_FAIL;
        cr->j.diag = st == FR_E_UNSUPPORTED ? FR_DIAG_NONE : FR_DIAG_ERROR_STATUS;
        snprintf(cr->j.why, sizeof cr->j.why, "case generation failed: %s: %.300s", fr_status_name(st), err->msg);
        if (st == FR_OK) fr_gen_case_free(&g);
        return FR_OK;
    }
    fr_case c;
    case_view(&g, &c);
    cr->dtype = g.dtype;
    fr_problem pb;
    if ((c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, NULL)
                             : fr_problem_from_bwd(&c.params, &c.in, &pb, NULL)) == FR_OK) {
        cr->S1 = pb.S1;
        cr->S2 = pb.S2;
    }
    bool keep = it->cat == FR_CAT_ORDER || it->cat == FR_CAT_DETERMINISM;
    fr_case_outputs base;
    memset(&base, 0, sizeof base);
    bool impldef = it->cat == FR_CAT_IMPLDEF;
    keep = keep || impldef;
    st = judge_one(iut, &c, NULL, cr->tags, o, keep ? &base : NULL, cr, err);
    if (st == FR_OK && impldef) impldef_reading(&c, &base, cr);
    if (st == FR_OK && keep && cr->j.verdict != FR_SKIP &&
        fr_tensor_present(&base.fwd.attention_out) + fr_tensor_present(&base.bwd.dq) > 0) {
        if (it->cat == FR_CAT_DETERMINISM) {
            if (!fr_iut_is_builtin(iut)) {
                snprintf(cr->extra, sizeof cr->extra, "determinism runs apply to built-in engines only");
            } else {
                static const int kThreads[] = {1, 2, 0, 0};
                int diff = -1, first = -1;
                for (int r = 0; r < 4 && diff < 0; r++) {
                    fr_case_outputs again;
                    fr_error e2;
                    if (fr_iut_run(iut, &c, kThreads[r], &again, &e2) != FR_OK) {
                        diff = r;
                        first = -2;
                        break;
                    }
                    if (!fr_outputs_identical(&base, &again, &first)) diff = r;
                    fr_case_outputs_free(&again);
                }
                if (diff >= 0) {
                    char why[200];
                    snprintf(why, sizeof why, "run %d (threads %d) differs from the first run in %s", diff + 2,
                             kThreads[diff], first >= 0 ? fr_case_output_name((fr_case_output)first) : "status");
                    downgrade(cr, FR_WARN, FR_DIAG_NONDETERMINISM, why);
                }
                snprintf(cr->extra, sizeof cr->extra, "4 more runs (threads 1, 2, default x2): %s",
                         diff >= 0 ? "results differ" : "bitwise identical");
            }
        } else if (fr_tensor_present(&c.in.fwd.topk_indices)) {
            /* Order invariance: the same key sets in 3 more orders. */
            double worst = 0,
                   bound = o->judge.k_out * fmax(cr->j.out[FR_CO_ATTENTION_OUT].ideal.rel_l2, ldexp(1.0, -24));
            int nv = 0;
            for (int v = 1; v <= 3; v++) {
                fr_gen_case g2;
                if (fr_gen_build(it->spec, o->seed, &g2, err) != FR_OK) break;
                permute_topk(&g2.in.fwd.topk_indices, v, g2.seed);
                fr_case c2;
                case_view(&g2, &c2);
                fr_case_result vr;
                memset(&vr, 0, sizeof vr);
                vr.cat = cr->cat;
                fr_case_outputs vo;
                memset(&vo, 0, sizeof vo);
                if (judge_one(iut, &c2, NULL, cr->tags, o, &vo, &vr, err) == FR_OK) {
                    nv++;
                    if (vr.j.verdict == FR_FAIL && cr->j.verdict != FR_FAIL) {
                        cr->j.verdict = FR_FAIL;
                        cr->j.diag = vr.j.diag == FR_DIAG_PRECISION ? FR_DIAG_ORDER_DEPENDENCE : vr.j.diag;
                        snprintf(cr->j.why, sizeof cr->j.why, "order variant %d: %.300s", v, vr.j.why);
                    }
                    if (fr_tensor_present(&vo.fwd.attention_out))
                        worst = fmax(worst, out_rel_l2(&vo, &base, FR_CO_ATTENTION_OUT));
                }
                fr_judgement_free(&vr.j);
                fr_case_outputs_free(&vo);
                fr_gen_case_free(&g2);
            }
            snprintf(cr->extra, sizeof cr->extra, "%d reorderings: max rel-L2 between orders %.3g (bound %.3g)", nv,
                     worst, bound);
            if (worst > bound) {
                char why[200];
                snprintf(why, sizeof why, "outputs differ between key orders: rel-L2 %.3g > %.3g", worst, bound);
                downgrade(cr, FR_WARN, FR_DIAG_ORDER_DEPENDENCE, why);
            }
        }
    }
    fr_case_outputs_free(&base);
    fr_gen_case_free(&g);
    cr->seconds = now_s() - t0;
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Regression cases: directories with case.json, the inputs and golden/ (fp64 outputs); suite.txt gives tags. */

static unsigned read_tags(const char *dir, fr_suite_cat *cat) {
    char path[4096];
    snprintf(path, sizeof path, "%s/suite.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char cname[64] = "";
    unsigned tags = 0;
    if (fscanf(f, "category=%63s tags=%u", cname, &tags) >= 1 && cat)
        for (int k = 0; k < FR_CAT_COUNT; k++) {
            char nm[64];
            snprintf(nm, sizeof nm, "%s", kCatNames[k]);
            for (char *p = nm; *p; p++)
                if (*p == ' ') *p = '_';
            if (!strcmp(nm, cname)) *cat = (fr_suite_cat)k;
        }
    fclose(f);
    return tags;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted subdirectory names of dir that hold a case.json (malloc'd). */
static int list_case_dirs(const char *dir, char ***out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/case.json", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, sizeof(char *) * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        v[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
        if (!v[n]) break;
        sprintf(v[n], "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* The stored fp64 golden outputs of c in gdir, each header's shape checked against the operator's before its data is
 * read (a wrong-shaped reference must not reach the judge). */
static fr_status load_stored_golden(const fr_case *c, const char *gdir, fr_case_outputs *stored, fr_error *err) {
    memset(stored, 0, sizeof *stored);
    fr_case_outputs want;
    fr_status st = fr_case_alloc_outputs(c, true, &want, err);
    if (st != FR_OK) return st;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        const fr_tensor *w = fr_case_output_cslot(&want, (fr_case_output)k);
        if (!fr_tensor_present(w)) continue;
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/%s.npy", gdir, fr_case_output_name((fr_case_output)k));
        fr_npy_header h;
        if ((st = fr_npy_read_file_header(path, &h, err)) != FR_OK) break;
        if (h.ndim != w->ndim || memcmp(h.shape, w->shape, sizeof(int64_t) * (size_t)h.ndim) != 0) {
            char a[160] = "[", b[160] = "[";
            for (int d = 0; d < h.ndim; d++)
                snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "," : "", (long long)h.shape[d]);
            for (int d = 0; d < w->ndim; d++)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "," : "", (long long)w->shape[d]);
            st = fr_fail(err, FR_E_FORMAT, "%s: shape %s], expected %s]", path, a, b);
        }
    }
    fr_case_outputs_free(&want);
    if (st == FR_OK) st = fr_case_load_outputs(c, gdir, stored, err);
    return st;
}

/* Judges one case directory: against stored golden outputs (golden/) when present, else a fresh golden. The IUT is
 * `iut`, or the outputs on disk when iut is NULL. */
static fr_status run_dir(fr_iut *iut, const char *dir, fr_suite_cat cat, const fr_suite_opts *o, fr_case_result *cr,
                         fr_error *err) {
    memset(cr, 0, sizeof *cr);
    snprintf(cr->name, sizeof cr->name, "%s", base_name(dir));
    cr->cat = cat;
    cr->tags = read_tags(dir, &cr->cat);
    cr->purpose = cr->tags;
    if (cat == FR_CAT_REGRESSION) cr->cat = FR_CAT_REGRESSION;
    double t0 = now_s();
    fr_case c;
    fr_error le;
    fr_status st = fr_case_load(dir, &c, &le);
    if (st != FR_OK) {
        cr->j.verdict = FR_FAIL;
        cr->j.diag = FR_DIAG_ERROR_STATUS;
        snprintf(cr->j.why, sizeof cr->j.why, "cannot load the case: %s: %.300s", fr_status_name(st), le.msg);
        return FR_OK;
    }
    cr->dtype = c.dtype;
    cr->bwd = c.op == FR_CASE_BWD;
    fr_problem pb;
    if ((c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, NULL)
                             : fr_problem_from_bwd(&c.params, &c.in, &pb, NULL)) == FR_OK) {
        cr->S1 = pb.S1;
        cr->S2 = pb.S2;
    }
    fr_case_outputs stored;
    char gdir[4096];
    snprintf(gdir, sizeof gdir, "%s/golden", dir);
    struct stat sb;
    bool have_stored = false;
    if (stat(gdir, &sb) == 0) {
        /* A stored reference that cannot be used is this case's input error, named with its path; the other cases
         * are judged. */
        if ((st = load_stored_golden(&c, gdir, &stored, &le)) != FR_OK) {
            cr->j.verdict = FR_FAIL;
            cr->j.diag = FR_DIAG_ERROR_STATUS;
            snprintf(cr->j.why, sizeof cr->j.why, "cannot load the stored golden: %s: %.300s", fr_status_name(st),
                     le.msg);
            fr_case_free(&c);
            return FR_OK;
        }
        have_stored = true;
    }
    fr_iut *disk = NULL;
    if (!iut && (st = fr_iut_open_disk(&disk, err)) != FR_OK) {
        fr_case_free(&c);
        if (have_stored) fr_case_outputs_free(&stored);
        return st;
    }
    st = judge_one(iut ? iut : disk, &c, have_stored ? &stored : NULL, cr->tags, o, NULL, cr, &le);
    if (st != FR_OK) {
        /* This case could not be judged (out of memory, a reference the judge cannot use): its error, not the run's. */
        memset(&cr->j, 0, sizeof cr->j);
        cr->j.verdict = FR_FAIL;
        cr->j.diag = FR_DIAG_ERROR_STATUS;
        cr->j.ratio = INFINITY;
        snprintf(cr->j.why, sizeof cr->j.why, "cannot judge the case %s: %s: %.300s", dir, fr_status_name(st), le.msg);
        st = FR_OK;
    }
    fr_iut_close(disk);
    if (have_stored) fr_case_outputs_free(&stored);
    fr_case_free(&c);
    cr->seconds = now_s() - t0;
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */

static int diag_generic(fr_diag d) {
    /* Consequences of many defects: chosen only when nothing more specific was found. */
    return d == FR_DIAG_PRECISION || d == FR_DIAG_NAN || d == FR_DIAG_MASK || d == FR_DIAG_PSE ||
           d == FR_DIAG_GRADIENT || d == FR_DIAG_ERROR_STATUS || d == FR_DIAG_FULLY_MASKED || d == FR_DIAG_UNKNOWN;
}

/* The tag a diagnosis is the purpose of (0: none). */
static unsigned diag_purpose(fr_diag d) {
    switch (d) {
    case FR_DIAG_TILE_TAIL: return FR_TAG_TAIL;
    case FR_DIAG_HEAD_DIM: return FR_TAG_HEADDIM;
    case FR_DIAG_VARLEN: return FR_TAG_VARLEN;
    case FR_DIAG_MASK_SENTINEL: return FR_TAG_SENTINEL;
    case FR_DIAG_NAN_LEAK: return FR_TAG_NAN_KV;
    case FR_DIAG_OVERFLOW: return FR_TAG_LARGE;
    case FR_DIAG_INDEX32: return FR_TAG_INDEX64;
    case FR_DIAG_DROPOUT: return FR_TAG_DROPOUT;
    case FR_DIAG_STALE_MAX: return FR_TAG_PEAKED;
    case FR_DIAG_NAN_FULLY_MASKED:
    case FR_DIAG_FULLY_MASKED: return FR_TAG_D1;
    default: return 0;
    }
}

void fr_suite_summarize(fr_suite_result *r) {
    memset(r->count, 0, sizeof r->count);
    int nd[FR_DIAG_COUNT][2];
    memset(nd, 0, sizeof nd);
    bool fail = false, warn = false, any = false;
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        r->count[c->cat][c->j.verdict]++;
        /* A case designed for a failure class that gets that diagnosis is stronger evidence than a side effect. */
        int w = (diag_purpose(c->j.diag) & c->purpose) ? 3 : 1;
        if (c->j.verdict == FR_FAIL) fail = true, nd[c->j.diag][0] += w;
        if (c->j.verdict == FR_WARN) warn = true, nd[c->j.diag][1] += w;
        if (c->j.verdict != FR_SKIP) any = true;
    }
    r->overall = fail ? FR_FAIL : warn ? FR_WARN : any ? FR_PASS : FR_SKIP;
    r->primary = FR_DIAG_NONE;
    int col = fail ? 0 : 1, best = 0;
    if (fail || warn)
        for (int pass = 0; pass < 2 && r->primary == FR_DIAG_NONE; pass++)
            for (int d = 1; d < FR_DIAG_COUNT; d++)
                if ((pass == 1 || !diag_generic((fr_diag)d)) && nd[d][col] > best) {
                    best = nd[d][col];
                    r->primary = (fr_diag)d;
                }
}

/* Length series: the IUT's error relative to the ideal pipeline's must not grow with S2 (verification-method.md 3, WARN
 * "error that grows with sequence length faster than the ideal pipeline's"). */
static void check_growth(fr_suite_result *r, const fr_judge_opts *jo) {
    for (int a = 0; a < r->n; a++) {
        if (!r->cases[a].series[0]) continue;
        bool first = true;
        for (int b = 0; b < a && first; b++)
            first = strcmp(r->cases[b].series, r->cases[a].series) != 0;
        if (!first) continue;
        int lo = -1, hi = -1, cnt = 0;
        for (int b = a; b < r->n; b++) {
            const fr_case_result *c = &r->cases[b];
            const fr_out_judgement *o = &c->j.out[FR_CO_ATTENTION_OUT];
            if (strcmp(c->series, r->cases[a].series) || !o->present || !o->have_ideal || !(o->ideal.rel_l2 > 0) ||
                (c->j.verdict != FR_PASS && c->j.verdict != FR_WARN))
                continue;
            cnt++;
            if (lo < 0 || c->S2 < r->cases[lo].S2) lo = b;
            if (hi < 0 || c->S2 > r->cases[hi].S2) hi = b;
        }
        if (cnt < 3) continue;
        const fr_out_judgement *ol = &r->cases[lo].j.out[FR_CO_ATTENTION_OUT],
                               *oh = &r->cases[hi].j.out[FR_CO_ATTENTION_OUT];
        double rl = ol->m.rel_l2 / ol->ideal.rel_l2, rh = oh->m.rel_l2 / oh->ideal.rel_l2;
        fr_case_result *c = &r->cases[hi];
        snprintf(c->extra, sizeof c->extra,
                 "series %s: error / ideal's %.3g at S2 = %lld, %.3g at S2 = %lld (%d cases)", c->series, rl,
                 (long long)r->cases[lo].S2, rh, (long long)c->S2, cnt);
        if (rh > jo->growth_warn * fmax(rl, 0.5) && rh > 1.0) {
            char why[200];
            snprintf(why, sizeof why,
                     "error grows with S2 faster than the ideal pipeline's: %.3g -> %.3g x (warn above "
                     "%g x)",
                     rl, rh, jo->growth_warn);
            downgrade(c, FR_WARN, FR_DIAG_GROWTH, why);
        }
    }
}

/* True (and res->stopped says why) once the implementation has failed identically FR_IUT_GIVE_UP_AFTER times. */
static bool stop_early(const fr_iut *iut, fr_suite_result *res) {
    const char *why = iut ? fr_iut_gave_up(iut) : NULL;
    if (!why) return false;
    snprintf(res->stopped, sizeof res->stopped, "stopped early after %d identical consecutive errors (%d of %d cases "
             "run): %.380s", FR_IUT_GIVE_UP_AFTER, res->n, res->planned, why);
    return true;
}

fr_status fr_suite_set_coverage(const char *set, fr_coverage *cv, fr_error *err) {
    unsigned bits = set_bits(set);
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all", set ? set : "");
    select_t sel = {NULL, NULL};
    int n = collect(bits, &sel, NULL, 0, NULL);
    item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) return fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    collect(bits, &sel, NULL, 0, it);
    for (int k = 0; k < n; k++) {
        int cell[FR_AX_COUNT];
        fr_matrix_classify(it[k].spec, cell);
        fr_coverage_add(cv, cell);
    }
    free(it);
    return FR_OK;
}

void fr_suite_coverage(const fr_suite_result *r, fr_coverage *cv) {
    for (int k = 0; k < r->n; k++)
        if (r->cases[k].has_cell) fr_coverage_add(cv, r->cases[k].cell);
}

/* The random draws of a run: o->random of them, or K + 1 for `--only rnd_K` alone (draw K is the same in every batch
 * of more than K draws with the seed). *d NULL, *n 0 when the run has none. Batches start from the default set's
 * coverage, so they go first where the fixed cases leave gaps. */
static fr_status make_draws(const fr_suite_opts *o, fr_draw **d, int *n, fr_error *err) {
    *d = NULL;
    *n = 0;
    int want = o->random;
    if (want <= 0 && o->only && !strncmp(o->only, "rnd_", 4)) {
        char *end;
        long k = strtol(o->only + 4, &end, 10);
        if (!*end && end != o->only + 4 && k >= 0 && k < FR_SUITE_MAX_RANDOM) want = (int)k + 1;
    }
    if (want <= 0) return FR_OK;
    if (want > FR_SUITE_MAX_RANDOM)
        return fr_fail(err, FR_E_INVALID_ARG, "--random: %d draws, at most %d", want, FR_SUITE_MAX_RANDOM);
    fr_coverage cv;
    fr_status st = fr_coverage_init(&cv, err);
    if (st != FR_OK) return st;
    if ((st = fr_suite_set_coverage("default", &cv, err)) != FR_OK) {
        fr_coverage_free(&cv);
        return st;
    }
    *d = calloc((size_t)want, sizeof **d);
    if (!*d) st = fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    fr_draw_limits lim = fr_draw_limits_default();
    if (st == FR_OK) st = fr_random_batch(o->seed, want, &cv, &lim, *d, err);
    fr_coverage_free(&cv);
    if (st != FR_OK) {
        free(*d);
        *d = NULL;
        return st;
    }
    *n = want;
    return FR_OK;
}

static fr_status run_all(fr_iut *iut, const fr_suite_opts *o, fr_suite_result *res, fr_error *err) {
    memset(res, 0, sizeof *res);
    unsigned bits = set_bits(o->set);
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all",
                       o->set ? o->set : "");
    double t0 = now_s();
    fr_draw *draws;
    int nd;
    fr_status st = make_draws(o, &draws, &nd, err);
    if (st != FR_OK) return st;
    select_t sel = {o->filter, o->only};
    int n = collect(bits, &sel, draws, nd, NULL);
    char **rdirs = NULL;
    int nr = 0;
    if (!draws && o->regression_dir && (bits & (FR_SET_QUICK | FR_SET_DEFAULT))) {
        char **all;
        int na = list_case_dirs(o->regression_dir, &all);
        if (na < 0)
            return fr_fail(err, FR_E_IO, "--regression: %s: %s", o->regression_dir, strerror(errno));
        rdirs = calloc((size_t)na + 1, sizeof *rdirs);
        for (int k = 0; k < na; k++) {
            if (rdirs && selected(base_name(all[k]), &sel))
                rdirs[nr++] = all[k];
            else
                free(all[k]);
        }
        free(all);
    }
    item *it = calloc((size_t)n + 1, sizeof *it);
    res->cases = calloc((size_t)(n + nr) + 1, sizeof *res->cases);
    if (!it || !res->cases) {
        free(it);
        for (int k = 0; k < nr; k++)
            free(rdirs[k]);
        free(rdirs);
        free(draws);
        return fr_fail(err, FR_E_NOMEM, "suite: out of memory");
    }
    collect(bits, &sel, draws, nd, it);
    int total = n + nr;
    res->planned = total;
    if (o->parts > 1) { /* one part of a distributed run: case k at place k, then gathered */
        unsigned char *mine = calloc((size_t)total + 1, 1);
        if (!mine) st = fr_fail(err, FR_E_NOMEM, "suite: out of memory");
        for (int k = 0; k < total && st == FR_OK; k++) {
            if (k % o->parts != o->part) continue;
            st = k < nr ? run_dir(iut, rdirs[k], FR_CAT_REGRESSION, o, &res->cases[k], err)
                        : run_item(iut, &it[k - nr], o, &res->cases[k], err);
            mine[k] = st == FR_OK;
            if (o->progress && st == FR_OK) o->progress(o->progress_ud, k + 1, total, &res->cases[k]);
        }
        /* Collective: every part calls it, whatever its own status (it returns the first failing part's). */
        if (o->gather) st = o->gather(o->gather_ud, res, total, mine, st, err);
        if (st == FR_OK) res->n = total;
        free(mine);
        n = 0; /* skip the single-run loops below */
        total = 0;
    }
    for (int k = 0; k < nr && total && st == FR_OK && !stop_early(iut, res); k++) {
        st = run_dir(iut, rdirs[k], FR_CAT_REGRESSION, o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o->progress && res->n) o->progress(o->progress_ud, res->n, total, &res->cases[res->n - 1]);
    }
    for (int k = 0; k < n && st == FR_OK && !stop_early(iut, res); k++) {
        st = run_item(iut, &it[k], o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o->progress && res->n) o->progress(o->progress_ud, res->n, total, &res->cases[res->n - 1]);
    }
    for (int k = 0; k < nr; k++)
        free(rdirs[k]);
    free(rdirs);
    free(it);
    if (st == FR_OK && draws && (o->shrink || o->promote_dir))
        st = fr_suite_shrink_failures(iut, res, draws, nd, o, err);
    free(draws);
    check_growth(res, &o->judge);
    fr_suite_summarize(res);
    res->seconds = now_s() - t0;
    return st;
}

fr_status fr_suite_judge_spec(fr_iut *iut, const fr_gen_spec *spec, const fr_suite_opts *o, fr_case_result *cr,
                              fr_error *err) {
    item it = {NULL, spec, spec->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE, spec_tags(spec), FR_MOD_NONE,
               "random draw from the option matrix", true};
    return run_item(iut, &it, o, cr, err);
}

fr_status fr_suite_run(fr_iut *iut, const fr_suite_opts *o_in, fr_suite_result *res, fr_error *err) {
    fr_suite_opts o = o_in ? *o_in : fr_suite_opts_default();
    o.judge.external = o.judge.external || !fr_iut_is_builtin(iut);
    return run_all(iut, &o, res, err);
}

fr_status fr_suite_verify_dirs(char *const *dirs, int ndirs, const fr_suite_opts *o_in, fr_suite_result *res,
                               fr_error *err) {
    fr_suite_opts o = o_in ? *o_in : fr_suite_opts_default();
    o.judge.external = true;
    memset(res, 0, sizeof *res);
    double t0 = now_s();
    res->cases = calloc((size_t)ndirs + 1, sizeof *res->cases);
    if (!res->cases) return fr_fail(err, FR_E_NOMEM, "verify: out of memory");
    fr_status st = FR_OK;
    for (int k = 0; k < ndirs && st == FR_OK; k++) {
        select_t sel = {o.filter, o.only};
        if (!selected(base_name(dirs[k]), &sel)) continue;
        st = run_dir(NULL, dirs[k], FR_CAT_EQUIVALENCE, &o, &res->cases[res->n], err);
        if (st == FR_OK) res->n++;
        if (o.progress && res->n) o.progress(o.progress_ud, res->n, ndirs, &res->cases[res->n - 1]);
    }
    fr_suite_summarize(res);
    res->seconds = now_s() - t0;
    return st;
}

void fr_suite_result_free(fr_suite_result *r) {
    if (!r) return;
    for (int k = 0; k < r->n; k++)
        fr_judgement_free(&r->cases[k].j);
    free(r->cases);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------------------------------------------------- */

static fr_status write_one(const fr_gen_case *g, const char *dir, fr_suite_cat cat, unsigned tags, fr_error *err) {
    fr_case c;
    case_view(g, &c);
    fr_status st = fr_case_write_parts(dir, c.op, c.dtype, &c.params, &c.in, err);
    if (st != FR_OK) return st;
    fr_case_outputs go;
    if ((st = run_engine(&c, FR_ENGINE_GOLDEN, &go, err)) != FR_OK) return st;
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/golden", dir);
    mkdir(p, 0777);
    st = fr_case_write_outputs(p, &go, err);
    fr_case_outputs_free(&go);
    if (st != FR_OK) return st;
    snprintf(p, sizeof p, "%.4000s/suite.txt", dir);
    FILE *f = fopen(p, "w");
    if (!f) return fr_fail(err, FR_E_IO, "%s: cannot write", p);
    char nm[64];
    snprintf(nm, sizeof nm, "%s", kCatNames[cat]);
    for (char *q = nm; *q; q++)
        if (*q == ' ') *q = '_';
    fprintf(f, "category=%s tags=%u\n", nm, tags);
    fclose(f);
    return FR_OK;
}

fr_status fr_suite_write_spec(const fr_gen_spec *spec, uint64_t seed, const char *dir, fr_suite_cat cat,
                              fr_error *err) {
    fr_gen_case g;
    fr_status st = fr_gen_build(spec, seed, &g, err);
    if (st != FR_OK) return st;
    mkdir(dir, 0777);
    st = write_one(&g, dir, cat, spec_tags(spec), err);
    fr_gen_case_free(&g);
    return st;
}

fr_status fr_suite_write_cases(const char *set, const char *filter, uint64_t seed, const char *dir, int *written,
                               fr_error *err) {
    return fr_suite_write_cases_part(set, filter, seed, dir, 0, 1, written, err);
}

/* Case k of the set is written when k % parts == part (mpirun flashref golden --set: one share per rank). */
static fr_status write_opts_part(const fr_suite_opts *o, const char *dir, int part, int parts, int *written,
                                 fr_error *err);

fr_status fr_suite_write_cases_part(const char *set, const char *filter, uint64_t seed, const char *dir, int part,
                                    int parts, int *written, fr_error *err) {
    fr_suite_opts o = fr_suite_opts_default();
    o.set = set;
    o.filter = filter;
    o.seed = seed;
    return write_opts_part(&o, dir, part, parts, written, err);
}

fr_status fr_suite_write_opts(const fr_suite_opts *o, const char *dir, int *written, fr_error *err) {
    return write_opts_part(o, dir, 0, 1, written, err);
}

static fr_status write_opts_part(const fr_suite_opts *o, const char *dir, int part, int parts, int *written,
                                 fr_error *err) {
    if (written) *written = 0;
    unsigned bits = set_bits(o->set);
    uint64_t seed = o->seed;
    if (!bits)
        return fr_fail(err, FR_E_INVALID_ARG, "--set: '%s': expected quick, default, long or all",
                       o->set ? o->set : "");
    fr_draw *draws;
    int nd;
    fr_status st = make_draws(o, &draws, &nd, err);
    if (st != FR_OK) return st;
    mkdir(dir, 0777);
    select_t sel = {o->filter, o->only};
    int n = collect(bits, &sel, draws, nd, NULL);
    item *it = calloc((size_t)n + 1, sizeof *it);
    if (!it) {
        free(draws);
        return fr_fail(err, FR_E_NOMEM, "out of memory");
    }
    collect(bits, &sel, draws, nd, it);
    for (int k = 0; k < n && st == FR_OK; k++) {
        if (parts > 1 && k % parts != part) continue; /* another rank's case (mpirun flashref golden --set) */
        int variants = it[k].cat == FR_CAT_ORDER && it[k].spec->topk_w ? 4 : 1;
        for (int v = 0; v < variants && st == FR_OK; v++) {
            fr_gen_case g;
            if ((st = fr_gen_build(it[k].spec, seed, &g, err)) != FR_OK) break;
            st = apply_mod(&g, it[k].mod, err);
            if (st == FR_OK && v) permute_topk(&g.in.fwd.topk_indices, v, g.seed);
            char p[4096];
            if (v)
                snprintf(p, sizeof p, "%s/%s_order%d", dir, it[k].spec->name, v);
            else
                snprintf(p, sizeof p, "%s/%s", dir, it[k].spec->name);
            if (st == FR_OK) st = write_one(&g, p, it[k].cat, it[k].tags, err);
            if (st == FR_OK && written) (*written)++;
            fr_gen_case_free(&g);
        }
    }
    free(it);
    free(draws);
    return st;
}
