/* Implementations under test: the one run path that every kind goes through (outputs allocated here in the
 * operator's dtypes, prefilled with a NaN payload no arithmetic produces, surrounded by guard bytes; both checked
 * after the run), closing, timeouts and the give-up count. Opening an IUT from its spec is iut_open.c; each kind
 * lives in its own file (iut_open.c: engines and disk; iut_plugin.c, iut_exec.c, iut_mutant.c, iut_callback.c). */
#include "verify/iut/iut_internal.h"

#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fr_iut_close(fr_iut *iut) {
    if (!iut) return;
    if (iut->ops && iut->ops->close) iut->ops->close(iut);
    free(iut->caps_json);
    free(iut);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Capabilities and the repro hook. */

fr_status fr_iut_take_caps(fr_iut *iut, const char *json, size_t len, fr_error *err) {
    fr_caps c;
    fr_error e;
    memset(&e, 0, sizeof e);
    fr_status st = fr_caps_parse(json, len, &c, &e);
    if (st != FR_OK) {
        snprintf(iut->refused, sizeof iut->refused, "%s", e.msg);
        return fr_fail(err, st, "%s", e.msg);
    }
    char *copy = malloc(len + 1);
    if (!copy) return fr_fail(err, FR_E_NOMEM, "capabilities: out of memory");
    memcpy(copy, json, len);
    copy[len] = 0;
    free(iut->caps_json);
    iut->caps_json = copy;
    iut->caps = c;
    iut->caps_state = c.declared ? FR_CAPS_DECLARED : FR_CAPS_NONE;
    return FR_OK;
}

fr_caps_state fr_iut_caps(const fr_iut *iut, const fr_caps **caps) {
    if (caps) *caps = iut && iut->caps_state == FR_CAPS_DECLARED ? &iut->caps : NULL;
    return iut ? iut->caps_state : FR_CAPS_NONE;
}

const char *fr_iut_caps_json(const fr_iut *iut) { return iut ? iut->caps_json : NULL; }

fr_status fr_iut_declare(fr_iut *iut, const char *json, size_t len, fr_error *err) {
    if (!iut || (!json && len)) return fr_fail(err, FR_E_NULL, "capabilities: NULL");
    return fr_iut_take_caps(iut, json ? json : "", len, err);
}

const char *fr_iut_refused(const fr_iut *iut) { return iut && iut->refused[0] ? iut->refused : NULL; }

fr_status fr_iut_repro(fr_iut *iut, const char *case_dir, const char *out_path, fr_error *err) {
    if (!iut || !case_dir || !out_path) return fr_fail(err, FR_E_NULL, "repro: NULL");
    if (!iut->ops->repro) return fr_fail(err, FR_E_UNSUPPORTED, "%s has no repro hook", iut->name);
    return iut->ops->repro(iut, case_dir, out_path, err);
}

fr_status fr_iut_set_timeout(fr_iut *iut, double seconds, fr_error *err) {
    if (!iut) return fr_fail(err, FR_E_NULL, "--timeout: NULL");
    if (!isfinite(seconds) || seconds <= 0)
        return fr_fail(err, FR_E_INVALID_ARG, "--timeout: %g is not a number of seconds > 0", seconds);
    if (!iut->ops || !iut->ops->set_timeout)
        return fr_fail(err, FR_E_INVALID_ARG, "--timeout: %s runs in this process; only plugin:, exec: and "
                                              "persistent: implementations have a timeout", iut->name);
    return iut->ops->set_timeout(iut, seconds, err);
}

bool fr_iut_failed_itself(const fr_iut *iut) { return iut && iut->own_failure; }

/* A refused capability declaration stops a run at once, as an implementation that cannot start does. */
const char *fr_iut_gave_up(const fr_iut *iut) {
    if (iut && iut->refused[0]) return iut->refused;
    return iut && iut->gave_up ? iut->last_err : NULL;
}

/* Counts identical consecutive failures of an external implementation (a missing interpreter fails every case the
 * same way): after FR_IUT_GIVE_UP_AFTER of them the suite stops early (fr_iut_gave_up). */
static void note_outcome(fr_iut *iut, fr_status st, const char *msg) {
    if (fr_iut_is_builtin(iut) || iut->kind == FR_IUT_DISK) return;
    if (st == FR_OK || st == FR_E_UNSUPPORTED || st == FR_E_OUTPUT) {
        iut->same_errs = 0;
        return;
    }
    if (iut->same_errs > 0 && !strcmp(iut->last_err, msg)) {
        if (++iut->same_errs >= FR_IUT_GIVE_UP_AFTER) iut->gave_up = true;
    } else {
        iut->same_errs = 1;
        snprintf(iut->last_err, sizeof iut->last_err, "%s", msg);
    }
}

fr_iut_kind fr_iut_get_kind(const fr_iut *iut) { return iut->kind; }
const char *fr_iut_name(const fr_iut *iut) { return iut->name; }
bool fr_iut_is_builtin(const fr_iut *iut) { return iut->kind == FR_IUT_ENGINE || iut->kind == FR_IUT_MUTANT; }

/* ---------------------------------------------------------------------------------------------------------------- */
/* Guarded, NaN-payload-prefilled output buffers. */

#define GUARD_BYTES 64
#define GUARD_BYTE 0xA5

/* The prefill pattern of a dtype: a NaN with a payload that no arithmetic produces (x86 makes 0xFFC00000-style
 * "indefinite" NaNs), so an element still holding it was never written. 8-bit formats have no spare NaN payload:
 * returns false (unwritten elements are then caught as NaN by the judge). */
static bool prefill_pattern(fr_dtype dt, unsigned char *pat) {
    /* memcpy from a variable of the dtype's width keeps the host byte order */
    const uint64_t f64 = UINT64_C(0x7FF4A5A5A5A5A5A5);
    const uint32_t f32 = 0x7FA5A5A5u;
    const uint16_t f16 = 0x7DA5u, bf16 = 0x7FA5u;
    switch (dt) {
    case FR_F64: memcpy(pat, &f64, 8); return true;
    case FR_F32: memcpy(pat, &f32, 4); return true;
    case FR_F16: memcpy(pat, &f16, 2); return true;
    case FR_BF16: memcpy(pat, &bf16, 2); return true;
    default: return false;
    }
}

typedef struct guarded {
    unsigned char *base;
    size_t bytes;
    bool has_pat;
    unsigned char pat[8];
} guarded;

fr_status fr_iut_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    if (!iut || !c || !o) return fr_fail(err, FR_E_NULL, "fr_iut_run: NULL");
    iut->own_failure = false;
    fr_status st = fr_case_alloc_outputs(c, false, o, err);
    if (st != FR_OK) {
        iut->own_failure = true;
        return st;
    }
    fr_case_outputs run = *o;
    guarded g[FR_CASE_NUM_OUTPUTS];
    memset(g, 0, sizeof g);
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        fr_tensor *t = fr_case_output_slot(&run, (fr_case_output)k);
        if (!fr_tensor_present(t)) continue;
        size_t es = fr_dtype_size(t->dtype), n = (size_t)fr_tensor_numel(t);
        g[k].bytes = n * es;
        g[k].base = malloc(g[k].bytes + 2 * GUARD_BYTES);
        if (!g[k].base) {
            st = fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %zu bytes", fr_case_output_name((fr_case_output)k),
                         g[k].bytes);
            iut->own_failure = true;
            break;
        }
        memset(g[k].base, GUARD_BYTE, g[k].bytes + 2 * GUARD_BYTES);
        unsigned char *d = g[k].base + GUARD_BYTES;
        g[k].has_pat = prefill_pattern(t->dtype, g[k].pat);
        if (g[k].has_pat)
            for (size_t i = 0; i < n; i++)
                memcpy(d + i * es, g[k].pat, es);
        else
            memcpy(d, fr_case_output_slot(o, (fr_case_output)k)->data, g[k].bytes);
        t->data = n ? d : NULL;
    }
    if (st == FR_OK) {
        fr_error_clear(err);
        st = iut->ops->run(iut, c, threads, &run, err);
        if (st == FR_E_NOT_AVAILABLE) st = FR_E_UNSUPPORTED;
        note_outcome(iut, st, err ? err->msg : "");
    }
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        if (!g[k].base) continue;
        const char *name = fr_case_output_name((fr_case_output)k);
        fr_tensor *dst = fr_case_output_slot(o, (fr_case_output)k), *src = fr_case_output_slot(&run, (fr_case_output)k);
        unsigned char *d = g[k].base + GUARD_BYTES;
        if (st == FR_OK) {
            for (size_t i = 0; i < GUARD_BYTES; i++)
                if (g[k].base[i] != GUARD_BYTE || d[g[k].bytes + i] != GUARD_BYTE) {
                    st = fr_fail(err, FR_E_OUTPUT, "guard: %s: bytes %s the buffer were overwritten", name,
                                 g[k].base[i] != GUARD_BYTE ? "before" : "after");
                    break;
                }
        }
        if (st == FR_OK && g[k].has_pat && src->data == d) {
            size_t es = fr_dtype_size(dst->dtype), n = g[k].bytes / es, cnt = 0, first = 0;
            for (size_t i = 0; i < n; i++)
                if (!memcmp(d + i * es, g[k].pat, es) && cnt++ == 0) first = i;
            if (cnt)
                st = fr_fail(err, FR_E_OUTPUT, "unwritten: %s: %zu of %zu elements never written (first at %zu)", name,
                             cnt, n, first);
        }
        /* The disk IUT may have replaced a tensor (different shape on disk): keep what it found. */
        if (src->data == d) {
            memcpy(dst->data, d, g[k].bytes);
        } else if (src->data) {
            free(dst->data);
            *dst = *src;
        } else if (!fr_tensor_present(src)) { /* left out on purpose (a dump without it): absent, not unwritten */
            free(dst->data);
            memset(dst, 0, sizeof *dst);
        }
        free(g[k].base);
    }
    return st;
}
