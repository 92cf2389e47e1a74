/* The callback implementation under test: a function of the calling process (include/flashref_verify.h; the Python
 * package passes a ctypes callback). Unlike plugins it is not contained in a worker process: it is the caller's own
 * code, run where the caller asked, so its crash is the caller's crash. */
#ifndef FR_VERIFY_IUT_CALLBACK_H
#define FR_VERIFY_IUT_CALLBACK_H

#include "flashref_verify.h"
#include "verify/iut/iut.h"

/* An IUT calling fn(ud, ...) per case; name is how reports name it. */
fr_status fr_iut_callback_open(fr_verify_callback fn, void *ud, const char *name, fr_iut **iut, fr_error *err);
/* A repro hook for the callback (fr_iut_repro): fn(ud, case_dir, out_path, err) writes a standalone reproducer of the
 * case directory; FR_E_UNSUPPORTED when it declines. NULL fn: none. */
typedef fr_status (*fr_iut_repro_fn)(void *ud, const char *case_dir, const char *out_path, fr_error *err);
void fr_iut_callback_set_repro(fr_iut *iut, fr_iut_repro_fn fn, void *ud);

/* The suite case about to run (its name and category reach the callback); NULL strings: "". */
void fr_iut_callback_set_case(fr_iut *iut, const char *name, const char *category);

#endif
