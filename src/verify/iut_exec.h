/* Settings of an exec IUT (`--impl exec:"CMD ARGS"`, docs/case-format.md "Implementation under test, by command").
 *
 * Each case runs `/bin/sh -c 'CMD ARGS '\''CASE_DIR'\'''` in a fresh temporary directory (under $TMPDIR or /tmp)
 * holding case.json and the inputs; stdin and stdout are /dev/null, stderr is captured (its tail goes into err->msg).
 * Exit 0: the outputs are read back and must have the operator's dtypes and shapes (else FR_E_OUTPUT naming the file);
 * 77: FR_E_UNSUPPORTED (SKIP); any other status, a signal or the timeout: FR_E_INTERNAL with the exit status and
 * stderr. The command runs in its own process group, killed as a whole on timeout. The directory is removed after
 * the case unless the environment variable FLASHREF_KEEP_TMP is set (non-empty), in which case messages name it.
 *
 * Timeout: FR_EXEC_DEFAULT_TIMEOUT_S seconds per case, or FLASHREF_EXEC_TIMEOUT (seconds, read when the IUT is
 * opened), or fr_iut_exec_set_timeout. */
#ifndef FR_VERIFY_IUT_EXEC_H
#define FR_VERIFY_IUT_EXEC_H

#include "verify/iut.h"

#define FR_EXEC_DEFAULT_TIMEOUT_S 600.0

/* Sets the per-case timeout of an exec IUT. FR_E_INVALID_ARG when iut is not an exec IUT or seconds is not a
 * finite number > 0. */
fr_status fr_iut_exec_set_timeout(fr_iut *iut, double seconds, fr_error *err);

#endif
