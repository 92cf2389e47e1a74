/* The CPU dispatcher (src/core/isa.c) under every kind of FLASHREF_ISA spelling, and its small queries at their
 * edges. FLASHREF_ISA is read once per process, so each spelling runs in a forked child that sets it before the
 * first dispatcher call and sends back what fr_isa_selected said (status, variant, message).
 *   unset, "", "auto": the best variant this CPU has;
 *   a variant's name: that variant when the CPU has it, else the best one below it in the list (style.md 2: the
 *     switch lowers the choice, never raises it): on an AVX2-only CPU the AVX-512 and AMX names give avx2;
 *   anything else ("bogus", a case variant "AVX2", a 200-character name): FR_E_INVALID_ARG, and the message names
 *     FLASHREF_ISA, the value (at most its first 64 characters) and every variant.
 * Plus the queries: names of unknown values, families, fr_isa_variant out of range, fr_isa_parse with NULLs. */
#include "common/check.h"
#include "core/core.h"
#include "core/isa.h"
#include "flashref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct child_says {
    int st, isa, avail_best;
    char msg[256];
} child_says;

/* The best variant at or below `want` (FR_ISA_AUTO: the top of the list) that this CPU has. */
static fr_isa best_at_or_below(fr_isa want) {
    int top = fr_isa_count - 1;
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == want) top = k;
    for (int k = top; k >= 0; k--)
        if (fr_isa_available(fr_isa_list[k])) return fr_isa_list[k];
    return FR_ISA_SCALAR;
}

/* Runs fr_isa_selected in a child whose FLASHREF_ISA is env (NULL: unset); want is the variant env names (for the
 * expected choice, computed in the child too: availability does not depend on the variable). */
static bool selected_under(const char *env, fr_isa want, child_says *out) {
    int fd[2];
    memset(out, 0, sizeof *out);
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        close(fd[0]);
        if (env) setenv("FLASHREF_ISA", env, 1);
        else unsetenv("FLASHREF_ISA");
        child_says s;
        memset(&s, 0, sizeof s);
        fr_error err;
        fr_error_clear(&err);
        fr_isa isa = FR_ISA_AUTO;
        s.st = (int)fr_isa_selected(&isa, &err);
        s.isa = (int)isa;
        snprintf(s.msg, sizeof s.msg, "%.200s", s.st == FR_OK ? "" : err.msg);
        s.avail_best = (int)best_at_or_below(want);
        ssize_t w = write(fd[1], &s, sizeof s);
        _exit(w == (ssize_t)sizeof s ? 0 : 1);
    }
    close(fd[1]);
    ssize_t r = read(fd[0], out, sizeof *out);
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    return r == (ssize_t)sizeof *out && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

static void check_valid(const char *env, fr_isa want) {
    child_says s;
    bool ran = selected_under(env, want, &s);
    printf("  FLASHREF_ISA=%s%s%s -> %s (%s)\n", env ? "'" : "(unset)", env ? env : "", env ? "'" : "",
           fr_status_name((fr_status)s.st), fr_isa_name((fr_isa)s.isa));
    CHECK(ran, "child for '%s' did not report", env ? env : "(unset)");
    CHECK(s.st == FR_OK, "'%s': %s", env ? env : "(unset)", s.msg);
    CHECK(s.isa == s.avail_best && s.isa != FR_ISA_AUTO, "'%s': got %s, want %s", env ? env : "(unset)",
          fr_isa_name((fr_isa)s.isa), fr_isa_name((fr_isa)s.avail_best));
}

static void check_invalid(const char *env, const char *shown) {
    child_says s;
    bool ran = selected_under(env, FR_ISA_AUTO, &s);
    char want[160];
    snprintf(want, sizeof want, "FLASHREF_ISA: ISA '%s' is not a variant (scalar, avx2, avx512, avx512bf16, amx or auto)",
             shown);
    printf("  FLASHREF_ISA='%.20s%s' -> %s: %s\n", env, strlen(env) > 20 ? "..." : "",
           fr_status_name((fr_status)s.st), s.msg);
    CHECK(ran, "child for '%s' did not report", env);
    CHECK(s.st == FR_E_INVALID_ARG && !strcmp(s.msg, want), "'%s': status %d message '%s', want '%s'", env, s.st,
          s.msg, want);
}

int main(void) {
    printf("test_isa_env\n");
    /* children first: the parent must not have read FLASHREF_ISA before they fork */
    check_valid(NULL, FR_ISA_AUTO);
    check_valid("", FR_ISA_AUTO);
    check_valid("auto", FR_ISA_AUTO);
    check_valid("scalar", FR_ISA_SCALAR);
    check_valid("avx2", FR_ISA_AVX2);
    check_valid("avx512", FR_ISA_AVX512);         /* lowered to avx2 on a CPU without AVX-512 */
    check_valid("avx512bf16", FR_ISA_AVX512_BF16);
    check_valid("amx", FR_ISA_AMX);               /* lowered to the best variant the CPU and the OS allow */
    check_invalid("bogus", "bogus");
    check_invalid("AVX2", "AVX2"); /* spellings are exact */
    check_invalid("scalar ", "scalar ");
    char longname[201];
    memset(longname, 'x', 200);
    longname[200] = '\0';
    char shown[65];
    memset(shown, 'x', 64);
    shown[64] = '\0';
    check_invalid(longname, shown); /* the message shows the first 64 characters */

    /* a variant above the CPU, asked directly: the choice is lowered the same way */
    for (int k = 0; k < fr_isa_count; k++) {
        fr_isa v = fr_isa_variant(k), got = FR_ISA_AUTO;
        fr_error err;
        fr_status st = fr_isa_choose(fr_isa_name(v), &got, &err);
        CHECK(st == FR_OK && got == best_at_or_below(v), "choose(%s) = %s, want %s", fr_isa_name(v), fr_isa_name(got),
              fr_isa_name(best_at_or_below(v)));
        if (!fr_isa_available(v)) printf("  %s: not on this CPU, lowered to %s\n", fr_isa_name(v), fr_isa_name(got));
        CHECK(fr_isa_choose(fr_isa_name(v), NULL, NULL) == FR_OK, "choose without an out parameter");
    }
    {
        fr_isa got = FR_ISA_AUTO;
        CHECK(fr_isa_choose("", &got, NULL) == FR_OK && got == best_at_or_below(FR_ISA_AUTO), "empty = unset");
        fr_error err;
        fr_status st = fr_isa_choose("sse4", NULL, &err);
        CHECK(st == FR_E_INVALID_ARG && strstr(err.msg, "FLASHREF_ISA: ISA 'sse4' is not a variant"), "%s", err.msg);
    }

    /* fr_isa_parse: names, "auto", NULL name, NULL out parameters */
    {
        fr_isa got = FR_ISA_SCALAR;
        fr_error err;
        CHECK(fr_isa_parse("auto", &got, NULL) == FR_OK && got == FR_ISA_AUTO, "auto");
        CHECK(fr_isa_parse("auto", NULL, NULL) == FR_OK, "auto, no out parameter");
        CHECK(fr_isa_parse("amx", NULL, NULL) == FR_OK, "amx, no out parameter");
        CHECK(fr_isa_parse("avx512bf16", &got, NULL) == FR_OK && got == FR_ISA_AVX512_BF16, "avx512bf16");
        fr_status st = fr_isa_parse(NULL, &got, &err);
        CHECK(st == FR_E_INVALID_ARG &&
                  !strcmp(err.msg, "ISA '(null)' is not a variant (scalar, avx2, avx512, avx512bf16, amx or auto)"),
              "NULL name: %s", err.msg);
        CHECK(got == FR_ISA_AVX512_BF16, "a refused name leaves *isa alone");
        st = fr_isa_parse("", NULL, &err);
        CHECK(st == FR_E_INVALID_ARG && strstr(err.msg, "ISA '' is not a variant"), "empty name: %s", err.msg);
    }

    /* names, families, membership, the list's ends */
    CHECK(!strcmp(fr_isa_name(FR_ISA_AUTO), "auto"), "auto's name");
    CHECK(!strcmp(fr_isa_name((fr_isa)99), "unknown") && !strcmp(fr_isa_name((fr_isa)-1), "unknown"), "unknown");
    /* every row of the one list: its name, its family, parsed back */
#define FR_VARIANT(vname, e, family, ...)                                                                              \
    do {                                                                                                               \
        fr_isa back = FR_ISA_AUTO;                                                                                     \
        CHECK(!strcmp(fr_isa_name(e), #vname) && fr_isa_family(e) == (family), "row %s", #vname);                      \
        CHECK(fr_isa_parse(#vname, &back, NULL) == FR_OK && back == (e), "parse %s", #vname);                          \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    CHECK(fr_isa_family(FR_ISA_AUTO) == FR_ISA_AUTO && fr_isa_family((fr_isa)42) == FR_ISA_AUTO, "no family");
    CHECK(fr_isa_known(FR_ISA_AUTO) && fr_isa_known(fr_isa_variant(fr_isa_count - 1)), "known");
    CHECK(!fr_isa_known((fr_isa)42) && !fr_isa_known((fr_isa)-3), "not known");
    CHECK(fr_isa_variant(-1) == FR_ISA_AUTO && fr_isa_variant(fr_isa_count) == FR_ISA_AUTO &&
              fr_isa_variant(0) == FR_ISA_SCALAR && fr_isa_variant(fr_isa_count - 1) == FR_ISA_AMX,
          "variant ends");
    CHECK(fr_isa_available(FR_ISA_AUTO) && fr_isa_available(FR_ISA_SCALAR) && !fr_isa_available((fr_isa)42) &&
              !fr_isa_available((fr_isa)-1),
          "available");
    /* AMX needs AVX512-BF16 (the list's order is an order of inclusion) */
    CHECK(!fr_isa_available(FR_ISA_AMX) || fr_isa_available(FR_ISA_AVX512_BF16), "amx implies avx512bf16");
    CHECK(!fr_isa_available(FR_ISA_AVX512) || fr_isa_available(FR_ISA_AVX2), "avx512 implies avx2");
    printf("  AMX-FP16 on this CPU: %s (no variant uses it)\n", fr_isa_cpu_amx_fp16() ? "yes" : "no");
    /* the parent's own selection (FLASHREF_ISA as ctest set it: unset) and a NULL out parameter */
    {
        fr_error err;
        const char *env = getenv("FLASHREF_ISA");
        fr_status st = fr_isa_selected(NULL, &err);
        if (!env || !*env) CHECK(st == FR_OK, "selected with NULL out parameter: %s", err.msg);
    }
    return fr_test_exit("test_isa_env");
}
