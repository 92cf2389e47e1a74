/* Settings of a command IUT: `--impl exec:"CMD ARGS"` (one process per case) and `--impl persistent:"CMD ARGS"`
 * (one process for many cases). The protocols are docs/exec-protocol.md.
 *
 * exec: each case runs `/bin/sh -c "CMD ARGS 'CASE_DIR'"` (every ' of CASE_DIR quoted) in a fresh temporary
 * directory (under $TMPDIR or /tmp) holding case.json and the inputs; stdin and stdout are /dev/null, stderr is
 * captured (its last lines go into err->msg, as valid UTF-8). Exit 0: the outputs are read back and must have the
 * operator's dtypes and shapes (else FR_E_OUTPUT naming the file); 77: FR_E_UNSUPPORTED (SKIP); any other status
 * FR_E_INTERNAL "exec: exit status N; stderr: ...", a signal FR_E_INTERNAL "crash: killed by signal N (NAME); ...",
 * the timeout FR_E_INTERNAL "timeout: ...".
 * persistent: CMD is started once with FLASHREF_PROTOCOL=persistent-1; per case flashref writes the directory's
 * absolute path and '\n' to its stdin and reads `flashref-status: N[ message]` from its stdout (0 outputs written,
 * 77 SKIP, else FAIL with the message); a crash or a timeout fails that case ("crash:" / "timeout:") and the next
 * case starts a fresh runner. Closing its stdin asks it to exit.
 *
 * Containment (iut_proc.h): the runner and everything it starts (setsid'd too) are killed when its case ends
 * (persistent: when the run ends or it times out); outputs are opened O_NOFOLLOW | O_NONBLOCK, regular files only,
 * header checked before any data is read; the directory is removed through its descriptor without following
 * links. It is kept when the environment variable FLASHREF_KEEP_TMP is set (non-empty); messages then name it.
 *
 * Timeout (running the case and reading its outputs back): FR_EXEC_DEFAULT_TIMEOUT_S seconds per case, or
 * FLASHREF_EXEC_TIMEOUT (seconds, read when the IUT is opened), or fr_iut_set_timeout (--timeout). */
#ifndef FR_VERIFY_IUT_EXEC_H
#define FR_VERIFY_IUT_EXEC_H

#include "verify/iut/iut.h"

#define FR_EXEC_DEFAULT_TIMEOUT_S 600.0

/* Sets the per-case timeout of an exec IUT. FR_E_INVALID_ARG when iut is not an exec IUT or seconds is not a
 * finite number > 0. */
fr_status fr_iut_exec_set_timeout(fr_iut *iut, double seconds, fr_error *err);

#endif
