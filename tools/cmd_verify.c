/* flashref verify DIR...: judge outputs an implementation already wrote into case directories. */
#include "cli.h"
#include "cmd_suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void verify_usage(FILE *f) {
    fprintf(f, "usage: flashref verify [options] DIR...\n"
               "       flashref verify --msprobe DUMP_DIR [--standard S] [--write DIR] [options]\n"
               "  Each DIR is a case directory (case.json + inputs) holding the outputs an implementation wrote\n"
               "  (attention_out.npy softmax_max.npy softmax_sum.npy, or dq.npy dk.npy dv.npy ...). Each is judged\n"
               "  against a fresh fp64 golden run (or DIR/golden/ when present, as `flashref suite --write` leaves\n"
               "  it) and the ideal pipeline of its dtype. Fully masked rows are implementation-defined (spec D1).\n"
               "  Typical use: flashref suite --set default --write cases/; run your implementation on every\n"
               "  cases/NAME; flashref verify cases/*\n"
               "  The case format is docs/case-format.md; decisions such as D1 are in docs/semantics-decisions.md.\n"
               "  --msprobe DUMP_DIR: an msprobe dump (Ascend's accuracy tool, task \"tensor\"): a directory holding\n"
               "  dump.json and dump_tensor_data/, or one above it (step*/rank*). Every npu_fusion_attention[_grad]\n"
               "  [_v2|_v3] call in it is rebuilt with torch_npu's argument names and defaults, a backward entry as\n"
               "  the grad call of its forward, and the NPU's dumped outputs are judged against the golden; each\n"
               "  result is named by its dump name. Standard: ascend-L1 (msprobe's level for these APIs) unless\n"
               "  --standard says otherwise (flashref: flashref's own judge). --write DIR also writes every rebuilt\n"
               "  call as a case directory DIR/NAME with the NPU's outputs beside it. docs/ascend.md.\n");
    suite_cli_help(f);
    suite_cli_help_exit(f);
}

/* `flashref verify --msprobe DUMP_DIR`: the dump's fusion-attention calls judged, named by their dump names. */
static int verify_msprobe(const char *dump, suite_cli *s, bool standard_given) {
    if (!standard_given) s->o.judge.standard = FR_STD_ASCEND_L1; /* msprobe's own level for these APIs */
    if (!suite_cli_check_paths("verify", s)) return 2;
    char impl[4200];
    snprintf(impl, sizeof impl, "msprobe:%.4000s", dump);
    s->impl = impl;
    s->o.judge.external = true;
    s->o.progress = suite_cli_progress;
    if (!s->quiet) {
        printf("flashref verify --msprobe %s (standard %s)\n", dump, fr_standard_name(s->o.judge.standard));
        fr_report_thresholds(stdout, &s->o.judge);
        fflush(stdout);
    }
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_suite_result r;
    int ndumps = 0, nother = 0;
    fr_status st = fr_suite_verify_msprobe(dump, &s->o, s->write_dir, &r, &ndumps, &nother, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref verify: --msprobe %s: %s: %s\n", dump, fr_status_name(st), err.msg);
        fr_suite_result_free(&r);
        return 2;
    }
    if (!s->quiet) {
        printf("%d result%s from %d dump director%s (%d entries of other APIs not read)\n", r.n, r.n == 1 ? "" : "s",
               ndumps, ndumps == 1 ? "y" : "ies", nother);
        if (s->write_dir) printf("cases:  %s/NAME (flashref verify %s/NAME judges one again)\n", s->write_dir,
                                 s->write_dir);
    }
    if (!r.n)
        fprintf(stderr, "flashref verify: --msprobe %s: no npu_fusion_attention calls in the dump (msprobe dumps "
                "them with level L1 or mix)\n", dump);
    int rc = suite_cli_finish("verify", s, &r);
    fr_suite_result_free(&r);
    return rc;
}

int cmd_verify(int argc, char **argv) {
    suite_cli s;
    if (!suite_cli_begin(argc, argv, &s, verify_usage)) return 0;
    s.o.set = "verify";
    s.impl = "disk";
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    if (!dirs) return 2;
    int nd = 0;
    const char *msprobe = NULL;
    bool standard_given = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--msprobe")) {
            if (i + 1 >= argc || msprobe) {
                fprintf(stderr, "flashref verify: --msprobe %s\n", msprobe ? "given twice" : "needs a dump directory");
                free(dirs);
                return 2;
            }
            msprobe = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--standard")) standard_given = true;
        if (argv[i][0] == '-') {
            if (!suite_cli_take("verify", "option", argc, argv, &i, &s, verify_usage)) {
                free(dirs);
                return 2;
            }
        } else {
            dirs[nd++] = argv[i];
        }
    }
    if (msprobe) {
        free(dirs);
        if (nd) {
            fprintf(stderr, "flashref verify: --msprobe judges one dump directory; case directories go without it\n");
            return 2;
        }
        return verify_msprobe(msprobe, &s, standard_given);
    }
    if (s.write_dir) {
        fprintf(stderr, "flashref verify: --write goes with --msprobe (case directories are already on disk)\n");
        free(dirs);
        return 2;
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
