#define _POSIX_C_SOURCE 200809L

#include "iut_testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *iut_tmpdir(const char *tag) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 16;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s-XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

void iut_rmtree(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(dir) + strlen(e->d_name) + 2;
            char *p = malloc(n);
            if (!p) break;
            snprintf(p, n, "%s/%s", dir, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                iut_rmtree(p);
            else
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

fr_status iut_case(const fr_gen_spec *spec, uint64_t seed, const char *root, fr_case *c, fr_error *err) {
    fr_gen_case g;
    fr_status st = fr_gen_build(spec, seed, &g, err);
    if (st != FR_OK) return st;
    size_t n = strlen(root) + strlen(spec->name) + 2;
    char *dir = malloc(n);
    if (!dir) {
        fr_gen_case_free(&g);
        return FR_E_NOMEM;
    }
    snprintf(dir, n, "%s/%s", root, spec->name);
    st = fr_gen_case_write(&g, dir, true, err);
    fr_gen_case_free(&g);
    if (st == FR_OK) st = fr_case_load(dir, c, err);
    free(dir);
    return st;
}

fr_status iut_golden(const fr_case *c, fr_case_outputs *g, fr_error *err) {
    fr_status st = fr_case_alloc_outputs(c, true, g, err);
    if (st != FR_OK) return st;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    e.num_threads = 1;
    st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &g->fwd, &e, err)
                              : fr_bwd(&c->params, &c->in, &g->bwd, &e, err);
    if (st != FR_OK) fr_case_outputs_free(g);
    return st;
}

/* Value of element k of a contiguous tensor, widened to double. */
static double value(const fr_tensor *t, int64_t k) {
    switch (t->dtype) {
    case FR_F64: return ((const double *)t->data)[k];
    case FR_F32: return ((const float *)t->data)[k];
    case FR_F16: return fr_f16_to_f32(((const uint16_t *)t->data)[k]);
    case FR_BF16: return fr_bf16_to_f32(((const uint16_t *)t->data)[k]);
    default: return NAN;
    }
}

double iut_compare(const fr_case_outputs *got, const fr_case_outputs *g) {
    double worst = 0;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *a = fr_case_output_cslot(got, (fr_case_output)k);
        const fr_tensor *r = fr_case_output_cslot(g, (fr_case_output)k);
        if (!fr_tensor_present(r)) continue;
        if (!fr_tensor_present(a) || a->ndim != r->ndim ||
            memcmp(a->shape, r->shape, sizeof(int64_t) * (size_t)r->ndim) != 0) {
            fprintf(stderr, "  %s: missing or of another shape\n", fr_case_output_name((fr_case_output)k));
            return INFINITY;
        }
        double rtol = a->dtype == FR_BF16 ? 2e-2 : a->dtype == FR_F16 ? 4e-3 : 1e-4, atol = 0.1 * rtol;
        int64_t n = fr_tensor_numel(r);
        for (int64_t i = 0; i < n; i++) {
            double x = value(a, i), y = value(r, i);
            double q = isnan(x) || isnan(y) ? INFINITY : x == y ? 0 : fabs(x - y) / (atol + rtol * fabs(y));
            if (q > 1 && worst <= 1)
                fprintf(stderr, "  %s[%lld]: got %.9g, golden %.9g\n", fr_case_output_name((fr_case_output)k),
                        (long long)i, x, y);
            if (q > worst) worst = q;
        }
    }
    return worst;
}
