/* Case directories written (casedir.h, docs/case-format.md): case.json from the parameters, the inputs and the outputs
 * as .npy files beside it; a failed write removes what it began, so that a half-written case never looks whole. */
#include "io/casedir.h"
#include "io/casedir_internal.h"

#include "core/core.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool json_int_fits(int64_t v) {
    return v <= (int64_t)FR_CASE_JSON_INT_MAX && v >= -(int64_t)FR_CASE_JSON_INT_MAX;
}

static bool params_fit_json(const fr_params *p) {
    const int64_t v[] = {p->head_num, p->pre_tokens, p->next_tokens, p->inner_precise, p->sparse_mode, p->pse_type,
                         p->q_start_idx, p->kv_start_idx};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        if (!json_int_fits(v[k])) return false;
    const int64_t *arr[] = {p->prefix, p->actual_seq_qlen, p->actual_seq_kvlen};
    const int64_t len[] = {p->prefix_len, p->actual_seq_len, p->actual_seq_len};
    for (int a = 0; a < 3; a++)
        for (int64_t i = 0; arr[a] && i < len[a]; i++)
            if (!json_int_fits(arr[a][i])) return false;
    return true;
}

static bool add_int(cJSON *o, const char *k, int64_t v) {
    if (!json_int_fits(v)) return false;
    return cJSON_AddNumberToObject(o, k, (double)v) != NULL;
}

static bool add_int_array(cJSON *o, const char *k, const int64_t *a, int64_t n) {
    if (!a) return cJSON_AddNullToObject(o, k) != NULL;
    cJSON *arr = cJSON_AddArrayToObject(o, k);
    if (!arr) return false;
    for (int64_t i = 0; i < n; i++) {
        if (!json_int_fits(a[i])) return false;
        cJSON *x = cJSON_CreateNumber((double)a[i]);
        if (!x || !cJSON_AddItemToArray(arr, x)) {
            cJSON_Delete(x);
            return false;
        }
    }
    return true;
}

fr_status fr_case_json(fr_case_op op, fr_dtype dtype, const fr_params *p, const fr_bwd_inputs *in, char **json,
                       fr_error *err) {
    return fr_case_json_hinted(op, dtype, p, in, FR_MASK_HINT_DEFAULT, json, err);
}

fr_status fr_case_json_hinted(fr_case_op op, fr_dtype dtype, const fr_params *p, const fr_bwd_inputs *in,
                              fr_mask_hint hint, char **json, fr_error *err) {
    if (!p || !in || !json) return fr_fail(err, FR_E_NULL, "case.json: NULL params, inputs or output");
    *json = NULL;
    if (op != FR_CASE_FWD && op != FR_CASE_BWD) return fr_fail(err, FR_E_INVALID_ARG, "case: op %d", (int)op);
    if (fr_case_dtype_from_name(fr_dtype_name(dtype)) == FR_DT_NONE)
        return fr_fail(err, FR_E_DTYPE, "case: dtype %s cannot be a case dtype", fr_dtype_name(dtype));
    if (!isfinite(p->scale_value) || !isfinite(p->keep_prob))
        return fr_fail(err, FR_E_FORMAT, "case.json: scale_value %g / keep_prob %g: JSON has no Inf/NaN",
                       p->scale_value, p->keep_prob);
    if (p->input_layout < FR_BSH || p->input_layout > FR_TND)
        return fr_fail(err, FR_E_LAYOUT, "case: input_layout %d unknown", (int)p->input_layout);
    if (p->out_dtype != FR_DT_NONE && fr_case_dtype_from_name(fr_dtype_name(p->out_dtype)) == FR_DT_NONE)
        return fr_fail(err, FR_E_DTYPE, "case: out_dtype %s cannot be written", fr_dtype_name(p->out_dtype));
    if (p->prefix_len < 0 || p->actual_seq_len < 0)
        return fr_fail(err, FR_E_INVALID_ARG, "case: negative prefix_len / actual_seq_len");
    if ((int)hint < 0 || hint >= FR_MASK_HINT_COUNT)
        return fr_fail(err, FR_E_INVALID_ARG, "case: mask hint %d unknown", (int)hint);
    if (!p->actual_seq_qlen != !p->actual_seq_kvlen)
        return fr_fail(err, FR_E_SEQLEN, "case: actual_seq_qlen and actual_seq_kvlen must both be given or both NULL");
    for (int k = FR_CI_DY; k < FR_CASE_NUM_INPUTS; k++)
        if (op == FR_CASE_FWD && fr_tensor_present(fr_case_input_cslot(in, (fr_case_input)k)))
            return fr_fail(err, FR_E_INVALID_ARG, "case: %s given for a forward case",
                           fr_case_input_name((fr_case_input)k));
    /* Checked first, so that a failure while building the JSON below can only be memory. */
    if (!params_fit_json(p))
        return fr_fail(err, FR_E_FORMAT, "case.json: an integer parameter beyond 2^53, which JSON cannot hold");
    cJSON *root = cJSON_CreateObject(), *pj = NULL, *ij = NULL;
    bool ok = root && cJSON_AddStringToObject(root, "format", FLASHREF_CASE_FORMAT) &&
              cJSON_AddStringToObject(root, "op", fr_case_op_name(op)) &&
              cJSON_AddStringToObject(root, "dtype", fr_dtype_name(dtype)) &&
              (pj = cJSON_AddObjectToObject(root, "params")) != NULL;
    ok = ok && add_int(pj, "head_num", p->head_num) &&
         cJSON_AddStringToObject(pj, "input_layout", fr_layout_name(p->input_layout)) &&
         cJSON_AddNumberToObject(pj, "scale_value", p->scale_value) &&
         cJSON_AddNumberToObject(pj, "keep_prob", p->keep_prob) && add_int(pj, "pre_tokens", p->pre_tokens) &&
         add_int(pj, "next_tokens", p->next_tokens) && add_int(pj, "inner_precise", p->inner_precise) &&
         add_int(pj, "sparse_mode", p->sparse_mode) && add_int(pj, "pse_type", p->pse_type) &&
         add_int_array(pj, "prefix", p->prefix, p->prefix_len) &&
         add_int_array(pj, "actual_seq_qlen", p->actual_seq_qlen, p->actual_seq_len) &&
         add_int_array(pj, "actual_seq_kvlen", p->actual_seq_kvlen, p->actual_seq_len) &&
         add_int(pj, "q_start_idx", p->q_start_idx) && add_int(pj, "kv_start_idx", p->kv_start_idx) &&
         (p->out_dtype == FR_DT_NONE ? cJSON_AddNullToObject(pj, "out_dtype") != NULL
                                     : cJSON_AddStringToObject(pj, "out_dtype", fr_dtype_name(p->out_dtype)) != NULL) &&
         cJSON_AddStringToObject(pj, "softmax_layout",
                                 p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT ? "same_as_input" : "") &&
         (ij = cJSON_AddObjectToObject(root, "inputs")) != NULL;
    for (int k = 0; ok && k < FR_CASE_NUM_INPUTS; k++) {
        if (!fr_tensor_present(fr_case_input_cslot(in, (fr_case_input)k))) continue;
        char fn[64];
        snprintf(fn, sizeof fn, "%s.npy", fr_case_input_name((fr_case_input)k));
        ok = cJSON_AddStringToObject(ij, fr_case_input_name((fr_case_input)k), fn) != NULL;
    }
    if (ok && hint != FR_MASK_HINT_DEFAULT) {
        cJSON *hj = cJSON_AddObjectToObject(root, "hints");
        ok = hj && cJSON_AddStringToObject(hj, "mask", fr_mask_hint_name(hint)) != NULL;
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return fr_fail(err, FR_E_NOMEM, "case.json: out of memory");
    size_t n = strlen(text);
    char *s = malloc(n + 2);
    if (!s) {
        free(text);
        return fr_fail(err, FR_E_NOMEM, "case.json: out of memory");
    }
    memcpy(s, text, n);
    s[n] = '\n';
    s[n + 1] = 0;
    free(text);
    *json = s;
    return FR_OK;
}

static fr_status write_text(const char *path, const char *text, fr_error *err) {
    fr_io_out o; /* never through a link at path (io_util.h) */
    fr_status st = fr_io_out_open(&o, path, err);
    if (st != FR_OK) return st;
    size_t n = strlen(text);
    return fr_io_out_close(&o, fwrite(text, 1, n, o.f) == n, err);
}

static fr_status write_named(const char *dir, const char *stem, const fr_tensor *t, fr_error *err) {
    char fn[64];
    snprintf(fn, sizeof fn, "%s.npy", stem);
    char *path = fr_io_join(dir, fn);
    if (!path) return fr_fail(err, FR_E_NOMEM, "case: out of memory");
    fr_status st = fr_npy_write_file(path, t, 0, err);
    free(path);
    return st;
}

/* After a failed write: removes the files this call began (stems[0..n), "<stem>.npy", and case.json when json) and
 * dir when this call created it, so that a half-written case or output set never looks like a whole one. */
static void unlink_file(const char *p) {
    struct stat sb; /* a link there was refused, not written: it is not ours to remove */
    if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode)) unlink(p);
}

static void unwrite(const char *dir, bool made_dir, const char *const *stems, int n, bool json) {
    char p[4200];
    if (json) {
        snprintf(p, sizeof p, "%.4000s/case.json", dir);
        unlink_file(p);
    }
    for (int k = 0; k < n; k++) {
        if (!stems[k]) continue;
        snprintf(p, sizeof p, "%.4000s/%s.npy", dir, stems[k]);
        unlink_file(p);
    }
    if (made_dir) rmdir(dir);
}

/* Creates dir when it is missing; *made: this call created it (a failed write then removes it). */
static fr_status make_dir(const char *dir, bool *made, fr_error *err) {
    struct stat sb;
    *made = stat(dir, &sb) != 0;
    fr_status st = fr_io_mkdir(dir, err);
    if (st != FR_OK) *made = false;
    return st;
}

/* Writes each present t[k] as "<stems[k]>.npy" into dir, while st (how the write went so far) is FR_OK; on a failure
 * removes what was begun (case.json too when json, dir when made_dir). n <= FR_CASE_NUM_INPUTS. */
static fr_status write_tensors(const char *dir, fr_status st, bool made_dir, bool json, const fr_tensor *const *t,
                               const char *const *stems, int n, fr_error *err) {
    _Static_assert((int)FR_CASE_NUM_OUTPUTS <= (int)FR_CASE_NUM_INPUTS, "began[] holds either set");
    const char *began[FR_CASE_NUM_INPUTS] = {0};
    for (int k = 0; k < n && st == FR_OK; k++) {
        if (!fr_tensor_present(t[k])) continue;
        began[k] = stems[k];
        st = write_named(dir, stems[k], t[k], err);
    }
    if (st != FR_OK) unwrite(dir, made_dir, began, n, json);
    return st;
}

static fr_status write_parts(const char *dir, fr_case_op op, fr_dtype dtype, const fr_params *p,
                             const fr_bwd_inputs *in, fr_mask_hint hint, fr_error *err) {
    if (!dir) return fr_fail(err, FR_E_NULL, "case: dir: NULL");
    char *json;
    fr_status st = fr_case_json_hinted(op, dtype, p, in, hint, &json, err);
    if (st != FR_OK) return st;
    bool made_dir;
    if ((st = make_dir(dir, &made_dir, err)) == FR_OK) {
        char *path = fr_io_join(dir, "case.json");
        st = path ? write_text(path, json, err) : fr_fail(err, FR_E_NOMEM, "case: out of memory");
        free(path);
    }
    free(json);
    const fr_tensor *t[FR_CASE_NUM_INPUTS];
    const char *stems[FR_CASE_NUM_INPUTS];
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) {
        t[k] = fr_case_input_cslot(in, (fr_case_input)k);
        stems[k] = fr_case_input_name((fr_case_input)k);
    }
    return write_tensors(dir, st, made_dir, true, t, stems, FR_CASE_NUM_INPUTS, err);
}

fr_status fr_case_write_parts(const char *dir, fr_case_op op, fr_dtype dtype, const fr_params *p,
                              const fr_bwd_inputs *in, fr_error *err) {
    return write_parts(dir, op, dtype, p, in, FR_MASK_HINT_DEFAULT, err);
}

fr_status fr_case_write(const fr_case *c, const char *dir, fr_error *err) {
    if (!c) return fr_fail(err, FR_E_NULL, "case: NULL");
    return write_parts(dir, c->op, c->dtype, &c->params, &c->in, c->mask_hint, err);
}

fr_status fr_case_write_outputs(const char *dir, const fr_case_outputs *o, fr_error *err) {
    if (!dir || !o) return fr_fail(err, FR_E_NULL, "case outputs: NULL dir or outputs");
    bool made_dir;
    fr_status st = make_dir(dir, &made_dir, err);
    const fr_tensor *t[FR_CASE_NUM_OUTPUTS];
    const char *stems[FR_CASE_NUM_OUTPUTS];
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) { /* the op's own outputs only */
        t[k] = fr_case_output_is_bwd(k) == (o->op == FR_CASE_BWD) ? fr_case_output_cslot(o, (fr_case_output)k) : NULL;
        stems[k] = fr_case_output_name((fr_case_output)k);
    }
    return write_tensors(dir, st, made_dir, false, t, stems, FR_CASE_NUM_OUTPUTS, err);
}
