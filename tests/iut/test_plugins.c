/* Broken plugins for test_iut_plugin, one per define: FR_TEST_BAD_ABI (abi_version 99), FR_TEST_FAILING (fwd returns
 * FR_E_SHAPE with a marker message), FR_TEST_BAD_STATUS (fwd returns 1234, not an fr_status), FR_TEST_NO_SYMBOL
 * (exports another name). Public header only, like a real plugin. */
#include "flashref_plugin.h"

#include <stdio.h>

static fr_status broken_fwd(void *ctx, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                            fr_error *err) {
    (void)ctx;
    (void)p;
    (void)in;
    (void)out;
#if defined(FR_TEST_BAD_STATUS)
    snprintf(err->msg, sizeof err->msg, "bad-status-marker");
    return (fr_status)1234;
#else
    snprintf(err->msg, sizeof err->msg, "failing-plugin-marker: the device rejected the shape");
    return err->status = FR_E_SHAPE;
#endif
}

static const fr_plugin kPlugin = {
#if defined(FR_TEST_BAD_ABI)
    .abi_version = 99,
#else
    .abi_version = FR_PLUGIN_ABI_VERSION,
#endif
    .name = "broken-test-plugin",
    .fwd = broken_fwd,
    .bwd = NULL,
    .ctx = NULL,
};

#if defined(FR_TEST_NO_SYMBOL)
FR_API const fr_plugin *flashref_plugin_v0(void);
FR_API const fr_plugin *flashref_plugin_v0(void) { return &kPlugin; }
#else
FR_API const fr_plugin *flashref_plugin_v1(void);
FR_API const fr_plugin *flashref_plugin_v1(void) { return &kPlugin; }
#endif
