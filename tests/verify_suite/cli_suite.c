/* flashref suite / verify end to end: exit statuses 0 / 1 / 2, the JSON result, the HTML report, the history
 * ("what changed since last time"), --write + an external run + flashref verify, and the stored regression cases.
 * argv[1]: the flashref executable; argv[2]: the source tree (for tests/regression/cases). */
#define _XOPEN_SOURCE 700
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *exe;
static char tmp[256];
#include "common/check.h"
#include "common/kit.h"

/* True when file tmp/NAME contains s. */
static bool contains(const char *name, const char *s) { return fr_test_file_contains(tmp, name, s); }

/* Whether the summary table and the threshold lines of tmp/out.txt are columns (issue 28 row 17: the
 * "implementation-defined" row and two threshold lines were out of line): every category row has its result at
 * the same column, every threshold line its "[--option]" at the same column. */
static bool aligned(void) {
    char path[400], line[512];
    snprintf(path, sizeof path, "%s/out.txt", tmp);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    static const char *const rows[] = {"regression ", "boundaries ", "equivalence ", "properties ", "order invariance ",
                                       "gradients ", "determinism ", "implementation-defined ", "total "};
    long rcol = -1, ocol = -1;
    bool ok = true;
    int nrow = 0, nopt = 0;
    while (fgets(line, sizeof line, f)) {
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
            if (!strncmp(line, rows[k], strlen(rows[k]))) {
                const char *res = strstr(line, "   (no cases)");
                if (!res) res = strstr(line, "   PASS"), res = res ? res : strstr(line, "   FAIL");
                if (!res) res = strstr(line, "   WARN"), res = res ? res : strstr(line, "   SKIP");
                long col = res ? (long)(res - line) : -2;
                ok = ok && col >= 0 && (rcol < 0 || col == rcol);
                rcol = col, nrow++;
            }
        const char *o = strstr(line, " [--");
        if (!strncmp(line, "  FAIL ", 7) || !strncmp(line, "  WARN ", 7)) {
            long col = o ? (long)(o - line) : -2;
            ok = ok && col >= 0 && (ocol < 0 || col == ocol);
            ocol = col, nopt++;
        }
    }
    fclose(f);
    return ok && nrow == 9 && nopt >= 7;
}

/* Runs `flashref ARGS > tmp/out.txt 2>&1` and returns the exit status. */
static char out_txt[300];
#define run(...) fr_test_cli(exe, out_txt, __VA_ARGS__)

int main(int argc, char **argv) {
    if (argc < 3) {
        printf("usage: cli_suite FLASHREF SOURCE_DIR\n");
        return 2;
    }
    exe = argv[1];
    const char *src = argv[2];
    snprintf(tmp, sizeof tmp, "/tmp/fr_cli_suite_XXXXXX");
    if (!mkdtemp(tmp)) return 2;
    snprintf(out_txt, sizeof out_txt, "%s/out.txt", tmp);
    printf("cli_suite: seed 20260101 (the suite's default), temp dir %s\n", tmp);

    /* A correct implementation over the quick set with the regression cases: 0, reports written. */
    int rc = run("suite --set quick --impl golden --regression '%s/tests/regression/cases' --json '%s/s.json' "
                 "--report '%s/s.html' --history '%s/h.jsonl'",
                 src, tmp, tmp, tmp);
    CHECK(rc == 0, "golden on quick: exit %d", rc);
    CHECK(contains("out.txt", "conclusion: PASS"), "no PASS conclusion");
    CHECK(contains("out.txt", "regression "), "no regression row in the summary");
    CHECK(contains("out.txt", "history: first run"), "history not started");
    CHECK(aligned(), "the summary table or the threshold lines are out of line");
    CHECK(contains("s.json", "\"overall\":\t\"PASS\""), "json overall");
    CHECK(contains("s.json", "\"rel_l2\""), "json metrics");
    CHECK(contains("s.html", "<svg") && contains("s.html", "</html>"), "html report");
    /* Every case passed: the worst V = identity case (pr_explicit_p_fp32) is added with its map over key tiles; the
     * other worst cases keep the head-dim map, labelled as such. */
    CHECK(contains("s.html", "key tile (64 keys)") && contains("s.html", "the worst V = identity case (it passed)"),
          "html report: no V = identity heat map over key tiles");
    CHECK(contains("s.html", "head-dim column (Dv)"), "html report: no labelled head-dim heat map");
    /* A failing run (the last key of the last partial key tile dropped): the failing V = identity case is shown with
     * its key-tile map, and its error sits in tile 1 (keys 64-95 of S2 = 96). */
    rc = run("suite --set quick --impl mutant:tile-tail --filter pr_explicit_p --report '%s/m.html'", tmp);
    CHECK(rc == 1, "mutant tile-tail on pr_explicit_p: exit %d", rc);
    CHECK(contains("m.html", "pr_explicit_p_fp32") && contains("m.html", "V = identity: map over key tiles") &&
              contains("m.html", "key tile (64 keys)") && contains("m.html", "tile 1 (keys 64-95)"),
          "html report of a failing V = identity case: no key-tile map");
    /* Again: the history says nothing changed. */
    rc = run("suite --set quick --impl golden --filter eq_ --history '%s/h.jsonl'", tmp);
    CHECK(rc == 0, "second run: exit %d", rc);
    CHECK(contains("out.txt", "removed"), "history should list the cases not run this time");

    /* Thresholds are printed and can be overridden: an impossible bound fails the ideal pipeline itself -> 1. */
    rc = run("suite --impl emulate --set quick --filter eq_fp32_bnsd --k-out 0.01");
    CHECK(rc == 1, "k-out 0.01: exit %d", rc);
    CHECK(contains("out.txt", "0.01 x max"), "overridden threshold not printed");
    CHECK(contains("out.txt", "conclusion: FAIL"), "no FAIL conclusion");

    /* Usage and input errors -> 2. */
    CHECK(run("suite --set nosuchset") == 2, "unknown set");
    CHECK(run("suite --impl nosuch") == 2, "unknown impl");
    CHECK(run("suite --bogus") == 2, "unknown option");
    CHECK(run("verify") == 2, "verify without dirs");
    CHECK(run("verify '%s/nonexistent'", tmp) == 2, "verify of a missing dir");

    /* --list */
    CHECK(run("suite --list --set default") == 0 && contains("out.txt", "bd_nan_in_masked_kv"), "list");

    /* --write, an external run, flashref verify. */
    rc = run("suite --set quick --filter eq_fp32 --write '%s/cases'", tmp);
    CHECK(rc == 0, "write: exit %d", rc);
    rc = run("run '%s/cases/eq_fp32_bnsd_mha' --engine fast", tmp);
    CHECK(rc == 0, "external run: exit %d", rc);
    rc = run("verify '%s/cases/eq_fp32_bnsd_mha' '%s/cases/eq_fp32_pse1_bnss'", tmp, tmp);
    CHECK(rc == 0, "verify: exit %d", rc);
    CHECK(contains("out.txt", "equivalence                   1/1      0      0      1   PASS"),
          "verify summary (one judged, one without outputs)");
    /* The golden engine writes fp64 outputs: wrong dtype for an implementation -> FAIL shape, exit 1. */
    rc = run("run '%s/cases/eq_fp32_pse1_bnss' --engine golden", tmp);
    rc = run("verify '%s/cases/eq_fp32_pse1_bnss'", tmp);
    CHECK(rc == 1 && contains("out.txt", "shape"), "fp64 outputs must FAIL with shape: exit %d", rc);

    /* --inner-precise N (D17): every case takes it (case.json of --write says so); the fast engine PASSes a bf16
     * backward case in mode 1; values outside 0..2 are usage errors. */
    rc = run("suite --set quick --only gr_bf16_gqa_causal --inner-precise 1 --write '%s/ip1'", tmp);
    CHECK(rc == 0, "--inner-precise 1 --write: exit %d", rc);
    rc = run("case check '%s/ip1/gr_bf16_gqa_causal'", tmp);
    CHECK(rc == 0 && contains("out.txt", "inner_precise 1"), "the written case.json without inner_precise 1");
    rc = run("suite --set quick --only gr_bf16_gqa_causal --impl fast --inner-precise 1");
    CHECK(rc == 0 && contains("out.txt", "PASS"), "fast engine, inner_precise 1: exit %d", rc);
    CHECK(run("suite --set quick --inner-precise 3") == 2 && contains("out.txt", "is not 0, 1 or 2"),
          "--inner-precise 3 accepted");
    CHECK(run("suite --set quick --inner-precise one") == 2, "--inner-precise one accepted");

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!failures && system(cmd) != 0) printf("could not remove %s\n", tmp);
    return fr_test_exit("cli_suite");
}
