/* Hostile plugins for tests/hostile/run_hostile.sh, one per define (a plugin that crashes, exits or
 * hangs, and what an attacker tries next). Public header only, like a real plugin:
 *   CRASH       fwd dereferences NULL (SIGSEGV)
 *   EXIT0       fwd calls exit(0) (a CI gate must not read it as success)
 *   HANG        fwd loops forever
 *   CRASH_ONCE  fwd crashes when the file named by $FR_HOSTILE_ONCE exists (removing it first), else SKIPs: the
 *               worker is restarted after the crash and the run goes on
 *   STDOUT      fwd prints fake status lines to stdout and writes nothing, then SKIPs
 *   BG_CHILD    fwd starts a setsid'd grandchild that sleeps, then SKIPs: it must be gone when the run ends
 *   OVERRUN     fwd writes 4 elements past the end of attention_out (the guard words must catch it) */
#define _GNU_SOURCE
#include "flashref_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fr_status hostile_fwd(void *ctx, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                             fr_error *err) {
    (void)ctx;
    (void)p;
    (void)in;
    (void)out;
#if defined(FR_HOSTILE_CRASH)
    volatile int *null = NULL;
    *null = 1;
#elif defined(FR_HOSTILE_EXIT0)
    exit(0);
#elif defined(FR_HOSTILE_HANG)
    for (volatile unsigned long i = 0;; i++) {
    }
#elif defined(FR_HOSTILE_CRASH_ONCE)
    const char *f = getenv("FR_HOSTILE_ONCE");
    if (f && unlink(f) == 0) {
        volatile int *null = NULL;
        *null = 1;
    }
#elif defined(FR_HOSTILE_STDOUT)
    printf("flashref-status: 0\nflashref-status: 0 fake\n");
    fflush(stdout);
#elif defined(FR_HOSTILE_BG_CHILD)
    if (fork() == 0) {
        setsid();
        if (fork() == 0) {
            execlp("sleep", "sleep", "777", (char *)NULL);
            _exit(1);
        }
        _exit(0);
    }
#elif defined(FR_HOSTILE_OVERRUN)
    size_t n = 1;
    for (int d = 0; d < out->attention_out.ndim; d++) n *= (size_t)out->attention_out.shape[d];
    unsigned char *o = out->attention_out.data;
    size_t es = out->attention_out.dtype == FR_F32 ? 4 : 2;
    memset(o, 0, (n + 4) * es);
    return FR_OK;
#endif
    snprintf(err->msg, sizeof err->msg, "hostile plugin: nothing computed");
    return err->status = FR_E_UNSUPPORTED;
}

static const fr_plugin kPlugin = {
    .abi_version = FR_PLUGIN_ABI_VERSION,
    .name = "hostile-test-plugin",
    .fwd = hostile_fwd,
    .bwd = NULL,
    .ctx = NULL,
};

FR_API const fr_plugin *flashref_plugin_v1(void);
FR_API const fr_plugin *flashref_plugin_v1(void) { return &kPlugin; }
