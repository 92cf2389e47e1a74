/* The diagnosis's candidate table (src/verify/judge/diagnose_cands.c, dg_cands) against every other place that lists
 * candidates or diagnoses (docs/adding-a-diagnosis-candidate.md): a candidate or a diagnosis registered in one place
 * and missing from another fails here with a line naming the missing place.
 *   - dg_cands: unique names, a diagnosis that is a defect class (not none / unknown), a function, an op;
 *   - verdict.h's FR_DIAGNOSES (the names JSON and HTML reports print): unique names that round-trip, each
 *     documented in docs/verifier.md or docs/verification-method.md;
 *   - docs/verifier.md's candidate table (section "Diagnosis"): one row per diagnosis that has candidates, no other;
 *   - the broken implementations: every candidate's diagnosis is the expected one of a mutant of the zoo
 *     (src/verify/zoo/mutants.c) or of a defect of tests/defects/broken_runner.py, so each candidate is exercised by
 *     something that has the defect; every diagnosis those expect is one of verdict.h.
 * Usage: test_candidate_registry REPO_ROOT */
#include "common/check.h"
#include "verify/judge/diagnose_cands.h"
#include "verify/zoo/mutants.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC "docs/verifier.md"
#define METHOD "docs/verification-method.md"
#define DEFECTS "tests/defects/broken_runner.py"
#define CANDS "src/verify/judge/diagnose_cands.c"

static char *slurp(const char *root, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (s) s[fread(s, 1, (size_t)(n > 0 ? n : 0), f)] = 0;
    fclose(f);
    return s;
}

/* Whether word occurs in text with no letter, digit, '-' or '_' on either side. */
static bool has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        bool l = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '-' || p[-1] == '_');
        bool r = !(isalnum((unsigned char)p[n]) || p[n] == '-' || p[n] == '_');
        if (l && r) return true;
    }
    return false;
}

/* The diagnoses of docs/verifier.md's candidate table: the first cells (`name`) of the rows after the header line
 * "| diagnosis | candidates ...", up to the first line that is not a table row. */
static int doc_table(const char *doc, fr_diag *rows, int max) {
    const char *p = strstr(doc, "\n| diagnosis | candidates");
    int n = 0;
    if (!p) return -1;
    for (p = strchr(p + 1, '\n'); p && p[1] == '|'; p = strchr(p + 1, '\n')) {
        const char *a = strchr(p + 1, '`'), *e = strchr(p + 1, '\n');
        const char *bar = strchr(p + 2, '|');
        if (!a || (e && a > e) || (bar && a > bar)) continue; /* the |---| line */
        const char *b = strchr(a + 1, '`');
        if (!b) break;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(b - a - 1), a + 1);
        fr_diag d = fr_diag_from_name(name);
        CHECK(d != FR_DIAG_COUNT, DOC ": the candidate table has a row `%s`, which is no diagnosis of verdict.h", name);
        if (d != FR_DIAG_COUNT && n < max) rows[n++] = d;
    }
    return n;
}

/* The expected diagnoses of tests/defects/broken_runner.py's DEFECTS: lines `"name": ("op", "diagnosis", "set"),`. */
static int defect_diags(const char *py, fr_diag *out, int max) {
    const char *p = strstr(py, "DEFECTS = {");
    int n = 0;
    if (!p) return -1;
    const char *end = strstr(p, "\n}");
    for (p = strchr(p, '\n'); p && (!end || p < end); p = strchr(p + 1, '\n')) {
        char name[64], op[16], diag[64];
        if (sscanf(p + 1, " \"%63[^\"]\": (\"%15[^\"]\", \"%63[^\"]\"", name, op, diag) != 3) continue;
        fr_diag d = fr_diag_from_name(diag);
        CHECK(d != FR_DIAG_COUNT, DEFECTS ": defect '%s' expects '%s', which is no diagnosis of verdict.h", name, diag);
        if (d != FR_DIAG_COUNT && n < max) out[n++] = d;
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_candidate_registry REPO_ROOT\n");
        return 2;
    }
    const char *root = argv[1];
    char *doc = slurp(root, DOC), *method = slurp(root, METHOD), *defects = slurp(root, DEFECTS);
    if (!CHECKED(doc && method && defects, "cannot read %s, %s or %s under %s", DOC, METHOD, DEFECTS, root))
        return fr_test_exit("test_candidate_registry");

    /* the candidate table itself */
    CHECK(dg_ncands > 0 && dg_ncands <= DG_MAX_CANDS, CANDS ": %zu candidates (1..DG_MAX_CANDS = %d)", dg_ncands,
          DG_MAX_CANDS);
    bool has_cand[FR_DIAG_COUNT] = {0};
    for (size_t c = 0; c < dg_ncands; c++) {
        const dg_cand *k = &dg_cands[c];
        CHECK(k->name && *k->name, CANDS ": row %zu has no name", c);
        const char *nm = k->name ? k->name : "?";
        for (size_t o = 0; o < c; o++)
            CHECK(!dg_cands[o].name || strcmp(dg_cands[o].name, nm), CANDS ": two candidates named '%s'", nm);
        bool cls = k->diag > FR_DIAG_NONE && k->diag < FR_DIAG_UNKNOWN;
        CHECK(cls, CANDS ": candidate '%s' names diagnosis %d, not a defect class of verdict.h", nm, (int)k->diag);
        CHECK(k->fn != NULL, CANDS ": candidate '%s' has no function", nm);
        CHECK((k->ops & 3u) != 0 && (k->ops & ~7u) == 0, CANDS ": candidate '%s': ops %u (1 fwd, 2 bwd, + 4 numerics)",
              nm, k->ops);
        if (cls) has_cand[k->diag] = true;
    }

    /* the diagnoses: names, and each documented */
    for (int d = 0; d < FR_DIAG_COUNT; d++) {
        const char *n = fr_diag_name((fr_diag)d);
        CHECK(n && *n && fr_diag_from_name(n) == (fr_diag)d, "verdict.h: diagnosis %d's name '%s' does not round-trip "
              "(empty or used twice)", d, n ? n : "");
        CHECK(*fr_diag_text((fr_diag)d), "verdict.h: diagnosis '%s' has no text", n);
        CHECK(has_word(doc, n) || has_word(method, n), "verdict.h: diagnosis '%s' is documented in neither " DOC
              " nor " METHOD, n);
    }

    /* docs/verifier.md's candidate table: exactly the diagnoses that have candidates */
    fr_diag rows[FR_DIAG_COUNT * 2];
    int nrows = doc_table(doc, rows, (int)(sizeof rows / sizeof rows[0]));
    CHECK(nrows > 0, DOC ": no candidate table (a line starting \"| diagnosis | candidates\")");
    bool in_doc[FR_DIAG_COUNT] = {0};
    for (int r = 0; r < nrows; r++) {
        CHECK(!in_doc[rows[r]], DOC ": the candidate table has two rows `%s`", fr_diag_name(rows[r]));
        in_doc[rows[r]] = true;
        CHECK(has_cand[rows[r]], DOC ": the candidate table has a row `%s`, but no candidate of dg_cands (" CANDS
              ") names that diagnosis", fr_diag_name(rows[r]));
    }

    /* the broken implementations that exercise each candidate's diagnosis */
    bool broken[FR_DIAG_COUNT] = {0};
    int nm = 0;
    const fr_mutant *zoo = fr_mutants(&nm);
    for (int m = 0; m < nm; m++)
        if ((unsigned)zoo[m].expected < FR_DIAG_COUNT) broken[zoo[m].expected] = true;
    fr_diag dd[64];
    int nd = defect_diags(defects, dd, 64);
    CHECK(nd > 0, DEFECTS ": no DEFECTS table (lines \"name\": (\"op\", \"diagnosis\", \"set\"))");
    for (int k = 0; k < nd; k++) broken[dd[k]] = true;
    /* Diagnoses whose broken implementation is a C test's own IUT rather than a mutant or a defect of the runner:
     * native-dtype: tests/verify_suite/test_judge.c (test_native_dtype) judges the plain reference re-run in bf16
     * (fr_plain_fwd_native, a textbook attention in the input dtype) and requires FAIL native-dtype. The numpy
     * runner's attempt at the same defect came out 'precision' / 'unknown' (its rounding order differs from the
     * candidate's), so it is not in its table. */
    broken[FR_DIAG_NATIVE_DTYPE] = true;

    for (size_t c = 0; c < dg_ncands; c++) {
        fr_diag d = dg_cands[c].diag;
        if ((unsigned)d >= FR_DIAG_COUNT) continue;
        CHECK(in_doc[d], DOC ": the candidate table (section \"Diagnosis\") has no row `%s` for candidate '%s' (" CANDS
              ")", fr_diag_name(d), dg_cands[c].name);
        CHECK(broken[d], "candidate '%s' (%s): no broken implementation expects '%s': add a mutant to the zoo "
              "(src/verify/zoo/mutants.c) or a defect to " DEFECTS, dg_cands[c].name, fr_diag_name(d), fr_diag_name(d));
    }
    printf("%zu candidates of %d diagnoses, %d mutants, %d defects of %s, %d rows of %s's candidate table\n",
           dg_ncands, FR_DIAG_COUNT, nm, nd, DEFECTS, nrows, DOC);
    free(doc), free(method), free(defects);
    return fr_test_exit("test_candidate_registry");
}
