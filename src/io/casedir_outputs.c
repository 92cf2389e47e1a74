/* A case's outputs (casedir.h): their shapes and dtypes from the problem, NaN-filled allocation, checking where they
 * will be written, and reading them back as they are on disk. Writing them is casedir_write.c's. */
#include "io/casedir.h"
#include "io/casedir_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "core/validate.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fr_case_outputs_free(fr_case_outputs *o) {
    if (!o) return;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) free(fr_case_output_slot(o, (fr_case_output)k)->data);
    memset(o, 0, sizeof *o);
}

/* A NaN-filled contiguous tensor of dtype dt and the given shape. */
static fr_status alloc_nan(fr_tensor *t, fr_dtype dt, int ndim, const int64_t *shape, const char *name,
                           fr_error *err) {
    *t = fr_tensor_make(dt, NULL, ndim, shape);
    int64_t n = fr_tensor_numel(t), bytes;
    size_t es = fr_dtype_size(dt);
    if (n < 0 || !fr_mul_ok(n, (int64_t)es, &bytes))
        return fr_fail(err, FR_E_OVERFLOW, "%s: size overflows", name);
    if (n == 0) return FR_OK;
    unsigned char *d = malloc((size_t)bytes);
    if (!d) return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", name, (long long)bytes);
    unsigned char pat[8];
    fr_tensor one = fr_tensor_make(dt, pat, 0, NULL);
    fr_store_f64(&one, 0, NAN);
    for (int64_t i = 0; i < n; i++) memcpy(d + i * (int64_t)es, pat, es);
    t->data = d;
    return FR_OK;
}

fr_status fr_case_alloc_outputs(const fr_case *c, bool fp64, fr_case_outputs *o, fr_error *err) {
    if (!c || !o) return fr_fail(err, FR_E_NULL, "case outputs: NULL");
    return fr_case_alloc_outputs_parts(c->op, &c->params, &c->in, fp64, o, err);
}

fr_status fr_case_output_specs(fr_case_op op, const fr_params *p, const fr_bwd_inputs *bin, bool fp64,
                               fr_tensor spec[FR_CASE_NUM_OUTPUTS], fr_error *err) {
    if (!p || !bin || !spec) return fr_fail(err, FR_E_NULL, "case outputs: NULL params, inputs or outputs");
    memset(spec, 0, sizeof(fr_tensor) * FR_CASE_NUM_OUTPUTS);
    if (op != FR_CASE_FWD && op != FR_CASE_BWD) return fr_fail(err, FR_E_INVALID_ARG, "case: op %d", (int)op);
    fr_problem pb;
    fr_status st = op == FR_CASE_FWD ? fr_problem_from_fwd(p, &bin->fwd, &pb, err)
                                     : fr_problem_from_bwd(p, bin, &pb, err);
    if (st != FR_OK) return st;
    const fr_fwd_inputs *in = &bin->fwd;
    if (op == FR_CASE_FWD) {
        int64_t sh[FR_MAX_DIMS];
        int nd = in->query.ndim;
        memcpy(sh, in->query.shape, sizeof sh);
        if (nd > 0) sh[nd - 1] = (pb.layout == FR_BSH || pb.layout == FR_SBH) ? pb.N1 * pb.Dv : pb.Dv;
        spec[FR_CO_ATTENTION_OUT] = fr_tensor_make(fp64 ? FR_F64 : pb.out_dtype, NULL, nd, sh);
        int64_t ss[4] = {pb.B, pb.N1, pb.S1, 8};
        int snd = 4;
        if (pb.layout == FR_TND) {
            snd = 3;
            ss[0] = p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT ? pb.T1 : pb.N1;
            ss[1] = p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT ? pb.N1 : pb.T1;
            ss[2] = 8;
        }
        spec[FR_CO_SOFTMAX_MAX] = fr_tensor_make(fp64 ? FR_F64 : FR_F32, NULL, snd, ss);
        spec[FR_CO_SOFTMAX_SUM] = fr_tensor_make(fp64 ? FR_F64 : FR_F32, NULL, snd, ss);
    } else {
        fr_dtype gd = fp64 ? FR_F64 : pb.fp8 ? pb.out_dtype : pb.dtype;
        spec[FR_CO_DQ] = fr_tensor_make(gd, NULL, in->query.ndim, in->query.shape);
        spec[FR_CO_DK] = fr_tensor_make(gd, NULL, in->key.ndim, in->key.shape);
        spec[FR_CO_DV] = fr_tensor_make(gd, NULL, in->value.ndim, in->value.shape);
        if (fr_tensor_present(&in->query_rope))
            spec[FR_CO_DQ_ROPE] = fr_tensor_make(gd, NULL, in->query_rope.ndim, in->query_rope.shape);
        if (fr_tensor_present(&in->key_rope))
            spec[FR_CO_DK_ROPE] = fr_tensor_make(gd, NULL, in->key_rope.ndim, in->key_rope.shape);
        int64_t n1 = pb.N1;
        if (fr_tensor_present(&in->sink)) spec[FR_CO_DSINK] = fr_tensor_make(fp64 ? FR_F64 : FR_F32, NULL, 1, &n1);
    }
    return FR_OK;
}

fr_status fr_case_alloc_outputs_parts(fr_case_op op, const fr_params *p, const fr_bwd_inputs *bin, bool fp64,
                                      fr_case_outputs *o, fr_error *err) {
    if (!p || !bin || !o) return fr_fail(err, FR_E_NULL, "case outputs: NULL params, inputs or outputs");
    memset(o, 0, sizeof *o);
    fr_tensor spec[FR_CASE_NUM_OUTPUTS];
    fr_status st = fr_case_output_specs(op, p, bin, fp64, spec, err);
    if (st != FR_OK) return st;
    o->op = op;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++)
        if (fr_tensor_present(&spec[k]))
            st = alloc_nan(fr_case_output_slot(o, (fr_case_output)k), spec[k].dtype, spec[k].ndim, spec[k].shape,
                           fr_case_output_name((fr_case_output)k), err);
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}

fr_status fr_case_outputs_check(const char *dir, const fr_case_outputs *o, fr_error *err) {
    if (!dir || !o) return fr_fail(err, FR_E_NULL, "case outputs: NULL dir or outputs");
    fr_status st = FR_OK;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        if (fr_case_output_is_bwd(k) != (o->op == FR_CASE_BWD) ||
            !fr_tensor_present(fr_case_output_cslot(o, (fr_case_output)k)))
            continue;
        char fn[64];
        snprintf(fn, sizeof fn, "%s.npy", fr_case_output_name((fr_case_output)k));
        char *path = fr_io_join(dir, fn);
        st = path ? fr_io_out_check(path, err) : fr_fail(err, FR_E_NOMEM, "case: out of memory");
        free(path);
    }
    return st;
}

fr_status fr_case_load_outputs(const fr_case *c, const char *dir, fr_case_outputs *o, fr_error *err) {
    if (!c || !dir || !o) return fr_fail(err, FR_E_NULL, "case outputs: NULL case, dir or outputs");
    memset(o, 0, sizeof *o);
    o->op = c->op;
    fr_status st = FR_OK;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        if (fr_case_output_is_bwd(k) != (c->op == FR_CASE_BWD)) continue;
        /* An optional gradient exists when its input does: listed in case.json (a loaded case) or present in
         * c->in (a case generated in memory has no file names). */
        if ((k == FR_CO_DQ_ROPE && !c->files[FR_CI_QUERY_ROPE] && !fr_tensor_present(&c->in.fwd.query_rope)) ||
            (k == FR_CO_DK_ROPE && !c->files[FR_CI_KEY_ROPE] && !fr_tensor_present(&c->in.fwd.key_rope)) ||
            (k == FR_CO_DSINK && !c->files[FR_CI_SINK] && !fr_tensor_present(&c->in.fwd.sink)))
            continue;
        char fn[64];
        snprintf(fn, sizeof fn, "%s.npy", fr_case_output_name((fr_case_output)k));
        char *path = fr_io_join(dir, fn);
        if (!path) {
            st = fr_fail(err, FR_E_NOMEM, "case: out of memory");
            break;
        }
        fr_npy_header h;
        /* Outputs obey the inputs' rule: nothing read through a link out of the case directory (a stored golden
         * pointing at a file elsewhere must not become this case's reference). */
        /* Outputs inside the case (its golden/) stay inside the case; outputs elsewhere (run --out) inside their own
         * folder. */
        size_t cl = c->dir ? strlen(c->dir) : 0; /* by name: a golden/ that is itself a link stays the case's */
        bool in_case = cl && !strncmp(dir, c->dir, cl) && (dir[cl] == '/' || dir[cl] == '\0');
        const char *home = in_case ? c->dir : dir;
        if (access(path, F_OK) == 0 && !fr_case_path_inside(home, path))
            st = fr_fail(err, FR_E_FORMAT, "%s: resolves (through a symbolic link) to a file outside the case "
                         "directory %s: not followed", path, home);
        else
            st = fr_npy_read_file_header(path, &h, err);
        if (st == FR_OK) {
            /* As on disk: numpy types as themselves; bit patterns from the case's dtypes. */
            fr_dtype dt = fr_npy_native_dtype(h.descr);
            if (!strcmp(h.descr, "<u2")) dt = FR_BF16;
            if (fr_dtype_size(dt) == 1 && dt != FR_BOOL && fr_dtype_is_fp8(c->dtype)) dt = c->dtype;
            if (!strcmp(h.descr, "|i1")) dt = fr_dtype_is_fp8(c->dtype) ? c->dtype : FR_DT_NONE;
            if (dt == FR_DT_NONE)
                st = fr_fail(err, FR_E_FORMAT, "%s: descr '%s' cannot hold an output", path, h.descr);
            else
                st = fr_npy_read_file(path, dt, fr_case_output_slot(o, (fr_case_output)k), err);
        }
        free(path);
    }
    if (st != FR_OK) fr_case_outputs_free(o);
    return st;
}
