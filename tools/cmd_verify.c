/* flashref verify DIR...: judge outputs an implementation already wrote into case directories. */
#include "cli.h"
#include "cmd_suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void verify_usage(FILE *f) {
    fprintf(f, "usage: flashref verify [options] DIR...\n"
               "  Each DIR is a case directory (case.json + inputs) holding the outputs an implementation wrote\n"
               "  (attention_out.npy softmax_max.npy softmax_sum.npy, or dq.npy dk.npy dv.npy ...). Each is judged\n"
               "  against a fresh fp64 golden run (or DIR/golden/ when present, as `flashref suite --write` leaves\n"
               "  it) and the ideal pipeline of its dtype. Fully masked rows are implementation-defined (spec D1).\n"
               "  Typical use: flashref suite --set default --write cases/; run your implementation on every\n"
               "  cases/NAME; flashref verify cases/*\n"
               "  The case format is docs/case-format.md; decisions such as D1 are in docs/semantics-decisions.md.\n");
    suite_cli_help(f);
    suite_cli_help_exit(f);
}

/* Alike cmd_suite.c:cmd_suite, cmd_selftest.c:cmd_selftest: kept apart because each command has its own usage text
 * and its own arguments around the shared suite_cli_init / suite_cli_option. */
int cmd_verify(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        verify_usage(stdout);
        return 0;
    }
    suite_cli s;
    suite_cli_init(&s);
    s.o.set = "verify";
    s.impl = "disk";
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    if (!dirs) return 2;
    int nd = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            int r = suite_cli_option("verify", argc, argv, &i, &s);
            if (r <= 0) {
                if (r == 0) {
                    fprintf(stderr, "flashref verify: unknown option '%s'\n", argv[i]);
                    verify_usage(stderr);
                }
                free(dirs);
                return 2;
            }
        } else {
            dirs[nd++] = argv[i];
        }
    }
    if (!nd) {
        verify_usage(stderr);
        free(dirs);
        return 2;
    }
    if (!suite_cli_check_paths("verify", &s)) {
        free(dirs);
        return 2;
    }
    s.o.judge.external = true;
    if (!s.quiet) s.o.progress = suite_cli_progress;
    if (!s.quiet) {
        printf("flashref verify: %d case director%s\n", nd, nd == 1 ? "y" : "ies");
        fr_report_thresholds(stdout, &s.o.judge);
        fflush(stdout);
    }
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_suite_result r;
    fr_status st = fr_suite_verify_dirs(dirs, nd, &s.o, &r, &err);
    free(dirs);
    if (st != FR_OK) {
        fprintf(stderr, "flashref verify: %s: %s\n", fr_status_name(st), err.msg);
        fr_suite_result_free(&r);
        return 2;
    }
    int rc = suite_cli_finish("verify", &s, &r); /* a directory that could not be loaded: 2 */
    fr_suite_result_free(&r);
    return rc;
}
