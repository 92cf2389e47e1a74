/* flashref plugin ABI: an attention implementation in a shared library, judged by `flashref suite --impl
 * plugin:PATH.so`. The library exports one function,
 *
 *     const fr_plugin *flashref_plugin_v1(void);
 *
 * returning a static descriptor. flashref dlopens the library in a worker process of its own (never in the
 * verifier's process), checks abi_version, then calls fwd (and bwd, when non-NULL) once per case, in that worker,
 * with validated inputs and output tensors already allocated in the operator's dtypes
 * (attention_out in the output dtype, softmax max/sum fp32, gradients in the input dtype), prefilled with NaN and
 * surrounded by guard words: write every element, nothing else.
 * Return FR_OK, or FR_E_UNSUPPORTED for a case the implementation does not handle (reported as SKIP, never PASS);
 * any other status is a FAIL of that case, with err->msg shown. A crash, exit() or hang (--timeout) is that
 * case's FAIL (crash / timeout) and the next case gets a fresh worker; whatever the plugin prints on stdout goes to
 * the captured stderr. Calls may come from one thread at a time; the implementation may use threads internally.
 * The ABI is versioned: a new, incompatible layout of the structs in flashref.h gets a new version number and a new
 * exported symbol name.
 */
#ifndef FLASHREF_PLUGIN_H
#define FLASHREF_PLUGIN_H

#include "flashref.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FR_PLUGIN_ABI_VERSION 1
#define FR_PLUGIN_SYMBOL "flashref_plugin_v1"

typedef struct fr_plugin {
    uint32_t abi_version; /* FR_PLUGIN_ABI_VERSION */
    const char *name;     /* shown in reports */
    fr_status (*fwd)(void *ctx, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                     fr_error *err);
    fr_status (*bwd)(void *ctx, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                     fr_error *err); /* NULL: backward cases are SKIP */
    void *ctx;            /* passed back unchanged */
} fr_plugin;

typedef const fr_plugin *(*fr_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
