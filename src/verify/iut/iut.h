/* Implementation under test (IUT): one interface over every way an attention implementation can be judged
 * (docs/design.md). Specs, as given to --impl:
 *   fast | golden | emulate[:PRESET]       built-in engines (determinism suites apply to these)
 *   plugin:PATH.so                         a shared library exporting the ABI of include/flashref_plugin.h
 *   exec:CMD ARGS                          a command run as `CMD ARGS CASE_DIR` on a fresh copy of the case's inputs
 *                                          (docs/exec-protocol.md); exit 0 = outputs written, 77 = SKIP, else FAIL
 *   persistent:CMD ARGS                    one long-lived command that is sent many case directories on stdin and
 *                                          answers each with `flashref-status: N[ message]` (docs/exec-protocol.md)
 *   mutant:NAME                            a built-in broken implementation (mutants.h)
 * Outputs already on disk are judged with fr_iut_open_disk (flashref verify DIR...).
 */
#ifndef FR_VERIFY_IUT_H
#define FR_VERIFY_IUT_H

#include "io/casedir.h"
#include "verify/iut/caps.h"

typedef struct fr_iut fr_iut;

typedef enum fr_iut_kind {
    FR_IUT_ENGINE,
    FR_IUT_PLUGIN,
    FR_IUT_EXEC,
    FR_IUT_MUTANT,
    FR_IUT_DISK,
    FR_IUT_CALLBACK /* a function in the caller's process (iut_callback.h: the Python package) */
} fr_iut_kind;

/* Opens an IUT from its spec string. FR_E_INVALID_ARG for an unknown spec (message lists the forms),
 * FR_E_NOT_AVAILABLE for a plugin that cannot be loaded or has the wrong ABI version. */
fr_status fr_iut_open(const char *spec, fr_iut **iut, fr_error *err);
/* An IUT whose outputs are already in each case directory (fr_iut_run reads them). */
fr_status fr_iut_open_disk(fr_iut **iut, fr_error *err);
/* An IUT whose outputs the caller holds in memory (an msprobe dump's, read by the caller): before each case,
 * fr_iut_given_set(iut, &outputs) (NULL: the case SKIPs). An output absent there is left absent (not judged when the
 * judge's absent_ok allows it, else a FAIL); one of another shape or dtype is handed to the judge as it is. Kind
 * FR_IUT_DISK: outputs already made elsewhere. */
fr_status fr_iut_open_given(const char *name, fr_iut **iut, fr_error *err);
void fr_iut_given_set(fr_iut *iut, const fr_case_outputs *o);
void fr_iut_close(fr_iut *iut);

/* Per-case timeout in seconds of an implementation outside this process (plugin:, exec:, persistent:): running the
 * case and reading its outputs back. FR_E_INVALID_ARG for a built-in one or seconds not finite and > 0. */
fr_status fr_iut_set_timeout(fr_iut *iut, double seconds, fr_error *err);

/* After this many identical consecutive failures of an external implementation (it cannot start: a missing
 * interpreter, a broken plugin), the run stops early. */
#define FR_IUT_GIVE_UP_AFTER 5
/* NULL while the implementation is worth running; else the message it failed with FR_IUT_GIVE_UP_AFTER times. */
const char *fr_iut_gave_up(const fr_iut *iut);

fr_iut_kind fr_iut_get_kind(const fr_iut *iut);
const char *fr_iut_name(const fr_iut *iut);   /* the spec, or the plugin's name */
/* The numerics of a built-in engine / mutant's nearest ideal (NULL otherwise): the judge uses it to know which
 * dtype's ideal pipeline bounds it. */
bool fr_iut_is_builtin(const fr_iut *iut);    /* engine or mutant: in-process, thread count settable */

/* Capabilities (docs/exec-protocol.md, "Runner capabilities (declared)"). A persistent: runner is offered
 * persistent-2 and may declare them as its first stdout line; until its first case is answered the state is PENDING
 * (the runner starts with the first case). A callback is given them by its caller (fr_iut_declare). *caps (when
 * non-NULL) receives the declaration when DECLARED, else NULL. */
fr_caps_state fr_iut_caps(const fr_iut *iut, const fr_caps **caps);
const char *fr_iut_caps_json(const fr_iut *iut); /* the declaration's text as received, or NULL */
/* Declares capabilities for an implementation that cannot send them itself (a callback; tests): the JSON object text
 * of len bytes, parsed strictly (caps.h). FR_E_FORMAT when refused (the IUT then counts as refused). */
fr_status fr_iut_declare(fr_iut *iut, const char *json, size_t len, fr_error *err);
/* Non-NULL (why) when the implementation's declaration was refused: a run must stop (its runner is not trusted). */
const char *fr_iut_refused(const fr_iut *iut);

/* Writes a standalone reproducer of the case directory case_dir (regression format) to out_path, with the
 * implementation's own repro hook: a persistent:/exec: runner that declares "repro": true is run as
 * `CMD ARGS --repro CASE_DIR OUT_PATH` (contained, under the per-case timeout; exit 0 written, 77 not for this case);
 * a callback given a repro function calls it. FR_E_UNSUPPORTED (with why) when there is no hook or the runner
 * declines the case; FR_E_INTERNAL when the hook failed (its stderr's end in the message). */
fr_status fr_iut_repro(fr_iut *iut, const char *case_dir, const char *out_path, fr_error *err);

/* The same runner in another of its declared variants (caps.h: variant, variants): a persistent:/exec: command whose
 * declared variant is one word of the command line, that word replaced. FR_E_UNSUPPORTED when the runner has no
 * variants or its variant is not a word of its command; FR_E_INVALID_ARG for a variant it did not declare. */
fr_status fr_iut_open_variant(const fr_iut *iut, const char *variant, fr_iut **out, fr_error *err);

/* Runs one case. c holds the inputs (a loaded or generated case; c->dir is used by the disk IUT and as the source
 * of the exec protocol's copy). On FR_OK, o holds the outputs in the operator's dtypes (allocated here, NaN-prefilled,
 * with guard words checked: an overwritten guard is FR_E_OUTPUT). FR_E_UNSUPPORTED means SKIP. threads: 0 default.
 * Whatever the status (FR_E_NULL aside), o is the caller's to free with fr_case_outputs_free: a failed run's outputs
 * stay allocated. The IUT's own messages (exec stderr, plugin err) are in err->msg. */
fr_status fr_iut_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err);
/* Whether the last fr_iut_run failed on the verifier's side (its outputs' memory, the temporary case directory, the
 * case written there: a full disk, no memory; a runner it could not start: no descriptors for its pipes, no
 * process), not in the implementation: the run's error, never its verdict. */
bool fr_iut_failed_itself(const fr_iut *iut);

#endif
