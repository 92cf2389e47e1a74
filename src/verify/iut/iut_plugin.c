/* Implementations under test in a shared library (include/flashref_plugin.h). The library never runs in the
 * verifier's process: a forked worker (iut_exec.c's contained worker, iut_proc.h) dlopens the file, resolves
 * FR_PLUGIN_SYMBOL, checks the descriptor's abi_version and reports ready (or why not: the IUT does not open); then
 * per case it loads the case directory it is sent, calls fwd / bwd through the in-process plugin IUT below (outputs
 * allocated, NaN-prefilled and guarded by fr_iut_run), and writes the outputs back. The worker is reused across
 * cases; a crash, an exit() or a hang is that case's FAIL (crash / timeout) and the next case starts a fresh worker.
 * A NULL bwd, FR_E_UNSUPPORTED (or FR_E_NOT_AVAILABLE) from the plugin is a SKIP; any other non-OK status is a FAIL
 * carrying the plugin's own message. */
#define _GNU_SOURCE

#include "verify/iut/iut_internal.h"

#include "core/core.h"
#include "flashref_plugin.h"
#include "verify/iut/iut_proc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct plugin_impl {
    void *handle;            /* dlopen handle */
    const fr_plugin *desc;   /* the plugin's static descriptor */
    char path[200];          /* as given, for messages */
} plugin_impl;

/* A plugin's status is only trusted when it is one of ours; anything else is reported as FR_E_INTERNAL. */
static fr_status checked_status(fr_status s) { return (unsigned)s < (unsigned)FR_STATUS_COUNT ? s : FR_E_INTERNAL; }

static fr_status plugin_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads; /* a plugin manages its own threads */
    const plugin_impl *pi = iut->impl;
    const fr_plugin *d = pi->desc;
    const char *name = d->name ? d->name : pi->path;
    fr_error pe;
    memset(&pe, 0, sizeof pe);
    fr_status st;
    if (c->op == FR_CASE_FWD) {
        st = d->fwd(d->ctx, &c->params, &c->in.fwd, &o->fwd, &pe);
    } else {
        if (!d->bwd) return fr_fail(err, FR_E_UNSUPPORTED, "plugin %s: no backward (bwd is NULL)", name);
        st = d->bwd(d->ctx, &c->params, &c->in, &o->bwd, &pe);
    }
    if (st == FR_OK) return FR_OK;
    fr_status s = checked_status(st);
    pe.msg[sizeof pe.msg - 1] = '\0'; /* the plugin may have left it unterminated */
    if (s == FR_E_NOT_AVAILABLE) s = FR_E_UNSUPPORTED;
    if (s == FR_E_INTERNAL && st != FR_E_INTERNAL)
        return fr_fail(err, s, "plugin %s: %s returned %d, which is not an fr_status: %.300s", name,
                       c->op == FR_CASE_FWD ? "fwd" : "bwd", (int)st, pe.msg);
    return fr_fail(err, s, "plugin %s: %s: %s: %.380s", name, c->op == FR_CASE_FWD ? "fwd" : "bwd",
                   fr_status_name(s), pe.msg[0] ? pe.msg : "(no message)");
}

static void plugin_close(fr_iut *iut) {
    plugin_impl *pi = iut->impl;
    if (!pi) return;
    if (pi->handle) dlclose(pi->handle);
    free(pi);
    iut->impl = NULL;
}

static const fr_iut_ops kPluginOps = {plugin_run, plugin_close, NULL, NULL};

/* In-process: used only inside the worker. */
static fr_status plugin_inproc_open(const char *path, fr_iut *iut, fr_error *err) {
    if (!path || !iut) return fr_fail(err, FR_E_NULL, "plugin: NULL");
    if (!*path) return fr_fail(err, FR_E_INVALID_ARG, "--impl: plugin: expected plugin:PATH.so, got an empty path");
    /* dlopen searches the library path for a name without '/': a plugin named on the command line is a file. */
    size_t n = strlen(path);
    char *file = malloc(n + 3);
    if (!file) return fr_fail(err, FR_E_NOMEM, "plugin: out of memory");
    snprintf(file, n + 3, "%s%s", strchr(path, '/') ? "" : "./", path);
    if (access(file, R_OK) != 0) {
        free(file);
        return fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: no such readable file", path);
    }
    dlerror();
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    free(file);
    if (!h) {
        const char *why = dlerror();
        return fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: cannot load: %.400s", path, why ? why : "dlopen failed");
    }
    /* ISO C has no cast from void * to a function pointer; POSIX guarantees the representation, so copy it. */
    void *sym = dlsym(h, FR_PLUGIN_SYMBOL);
    fr_plugin_entry_fn entry = NULL;
    if (sym) memcpy(&entry, &sym, sizeof entry);
    fr_status st = FR_OK;
    const fr_plugin *d = NULL;
    if (!entry) {
        st = fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: does not export %s() (flashref_plugin.h)", path,
                     FR_PLUGIN_SYMBOL);
    } else if (!(d = entry())) {
        st = fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: %s() returned NULL", path, FR_PLUGIN_SYMBOL);
    } else if (d->abi_version != FR_PLUGIN_ABI_VERSION) {
        st = fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: abi_version %u, but this flashref speaks abi_version %u",
                     path, (unsigned)d->abi_version, (unsigned)FR_PLUGIN_ABI_VERSION);
    } else if (!d->fwd) {
        st = fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: fwd is NULL (every plugin must have a forward)", path);
    }
    plugin_impl *pi = NULL;
    if (st == FR_OK && !(pi = calloc(1, sizeof *pi))) st = fr_fail(err, FR_E_NOMEM, "plugin: out of memory");
    if (st != FR_OK) {
        dlclose(h);
        return st;
    }
    pi->handle = h;
    pi->desc = d;
    snprintf(pi->path, sizeof pi->path, "%s", path);
    iut->kind = FR_IUT_PLUGIN;
    iut->ops = &kPluginOps;
    iut->impl = pi;
    if (d->name && d->name[0]) snprintf(iut->name, sizeof iut->name, "%s", d->name);
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The worker (runs in the forked child). */

static void status_line(FILE *f, int code, const char *head, const char *msg) {
    char clean[FR_MSG_LEN * 4];
    fr_utf8_sanitize(msg, strlen(msg), clean, sizeof clean);
    for (char *p = clean; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(f, "flashref-status: %d %s%s\n", code, head, clean);
    fflush(f);
}

static int plugin_worker(void *ud) {
    const char *path = ud;
    /* The status lines get their own descriptor; whatever the plugin prints goes to stderr. */
    int sfd = dup(1);
    FILE *status = sfd >= 0 ? fdopen(sfd, "w") : NULL;
    if (!status || dup2(2, 1) < 0) return 1;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_iut *inner = calloc(1, sizeof *inner);
    fr_status st = inner ? plugin_inproc_open(path, inner, &err) : fr_fail(&err, FR_E_NOMEM, "out of memory");
    if (st != FR_OK) {
        status_line(status, 1, "", err.msg);
        free(inner);
        return 1;
    }
    if (!inner->name[0]) snprintf(inner->name, sizeof inner->name, "%s", path);
    status_line(status, 0, "", inner->name);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n') line[--n] = '\0';
        if (!n) continue;
        fr_case c;
        fr_case_outputs o;
        memset(&c, 0, sizeof c);
        memset(&o, 0, sizeof o);
        memset(&err, 0, sizeof err);
        st = fr_case_load(line, &c, &err);
        if (st == FR_OK) st = fr_iut_run(inner, &c, 0, &o, &err);
        if (st == FR_OK) st = fr_case_write_outputs(line, &o, &err);
        if (st == FR_OK)
            status_line(status, 0, "", "");
        else if (st == FR_E_UNSUPPORTED)
            status_line(status, 77, "", err.msg);
        else {
            char head[64];
            snprintf(head, sizeof head, "%s: ", fr_status_name(st));
            status_line(status, 1, head, err.msg);
        }
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
    free(line);
    fr_iut_close(inner);
    fclose(status);
    return 0;
}

fr_status fr_iut_plugin_open(const char *path, fr_iut *iut, fr_error *err) {
    if (!path || !iut) return fr_fail(err, FR_E_NULL, "plugin: NULL");
    if (!*path) return fr_fail(err, FR_E_INVALID_ARG, "--impl: plugin: expected plugin:PATH.so, got an empty path");
    /* Checked here so that the message names the file and the reason before any process starts (the path as given:
     * access() reads a name without a slash in the current folder, where the worker's dlopen is pointed too; a copy
     * cut to a buffer's size once named another file). */
    if (access(path, R_OK) != 0)
        return fr_fail(err, FR_E_NOT_AVAILABLE, "plugin %s: no such readable file (%s)", path, strerror(errno));
    char *ud = strdup(path);
    if (!ud) return fr_fail(err, FR_E_NOMEM, "plugin: out of memory");
    fr_status st = fr_iut_worker_open(plugin_worker, ud, "plugin", iut, err);
    if (st != FR_OK) {
        free(ud);
        return st == FR_E_NOMEM || st == FR_E_IO || st == FR_E_INVALID_ARG ? st : FR_E_NOT_AVAILABLE;
    }
    iut->kind = FR_IUT_PLUGIN;
    return FR_OK;
}
