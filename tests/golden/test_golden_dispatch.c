/* The golden's product variant comes from the one CPU dispatcher (core/isa.c), as the kernels' does: an explicit
 * fr_engine.isa runs when the CPU has it (a variant runs its base ISA family's product, e.g. avx512bf16 and amx the
 * avx512 one, the golden having no bf16 arithmetic) whatever FLASHREF_ISA says; FR_ISA_AUTO is the best variant at or below FLASHREF_ISA; an unknown
 * FLASHREF_ISA or fr_isa value is FR_E_INVALID_ARG, for gd_gemm_select and for fr_fwd on the golden engine alike.
 * ctest runs it with FLASHREF_ISA unset, set to each variant of the list and to no-such-isa (the dispatcher reads it
 * once per process). The expectations are written from the variant list and fr_isa_available, not from golden_gemm.c. */
#include "common/check.h"
#include "core/isa.h"
#include "golden/golden_gemm.h"
#include "golden/gt_case.h"

/* The golden product an fr_isa runs on: its base ISA family's (the variant list's column). */
static fr_isa product_of(fr_isa v) { return fr_isa_family(v); }

/* A tiny forward on the golden engine with engine.isa = isa. */
static fr_status tiny_fwd(fr_isa isa, fr_error *err) {
    gt_case c;
    memset(&c, 0, sizeof c);
    gt_opts o;
    memset(&o, 0, sizeof o);
    uint64_t r = 5;
    c.p = fr_params_default();
    c.L = FR_BNSD, c.dt = FR_F32, c.B = 1, c.N1 = 1, c.N2 = 1, c.S1 = 4, c.S2 = 5, c.Dk = 8, c.Dv = 8;
    gt_make_inputs(&c, &o, &r);
    gt_make_outputs(&c, 0, &r);
    fr_status st = gt_run_fwd_isa(&c, isa, 1, err);
    gt_case_free(&c);
    return st;
}

int main(void) {
    const char *env = getenv("FLASHREF_ISA");
    printf("test_golden_dispatch: FLASHREF_ISA=%s\n", env ? env : "(unset)");
    fr_error err;

    /* explicit requests: FLASHREF_ISA plays no part */
    for (int k = 0; k < fr_isa_count; k++) {
        fr_isa v = fr_isa_list[k], got = FR_ISA_AUTO;
        fr_status st = gd_gemm_select(v, &got, &err);
        bool runs = fr_isa_available(product_of(v));
        printf("  engine.isa %-10s -> %s\n", fr_isa_name(v), st == FR_OK ? fr_isa_name(got) : err.msg);
        CHECK(runs ? st == FR_OK && got == product_of(v) : st == FR_E_NOT_AVAILABLE, "engine.isa %s: %s, got %s",
              fr_isa_name(v), fr_status_name(st), fr_isa_name(got));
        CHECK(gd_gemm_isa(v) == (runs ? product_of(v) : FR_ISA_AUTO), "gd_gemm_isa(%s)", fr_isa_name(v));
        gd_gemm_fn fn = NULL;
        CHECK((gd_gemm_pick(v, &fn, &err) == FR_OK) == runs && (fn != NULL) == runs, "gd_gemm_pick(%s)", fr_isa_name(v));
        st = tiny_fwd(v, &err);
        CHECK(runs ? st == FR_OK : st == FR_E_NOT_AVAILABLE, "fr_fwd golden, engine.isa %s: %s %s", fr_isa_name(v),
              fr_status_name(st), err.msg);
    }
    fr_isa got = FR_ISA_AUTO;
    CHECK(gd_gemm_select((fr_isa)99, &got, &err) == FR_E_INVALID_ARG, "engine.isa 99 accepted");
    CHECK(tiny_fwd((fr_isa)99, &err) == FR_E_INVALID_ARG, "fr_fwd golden, engine.isa 99: not FR_E_INVALID_ARG");

    /* FR_ISA_AUTO: the best variant at or below the one FLASHREF_ISA names */
    int top = fr_isa_count - 1;
    bool known = true;
    if (env && *env) {
        fr_isa want;
        known = fr_isa_parse(env, &want, NULL) == FR_OK;
        for (int k = 0; known && want != FR_ISA_AUTO && k < fr_isa_count; k++)
            if (fr_isa_list[k] == want) top = k;
    }
    fr_status st = gd_gemm_select(FR_ISA_AUTO, &got, &err);
    fr_status fst = tiny_fwd(FR_ISA_AUTO, &err);
    if (known) {
        fr_isa best = FR_ISA_SCALAR;
        for (int k = top; k >= 0; k--)
            if (fr_isa_available(fr_isa_list[k])) {
                best = fr_isa_list[k];
                break;
            }
        printf("  auto -> %s (best at or below %s: %s)\n", st == FR_OK ? fr_isa_name(got) : err.msg,
               fr_isa_name(fr_isa_list[top]), fr_isa_name(best));
        CHECK(st == FR_OK && got == product_of(best), "auto: %s, got %s, expected %s", fr_status_name(st),
              fr_isa_name(got), fr_isa_name(product_of(best)));
        CHECK(fst == FR_OK, "fr_fwd golden, auto: %s %s", fr_status_name(fst), err.msg);
        if (env && !strcmp(env, "scalar")) CHECK(got == FR_ISA_SCALAR, "FLASHREF_ISA=scalar: auto is %s", fr_isa_name(got));
    } else {
        printf("  auto -> %s: %s\n", fr_status_name(fst), err.msg);
        CHECK(st == FR_E_INVALID_ARG, "unknown FLASHREF_ISA: gd_gemm_select %s", fr_status_name(st));
        CHECK(fst == FR_E_INVALID_ARG && strstr(err.msg, "FLASHREF_ISA") && strstr(err.msg, env),
              "unknown FLASHREF_ISA: fr_fwd golden %s '%s'", fr_status_name(fst), err.msg);
    }
    return fr_test_exit("test_golden_dispatch");
}
