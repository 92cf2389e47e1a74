/* The option matrix (src/verify/cases/matrix.c, docs/coverage.md): every axis value is reachable by a validated draw;
 * draws are valid, classify as pinned and are reproducible; the allowed pairs come from validation (pairs the validator
 * rejects are not allowed); the default set holds every mask shape, sparse mode, pse type / shape and varlen pattern at
 * >= 1K keys with a key length at a tile residue; and the default set plus a 200-draw random batch covers every allowed
 * pair. usage: test_matrix [seed] */
#include "common/check.h"
#include "verify/report/coverage.h"
#include "verify/suite/suite_internal.h"

#include <stdlib.h>
#include <string.h>

static const fr_axis *ax;

static void free_want(int *w) {
    for (int a = 0; a < FR_AX_COUNT; a++)
        w[a] = -1;
}

static bool draw_pinned(const int *want, uint64_t *rng, fr_draw *d, int *cell) {
    fr_draw_limits lim = fr_draw_limits_default();
    for (int t = 0; t < 200; t++) {
        fr_matrix_draw(want, rng, &lim, d);
        fr_matrix_classify(&d->spec, cell);
        bool ok = true;
        for (int a = 0; a < FR_AX_COUNT; a++)
            ok &= want[a] < 0 || want[a] == cell[a];
        fr_error e;
        if (ok && fr_gen_check(&d->spec, &e) == FR_OK) return true;
    }
    return false;
}

static void test_values_reachable(void) {
    int want[FR_AX_COUNT], cell[FR_AX_COUNT];
    uint64_t rng = 12345;
    fr_draw d;
    for (int a = 0; a < FR_AX_COUNT; a++)
        for (int v = 0; v < ax[a].n; v++) {
            free_want(want);
            want[a] = v;
            CHECK(draw_pinned(want, &rng, &d, cell), "no validated draw with %s = %s", ax[a].name, ax[a].values[v]);
        }
}

/* The axes that enumerate an operator option have one value per member of its enum (a sparse mode, pse type, pse
 * shape or layout added there but not to the matrix is never drawn nor counted), spelled as the enum's number. */
static void test_axes_follow_enums(void) {
    CHECK(ax[FR_AX_SPARSE].n == FR_AXV_SPARSE_MODE(FR_SPARSE_MODE_COUNT), "src/verify/cases/matrix.c kAxes: the axis "
          "sparse_mode has %d values, fr_sparse_mode (include/flashref.h) %d modes plus 'no mask'", ax[FR_AX_SPARSE].n,
          FR_SPARSE_MODE_COUNT);
    CHECK(ax[FR_AX_PSE].n == FR_AXV_PSE_TYPE(FR_PSE_TYPE_COUNT), "src/verify/cases/matrix.c kAxes: the axis pse_type "
          "has %d values, fr_pse_type (include/flashref.h) %d types plus 'none'", ax[FR_AX_PSE].n, FR_PSE_TYPE_COUNT);
    CHECK(ax[FR_AX_PSE_SHAPE].n == FR_GEN_PSE_COUNT, "src/verify/cases/matrix.c kAxes: the axis pse_shape has %d "
          "values, fr_gen_pse (src/verify/cases/case_shapes.h) %d", ax[FR_AX_PSE_SHAPE].n, FR_GEN_PSE_COUNT);
    CHECK(ax[FR_AX_LAYOUT].n == FR_AXV_LAYOUT_TND + 1, "src/verify/cases/matrix.c kAxes: the axis layout has %d values, "
          "fr_layout %d layouts", ax[FR_AX_LAYOUT].n, FR_AXV_LAYOUT_TND + 1);
    for (int m = 0; m < FR_SPARSE_MODE_COUNT && FR_AXV_SPARSE_MODE(m) < ax[FR_AX_SPARSE].n; m++)
        CHECK(atoi(ax[FR_AX_SPARSE].values[FR_AXV_SPARSE_MODE(m)]) == m, "sparse_mode value %d is '%s'", m,
              ax[FR_AX_SPARSE].values[FR_AXV_SPARSE_MODE(m)]);
    for (int t = 0; t < FR_PSE_TYPE_COUNT && FR_AXV_PSE_TYPE(t) < ax[FR_AX_PSE].n; t++)
        CHECK(atoi(ax[FR_AX_PSE].values[FR_AXV_PSE_TYPE(t)]) == t, "pse_type value %d is '%s'", t,
              ax[FR_AX_PSE].values[FR_AXV_PSE_TYPE(t)]);
}

/* Alike verify_suite/test_shrink.c:main: kept apart because these are different cases' data (designated initializers,
 * one field a line), not shared logic. */
static void test_classify(void) {
    int c[FR_AX_COUNT];
    fr_gen_spec s = {.name = "x",
                     .dtype = FR_BF16,
                     .layout = FR_TND,
                     .B = 3,
                     .N1 = 4,
                     .N2 = 2,
                     .D = 64,
                     .Dv = 48,
                     .seq_q = {0, 100, 5},
                     .seq_kv = {1500, 3073, 5},
                     .sparse_mode = FR_SPARSE_BAND,
                     .mask = FR_GEN_MASK_CANONICAL,
                     .set_band = true,
                     .pre_tokens = 100,
                     .next_tokens = -3,
                     .keep_prob = 0.8};
    fr_matrix_classify(&s, c);
    CHECK(c[FR_AX_LAYOUT] == 4 && c[FR_AX_DTYPE] == 2 && c[FR_AX_HEADS] == 1 && c[FR_AX_HEADDIM] == 1, "layout etc");
    CHECK(c[FR_AX_SPARSE] == 5 && c[FR_AX_MASK] == 5 && c[FR_AX_BAND] == 2, "sparse %d mask %d band %d",
          c[FR_AX_SPARSE], c[FR_AX_MASK], c[FR_AX_BAND]);
    CHECK(c[FR_AX_VARLEN] == 3 && c[FR_AX_DROPOUT] == 1 && c[FR_AX_PSE] == 0, "varlen %d", c[FR_AX_VARLEN]);
    CHECK(c[FR_AX_QUERIES] == 1 && c[FR_AX_KEYS] == 2 && c[FR_AX_RESIDUE] == 1, "sizes %d %d %d", c[FR_AX_QUERIES],
          c[FR_AX_KEYS], c[FR_AX_RESIDUE]);
    fr_gen_spec t = {
        .name = "y", .B = 1, .N1 = 2, .N2 = 1, .S1 = 1, .S2 = 640, .D = 59, .pse = FR_GEN_PSE_SLOPES_N,
        .pse_type = FR_PSE_INNER_MUL_ADD_SQRT};
    fr_matrix_classify(&t, c);
    CHECK(c[FR_AX_LAYOUT] == 3 && c[FR_AX_HEADS] == 2 && c[FR_AX_HEADDIM] == 2 && c[FR_AX_PSE] == 4 &&
              c[FR_AX_PSE_SHAPE] == 7 && c[FR_AX_QUERIES] == 0 && c[FR_AX_KEYS] == 1 && c[FR_AX_RESIDUE] == 0,
          "second spec");
}

/* Pairs the validator rejects must not be allowed, pairs it accepts must be: the allowed set is validation's. */
static void test_allowed(const uint8_t *allowed) {
    struct {
        int a, va, b, vb;
        bool ok;
    } k[] = {
        {FR_AX_DTYPE, 3, FR_AX_SPARSE, 4, false},     /* e4m3fn with a mask */
        {FR_AX_DTYPE, 5, FR_AX_DROPOUT, 1, false},    /* hif8 with dropout */
        {FR_AX_DTYPE, 4, FR_AX_DIR, 1, false},        /* fp8 backward (not generated) */
        {FR_AX_LAYOUT, 0, FR_AX_SPARSE, 8, false},    /* mode 7 needs TND */
        {FR_AX_LAYOUT, 4, FR_AX_SPARSE, 6, false},    /* mode 5 not with TND */
        {FR_AX_LAYOUT, 3, FR_AX_SOFTMAX, 1, false},   /* same_as_input needs TND */
        {FR_AX_SPARSE, 8, FR_AX_PSE, 1, false},       /* no pse with mode 7 */
        {FR_AX_HEADDIM, 3, FR_AX_DTYPE, 3, false},    /* rope with e4m3fn */
        {FR_AX_PSE_SHAPE, 6, FR_AX_VARLEN, 3, false}, /* pse with an empty TND sequence */
        {FR_AX_DTYPE, 0, FR_AX_OUT, 2, false},        /* out bf16 with fp32 inputs */
        {FR_AX_DTYPE, 3, FR_AX_OUT, 2, true},         {FR_AX_SPARSE, 9, FR_AX_VARLEN, 3, true},
        {FR_AX_PSE_SHAPE, 5, FR_AX_LAYOUT, 4, true},  {FR_AX_BAND, 2, FR_AX_KEYS, 2, true},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        int p = fr_coverage_index(k[i].a, k[i].va, k[i].b, k[i].vb);
        CHECK(allowed[p] == k[i].ok, "%s = %s x %s = %s: allowed %d, expected %d", ax[k[i].a].name,
              ax[k[i].a].values[k[i].va], ax[k[i].b].name, ax[k[i].b].values[k[i].vb], allowed[p], k[i].ok);
    }
    /* index <-> pair round trip */
    for (int p = 0; p < fr_coverage_npairs(); p += 7) {
        int a, va, b, vb;
        fr_coverage_pair(p, &a, &va, &b, &vb);
        CHECK(fr_coverage_index(a, va, b, vb) == p && fr_coverage_index(b, vb, a, va) == p, "pair %d", p);
    }
}

/* The default set's realistic lengths (docs/coverage.md): every mask shape, sparse mode, pse type and shape, and varlen
 * pattern at >= 1K keys with key lengths at a tile residue, in the default set. */
static void test_default_lengths(void) {
    static const int axes[] = {FR_AX_SPARSE, FR_AX_MASK, FR_AX_PSE, FR_AX_PSE_SHAPE, FR_AX_VARLEN};
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++) {
        int a = axes[i];
        for (int v = 1; v < ax[a].n; v++) {
            const char *found = NULL;
            for (int k = 0; k < fr_suite_entry_count && !found; k++) {
                const fr_suite_entry *e = &fr_suite_entries[k];
                if (!(e->sets & FR_SET_DEFAULT)) continue;
                int c[FR_AX_COUNT];
                fr_matrix_classify(&e->spec, c);
                if (c[a] == v && c[FR_AX_KEYS] == 2 && c[FR_AX_RESIDUE] == 1) found = e->spec.name;
            }
            CHECK(found, "default set: no case with %s = %s at >= 1024 keys and a tile residue", ax[a].name,
                  ax[a].values[v]);
            if (found) printf("  %s = %-10s at >= 1K keys, residue +-1: %s\n", ax[a].name, ax[a].values[v], found);
        }
    }
}

static void test_batch(uint64_t seed, const uint8_t *allowed) {
    fr_coverage cv, cv2;
    fr_error err;
    CHECK(fr_coverage_init(&cv, &err) == FR_OK && fr_coverage_init(&cv2, &err) == FR_OK, "init");
    CHECK(fr_suite_set_coverage("default", &cv, &err) == FR_OK, "set coverage: %s", err.msg);
    CHECK(fr_suite_set_coverage("default", &cv2, &err) == FR_OK, "set coverage: %s", err.msg);
    int base = 0;
    for (int p = 0; p < cv.npairs; p++)
        base += allowed[p] && cv.hits[p];
    enum { N = 200 };
    fr_draw *d = calloc(N, sizeof *d), *e = calloc(N / 2, sizeof *e);
    fr_draw_limits lim = fr_draw_limits_default();
    CHECK(fr_random_batch(seed, N, &cv, &lim, d, &err) == FR_OK, "batch: %s", err.msg);
    CHECK(fr_random_batch(seed, N / 2, &cv2, &lim, e, &err) == FR_OK, "batch: %s", err.msg);
    for (int k = 0; k < N / 2; k++) { /* draw k is the same in any batch of more than k draws */
        char x[400], y[400];
        fr_matrix_describe(&d[k].spec, x, sizeof x);
        fr_matrix_describe(&e[k].spec, y, sizeof y);
        CHECK(!strcmp(x, y) && !strcmp(d[k].name, e[k].name), "draw %d differs: %s / %s", k, x, y);
    }
    int valid = 0;
    for (int k = 0; k < N; k++) {
        fr_error ve;
        valid += fr_gen_check(&d[k].spec, &ve) == FR_OK;
    }
    CHECK(valid == N, "%d of %d draws valid", valid, N);
    fr_coverage_report cr;
    CHECK(fr_coverage_report_from(&cv, fr_suite_list("default", NULL, NULL, NULL) + N, &cr, &err) == FR_OK, "report");
    printf("default set alone: %d allowed pairs covered; with %d draws (seed %llu): ", base, N,
           (unsigned long long)seed);
    fr_coverage_print_line(stdout, &cr);
    CHECK(cr.covered == cr.allowed, "%d of %d allowed pairs uncovered", cr.allowed - cr.covered, cr.allowed);
    CHECK(base < cr.allowed, "the default set alone should leave gaps for the draws (%d of %d)", base, cr.allowed);
    if (cr.covered != cr.allowed) fr_coverage_print_table(stdout, &cr, 50);
    fr_coverage_report_free(&cr);
    fr_coverage_free(&cv);
    fr_coverage_free(&cv2);
    free(d);
    free(e);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20260101;
    printf("test_matrix: seed %llu\n", (unsigned long long)seed);
    ax = fr_matrix_axes();
    uint8_t *allowed = malloc((size_t)fr_coverage_npairs());
    fr_error merr;
    CHECK(fr_matrix_allowed(allowed, &merr) == FR_OK, "fr_matrix_allowed: %s", merr.msg);
    test_axes_follow_enums();
    test_values_reachable();
    test_classify();
    test_allowed(allowed);
    test_default_lengths();
    test_batch(seed, allowed);
    free(allowed);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
