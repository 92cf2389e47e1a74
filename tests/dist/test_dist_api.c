/* The in-memory distributed API (src/dist/dist.c, dist_suite.c), run as a plain process and under mpirun -n 1, 2, 3
 * (tests/dist/mpi_ranks.sh): fr_dist_fwd / fr_dist_bwd with the golden merge onto rank 0 outputs bit-identical to a
 * single-process fr_fwd / fr_bwd (GQA, masks, band, rope, sink, ALiBi, dropout, TND varlen, fp64 and operator
 * dtypes, empty problems), also on outputs reused or holding different bytes on each rank; an engine without a part
 * grid runs on rank 0 alone; a rank whose inputs or outputs are invalid (or NULL), or a negative thread count, stops
 * every rank with one process's status, the failing rank's own message on it and "dist: rank K of R failed"
 * elsewhere; the collectives (any, sum, max, barrier, merge_bytes, agree) and the suite's gather give their
 * documented values; with the allocation hook every allocation of one rank fails in turn. Every rank runs the same
 * collectives whatever its checks find, so a failed check never leaves a rank waiting. */
#include "dist/dist.h"

#include "common/check.h"
#include "core/core.h"
#include "io/casedir.h"
#include "verify/cases/casegen.h"
#include "verify/suite/suite.h"
#ifdef FR_TEST_ALLOC_HOOK
#include "core/alloc_hook.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fr_dist g_d;
enum { SEED = 20261203 };

/* The message a rank that did not fail gets from fr_dist_agree. */
static const char *other_msg(int first) {
    static char m[96];
    snprintf(m, sizeof m, "dist: rank %d of %d failed", first, g_d.size);
    return m;
}

/* Whether every present output of a and b holds the same bytes (names the first that differs in *which). */
static bool same_outputs(const fr_case_outputs *a, const fr_case_outputs *b, const char **which) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *x = fr_case_output_cslot(a, (fr_case_output)k);
        const fr_tensor *y = fr_case_output_cslot(b, (fr_case_output)k);
        if (!fr_tensor_present(x) && !fr_tensor_present(y)) continue;
        *which = fr_case_output_name((fr_case_output)k);
        if (x->dtype != y->dtype || fr_tensor_numel(x) != fr_tensor_numel(y)) return false;
        if (fr_tensor_numel(x) == 0) continue; /* an empty output may have no data */
        if (memcmp(x->data, y->data, (size_t)fr_tensor_numel(x) * fr_dtype_size(x->dtype)) != 0) return false;
    }
    return true;
}

/* Whether the first element of every present output is still the NaN prefill (fr_case_alloc_outputs). */
static bool untouched(const fr_case_outputs *o) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *t = fr_case_output_cslot(o, (fr_case_output)k);
        if (!fr_tensor_present(t) || fr_tensor_numel(t) == 0) continue;
        float f = 0;
        if (t->dtype == FR_F64) f = (float)((const double *)t->data)[0];
        else if (t->dtype == FR_F32) f = ((const float *)t->data)[0];
        else if (t->dtype == FR_F16) f = fr_f16_to_f32(((const uint16_t *)t->data)[0]);
        else if (t->dtype == FR_BF16) f = fr_bf16_to_f32(((const uint16_t *)t->data)[0]);
        if (!isnan(f)) return false;
    }
    return true;
}

static fr_status run_single(const fr_gen_case *g, fr_case_outputs *o, const fr_engine *e, fr_error *err) {
    return g->bwd ? fr_bwd(&g->params, &g->in, &o->bwd, e, err) : fr_fwd(&g->params, &g->in.fwd, &o->fwd, e, err);
}

static fr_status run_dist(const fr_gen_case *g, fr_case_outputs *o, const fr_engine *e, fr_error *err) {
    return g->bwd ? fr_dist_bwd(&g_d, &g->params, &g->in, o ? &o->bwd : NULL, e, err)
                  : fr_dist_fwd(&g_d, &g->params, &g->in.fwd, o ? &o->fwd : NULL, e, err);
}

/* Builds the case of s (the same on every rank: the generator is seeded) and its NaN-filled outputs. */
static bool build(const fr_gen_spec *s, bool fp64, fr_gen_case *g, fr_case_outputs *o) {
    fr_error err = {0};
    fr_status st = fr_gen_build(s, SEED, g, &err);
    if (!CHECKED(st == FR_OK, "%s: build: %s", s->name, err.msg)) return false;
    st = fr_case_alloc_outputs_parts(g->bwd ? FR_CASE_BWD : FR_CASE_FWD, &g->params, &g->in, fp64, o, &err);
    if (!CHECKED(st == FR_OK, "%s: outputs: %s", s->name, err.msg)) {
        fr_gen_case_free(g);
        return false;
    }
    return true;
}

/* A case built (outputs ref and got, the same shapes), run whole in this process into ref with engine kind (one
 * thread): every check's start. False (and nothing left allocated) when the case cannot be built. */
static bool prepare(const fr_gen_spec *s, bool fp64, fr_engine_kind kind, fr_gen_case *g, fr_case_outputs *ref,
                    fr_case_outputs *got, fr_engine *e) {
    /* a case that cannot be built fails its check on every rank alike, so no rank is left in a collective */
    if (!build(s, fp64, g, ref)) return false;
    fr_error err = {0};
    *e = fr_engine_default(kind);
    e->num_threads = 1;
    CHECK(fr_case_alloc_outputs_parts(g->bwd ? FR_CASE_BWD : FR_CASE_FWD, &g->params, &g->in, fp64, got, &err) ==
          FR_OK);
    CHECK(run_single(g, ref, e, &err) == FR_OK, "%s: %s, single process: %s", s->name,
          kind == FR_ENGINE_GOLDEN ? "golden" : "fast", err.msg);
    return true;
}

/* The golden split over the ranks and merged onto rank 0: bit-identical to one process. */
static void check_golden(const fr_gen_spec *s, bool fp64) {
    fr_gen_case g;
    fr_case_outputs ref, got;
    fr_engine e;
    if (!prepare(s, fp64, FR_ENGINE_GOLDEN, &g, &ref, &got, &e)) return;
    fr_error err = {0};
    fr_status st = run_dist(&g, &got, &e, &err);
    CHECK(st == FR_OK, "%s: rank %d of %d: %s", s->name, g_d.rank, g_d.size, err.msg);
    const char *which = "";
    if (g_d.rank == 0)
        CHECK(same_outputs(&ref, &got, &which), "%s (%s outputs): %d ranks: %s differs from one process", s->name,
              fp64 ? "fp64" : "operator", g_d.size, which);
    printf("rank %d of %d: %s (%s outputs): golden split and merged\n", g_d.rank, g_d.size, s->name,
           fp64 ? "fp64" : "operator");
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&got);
    fr_gen_case_free(&g);
}

static const fr_gen_spec k_fwd_gqa = {.name = "fwd_gqa_rope_causal", .layout = FR_BNSD, .B = 2, .N1 = 4, .N2 = 2,
                                      .S1 = 200, .S2 = 150, .D = 16, .Drope = 8, .sparse_mode = 2,
                                      .mask = FR_GEN_MASK_CANONICAL};
static const fr_gen_spec k_bwd_gqa = {.name = "bwd_gqa_rope_sink", .bwd = true, .layout = FR_BSND, .B = 2, .N1 = 4,
                                      .N2 = 2, .S1 = 260, .S2 = 150, .D = 16, .Drope = 8, .sink = true,
                                      .sparse_mode = 3, .mask = FR_GEN_MASK_CANONICAL};

static void test_golden_bit_identical(void) {
    static const fr_gen_spec fwd_tnd = {.name = "fwd_tnd_alibi_dropout_sink", .layout = FR_TND, .B = 3, .N1 = 3,
                                        .N2 = 1, .seq_q = {100, 1, 257}, .seq_kv = {100, 1, 257}, .D = 24,
                                        .keep_prob = 0.8, .pse_type = 2, .pse = FR_GEN_PSE_SLOPES_N,
                                        .sparse_mode = 8, .mask = FR_GEN_MASK_CANONICAL, .sink = true};
    static const fr_gen_spec fwd_band = {.name = "fwd_band_fp16", .layout = FR_BSH, .dtype = FR_F16, .B = 1,
                                         .N1 = 2, .S1 = 390, .S2 = 333, .D = 16, .sparse_mode = 4, .set_band = true,
                                         .pre_tokens = 100, .next_tokens = 20, .mask = FR_GEN_MASK_CANONICAL};
    static const fr_gen_spec fwd_pse = {.name = "fwd_pse_user_mask", .layout = FR_SBH, .B = 2, .N1 = 2, .S1 = 140,
                                        .S2 = 90, .D = 8, .pse = FR_GEN_PSE_BNSS, .mask = FR_GEN_MASK_B1SS};
    static const fr_gen_spec fwd_same = {.name = "fwd_tnd_same_as_input", .layout = FR_TND, .B = 3, .N1 = 2,
                                         .seq_q = {130, 0, 140}, .seq_kv = {70, 5, 140}, .D = 8,
                                         .softmax_layout = FR_SOFTMAX_SAME_AS_INPUT};
    static const fr_gen_spec bwd_tnd = {.name = "bwd_tnd_dropout", .bwd = true, .layout = FR_TND, .B = 3, .N1 = 2,
                                        .seq_q = {130, 0, 140}, .seq_kv = {70, 5, 140}, .D = 8, .keep_prob = 0.9,
                                        .sparse_mode = 3, .mask = FR_GEN_MASK_CANONICAL};
    static const fr_gen_spec bwd_bf16 = {.name = "bwd_sbh_bf16_band", .bwd = true, .dtype = FR_BF16, .layout = FR_SBH,
                                         .B = 1, .N1 = 3, .S1 = 140, .S2 = 200, .D = 8, .sparse_mode = 4,
                                         .set_band = true, .pre_tokens = 60, .next_tokens = 10,
                                         .mask = FR_GEN_MASK_CANONICAL};
    /* empty outputs (no query rows): nothing to save or merge for them */
    static const fr_gen_spec fwd_empty = {.name = "fwd_no_query_rows", .B = 1, .N1 = 2, .S1 = 0, .S2 = 5, .D = 8};
    static const fr_gen_spec bwd_empty = {.name = "bwd_tnd_no_query_rows", .bwd = true, .layout = FR_TND, .B = 2,
                                          .N1 = 2, .seq_q = {0, 0}, .seq_kv = {3, 4}, .D = 8, .sink = true};
    check_golden(&fwd_empty, true);
    check_golden(&bwd_empty, true);
    check_golden(&k_fwd_gqa, true);
    check_golden(&k_fwd_gqa, false);
    check_golden(&fwd_tnd, true);
    check_golden(&fwd_band, false);
    check_golden(&fwd_pse, true);
    check_golden(&fwd_same, true);
    check_golden(&k_bwd_gqa, true);
    check_golden(&k_bwd_gqa, false);
    check_golden(&bwd_tnd, true);
    check_golden(&bwd_bf16, false);
}

/* The same outputs reused: a second call on the buffers the first left (the other ranks' hold their part and the
 * merge's leftovers), and outputs that start with different bytes on every rank. Rank 0's result must not depend on
 * what the outputs held (the merge once applied each rank's changes to rank 0's bytes, which is right only where the
 * ranks' outputs started alike: the second call on the same buffers gave garbage rows on rank 0). */
static void test_reuse(const fr_gen_spec *s) {
    fr_gen_case g;
    fr_case_outputs ref, got;
    fr_engine e;
    if (!prepare(s, true, FR_ENGINE_GOLDEN, &g, &ref, &got, &e)) return;
    fr_error err = {0};
    for (int call = 0; call < 3; call++) {
        if (call == 2) /* every rank's outputs start with its own bytes */
            for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
                fr_tensor *t = fr_case_output_slot(&got, (fr_case_output)k);
                if (fr_tensor_present(t))
                    memset(t->data, 0x40 + g_d.rank, (size_t)fr_tensor_numel(t) * fr_dtype_size(t->dtype));
            }
        fr_status st = run_dist(&g, &got, &e, &err);
        CHECK(st == FR_OK, "%s: call %d: %s", s->name, call, err.msg);
        const char *which = "";
        if (g_d.rank == 0)
            CHECK(same_outputs(&ref, &got, &which), "%s: call %d on the same outputs, %d ranks: %s differs", s->name,
                  call, g_d.size, which);
    }
    printf("rank %d of %d: %s: outputs reused\n", g_d.rank, g_d.size, s->name);
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&got);
    fr_gen_case_free(&g);
}

/* An engine without a part grid (fast) computes the whole problem on rank 0; the other ranks' outputs are left as
 * they were. */
static void test_fast_on_rank0(const fr_gen_spec *s) {
    fr_gen_case g;
    fr_case_outputs ref, got;
    fr_engine e;
    if (!prepare(s, false, FR_ENGINE_FAST, &g, &ref, &got, &e)) return;
    fr_error err = {0};
    fr_status st = run_dist(&g, &got, &e, &err);
    CHECK(st == FR_OK, "%s: fast, rank %d of %d: %s", s->name, g_d.rank, g_d.size, err.msg);
    const char *which = "";
    if (g_d.rank == 0)
        CHECK(same_outputs(&ref, &got, &which), "%s: fast on %d ranks: %s differs", s->name, g_d.size, which);
    else
        CHECK(untouched(&got), "%s: fast: rank %d of %d wrote its outputs", s->name, g_d.rank, g_d.size);
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&got);
    fr_gen_case_free(&g);
}

/* One run of case g with engine e where rank `bad` (every rank when bad < 0) passes pb / ob instead of its own
 * params and outputs: every rank must return want, the first failing rank (by rank) its own message `msg` and the
 * others "dist: rank K of R failed". */
static void expect_failure(const char *what, const fr_gen_case *g, const fr_engine *e, int bad, const fr_params *pb,
                           fr_case_outputs *good, fr_case_outputs *ob, bool null_out, fr_status want,
                           const char *msg) {
    fr_gen_case mine = *g;
    bool me = bad < 0 || bad == g_d.rank;
    if (me && pb) mine.params = *pb;
    fr_error err = {0};
    fr_status st = run_dist(&mine, me && null_out ? NULL : me && ob ? ob : good, e, &err);
    int first = bad < 0 ? 0 : bad;
    CHECK(st == want && err.status == want, "%s: rank %d of %d: status %s, want %s (%s)", what, g_d.rank, g_d.size,
          fr_status_name(st), fr_status_name(want), err.msg);
    const char *expect = g_d.rank == first ? msg : other_msg(first);
    CHECK(!strcmp(err.msg, expect), "%s: rank %d of %d: message \"%s\", want \"%s\"", what, g_d.rank, g_d.size,
          err.msg, expect);
}

/* Invalid inputs, outputs or engine on one rank or all: the same status on every rank (fr_dist_agree). */
static void test_failures(const fr_gen_spec *s) {
    fr_gen_case g;
    fr_case_outputs o, wrong;
    if (!build(s, true, &g, &o)) return;
    fr_error err = {0};
    const fr_case_op op = g.bwd ? FR_CASE_BWD : FR_CASE_FWD;
    /* outputs of the wrong shape: rejected by the output check */
    CHECK(fr_case_alloc_outputs_parts(op, &g.params, &g.in, false, &wrong, &err) == FR_OK);
    fr_tensor *w0 = fr_case_output_slot(&wrong, g.bwd ? FR_CO_DQ : FR_CO_ATTENTION_OUT);
    w0->shape[w0->ndim - 1] += 1; /* a wrong head dim (the data is not read: the check comes first) */
    fr_engine golden = fr_engine_default(FR_ENGINE_GOLDEN), fast = fr_engine_default(FR_ENGINE_FAST);
    golden.num_threads = fast.num_threads = 1;
    const int last = g_d.size - 1;
    /* The status and message one process gives for each fault: what the failing rank must say. */
    fr_params bad = g.params;
    bad.head_num = 3; /* N1 = 4 heads in the tensors */
    fr_case_outputs scratch;
    CHECK(fr_case_alloc_outputs_parts(op, &g.params, &g.in, true, &scratch, &err) == FR_OK);
    fr_error want_heads = {0}, want_out = {0}, want_null = {0}, want_engine = {0};
    fr_gen_case gb = g;
    gb.params = bad;
    run_single(&gb, &scratch, &golden, &want_heads);
    run_single(&g, &wrong, &golden, &want_out);
    fr_status null_st = g.bwd ? fr_bwd(&g.params, &g.in, NULL, &golden, &want_null)
                              : fr_fwd(&g.params, &g.in.fwd, NULL, &golden, &want_null);
    run_single(&g, &scratch, NULL, &want_engine);
    CHECK(want_heads.status == FR_E_HEADS, "%s: head_num 3 of 4 heads: %s", s->name, want_heads.msg);
    CHECK(want_out.status == FR_E_OUTPUT, "%s: a wrong output shape: %s", s->name, want_out.msg);
    CHECK(null_st == FR_E_NULL && !strcmp(want_null.msg, "outputs: NULL"), "%s: NULL outputs: %s", s->name,
          want_null.msg);
    CHECK(want_engine.status == FR_E_NULL && !strcmp(want_engine.msg, "engine: NULL"), "%s: NULL engine: %s",
          s->name, want_engine.msg);
    char what[160];
    snprintf(what, sizeof what, "%s: invalid params on the last rank", s->name);
    expect_failure(what, &g, &golden, last, &bad, &o, NULL, false, FR_E_HEADS, want_heads.msg);
    snprintf(what, sizeof what, "%s: invalid params on every rank", s->name);
    expect_failure(what, &g, &golden, -1, &bad, &o, NULL, false, FR_E_HEADS, want_heads.msg);
    snprintf(what, sizeof what, "%s: a wrong output shape on the last rank", s->name);
    expect_failure(what, &g, &golden, last, NULL, &o, &wrong, false, FR_E_OUTPUT, want_out.msg);
    snprintf(what, sizeof what, "%s: NULL outputs on every rank", s->name);
    expect_failure(what, &g, &golden, -1, NULL, &o, NULL, true, FR_E_NULL, "outputs: NULL");
    snprintf(what, sizeof what, "%s: NULL outputs on the last rank", s->name);
    expect_failure(what, &g, &golden, last, NULL, &o, NULL, true, FR_E_NULL, "outputs: NULL");
    /* No engine: not the golden, so it runs (and fails) on rank 0 alone. */
    snprintf(what, sizeof what, "%s: NULL engine", s->name);
    expect_failure(what, &g, NULL, 0, NULL, &o, NULL, false, FR_E_NULL, "engine: NULL");
    /* The fast engine runs on rank 0 alone: invalid params there fail every rank; on another rank they are never
     * looked at (the problem is rank 0's). */
    snprintf(what, sizeof what, "%s: fast engine, invalid params on rank 0", s->name);
    expect_failure(what, &g, &fast, 0, &bad, &o, NULL, false, FR_E_HEADS, want_heads.msg);
    fr_gen_case_free(&g);
    fr_case_outputs_free(&o);
    fr_case_outputs_free(&wrong);
    fr_case_outputs_free(&scratch);
    printf("rank %d of %d: %s: failures agreed on every rank\n", g_d.rank, g_d.size, s->name);
}

/* A negative thread count: refused as one process refuses it (fr_fwd: FR_E_INVALID_ARG), on every rank. */
static void test_bad_threads(const fr_gen_spec *s) {
    fr_gen_case g;
    fr_case_outputs o;
    if (!build(s, true, &g, &o)) return;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = -1;
    char what[160];
    snprintf(what, sizeof what, "%s: num_threads -1", s->name);
    expect_failure(what, &g, &e, -1, NULL, &o, NULL, false, FR_E_INVALID_ARG, "engine.num_threads: -1 < 0");
    fr_case_outputs_free(&o);
    fr_gen_case_free(&g);
}

#ifdef FR_TEST_ALLOC_HOOK
/* The last rank's k-th allocation fails, for every k of one run: every rank returns FR_E_NOMEM (the failing rank its
 * own message, the others "dist: rank K of R failed"), and once the run needs no more allocations it is
 * bit-identical to one process. The ranks go on together while the last rank's injected failure was hit. */
static void test_nomem(const fr_gen_spec *s) {
    fr_gen_case g;
    fr_case_outputs ref, got;
    fr_engine e;
    if (!prepare(s, true, FR_ENGINE_GOLDEN, &g, &ref, &got, &e)) return;
    fr_error err = {0};
    const int last = g_d.size - 1;
    long k = 1;
    int hit = 1, runs = 0;
    for (; hit && k < 10000; k++) {
        fr_alloc_hook_set(g_d.rank == last ? k : 0);
        fr_status st = run_dist(&g, &got, &e, &err);
        int mine = fr_alloc_hook_failed() != FR_ALLOC_NONE;
        fr_alloc_hook_set(0);
        hit = fr_dist_any(&g_d, mine);
        runs++;
        if (hit) {
            CHECK(st == FR_E_NOMEM, "%s: allocation %ld failed on rank %d: rank %d got %s (%s)", s->name, k, last,
                  g_d.rank, fr_status_name(st), err.msg);
            if (g_d.rank != last)
                CHECK(!strcmp(err.msg, other_msg(last)), "%s: allocation %ld: message \"%s\"", s->name, k, err.msg);
            else
                CHECK(strncmp(err.msg, "dist: rank ", 11) != 0, "%s: allocation %ld: the failing rank says \"%s\"",
                      s->name, k, err.msg);
        } else {
            CHECK(st == FR_OK, "%s: no allocation failed: %s", s->name, err.msg);
        }
    }
    const char *which = "";
    if (g_d.rank == 0)
        CHECK(same_outputs(&ref, &got, &which), "%s: after the failures: %s differs", s->name, which);
    CHECK(runs > 1 && !hit, "%s: %d runs with failing allocations", s->name, runs);
    printf("rank %d of %d: %s: %d allocation failures on rank %d, each agreed\n", g_d.rank, g_d.size, s->name, runs - 1,
           last);
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&got);
    fr_gen_case_free(&g);
}
#endif

/* The collectives' documented values. */
static void test_collectives(void) {
    const int R = g_d.size, r = g_d.rank;
    CHECK(fr_dist_any(&g_d, r == R - 1) == 1);
    CHECK(fr_dist_any(&g_d, 0) == 0);
    CHECK(fr_dist_sum(&g_d, r + 1) == (int64_t)R * (R + 1) / 2);
    CHECK(fr_dist_max(&g_d, 10 * (int64_t)r) == 10 * (int64_t)(R - 1));
    CHECK(fr_dist_max(&g_d, -(int64_t)r) == 0);
    fr_dist_barrier(&g_d);
    /* merge_bytes: byte k is changed by rank k % R only; rank 0 ends with every rank's change. */
    enum { N = 1000 };
    unsigned char base[N], buf[N];
    for (int k = 0; k < N; k++) base[k] = buf[k] = (unsigned char)(k * 13 + 5);
    for (int k = r; k < N; k += R) buf[k] = (unsigned char)(k * 7 + 1);
    CHECK(fr_dist_merge_bytes(&g_d, buf, base, 0) == 0);
    CHECK(fr_dist_merge_bytes(&g_d, buf, base, N) == 0);
    if (r == 0) {
        int bad = 0;
        for (int k = 0; k < N; k++) bad += buf[k] != (unsigned char)(k * 7 + 1);
        CHECK(bad == 0, "merge_bytes: %d of %d bytes are not their owner's", bad, N);
    }
    /* agree: nobody failed: FR_OK and err untouched */
    fr_error err = {FR_E_RANGE, "left alone"};
    CHECK(fr_dist_agree(&g_d, FR_OK, &err) == FR_OK && err.status == FR_E_RANGE && !strcmp(err.msg, "left alone"));
    /* the last rank fails: its status everywhere, its message on it */
    fr_status st = r == R - 1 ? fr_fail(&err, FR_E_IO, "disk on fire") : FR_OK;
    st = fr_dist_agree(&g_d, st, &err);
    CHECK(st == FR_E_IO && err.status == FR_E_IO, "agree: %s", fr_status_name(st));
    CHECK(!strcmp(err.msg, r == R - 1 ? "disk on fire" : other_msg(R - 1)), "agree: \"%s\"", err.msg);
    /* every rank but 0 fails, each differently: the lowest failing rank's status wins */
    st = r == 0 ? FR_OK : fr_fail(&err, r == 1 ? FR_E_RANGE : FR_E_SHAPE, "rank %d", r);
    st = fr_dist_agree(&g_d, st, &err);
    if (R == 1) {
        CHECK(st == FR_OK);
    } else {
        char m[32];
        snprintf(m, sizeof m, "rank %d", r);
        CHECK(st == FR_E_RANGE, "agree: %s", fr_status_name(st));
        CHECK(!strcmp(err.msg, r == 1 ? m : other_msg(1)), "agree: \"%s\"", err.msg);
    }
    /* a second init with MPI already up is not the owner: its finalize leaves MPI running for the first */
    fr_dist d2;
    int argc = 0;
    char **argv = NULL;
    fr_dist_init(&argc, &argv, &d2);
    CHECK(d2.rank == r && d2.size == R && d2.active == 0, "second init: rank %d of %d, active %d", d2.rank, d2.size,
          d2.active);
    fr_dist_finalize(&d2);
    CHECK(fr_dist_sum(&g_d, 1) == R, "MPI is still up after a second handle's finalize");
    printf("rank %d of %d: collectives\n", r, R);
}

/* fr_dist_gather_cases: rank 0 receives each case k from rank k % R (record and row gains) in case order. */
static void test_gather(void) {
    enum { TOTAL = 7 };
    const int R = g_d.size, r = g_d.rank;
    fr_suite_result res;
    memset(&res, 0, sizeof res);
    res.cases = calloc(TOTAL, sizeof *res.cases);
    res.n = TOTAL;
    unsigned char mine[TOTAL] = {0};
    if (!CHECKED(res.cases != NULL)) {
        /* every rank still joins the gather below with a failed status, so none waits */
        fr_error err = {0};
        fr_dist_gather_cases(&g_d, &res, 0, mine, FR_E_NOMEM, &err);
        return;
    }
    for (int k = 0; k < TOTAL; k++) {
        if (k % R != r) continue;
        fr_case_result *c = &res.cases[k];
        snprintf(c->name, sizeof c->name, "case_%d", k);
        c->S1 = 100 + k;
        c->j.n_gains = k % 3;
        c->j.gains = c->j.n_gains ? malloc((size_t)c->j.n_gains * sizeof(double)) : NULL;
        for (int64_t i = 0; c->j.gains && i < c->j.n_gains; i++) c->j.gains[i] = k + 0.25 * (double)i;
        mine[k] = k != 5; /* case 5 was not computed by its part: its gains are not sent */
    }
    fr_error err = {0};
    fr_status st = fr_dist_gather_cases(&g_d, &res, TOTAL, mine, FR_OK, &err);
    CHECK(st == FR_OK, "gather: %s", err.msg);
    if (r == 0) {
        for (int k = 0; k < TOTAL; k++) {
            const fr_case_result *c = &res.cases[k];
            char name[32];
            snprintf(name, sizeof name, "case_%d", k);
            CHECK(!strcmp(c->name, name) && c->S1 == 100 + k, "gather: case %d is \"%s\"", k, c->name);
            int64_t want = k == 5 && k % R != 0 ? 0 : k % 3;
            CHECK(c->j.n_gains == want, "gather: case %d: %lld gains, want %lld", k, (long long)c->j.n_gains,
                  (long long)want);
            for (int64_t i = 0; c->j.gains && i < c->j.n_gains; i++)
                CHECK(c->j.gains[i] == k + 0.25 * (double)i, "gather: case %d gain %lld", k, (long long)i);
        }
    }
    for (int k = 0; k < TOTAL; k++) free(res.cases[k].j.gains);
    /* a failed part (the last rank's) stops the gather on every rank with its status */
    memset(res.cases, 0, TOTAL * sizeof *res.cases);
    fr_status bad = r == R - 1 ? fr_fail(&err, FR_E_IO, "part failed") : FR_OK;
    st = fr_dist_gather_cases(&g_d, &res, TOTAL, mine, bad, &err);
    CHECK(st == FR_E_IO, "gather after a failed part: %s", fr_status_name(st));
    char m[64];
    snprintf(m, sizeof m, "suite: rank %d of %d failed", R - 1, R);
    CHECK(!strcmp(err.msg, r == R - 1 ? "part failed" : m), "gather after a failed part: \"%s\"", err.msg);
#ifdef FR_TEST_ALLOC_HOOK
    /* rank 0 cannot hold case 1's row gains (its first allocation in the gather): every case still arrives, and
     * rank 0 says which gains it lost */
    if (R > 1) {
        memset(res.cases, 0, TOTAL * sizeof *res.cases);
        for (int k = r; k < TOTAL; k += R) {
            snprintf(res.cases[k].name, sizeof res.cases[k].name, "case_%d", k);
            res.cases[k].j.n_gains = 1;
            res.cases[k].j.gains = malloc(sizeof(double));
            if (res.cases[k].j.gains) res.cases[k].j.gains[0] = k;
            mine[k] = 1;
        }
        fr_alloc_hook_set(r == 0 ? 1 : 0);
        st = fr_dist_gather_cases(&g_d, &res, TOTAL, mine, FR_OK, &err);
        int failed = fr_alloc_hook_failed();
        fr_alloc_hook_set(0);
        if (r == 0) {
            CHECK(failed == FR_ALLOC_MEM && st == FR_E_NOMEM, "gather, no memory for gains: %s", fr_status_name(st));
            CHECK(!strcmp(err.msg, "suite: cannot hold the row gains of case 1 from rank 1"), "gather: \"%s\"",
                  err.msg);
            CHECK(res.cases[1].j.gains == NULL && res.cases[1].j.n_gains == 0 && !strcmp(res.cases[1].name, "case_1"));
            for (int k = 2; k < TOTAL; k++)
                CHECK(res.cases[k].j.n_gains == 1 && res.cases[k].j.gains && res.cases[k].j.gains[0] == k,
                      "gather after a lost case: case %d", k);
        } else {
            CHECK(st == FR_OK, "gather, rank 0 without memory: rank %d: %s", r, err.msg);
        }
        for (int k = 0; k < TOTAL; k++) free(res.cases[k].j.gains);
    }
#endif
    free(res.cases);
    printf("rank %d of %d: suite gather\n", r, R);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    fr_dist_init(&argc, &argv, &g_d);
    printf("rank %d of %d (MPI %s)\n", g_d.rank, g_d.size, g_d.active ? "initialised here" : "not started");
    test_collectives();
    test_gather();
    test_golden_bit_identical();
    test_reuse(&k_fwd_gqa);
    test_reuse(&k_bwd_gqa);
    test_fast_on_rank0(&k_fwd_gqa);
    test_fast_on_rank0(&k_bwd_gqa);
    test_failures(&k_fwd_gqa);
    test_failures(&k_bwd_gqa);
    test_bad_threads(&k_fwd_gqa);
    test_bad_threads(&k_bwd_gqa);
#ifdef FR_TEST_ALLOC_HOOK
    static const fr_gen_spec small_fwd = {.name = "small_fwd", .B = 1, .N1 = 2, .S1 = 130, .S2 = 70, .D = 8};
    static const fr_gen_spec small_bwd = {.name = "small_bwd_sink", .bwd = true, .B = 1, .N1 = 2, .S1 = 130,
                                          .S2 = 70, .D = 8, .Drope = 8, .sink = true};
    test_nomem(&small_fwd);
    test_nomem(&small_bwd);
#endif
    char name[64];
    snprintf(name, sizeof name, "test_dist_api (rank %d of %d)", g_d.rank, g_d.size);
    int rc = fr_test_exit(name);
    fr_dist_finalize(&g_d);
    return rc;
}
