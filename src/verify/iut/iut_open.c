/* Opening an implementation under test from its --impl spec (iut.h): the built-in engines and outputs on disk live
 * here; plugins, commands and mutants are opened by their own files (iut_plugin.c, iut_exec.c, iut_mutant.c), all
 * on top of the run path of iut.c. */
#include "verify/iut/iut_internal.h"

#include "core/core.h"
#include "flashref_emulate.h"
#include "io/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The mutant zoo's opener (iut_mutant.c); plugins and commands are declared in iut_internal.h. */
fr_status fr_iut_mutant_open(const char *name, fr_iut *iut, fr_error *err);

/* ---------------------------------------------------------------------------------------------------------------- */
/* Built-in engines. */

typedef struct engine_impl {
    fr_engine e;
    fr_numerics nc; /* emulate with a preset */
    bool has_nc;
} engine_impl;

static fr_status engine_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    engine_impl *ei = iut->impl;
    fr_engine e = ei->e;
    e.num_threads = threads;
    if (ei->has_nc) e.numerics = &ei->nc;
    return c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, &e, err)
                                : fr_bwd(&c->params, &c->in, &o->bwd, &e, err);
}

static void engine_close(fr_iut *iut) { free(iut->impl); }

static const fr_iut_ops kEngineOps = {engine_run, engine_close, NULL, NULL};

static fr_status engine_open(const char *spec, fr_iut *iut, fr_error *err) {
    engine_impl *ei = calloc(1, sizeof *ei);
    if (!ei) return fr_fail(err, FR_E_NOMEM, "--impl: out of memory");
    fr_status st = FR_OK;
    const char *colon = strchr(spec, ':');
    size_t head = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    if (head == 6 && !strncmp(spec, "golden", 6) && !arg) {
        ei->e = fr_engine_default(FR_ENGINE_GOLDEN);
    } else if (head == 4 && !strncmp(spec, "fast", 4)) {
        ei->e = fr_engine_default(FR_ENGINE_FAST);
        if (arg) {
            fr_error e2;
            if (fr_isa_parse(arg, &ei->e.isa, &e2) != FR_OK)
                st = fr_fail(err, FR_E_INVALID_ARG, "--impl: fast:%s: %s", arg, e2.msg);
        }
    } else if (head == 7 && !strncmp(spec, "emulate", 7)) {
        ei->e = fr_engine_default(FR_ENGINE_EMULATE);
        if (arg) {
            st = fr_numerics_preset(arg, &ei->nc, err);
            ei->has_nc = st == FR_OK;
        }
    } else {
        st = fr_fail(err, FR_E_INVALID_ARG, "--impl: '%s' is not an engine", spec);
    }
    if (st == FR_OK) st = fr_engine_available(&ei->e, err);
    if (st != FR_OK) {
        free(ei);
        return st == FR_E_INVALID_ARG ? st : FR_E_NOT_AVAILABLE;
    }
    iut->kind = FR_IUT_ENGINE;
    iut->ops = &kEngineOps;
    iut->impl = ei;
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Outputs on disk: read from the case's directory. */

/* Alike iut_open.c:given_run (its copy loop): kept apart because this one reads files, checking each header before
 * any data, and hands over what it read; that one copies outputs the caller keeps in memory. */
static fr_status disk_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)iut;
    (void)threads;
    if (!c->dir) return fr_fail(err, FR_E_INVALID_ARG, "disk: the case has no directory");
    /* No primary output at all: the implementation did not run this case (SKIP, as exit 77 in the exec protocol). */
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/%s.npy", c->dir, c->op == FR_CASE_FWD ? "attention_out" : "dq");
    struct stat sb;
    if (stat(p, &sb) != 0) return fr_fail(err, FR_E_UNSUPPORTED, "%s: no outputs on disk", p);
    /* Check before read: an output whose header does not have the operator's dtype and shape is handed to the judge
     * as its header alone (dtype and shape, one placeholder byte of data), so a 4 GB wrong-shaped file costs a few
     * hundred bytes; the judge FAILs it with diagnosis shape before it looks at any element. */
    bool mismatch = false;
    fr_tensor head[FR_CASE_NUM_OUTPUTS];
    memset(head, 0, sizeof head);
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *want = fr_case_output_slot(o, (fr_case_output)k);
        if (!fr_tensor_present(want)) continue;
        snprintf(p, sizeof p, "%.4000s/%s.npy", c->dir, fr_case_output_name((fr_case_output)k));
        fr_npy_header h;
        fr_error he;
        fr_status hs = fr_npy_read_file_header(p, &h, &he);
        if (hs == FR_E_NOMEM) {
            for (int j = 0; j < k; j++) free(head[j].data);
            return fr_fail(err, FR_E_NOMEM, "disk: %s", he.msg);
        }
        if (hs != FR_OK) continue; /* reported by the full read below */
        fr_dtype dt;
        if (fr_npy_header_dtype(&h, want->dtype, &dt, p, NULL) == FR_OK && h.ndim == want->ndim &&
            !memcmp(h.shape, want->shape, sizeof(int64_t) * (size_t)h.ndim))
            continue;
        fr_dtype got = fr_npy_native_dtype(h.descr);
        head[k] = fr_tensor_make(got != FR_DT_NONE ? got : FR_U8, malloc(1), h.ndim, h.shape);
        if (!head[k].data) {
            for (int j = 0; j < k; j++) free(head[j].data);
            return fr_fail(err, FR_E_NOMEM, "disk: out of memory");
        }
        mismatch = true;
    }
    if (mismatch) {
        fr_status st = FR_OK;
        for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
            fr_tensor *dst = fr_case_output_slot(o, (fr_case_output)k);
            if (!fr_tensor_present(dst)) continue;
            if (head[k].data) {
                *dst = head[k]; /* dst's buffer belongs to fr_iut_run (guarded allocation) */
                continue;
            }
            snprintf(p, sizeof p, "%.4000s/%s.npy", c->dir, fr_case_output_name((fr_case_output)k));
            fr_tensor t;
            if (st == FR_OK && (st = fr_npy_read_file(p, dst->dtype, &t, err)) == FR_OK) {
                int64_t n = fr_tensor_numel(&t);
                if (t.ndim == dst->ndim && n == fr_tensor_numel(dst) && n > 0)
                    memcpy(dst->data, t.data, (size_t)n * fr_dtype_size(dst->dtype));
                free(t.data);
            }
        }
        return st;
    }
    fr_case_outputs d;
    fr_status st = fr_case_load_outputs(c, c->dir, &d, err);
    if (st != FR_OK) return st;
    /* Copy into the allocated outputs when shape and dtype agree; otherwise hand over what is on disk so the judge
     * reports the shape / dtype it found. */
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        fr_tensor *dst = fr_case_output_slot(o, (fr_case_output)k), *src = fr_case_output_slot(&d, (fr_case_output)k);
        if (!fr_tensor_present(src)) continue;
        bool same = dst->dtype == src->dtype && dst->ndim == src->ndim &&
                    !memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
        if (same) {
            int64_t n = fr_tensor_numel(src);
            if (n > 0) memcpy(dst->data, src->data, (size_t)n * fr_dtype_size(src->dtype));
        } else {
            *dst = *src; /* dst's buffer belongs to fr_iut_run (guarded allocation) */
            src->data = NULL;
            src->dtype = FR_DT_NONE;
        }
    }
    fr_case_outputs_free(&d);
    return FR_OK;
}

static void disk_close(fr_iut *iut) { (void)iut; }

static const fr_iut_ops kDiskOps = {disk_run, disk_close, NULL, NULL};

/* ---------------------------------------------------------------------------------------------------------------- */
/* Outputs the caller already holds (a dump's): handed over per case with fr_iut_given_set. */

typedef struct given_impl {
    const fr_case_outputs *o;
} given_impl;

/* Alike iut_open.c:disk_run (its copy loop): kept apart because that one reads files and hands over what it read,
 * this one copies what the caller keeps (and leaves out what the caller does not have). */
static fr_status given_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)c;
    (void)threads;
    const fr_case_outputs *g = ((given_impl *)iut->impl)->o;
    if (!g) return fr_fail(err, FR_E_UNSUPPORTED, "no outputs given for this case");
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        fr_tensor *dst = fr_case_output_slot(o, (fr_case_output)k);
        const fr_tensor *src = fr_case_output_cslot(g, (fr_case_output)k);
        if (!fr_tensor_present(dst)) continue;
        if (!fr_tensor_present(src)) {
            memset(dst, 0, sizeof *dst); /* fr_iut_run frees its buffer: the judge sees it absent */
            continue;
        }
        int64_t n = fr_tensor_numel(src);
        size_t bytes = (size_t)(n > 0 ? n : 0) * fr_dtype_size(src->dtype);
        if (dst->dtype == src->dtype && dst->ndim == src->ndim &&
            !memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim)) {
            if (bytes) memcpy(dst->data, src->data, bytes);
            continue;
        }
        /* another shape or dtype: a copy, so the judge reports what it found (dst's buffer belongs to fr_iut_run) */
        void *d = malloc(bytes + 1);
        if (!d) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", fr_case_output_name((fr_case_output)k));
        if (bytes) memcpy(d, src->data, bytes);
        *dst = fr_tensor_make(src->dtype, d, src->ndim, src->shape);
    }
    return FR_OK;
}

static void given_close(fr_iut *iut) { free(iut->impl); }

static const fr_iut_ops kGivenOps = {given_run, given_close, NULL, NULL};

/* ---------------------------------------------------------------------------------------------------------------- */

static fr_status new_iut(fr_iut **out, const char *name, fr_error *err) {
    fr_iut *iut = calloc(1, sizeof *iut);
    if (!iut) return fr_fail(err, FR_E_NOMEM, "--impl: out of memory");
    snprintf(iut->name, sizeof iut->name, "%s", name);
    *out = iut;
    return FR_OK;
}

fr_status fr_iut_open(const char *spec, fr_iut **out, fr_error *err) {
    if (!spec || !out) return fr_fail(err, FR_E_NULL, "--impl: NULL");
    *out = NULL;
    fr_iut *iut = NULL;
    fr_status st = new_iut(&iut, spec, err);
    if (st != FR_OK) return st;
    if (!strncmp(spec, "plugin:", 7)) {
        st = fr_iut_plugin_open(spec + 7, iut, err);
        if (st == FR_OK) iut->kind = FR_IUT_PLUGIN;
    } else if (!strncmp(spec, "exec:", 5)) {
        st = fr_iut_exec_open(spec + 5, false, iut, err);
        if (st == FR_OK) iut->kind = FR_IUT_EXEC;
    } else if (!strncmp(spec, "persistent:", 11)) {
        st = fr_iut_exec_open(spec + 11, true, iut, err);
        if (st == FR_OK) iut->kind = FR_IUT_EXEC;
    } else if (!strncmp(spec, "mutant:", 7)) {
        st = fr_iut_mutant_open(spec + 7, iut, err);
        if (st == FR_OK) iut->kind = FR_IUT_MUTANT;
    } else if (!strncmp(spec, "fast", 4) || !strncmp(spec, "golden", 6) || !strncmp(spec, "emulate", 7)) {
        st = engine_open(spec, iut, err);
    } else {
        st = fr_fail(err, FR_E_INVALID_ARG,
                     "--impl: '%s': expected fast[:ISA], golden, emulate[:PRESET], plugin:PATH.so, exec:\"CMD ARGS\", "
                     "persistent:\"CMD ARGS\" or mutant:NAME",
                     spec);
    }
    if (st != FR_OK) {
        free(iut);
        return st;
    }
    *out = iut;
    return FR_OK;
}

fr_status fr_iut_open_disk(fr_iut **out, fr_error *err) {
    if (!out) return fr_fail(err, FR_E_NULL, "disk: NULL");
    fr_status st = new_iut(out, "disk", err);
    if (st != FR_OK) return st;
    (*out)->kind = FR_IUT_DISK;
    (*out)->ops = &kDiskOps;
    return FR_OK;
}

fr_status fr_iut_open_given(const char *name, fr_iut **out, fr_error *err) {
    if (!out) return fr_fail(err, FR_E_NULL, "given: NULL");
    fr_status st = new_iut(out, name && *name ? name : "given", err);
    if (st != FR_OK) return st;
    if (!((*out)->impl = calloc(1, sizeof(given_impl)))) {
        free(*out);
        *out = NULL;
        return fr_fail(err, FR_E_NOMEM, "given: out of memory");
    }
    (*out)->kind = FR_IUT_DISK;
    (*out)->ops = &kGivenOps;
    return FR_OK;
}

void fr_iut_given_set(fr_iut *iut, const fr_case_outputs *o) {
    if (iut && iut->ops == &kGivenOps) ((given_impl *)iut->impl)->o = o;
}

fr_status fr_iut_open_variant(const fr_iut *iut, const char *variant, fr_iut **out, fr_error *err) {
    if (!iut || !variant || !out) return fr_fail(err, FR_E_NULL, "variant: NULL");
    *out = NULL;
    char spec[4096];
    fr_status st = fr_iut_exec_variant_spec(iut, variant, spec, sizeof spec, err);
    if (st != FR_OK) return st;
    return fr_iut_open(spec, out, err);
}
