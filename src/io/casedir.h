/* Case directories (docs/case-format.md, format "flashref-case/1"): case.json + one .npy per present input, and
 * the outputs written beside them.
 *
 *   fr_case c;
 *   if (fr_case_load("DIR", &c, &err) != FR_OK) ...;              // parses case.json, loads every listed input
 *   fr_validate_fwd(&c.params, &c.in.fwd, NULL, &err);            // forward case: c.in.fwd; backward: &c.in
 *   fr_case_outputs o;
 *   fr_case_alloc_outputs(&c, false, &o, &err);                   // NaN-filled, operator dtypes (true: fp64)
 *   fr_fwd(&c.params, &c.in.fwd, &o.fwd, &engine, &err);
 *   fr_case_write_outputs("DIR", &o, &err);                       // attention_out.npy softmax_max.npy ...
 *   fr_case_outputs_free(&o); fr_case_free(&c);
 *
 * Verifier: fr_case_load_outputs(&c, "DIR", &o, &err) reads the outputs as they are on disk (golden fp64, an IUT's
 * operator dtypes), bit-pattern files (<u2, |u1) resolved from the case's dtype / out_dtype.
 * Generators: fr_case_write_parts("DIR", op, dtype, &params, &bwd_inputs, &err) writes case.json and the present
 * inputs (as "<input name>.npy") from tensors the caller owns; fr_case_write(&c, ...) does the same for a loaded case.
 *
 * Every malformed input is rejected, never guessed: FR_E_FORMAT (or FR_E_IO for a missing / unreadable file) with a
 * message naming the file and the field ("case.json: params.head_num: expected an integer, got \"8\"",
 * "query.npy: descr '<f4' does not hold dtype bf16"). Unknown keys, duplicate keys, a wrong "format" version, a
 * tensor file of the wrong dtype for its field, and file names that are absolute or contain a ".." component are
 * all errors. case.json itself is parsed from memory by fr_case_parse_json (the fuzzers call it directly). */
#ifndef FR_IO_CASEDIR_H
#define FR_IO_CASEDIR_H

#include "flashref.h"

typedef enum fr_case_op { FR_CASE_FWD = 0, FR_CASE_BWD = 1 } fr_case_op;

/* Inputs in case.json "inputs" order; names are the JSON keys and the default file stems. */
typedef enum fr_case_input {
    FR_CI_QUERY = 0,
    FR_CI_KEY,
    FR_CI_VALUE,
    FR_CI_REAL_SHIFT,
    FR_CI_ATTEN_MASK,
    FR_CI_DROP_MASK,
    FR_CI_D_SCALE_Q,
    FR_CI_D_SCALE_K,
    FR_CI_D_SCALE_V,
    FR_CI_QUERY_ROPE,
    FR_CI_KEY_ROPE,
    FR_CI_SINK,
    FR_CI_TOPK_INDICES,
    FR_CI_DY,           /* backward only from here on */
    FR_CI_ATTENTION_IN,
    FR_CI_SOFTMAX_MAX,
    FR_CI_SOFTMAX_SUM,
    FR_CASE_NUM_INPUTS
} fr_case_input;

/* Outputs; names are the file stems ("attention_out" -> attention_out.npy). */
typedef enum fr_case_output {
    FR_CO_ATTENTION_OUT = 0,
    FR_CO_SOFTMAX_MAX,
    FR_CO_SOFTMAX_SUM,
    FR_CO_DQ,           /* backward only from here on */
    FR_CO_DK,
    FR_CO_DV,
    FR_CO_DQ_ROPE,
    FR_CO_DK_ROPE,
    FR_CO_DSINK,
    FR_CASE_NUM_OUTPUTS
} fr_case_output;

const char *fr_case_input_name(fr_case_input i);   /* "query", ...; "invalid" out of range */
const char *fr_case_output_name(fr_case_output o); /* "attention_out", ... */
const char *fr_case_op_name(fr_case_op op);        /* "fwd" / "bwd" */
/* The tensor slot of an input / output (NULL when out of range). Forward inputs live in in->fwd. */
fr_tensor *fr_case_input_slot(fr_bwd_inputs *in, fr_case_input i);
const fr_tensor *fr_case_input_cslot(const fr_bwd_inputs *in, fr_case_input i);

/* How a runner that can hand the mask over in more than one way should do it for this case (case.json "hints": {"mask":
 * ...}, docs/case-format.md). A hint never changes the problem or its answer; a runner that cannot honour it ignores
 * it (or SKIPs). */
typedef enum fr_mask_hint {
    FR_MASK_HINT_DEFAULT = 0, /* no hint: the runner's own choice */
    FR_MASK_HINT_BOOL,        /* "bool": a boolean mask */
    FR_MASK_HINT_ADD_INF,     /* "additive_inf": an additive float mask, -inf where masked */
    FR_MASK_HINT_ADD_MIN,     /* "additive_min": additive, the dtype's lowest finite value where masked (Hugging Face) */
    FR_MASK_HINT_COUNT
} fr_mask_hint;
const char *fr_mask_hint_name(fr_mask_hint h);      /* "", "bool", "additive_inf", "additive_min" */
fr_mask_hint fr_mask_hint_from_name(const char *s); /* FR_MASK_HINT_COUNT when unknown ("" is DEFAULT) */

/* One case. Owns everything it points to: params.prefix / actual_seq_qlen / actual_seq_kvlen point into the owned
 * arrays below, every present tensor's data is malloc'd, file names and dir are malloc'd strings. */
typedef struct fr_case {
    fr_case_op op;
    fr_dtype dtype;                         /* "dtype": query/key/value (and dy, attention_in) */
    fr_params params;
    int64_t *prefix;                        /* owned; NULL when case.json has null */
    int64_t *actual_seq_qlen, *actual_seq_kvlen;
    char *files[FR_CASE_NUM_INPUTS];        /* file name as listed in case.json, NULL = absent */
    fr_bwd_inputs in;                       /* forward cases use in.fwd only */
    char *dir;                              /* directory it was loaded from; NULL for fr_case_parse_json alone */
    fr_mask_hint mask_hint;                 /* case.json hints.mask (DEFAULT when absent) */
} fr_case;

/* Parses case.json text (len bytes, need not be NUL-terminated) into c: op, dtype, params, file names; loads no
 * tensor (c->in is all absent). `what` names the source in messages (NULL: "case.json"). On failure c is left
 * empty (fr_case_free is safe either way). */
fr_status fr_case_parse_json(const char *json, size_t len, fr_case *c, const char *what, fr_error *err);
/* Reads DIR/case.json and every listed input, checking each file's dtype and that it stays inside DIR (symbolic
 * links resolved: a link out of DIR is FR_E_FORMAT). Every header is read and the operator's limits checked on those
 * shapes (FR_E_RANGE / FR_E_OVERFLOW) before any tensor data is read or allocated. A FIFO or device is FR_E_IO. */
fr_status fr_case_load(const char *dir, fr_case *c, fr_error *err);
/* fr_case_load, except that the inputs whose bit (1u << fr_case_input) is set in skip are checked and described
 * (dtype and shape from their headers, checked as fr_case_load checks them) but not read: their data is NULL, for
 * the caller to fill (src/dist reads only the query rows of its part). */
fr_status fr_case_load_except(const char *dir, fr_case *c, unsigned skip, fr_error *err);
/* Frees everything c owns and zeroes it. */
void fr_case_free(fr_case *c);

/* Writes DIR/case.json (creating DIR and missing parents) and DIR/<name>.npy for every present input of `in`
 * (forward: in->fwd only; the backward-only fields must be absent). Tensors may have any strides. */
fr_status fr_case_write_parts(const char *dir, fr_case_op op, fr_dtype dtype, const fr_params *p,
                              const fr_bwd_inputs *in, fr_error *err);
/* fr_case_write writes c->mask_hint as case.json "hints" (none when DEFAULT). */
fr_status fr_case_write(const fr_case *c, const char *dir, fr_error *err);
/* case.json text for a case (malloc'd, NUL-terminated; free() it); inputs are listed as "<name>.npy". */
fr_status fr_case_json(fr_case_op op, fr_dtype dtype, const fr_params *p, const fr_bwd_inputs *in, char **json,
                       fr_error *err);
/* The same with a mask hint ("hints": {"mask": ...} unless DEFAULT). */
fr_status fr_case_json_hinted(fr_case_op op, fr_dtype dtype, const fr_params *p, const fr_bwd_inputs *in,
                              fr_mask_hint hint, char **json, fr_error *err);

/* A case's outputs. Owns its tensors' data (malloc'd). fwd is used by forward cases, bwd by backward cases. */
typedef struct fr_case_outputs {
    fr_case_op op;
    fr_fwd_outputs fwd;
    fr_bwd_outputs bwd;
} fr_case_outputs;

/* The output slot (NULL when out of range). */
fr_tensor *fr_case_output_slot(fr_case_outputs *o, fr_case_output i);
const fr_tensor *fr_case_output_cslot(const fr_case_outputs *o, fr_case_output i);

/* Allocates the outputs a (valid) case produces, all NaN (hygiene, docs/verification-method.md 4): fp64 everywhere
 * when fp64 is true (the golden), else the operator's dtypes: attention_out in the resolved out dtype, softmax
 * max/sum fp32, gradients in the input dtype (fp8 inputs: the out dtype), dsink fp32. Shapes follow the spec
 * (softmax [B,N1,S1,8]; TND [N1,T,8] or [T,N1,8]). Validates the case first (FR_E_* of validation on failure). */
fr_status fr_case_alloc_outputs(const fr_case *c, bool fp64, fr_case_outputs *o, fr_error *err);
/* The same from parts the caller owns (a generator that has not loaded a case). */
fr_status fr_case_alloc_outputs_parts(fr_case_op op, const fr_params *p, const fr_bwd_inputs *in, bool fp64,
                                      fr_case_outputs *o, fr_error *err);
/* The dtypes and shapes fr_case_alloc_outputs_parts allocates, without the data: spec[k] (fr_case_output order) is a
 * contiguous view with data NULL, dtype FR_DT_NONE for an output the case does not produce. The one place the output
 * shape rules live (fr_verify_output_specs reports them too). */
fr_status fr_case_output_specs(fr_case_op op, const fr_params *p, const fr_bwd_inputs *in, bool fp64,
                               fr_tensor spec[FR_CASE_NUM_OUTPUTS], fr_error *err);
void fr_case_outputs_free(fr_case_outputs *o);
/* Whether fr_case_write_outputs could write o into DIR: FR_E_IO when one of its files is a symbolic link or not a
 * regular file (asked before a long computation, so that it is not lost at the end). */
fr_status fr_case_outputs_check(const char *dir, const fr_case_outputs *o, fr_error *err);
/* Writes every present output into DIR as <output name>.npy (dtype as the tensor has it), each file a fresh one
 * renamed into place: nothing is ever written through a symbolic link (refused, FR_E_IO) or into a hard link. */
fr_status fr_case_write_outputs(const char *dir, const fr_case_outputs *o, fr_error *err);
/* Reads the outputs of case c from DIR (each must resolve inside c->dir, or DIR for a case not loaded from disk:
 * FR_E_FORMAT for a link out of it), dtypes as on disk: numpy-native types as themselves, <u2 as bf16, |u1 as
 * the case's fp8 dtype. Required files missing -> FR_E_IO "DIR/attention_out.npy: missing"; dq_rope / dk_rope /
 * dsink are read when the case has rope / sink. Shapes are not checked here (the verifier compares them). */
fr_status fr_case_load_outputs(const fr_case *c, const char *dir, fr_case_outputs *o, fr_error *err);

/* True when path, with symbolic links resolved, is inside dir (also resolved): the rule for every file of a case
 * directory (inputs, outputs, stored golden). */
bool fr_case_path_inside(const char *dir, const char *path);

/* True when `name` is a safe relative file name inside a case directory: non-empty, not absolute, no ".."
 * component, no backslash, no NUL. */
bool fr_case_path_ok(const char *name);

#endif
