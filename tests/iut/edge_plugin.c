/* A plugin for test_iut_plugin_edges whose behaviour is chosen by the environment variable FR_EDGE_PLUGIN, read in
 * the worker (a fresh one per open or restart). Public header only, like a real plugin. At load (the entry point):
 *   null       the entry returns NULL                 nofwd      a descriptor without fwd
 *   exit       says why on stderr and exits 3         sleep      sleeps 30 s (the worker never reports ready)
 *   noname     a descriptor without a name (fwd fails FR_E_SHAPE with no message)
 *   emptyname  a descriptor whose name is ""
 *   restart    fwd creates the file $FR_EDGE_FLAG and exits 9; the entry returns NULL once that file exists
 * Per case (fwd / bwd), otherwise: "na" returns FR_E_NOT_AVAILABLE (a SKIP), "bwd" fails bwd with FR_E_INVALID_ARG,
 * "bwdok" returns FR_OK from bwd without writing, "bwdbad" returns 999 (not an fr_status) from bwd, "lines" fails fwd
 * with a message of three lines; anything else fails fwd with FR_E_SHAPE and a marker. */
#define _GNU_SOURCE
#include "flashref_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *mode(void) {
    const char *m = getenv("FR_EDGE_PLUGIN");
    return m ? m : "";
}

static fr_status edge_fwd(void *ctx, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                          fr_error *err) {
    (void)ctx;
    (void)p;
    (void)in;
    (void)out;
    if (!strcmp(mode(), "restart")) {
        const char *flag = getenv("FR_EDGE_FLAG");
        FILE *f = flag ? fopen(flag, "w") : NULL;
        if (f) fclose(f);
        _exit(9);
    }
    if (!strcmp(mode(), "na")) {
        snprintf(err->msg, sizeof err->msg, "edge-na-marker: no device here");
        return err->status = FR_E_NOT_AVAILABLE;
    }
    if (!strcmp(mode(), "noname")) return FR_E_SHAPE;
    if (!strcmp(mode(), "lines")) {
        snprintf(err->msg, sizeof err->msg, "first line\nsecond line\r\nthird");
        return err->status = FR_E_SHAPE;
    }
    snprintf(err->msg, sizeof err->msg, "edge-fwd-marker");
    return err->status = FR_E_SHAPE;
}

static fr_status edge_bwd(void *ctx, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                          fr_error *err) {
    (void)ctx;
    (void)p;
    (void)in;
    (void)out;
    if (!strcmp(mode(), "bwdok")) return FR_OK;
    if (!strcmp(mode(), "bwdbad")) {
        snprintf(err->msg, sizeof err->msg, "bwdbad-marker");
        return (fr_status)999;
    }
    snprintf(err->msg, sizeof err->msg, "edge-bwd-marker");
    return err->status = FR_E_INVALID_ARG;
}

static fr_plugin g_plugin = {
    .abi_version = FR_PLUGIN_ABI_VERSION,
    .name = "edge-test-plugin",
    .fwd = edge_fwd,
    .bwd = edge_bwd,
    .ctx = NULL,
};

FR_API const fr_plugin *flashref_plugin_v1(void);
FR_API const fr_plugin *flashref_plugin_v1(void) {
    const char *m = mode();
    if (!strcmp(m, "null")) return NULL;
    if (!strcmp(m, "nofwd")) g_plugin.fwd = NULL;
    if (!strcmp(m, "noname")) g_plugin.name = NULL;
    if (!strcmp(m, "emptyname")) g_plugin.name = "";
    if (!strcmp(m, "exit")) {
        fprintf(stderr, "edge-exit-marker: no licence\n");
        exit(3);
    }
    if (!strcmp(m, "sleep")) sleep(30);
    if (!strcmp(m, "restart")) {
        const char *flag = getenv("FR_EDGE_FLAG");
        if (flag && access(flag, F_OK) == 0) return NULL;
    }
    return &g_plugin;
}
