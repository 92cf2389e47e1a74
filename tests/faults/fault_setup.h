/* What the two fault sweeps (test_alloc_fail.c, test_write_fail.c) set up alike: their own temporary area, and the
 * verifier API's result on the quick set's MHA cases that their report scenarios write. */
#ifndef FR_TESTS_FAULT_SETUP_H
#define FR_TESTS_FAULT_SETUP_H

#include "flashref_verify.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ROOT = mkdtemp($TMPDIR/flashref-<tag>-XXXXXX) with the paths ROOT/out and ROOT/case, and ROOT/tmp made and set as
 * the process's TMPDIR (whatever a run leaves behind is then inside ROOT). False when ROOT cannot be made. */
static inline bool fault_dirs(const char *tag, char root[512], char out[600], char tmp[600], char cse[600]) {
    snprintf(root, 512, "%s/flashref-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag);
    if (!mkdtemp(root)) return false;
    snprintf(out, 600, "%s/out", root);
    snprintf(tmp, 600, "%s/tmp", root);
    snprintf(cse, 600, "%s/case", root);
    mkdir(tmp, 0777);
    setenv("TMPDIR", tmp, 1);
    return true;
}

/* fr_verify_run_callback of cb on the quick set's MHA cases, one thread. */
static inline fr_status fault_verify_quick_mha(fr_verify_callback cb, fr_verify_result **res, fr_error *err) {
    fr_verify_opts vo = fr_verify_opts_default();
    vo.set = "quick";
    vo.filter = "mha";
    vo.threads = 1;
    return fr_verify_run_callback(&vo, cb, NULL, res, err);
}

#endif
