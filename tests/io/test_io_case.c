/* Case directories: forward and backward cases round trip through disk (params, arrays, every tensor bit-exact,
 * case.json stable), outputs round trip, and every malformed case.json / tensor file is rejected with a message
 * naming the file and the field. */
#define _XOPEN_SOURCE 700
#include "io/casedir.h"

#include "core/core.h"
#include "io/npy.h"
#include "io_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A random tensor of dtype dt (bool 0/1) that the test owns. */
static fr_tensor rnd(fr_dtype dt, int ndim, const int64_t *shape, uint64_t *rng) {
    fr_tensor t = fr_tensor_make(dt, NULL, ndim, shape);
    size_t bytes = (size_t)fr_tensor_numel(&t) * fr_dtype_size(dt);
    unsigned char *d = malloc(bytes ? bytes : 1);
    for (size_t i = 0; i < bytes; i++) d[i] = (unsigned char)(fr_test_rand(rng) >> 40);
    if (dt == FR_BOOL)
        for (size_t i = 0; i < bytes; i++) d[i] &= 1;
    t.data = d;
    return t;
}

static void free_inputs(fr_bwd_inputs *in) {
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) free(fr_case_input_slot(in, (fr_case_input)k)->data);
    memset(in, 0, sizeof *in);
}

static bool same_params(const fr_params *a, const fr_params *b) {
    if (a->head_num != b->head_num || a->input_layout != b->input_layout || a->scale_value != b->scale_value ||
        a->keep_prob != b->keep_prob || a->pre_tokens != b->pre_tokens || a->next_tokens != b->next_tokens ||
        a->inner_precise != b->inner_precise || a->sparse_mode != b->sparse_mode || a->pse_type != b->pse_type ||
        a->prefix_len != b->prefix_len || a->actual_seq_len != b->actual_seq_len ||
        a->q_start_idx != b->q_start_idx || a->kv_start_idx != b->kv_start_idx || a->out_dtype != b->out_dtype ||
        a->softmax_layout != b->softmax_layout)
        return false;
    if (!a->prefix != !b->prefix || !a->actual_seq_qlen != !b->actual_seq_qlen) return false;
    if (a->prefix && memcmp(a->prefix, b->prefix, (size_t)a->prefix_len * 8)) return false;
    if (a->actual_seq_qlen && (memcmp(a->actual_seq_qlen, b->actual_seq_qlen, (size_t)a->actual_seq_len * 8) ||
                               memcmp(a->actual_seq_kvlen, b->actual_seq_kvlen, (size_t)a->actual_seq_len * 8)))
        return false;
    return true;
}

/* Writes (op, dtype, p, in) to dir, loads it back, compares; writes the loaded case again and checks case.json is
 * byte-identical (the format is a fixed point). */
static void round_trip(const char *name, const char *dir, fr_case_op op, fr_dtype dtype, const fr_params *p,
                       fr_bwd_inputs *in) {
    fr_error e;
    CHECK_OK(fr_case_write_parts(dir, op, dtype, p, in, &e), e);
    fr_case c;
    fr_status st = fr_case_load(dir, &c, &e);
    CHECK(st == FR_OK, "%s: load: %s", name, e.msg);
    if (st != FR_OK) return;
    CHECK(c.op == op && c.dtype == dtype, "%s: op/dtype", name);
    CHECK(same_params(p, &c.params), "%s: params differ after the round trip", name);
    CHECK(c.params.prefix == c.prefix && c.params.actual_seq_qlen == c.actual_seq_qlen &&
              c.params.actual_seq_kvlen == c.actual_seq_kvlen,
          "%s: params arrays must point at the case's own arrays", name);
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) {
        const fr_tensor *a = fr_case_input_slot(in, (fr_case_input)k), *b = fr_case_input_slot(&c.in, (fr_case_input)k);
        CHECK(fr_tensor_present(a) == fr_tensor_present(b), "%s: %s present %d vs %d", name,
              fr_case_input_name((fr_case_input)k), fr_tensor_present(a), fr_tensor_present(b));
        if (fr_tensor_present(a))
            CHECK(same_tensor(a, b), "%s: %s differs (dtype %s vs %s)", name, fr_case_input_name((fr_case_input)k),
                  fr_dtype_name(a->dtype), fr_dtype_name(b->dtype));
        char fn[64];
        snprintf(fn, sizeof fn, "%s.npy", fr_case_input_name((fr_case_input)k));
        CHECK(!fr_tensor_present(a) || (c.files[k] && !strcmp(c.files[k], fn)), "%s: file name of %s", name,
              fr_case_input_name((fr_case_input)k));
    }
    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s_again", dir);
    CHECK_OK(fr_case_write(&c, dir2, &e), e);
    char p1[700], p2[700];
    snprintf(p1, sizeof p1, "%s/case.json", dir);
    snprintf(p2, sizeof p2, "%s/case.json", dir2);
    size_t l1, l2;
    char *j1 = read_whole(p1, &l1), *j2 = read_whole(p2, &l2);
    CHECK(j1 && j2 && l1 == l2 && !memcmp(j1, j2, l1), "%s: case.json changed on rewrite", name);
    free(j1);
    free(j2);
    fr_case_free(&c);
    CHECK(c.dir == NULL && c.prefix == NULL, "%s: fr_case_free leaves the case zeroed", name);
}

static void test_fwd_round_trip(const char *tmp, uint64_t *rng) {
    fr_params p = fr_params_default();
    p.head_num = 4;
    p.input_layout = FR_BNSD;
    p.scale_value = 0.125 + 1e-9; /* a double that needs 17 digits */
    p.keep_prob = 0.9;
    p.pre_tokens = 3;
    p.next_tokens = -1;
    p.sparse_mode = FR_SPARSE_PREFIX;
    p.pse_type = FR_PSE_OUTER_ADD_MUL;
    int64_t prefix[2] = {(int64_t)(fr_test_rand(rng) % 7), 4};
    p.prefix = prefix;
    p.prefix_len = 2;
    p.q_start_idx = -5;
    p.kv_start_idx = 9;
    p.inner_precise = 2;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    int64_t qs[4] = {2, 4, 5, 8}, ks[4] = {2, 2, 7, 8}, vs[4] = {2, 2, 7, 6}, ms[2] = {5, 7}, ps[4] = {2, 4, 5, 7},
            ds[1] = {18}, sk[1] = {4};
    in.fwd.query = rnd(FR_BF16, 4, qs, rng);
    in.fwd.key = rnd(FR_BF16, 4, ks, rng);
    in.fwd.value = rnd(FR_BF16, 4, vs, rng);
    in.fwd.atten_mask = rnd(FR_BOOL, 2, ms, rng);
    in.fwd.real_shift = rnd(FR_BF16, 4, ps, rng);
    in.fwd.drop_mask = rnd(FR_U8, 1, ds, rng);
    in.fwd.sink = rnd(FR_F32, 1, sk, rng);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fwd_bf16", tmp);
    round_trip("fwd bf16 BNSD", dir, FR_CASE_FWD, FR_BF16, &p, &in);
    free_inputs(&in);

    /* fp8: bit patterns in |u1, dequant scales fp32, uint8 mask, out_dtype bf16 */
    p = fr_params_default();
    p.head_num = 2;
    p.input_layout = FR_BSH;
    p.out_dtype = FR_BF16;
    int64_t q8[3] = {1, 3, 16}, k8[3] = {1, 4, 16}, dsq[4] = {1, 2, 1, 1}, dsk[4] = {1, 2, 1, 1}, m8[2] = {3, 4};
    for (int f = 0; f < 3; f++) {
        fr_dtype dt = f == 0 ? FR_E4M3FN : f == 1 ? FR_E5M2 : FR_HIF8;
        in.fwd.query = rnd(dt, 3, q8, rng);
        in.fwd.key = rnd(dt, 3, k8, rng);
        in.fwd.value = rnd(dt, 3, k8, rng);
        in.fwd.d_scale_q = rnd(FR_F32, 4, dsq, rng);
        in.fwd.d_scale_k = rnd(FR_F32, 4, dsk, rng);
        in.fwd.d_scale_v = rnd(FR_F32, 4, dsk, rng);
        in.fwd.atten_mask = rnd(FR_U8, 2, m8, rng);
        snprintf(dir, sizeof dir, "%s/fwd_%s", tmp, fr_dtype_name(dt));
        round_trip(fr_dtype_name(dt), dir, FR_CASE_FWD, dt, &p, &in);
        free_inputs(&in);
    }
}

static void test_bwd_round_trip(const char *tmp, uint64_t *rng) {
    fr_params p = fr_params_default();
    p.head_num = 2;
    p.input_layout = FR_TND;
    p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    int64_t cq[3] = {2, 2, 5}, ckv[3] = {3, 3, 9};
    p.actual_seq_qlen = cq;
    p.actual_seq_kvlen = ckv;
    p.actual_seq_len = 3;
    p.pse_type = FR_PSE_INNER_MUL_ADD_SQRT;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    int64_t qs[3] = {5, 2, 4}, ks[3] = {9, 1, 4}, qr[3] = {5, 2, 2}, kr[3] = {9, 1, 2}, sm[3] = {5, 2, 8},
            sl[1] = {2}, tk[2] = {5, 3};
    in.fwd.query = rnd(FR_F16, 3, qs, rng);
    in.fwd.key = rnd(FR_F16, 3, ks, rng);
    in.fwd.value = rnd(FR_F16, 3, ks, rng);
    in.fwd.query_rope = rnd(FR_F16, 3, qr, rng);
    in.fwd.key_rope = rnd(FR_F16, 3, kr, rng);
    in.fwd.real_shift = rnd(FR_F32, 1, sl, rng); /* pse_type 3: fp32 slopes */
    in.fwd.topk_indices = rnd(FR_I32, 2, tk, rng);
    in.dy = rnd(FR_F16, 3, qs, rng);
    in.attention_in = rnd(FR_F16, 3, qs, rng);
    in.softmax_max = rnd(FR_F32, 3, sm, rng);
    in.softmax_sum = rnd(FR_F64, 3, sm, rng);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bwd_fp16", tmp);
    round_trip("bwd fp16 TND", dir, FR_CASE_BWD, FR_F16, &p, &in);

    /* Outputs: written and read back with their dtypes. */
    fr_case c;
    fr_error e;
    CHECK_OK(fr_case_load(dir, &c, &e), e);
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    o.op = FR_CASE_BWD;
    o.bwd.dq = rnd(FR_F16, 3, qs, rng);
    o.bwd.dk = rnd(FR_F64, 3, ks, rng);
    o.bwd.dv = rnd(FR_F16, 3, ks, rng);
    o.bwd.dq_rope = rnd(FR_F16, 3, qr, rng);
    o.bwd.dk_rope = rnd(FR_F16, 3, kr, rng);
    CHECK_OK(fr_case_write_outputs(dir, &o, &e), e);
    fr_case_outputs r;
    CHECK_OK(fr_case_load_outputs(&c, dir, &r, &e), e);
    for (int k = FR_CO_DQ; k <= FR_CO_DK_ROPE; k++)
        CHECK(same_tensor(fr_case_output_slot(&o, (fr_case_output)k), fr_case_output_slot(&r, (fr_case_output)k)),
              "bwd output %s differs", fr_case_output_name((fr_case_output)k));
    CHECK(!fr_tensor_present(&r.bwd.dsink), "dsink read without a sink");
    fr_case_outputs_free(&r);
    /* A missing required output is FR_E_IO naming the file. */
    char path[700];
    snprintf(path, sizeof path, "%s/dv.npy", dir);
    remove(path);
    CHECK(fr_case_load_outputs(&c, dir, &r, &e) == FR_E_IO && strstr(e.msg, "dv.npy"), "missing dv: %s", e.msg);
    fr_case_outputs_free(&o);
    fr_case_free(&c);
    free_inputs(&in);

    /* Forward outputs of a bf16 case: attention_out in <u2 reads back as bf16, softmax fp32. */
    p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BSND;
    int64_t q1[4] = {1, 3, 1, 4}, s1[4] = {1, 1, 3, 8};
    in.fwd.query = rnd(FR_BF16, 4, q1, rng);
    in.fwd.key = rnd(FR_BF16, 4, q1, rng);
    in.fwd.value = rnd(FR_BF16, 4, q1, rng);
    snprintf(dir, sizeof dir, "%s/fwd_out", tmp);
    CHECK_OK(fr_case_write_parts(dir, FR_CASE_FWD, FR_BF16, &p, &in, &e), e);
    CHECK_OK(fr_case_load(dir, &c, &e), e);
    memset(&o, 0, sizeof o);
    o.op = FR_CASE_FWD;
    o.fwd.attention_out = rnd(FR_BF16, 4, q1, rng);
    o.fwd.softmax_max = rnd(FR_F32, 4, s1, rng);
    o.fwd.softmax_sum = rnd(FR_F32, 4, s1, rng);
    CHECK_OK(fr_case_write_outputs(dir, &o, &e), e);
    CHECK_OK(fr_case_load_outputs(&c, dir, &r, &e), e);
    for (int k = FR_CO_ATTENTION_OUT; k <= FR_CO_SOFTMAX_SUM; k++)
        CHECK(same_tensor(fr_case_output_slot(&o, (fr_case_output)k), fr_case_output_slot(&r, (fr_case_output)k)),
              "fwd output %s differs", fr_case_output_name((fr_case_output)k));
    fr_case_outputs_free(&r);
    fr_case_outputs_free(&o);
    fr_case_free(&c);
    free_inputs(&in);
}

/* Replaces the first occurrence of `from` in base by `to` (malloc'd). */
static char *subst(const char *base, const char *from, const char *to) {
    const char *at = strstr(base, from);
    if (!at) {
        fprintf(stderr, "test bug: '%s' not in the base json\n", from);
        exit(1);
    }
    size_t a = (size_t)(at - base), n = strlen(base) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    memcpy(s, base, a);
    strcpy(s + a, to);
    strcat(s, at + strlen(from));
    return s;
}

static const char *base_json =
    "{\"format\": \"flashref-case/1\", \"op\": \"fwd\", \"dtype\": \"bf16\",\n"
    " \"params\": {\"head_num\": 8, \"input_layout\": \"BNSD\", \"scale_value\": 0.125, \"keep_prob\": 1.0,\n"
    "  \"pre_tokens\": 2147483647, \"next_tokens\": 2147483647, \"inner_precise\": 0, \"sparse_mode\": 0,\n"
    "  \"pse_type\": 1, \"prefix\": null, \"actual_seq_qlen\": null, \"actual_seq_kvlen\": null,\n"
    "  \"q_start_idx\": 0, \"kv_start_idx\": 0, \"out_dtype\": null, \"softmax_layout\": \"\"},\n"
    " \"inputs\": {\"query\": \"query.npy\", \"key\": \"key.npy\", \"value\": \"value.npy\"}}\n";

/* Alike test_io_case.c:test_json_malformed (its rows): kept apart because each row is one malformed case.json (its own
 * edit and expected message); the likeness is the row format. */
static void test_json_malformed(void) {
    struct {
        const char *name, *from, *to, *msg;
        fr_status st;
    } cases[] = {
        {"valid (control)", "\"fwd\"", "\"fwd\"", "", FR_OK},
        {"valid bwd (control)", "\"fwd\"",
         "\"bwd\", \"inputs\": {\"query\": \"q\", \"key\": \"k\", \"value\": \"v\", \"dy\": \"a/dy.npy\", "
         "\"attention_in\": \"./o\", \"softmax_max\": \"m\", \"softmax_sum\": \"s\"}, \"x\": 1",
         "unknown key \"x\"", FR_E_FORMAT},
        {"not JSON", "{\"format\"", "{format", "not valid JSON", FR_E_FORMAT},
        {"trailing garbage", "}}\n", "}} x", "not valid JSON", FR_E_FORMAT},
        {"truncated", "\"inputs\"", "\"inp", "not valid JSON", FR_E_FORMAT},
        {"unknown top key", "\"op\"", "\"opp\"", "unknown key \"opp\"", FR_E_FORMAT},
        {"duplicate top key", "\"op\": \"fwd\"", "\"op\": \"fwd\", \"op\": \"bwd\"", "duplicate key", FR_E_FORMAT},
        {"missing format", "\"format\": \"flashref-case/1\", ", "", "format: missing", FR_E_FORMAT},
        {"future version", "flashref-case/1", "flashref-case/2", "version", FR_E_FORMAT},
        {"other format", "flashref-case/1", "something", "not a flashref case", FR_E_FORMAT},
        {"format not a string", "\"flashref-case/1\"", "1", "format", FR_E_FORMAT},
        {"bad op", "\"fwd\"", "\"forward\"", "op", FR_E_FORMAT},
        {"bad dtype", "\"bf16\"", "\"fp64\"", "dtype", FR_E_FORMAT},
        {"dtype alias refused", "\"bf16\"", "\"bfloat16\"", "dtype", FR_E_FORMAT},
        {"unknown param", "\"keep_prob\"", "\"keepprob\"", "params: unknown key \"keepprob\"", FR_E_FORMAT},
        {"duplicate param", "\"head_num\": 8,", "\"head_num\": 8, \"head_num\": 4,", "duplicate key \"head_num\"",
         FR_E_FORMAT},
        {"head_num a string", "\"head_num\": 8", "\"head_num\": \"8\"", "params.head_num: expected an integer",
         FR_E_FORMAT},
        {"head_num fractional", "\"head_num\": 8", "\"head_num\": 8.5", "params.head_num", FR_E_FORMAT},
        {"head_num huge", "\"head_num\": 8", "\"head_num\": 1e300", "params.head_num", FR_E_FORMAT},
        {"head_num missing", "\"head_num\": 8, ", "", "params.head_num: missing", FR_E_FORMAT},
        {"layout missing", "\"input_layout\": \"BNSD\", ", "", "params.input_layout: missing", FR_E_FORMAT},
        {"layout unknown", "\"BNSD\"", "\"NSBD\"", "params.input_layout", FR_E_FORMAT},
        {"scale a string", "\"scale_value\": 0.125", "\"scale_value\": \"x\"", "params.scale_value", FR_E_FORMAT},
        {"sparse_mode beyond int", "\"sparse_mode\": 0", "\"sparse_mode\": 4294967296", "params.sparse_mode",
         FR_E_FORMAT},
        {"pse_type a bool", "\"pse_type\": 1", "\"pse_type\": true", "params.pse_type", FR_E_FORMAT},
        {"prefix not an array", "\"prefix\": null", "\"prefix\": 3", "params.prefix", FR_E_FORMAT},
        {"prefix element", "\"prefix\": null", "\"prefix\": [1, \"a\"]", "params.prefix[1]", FR_E_FORMAT},
        {"seqlen without kv", "\"actual_seq_qlen\": null", "\"actual_seq_qlen\": [1, 2]", "actual_seq_kvlen is null",
         FR_E_FORMAT},
        {"seqlen lengths differ", "\"actual_seq_qlen\": null, \"actual_seq_kvlen\": null",
         "\"actual_seq_qlen\": [1, 2], \"actual_seq_kvlen\": [3]", "entries", FR_E_FORMAT},
        {"q_start_idx array", "\"q_start_idx\": 0", "\"q_start_idx\": [0]", "params.q_start_idx", FR_E_FORMAT},
        {"out_dtype number", "\"out_dtype\": null", "\"out_dtype\": 1", "params.out_dtype", FR_E_FORMAT},
        {"out_dtype unknown", "\"out_dtype\": null", "\"out_dtype\": \"half\"", "params.out_dtype", FR_E_FORMAT},
        {"softmax_layout", "\"softmax_layout\": \"\"", "\"softmax_layout\": \"TND\"", "params.softmax_layout",
         FR_E_FORMAT},
        {"inputs not object", "{\"query\": \"query.npy\", \"key\": \"key.npy\", \"value\": \"value.npy\"}",
         "[\"query.npy\"]", "inputs: expected an object", FR_E_FORMAT},
        {"path escapes (..)", "\"query.npy\"", "\"../query.npy\"", "inputs.query", FR_E_FORMAT},
        {"path escapes (inner ..)", "\"query.npy\"", "\"a/../../query.npy\"", "inside the case directory",
         FR_E_FORMAT},
        {"absolute path", "\"query.npy\"", "\"/etc/passwd\"", "inputs.query", FR_E_FORMAT},
        {"empty path", "\"query.npy\"", "\"\"", "inputs.query", FR_E_FORMAT},
        {"backslash path", "\"query.npy\"", "\"..\\\\query.npy\"", "inputs.query", FR_E_FORMAT},
        {"file name not string", "\"query.npy\"", "3", "inputs.query: expected a file name", FR_E_FORMAT},
        {"unknown input", "\"value\":", "\"values\":", "inputs: unknown key \"values\"", FR_E_FORMAT},
        {"duplicate input", "\"value\":", "\"key\": \"k2.npy\", \"value\":", "duplicate key \"key\"", FR_E_FORMAT},
        {"bwd input in fwd", "\"value\":", "\"dy\": \"dy.npy\", \"value\":", "backward-only", FR_E_FORMAT},
        {"missing query", "\"query\": \"query.npy\", ", "", "inputs.query: missing", FR_E_FORMAT},
        {"bwd without dy", "\"fwd\"", "\"bwd\"", "inputs.dy: missing", FR_E_FORMAT},
        {"top not an object", "{\"format\"", "[{\"format\"", "not valid JSON", FR_E_FORMAT},
        {"dtype a number", "\"bf16\"", "16", "dtype: expected a string, got", FR_E_FORMAT},
        {"layout a number", "\"BNSD\"", "4", "params.input_layout: expected a string", FR_E_FORMAT},
        {"softmax_layout a number", "\"softmax_layout\": \"\"", "\"softmax_layout\": 0",
         "params.softmax_layout: expected a string", FR_E_FORMAT},
        {"\\u0000 in a file name", "\"query.npy\"", "\"query\\u0000.npy\"", "\\u0000 (NUL) in a string", FR_E_FORMAT},
        {"escaped quote (control)", "\"query.npy\"", "\"q\\\"uery.npy\"", "", FR_OK},
        {"hints (control)", "\"inputs\"", "\"hints\": {\"mask\": \"additive_min\"}, \"inputs\"", "", FR_OK},
        {"hints not an object", "\"inputs\"", "\"hints\": [], \"inputs\"", "hints: expected an object, got",
         FR_E_FORMAT},
        {"hints unknown key", "\"inputs\"", "\"hints\": {\"masks\": \"bool\"}, \"inputs\"",
         "hints: unknown key \"masks\"", FR_E_FORMAT},
        {"hints duplicate mask", "\"inputs\"", "\"hints\": {\"mask\": \"bool\", \"mask\": \"bool\"}, \"inputs\"",
         "hints: duplicate key \"mask\"", FR_E_FORMAT},
        {"hints mask empty", "\"inputs\"", "\"hints\": {\"mask\": \"\"}, \"inputs\"", "hints.mask: expected", FR_E_FORMAT},
        {"hints mask unknown", "\"inputs\"", "\"hints\": {\"mask\": \"additive\"}, \"inputs\"", "hints.mask: expected",
         FR_E_FORMAT},
        {"hints mask a number", "\"inputs\"", "\"hints\": {\"mask\": 1}, \"inputs\"", "hints.mask: expected",
         FR_E_FORMAT},
        /* cJSON refuses a lone UTF-16 surrogate: malformed text, not the out of memory that a failed parse of
         * well-formed JSON means (found by fuzz_caps) */
        {"lone high surrogate", "\"bf16\"", "\"\\ud800\"", "not valid JSON", FR_E_FORMAT},
        {"lone low surrogate", "\"bf16\"", "\"\\udc00x\"", "not valid JSON", FR_E_FORMAT},
        {"high surrogate, no low", "\"bf16\"", "\"\\ud83d\\u0041\"", "not valid JSON", FR_E_FORMAT},
        {"surrogate pair (control)", "\"bf16\"", "\"\\ud83d\\ude00\"", "dtype", FR_E_FORMAT},
        /* what cJSON takes and RFC 8259 does not: a bad \u escape (cJSON read it as U+0000, so the name was cut to
         * query.npy and that file read), a leading zero, a bare decimal point */
        {"bad \\u escape", "\"query.npy\"", "\"query.npy\\uzzzzjunk\"", "not valid JSON (RFC 8259", FR_E_FORMAT},
        {"leading zero", "\"head_num\": 8", "\"head_num\": 08", "not valid JSON (RFC 8259", FR_E_FORMAT},
        {"bare decimal point", "\"keep_prob\": 1.0", "\"keep_prob\": 1.", "not valid JSON (RFC 8259", FR_E_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = subst(base_json, cases[i].from, cases[i].to);
        fr_case c;
        fr_error e;
        memset(&e, 0, sizeof e);
        fr_status st = fr_case_parse_json(j, strlen(j), &c, "X/case.json", &e);
        CHECK(st == cases[i].st, "%s: status %s, expected %s: %s", cases[i].name, fr_status_name(st),
              fr_status_name(cases[i].st), e.msg);
        if (st != FR_OK) {
            CHECK(strstr(e.msg, cases[i].msg) && strstr(e.msg, "X/case.json"),
                  "%s: message \"%s\" lacks \"%s\" or the file name", cases[i].name, e.msg, cases[i].msg);
            CHECK(c.files[FR_CI_QUERY] == NULL && c.prefix == NULL, "%s: case not emptied on failure", cases[i].name);
        } else {
            CHECK(c.params.head_num == 8 && c.params.input_layout == FR_BNSD && c.dtype == FR_BF16,
                  "%s: parsed values", cases[i].name);
        }
        fr_case_free(&c);
        free(j);
    }
    /* NUL byte inside the text, and the empty text. */
    fr_case c;
    fr_error e;
    char nul[] = "{\"format\"\0: 1}";
    CHECK(fr_case_parse_json(nul, sizeof nul - 1, &c, NULL, &e) == FR_E_FORMAT && strstr(e.msg, "NUL"), "NUL: %s",
          e.msg);
    CHECK(fr_case_parse_json("", 0, &c, NULL, &e) == FR_E_FORMAT, "empty text: %s", e.msg);
    char *j;
    /* Not an object at the top, params not an object, an array longer than any valid case has. */
    CHECK(fr_case_parse_json("[]", 2, &c, "T", &e) == FR_E_FORMAT &&
              strstr(e.msg, "T: expected a JSON object at the top, got"), "top array: %s", e.msg);
    const char *pnum = "{\"format\": \"flashref-case/1\", \"op\": \"fwd\", \"dtype\": \"bf16\", \"params\": 8, "
                       "\"inputs\": {\"query\": \"q.npy\", \"key\": \"k.npy\", \"value\": \"v.npy\"}}";
    CHECK(fr_case_parse_json(pnum, strlen(pnum), &c, "T", &e) == FR_E_FORMAT &&
              strstr(e.msg, "T: params: expected an object"), "params a number: %s", e.msg);
    size_t cap = 16 + 2 * 2049;
    char *arr = malloc(cap);
    strcpy(arr, "\"prefix\": [0");
    for (int k = 1; k < 2049; k++) strcat(arr, ",0");
    strcat(arr, "]");
    j = subst(base_json, "\"prefix\": null", arr);
    CHECK(fr_case_parse_json(j, strlen(j), &c, "T", &e) == FR_E_FORMAT &&
              strstr(e.msg, "params.prefix: 2049 entries, more than any valid case has (2048"), "long prefix: %s",
          e.msg);
    free(j);
    free(arr);
    /* the mask hint read, and its names both ways */
    j = subst(base_json, "\"inputs\"", "\"hints\": {\"mask\": \"additive_inf\"}, \"inputs\"");
    CHECK_OK(fr_case_parse_json(j, strlen(j), &c, NULL, &e), e);
    CHECK(c.mask_hint == FR_MASK_HINT_ADD_INF, "hints.mask additive_inf read as %d", (int)c.mask_hint);
    fr_case_free(&c);
    free(j);
    CHECK(!strcmp(fr_mask_hint_name(FR_MASK_HINT_DEFAULT), "") && !strcmp(fr_mask_hint_name(FR_MASK_HINT_BOOL), "bool") &&
              !strcmp(fr_mask_hint_name(FR_MASK_HINT_COUNT), "invalid") &&
              !strcmp(fr_mask_hint_name((fr_mask_hint)-1), "invalid") &&
              fr_mask_hint_from_name("additive_min") == FR_MASK_HINT_ADD_MIN &&
              fr_mask_hint_from_name("") == FR_MASK_HINT_DEFAULT && fr_mask_hint_from_name("x") == FR_MASK_HINT_COUNT &&
              fr_mask_hint_from_name(NULL) == FR_MASK_HINT_COUNT, "mask hint names");
    /* 1001 arrays and objects deep: past cJSON's nesting limit, malformed (not out of memory); 1000 still parse */
    for (int levels = 1000; levels <= 1001; levels++) {
        size_t n = strlen(base_json) + 2 * (size_t)levels + 16;
        char *deep = malloc(n), *at = deep ? strrchr(strcpy(deep, base_json), '}') : NULL;
        if (!at) break;
        at += sprintf(at, ", \"x\": ");
        memset(at, '[', (size_t)levels - 1), memset(at + levels - 1, ']', (size_t)levels - 1);
        strcpy(at + 2 * (levels - 1), "}");
        fr_status st = fr_case_parse_json(deep, strlen(deep), &c, NULL, &e);
        CHECK(levels == 1000 ? st == FR_E_FORMAT && strstr(e.msg, "unknown key \"x\"")
                             : st == FR_E_FORMAT && strstr(e.msg, "not valid JSON"),
              "%d levels: %s %s", levels, fr_status_name(st), e.msg);
        if (st == FR_OK) fr_case_free(&c);
        free(deep);
    }
    /* Defaults fill what params omits. */
    j = subst(base_json, "\"keep_prob\": 1.0,", "");
    CHECK_OK(fr_case_parse_json(j, strlen(j), &c, NULL, &e), e);
    CHECK(c.params.keep_prob == 1.0, "keep_prob default");
    fr_case_free(&c);
    free(j);
}

/* Tensor files of the wrong dtype for their field, missing or escaping files. */
static void test_load_errors(const char *tmp, uint64_t *rng) {
    fr_params p = fr_params_default();
    p.head_num = 1;
    p.input_layout = FR_BSND;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    int64_t q1[4] = {1, 3, 1, 4}, ms[2] = {3, 3};
    in.fwd.query = rnd(FR_BF16, 4, q1, rng);
    in.fwd.key = rnd(FR_BF16, 4, q1, rng);
    in.fwd.value = rnd(FR_BF16, 4, q1, rng);
    in.fwd.atten_mask = rnd(FR_BOOL, 2, ms, rng);
    char dir[512], path[700];
    snprintf(dir, sizeof dir, "%s/errs", tmp);
    fr_error e;
    CHECK_OK(fr_case_write_parts(dir, FR_CASE_FWD, FR_BF16, &p, &in, &e), e);
    fr_case c;
    CHECK_OK(fr_case_load(dir, &c, &e), e);
    fr_case_free(&c);
    /* fr_case_load_except (src/dist reads the query rows itself): query described (dtype, shape) but not read, the
     * rest read; a skipped input is still checked (a wrong dtype fails as fr_case_load fails). */
    CHECK_OK(fr_case_load_except(dir, &c, 1u << FR_CI_QUERY, &e), e);
    CHECK(c.in.fwd.query.dtype == FR_BF16 && c.in.fwd.query.ndim == 4 && c.in.fwd.query.shape[1] == 3 &&
              c.in.fwd.query.data == NULL,
          "skipped query: described, data NULL");
    CHECK(c.in.fwd.key.data && !memcmp(c.in.fwd.key.data, in.fwd.key.data, 12 * 2) && c.in.fwd.atten_mask.data,
          "the other inputs read");
    fr_case_free(&c);

    /* query stored as fp32 in a bf16 case */
    fr_tensor f = rnd(FR_F32, 4, q1, rng);
    snprintf(path, sizeof path, "%s/query.npy", dir);
    CHECK_OK(fr_npy_write_file(path, &f, 1, &e), e);
    CHECK(fr_case_load(dir, &c, &e) == FR_E_FORMAT && strstr(e.msg, "query.npy") && strstr(e.msg, "inputs.query"),
          "fp32 query in a bf16 case: %s", e.msg);
    CHECK(c.dir == NULL && c.in.fwd.key.data == NULL, "case emptied after a load failure");
    CHECK(fr_case_load_except(dir, &c, 1u << FR_CI_QUERY, &e) == FR_E_FORMAT && strstr(e.msg, "inputs.query"),
          "fp32 query, skipped: still checked: %s", e.msg);
    CHECK_OK(fr_npy_write_file(path, &in.fwd.query, 1, &e), e);
    /* atten_mask stored as fp32 */
    snprintf(path, sizeof path, "%s/atten_mask.npy", dir);
    CHECK_OK(fr_npy_write_file(path, &f, 1, &e), e);
    CHECK(fr_case_load(dir, &c, &e) == FR_E_FORMAT && strstr(e.msg, "atten_mask"), "fp32 mask: %s", e.msg);
    /* a truncated tensor file */
    void *buf;
    size_t len;
    CHECK_OK(fr_npy_write_mem(&in.fwd.atten_mask, 1, &buf, &len, &e), e);
    write_whole(path, buf, len - 1);
    free(buf);
    CHECK(fr_case_load(dir, &c, &e) == FR_E_FORMAT && strstr(e.msg, "atten_mask.npy"), "truncated mask: %s", e.msg);
    remove(path);
    CHECK(fr_case_load(dir, &c, &e) == FR_E_IO && strstr(e.msg, "atten_mask.npy"), "missing mask: %s", e.msg);
    /* a link inside the case to a file outside it: not followed */
    char outside[700];
    snprintf(outside, sizeof outside, "%s/outside_query.npy", tmp);
    snprintf(path, sizeof path, "%s/query.npy", dir);
    CHECK_OK(fr_npy_write_file(outside, &in.fwd.query, 1, &e), e);
    CHECK(rename(path, outside) == 0 && symlink(outside, path) == 0, "link query.npy out of the case");
    CHECK(fr_case_load(dir, &c, &e) == FR_E_FORMAT &&
              strstr(e.msg, "inputs.query: \"query.npy\" resolves (through a symbolic link) to a file outside"),
          "link out of the case: %s", e.msg);
    CHECK(c.dir == NULL && c.in.fwd.key.data == NULL, "case emptied after the refused link");
    CHECK(remove(path) == 0 && rename(outside, path) == 0, "query.npy back");
    /* no case.json at all */
    CHECK(fr_case_load(tmp, &c, &e) == FR_E_IO && strstr(e.msg, "case.json"), "no case.json: %s", e.msg);
    free(f.data);
    free_inputs(&in);
    /* Writing refuses what the format cannot hold. */
    p.pre_tokens = INT64_C(1) << 60;
    CHECK(fr_case_write_parts(dir, FR_CASE_FWD, FR_BF16, &p, &in, &e) != FR_OK, "2^60 pre_tokens must not be written");
    p.pre_tokens = FR_TOKENS_MAX;
    in.dy = rnd(FR_F32, 4, q1, rng);
    CHECK(fr_case_write_parts(dir, FR_CASE_FWD, FR_F32, &p, &in, &e) != FR_OK, "dy in a forward case");
    free_inputs(&in);
}

static bool all_nan(const fr_tensor *t) {
    int64_t n = fr_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (!isnan(fr_load_f64(t, i))) return false;
    return true;
}

static bool shape_is(const fr_tensor *t, int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t w[4] = {a, b, c, d};
    if (t->ndim != ndim) return false;
    for (int k = 0; k < ndim; k++)
        if (t->shape[k] != w[k]) return false;
    return true;
}

/* fr_case_alloc_outputs: spec shapes and dtypes, every element NaN (needs validation: a valid case). */
static void test_alloc_outputs(uint64_t *rng) {
    fr_case c;
    fr_case_outputs o;
    fr_error e;
    /* BSH bf16, GQA, Dk 8 != Dv 4: attention_out [B, S1, N1*Dv] bf16, softmax [B,N1,S1,8] fp32 */
    memset(&c, 0, sizeof c);
    c.op = FR_CASE_FWD;
    c.dtype = FR_BF16;
    c.params = fr_params_default();
    c.params.head_num = 4;
    c.params.input_layout = FR_BSH;
    int64_t qs[3] = {2, 3, 32}, ks[3] = {2, 5, 16}, vs[3] = {2, 5, 8};
    c.in.fwd.query = rnd(FR_BF16, 3, qs, rng);
    c.in.fwd.key = rnd(FR_BF16, 3, ks, rng);
    c.in.fwd.value = rnd(FR_BF16, 3, vs, rng);
    for (int fp64 = 0; fp64 < 2; fp64++) {
        fr_status st = fr_case_alloc_outputs(&c, fp64, &o, &e);
        CHECK(st == FR_OK, "alloc BSH: %s", e.msg);
        if (st != FR_OK) continue;
        CHECK(o.fwd.attention_out.dtype == (fp64 ? FR_F64 : FR_BF16) &&
                  shape_is(&o.fwd.attention_out, 3, 2, 3, 16, 0),
              "BSH attention_out dtype %s shape [%lld,%lld,%lld]", fr_dtype_name(o.fwd.attention_out.dtype),
              (long long)o.fwd.attention_out.shape[0], (long long)o.fwd.attention_out.shape[1],
              (long long)o.fwd.attention_out.shape[2]);
        CHECK(o.fwd.softmax_max.dtype == (fp64 ? FR_F64 : FR_F32) && shape_is(&o.fwd.softmax_sum, 4, 2, 4, 3, 8),
              "BSH softmax");
        CHECK(all_nan(&o.fwd.attention_out) && all_nan(&o.fwd.softmax_max) && all_nan(&o.fwd.softmax_sum),
              "outputs NaN-prefilled");
        fr_case_outputs_free(&o);
    }
    c.params.head_num = 3; /* 32 is not a multiple of 3: validation's status comes through */
    CHECK(fr_case_alloc_outputs(&c, false, &o, &e) != FR_OK && o.fwd.attention_out.data == NULL,
          "alloc of an invalid case must fail");
    fr_case_free(&c);

    /* TND fp16, softmax same_as_input: [T, N1, 8] */
    memset(&c, 0, sizeof c);
    c.op = FR_CASE_FWD;
    c.dtype = FR_F16;
    c.params = fr_params_default();
    c.params.head_num = 2;
    c.params.input_layout = FR_TND;
    c.params.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    c.actual_seq_qlen = malloc(2 * sizeof(int64_t));
    c.actual_seq_kvlen = malloc(2 * sizeof(int64_t));
    c.actual_seq_qlen[0] = 2, c.actual_seq_qlen[1] = 5, c.actual_seq_kvlen[0] = 3, c.actual_seq_kvlen[1] = 6;
    c.params.actual_seq_qlen = c.actual_seq_qlen;
    c.params.actual_seq_kvlen = c.actual_seq_kvlen;
    c.params.actual_seq_len = 2;
    int64_t tq[3] = {5, 2, 8}, tk[3] = {6, 2, 8};
    c.in.fwd.query = rnd(FR_F16, 3, tq, rng);
    c.in.fwd.key = rnd(FR_F16, 3, tk, rng);
    c.in.fwd.value = rnd(FR_F16, 3, tk, rng);
    CHECK_OK(fr_case_alloc_outputs(&c, false, &o, &e), e);
    CHECK(shape_is(&o.fwd.softmax_max, 3, 5, 2, 8, 0) && shape_is(&o.fwd.attention_out, 3, 5, 2, 8, 0) &&
              o.fwd.attention_out.dtype == FR_F16,
          "TND same_as_input shapes");
    fr_case_outputs_free(&o);
    c.params.softmax_layout = FR_SOFTMAX_DEFAULT;
    CHECK_OK(fr_case_alloc_outputs(&c, false, &o, &e), e);
    CHECK(shape_is(&o.fwd.softmax_max, 3, 2, 5, 8, 0), "TND default softmax [N1,T,8]");
    fr_case_outputs_free(&o);
    fr_case_free(&c);
}

static void test_paths(void) {
    const char *ok[] = {"q.npy", "a/b.npy", "./q.npy", "..q.npy", "a..b/c", "q..npy"};
    const char *bad[] = {"", "/q.npy", "..", "../q.npy", "a/../q.npy", "a/..", "a\\b", "a/", "x/../.."};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) CHECK(fr_case_path_ok(ok[i]), "path '%s' should be ok", ok[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!fr_case_path_ok(bad[i]), "path '%s' should be refused", bad[i]);
}

/* fr_case_json_hinted: each argument it refuses (a specific status and message), and what it writes read back
 * (hints, arrays, out_dtype, softmax_layout).
 * Alike test_io_case.c:test_case_json (its rows): kept apart because each row is one refused argument (its own edit
 * and expected message); the likeness is the row format. */
static void test_case_json(void) {
    fr_params p = fr_params_default();
    p.head_num = 2;
    p.input_layout = FR_TND;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    char *j = NULL;
    fr_error e;
    static const struct {
        int what;
        fr_status st;
        const char *msg;
    } bad[] = {
        {0, FR_E_INVALID_ARG, "case: op 7"},
        {1, FR_E_DTYPE, "case: dtype fp64 cannot be a case dtype"},
        {2, FR_E_FORMAT, "scale_value nan / keep_prob 1: JSON has no Inf/NaN"},
        {3, FR_E_FORMAT, "keep_prob inf: JSON has no Inf/NaN"},
        {4, FR_E_LAYOUT, "case: input_layout 99 unknown"},
        {5, FR_E_DTYPE, "case: out_dtype int32 cannot be written"},
        {6, FR_E_INVALID_ARG, "negative prefix_len"},
        {7, FR_E_INVALID_ARG, "case: mask hint 9 unknown"},
        {8, FR_E_SEQLEN, "actual_seq_qlen and actual_seq_kvlen must both be given"},
        {9, FR_E_FORMAT, "an integer parameter beyond 2^53"},
        {10, FR_E_FORMAT, "an integer parameter beyond 2^53"},
        {11, FR_E_INVALID_ARG, "case: dy given for a forward case"},
    };
    int64_t big[1] = {INT64_C(1) << 60}, seq[2] = {3, 5};
    float one = 1;
    int64_t s1 = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_params q = p;
        fr_bwd_inputs qi = in;
        fr_case_op op = FR_CASE_FWD;
        fr_dtype dt = FR_BF16;
        fr_mask_hint h = FR_MASK_HINT_DEFAULT;
        switch (bad[i].what) {
        case 0: op = (fr_case_op)7; break;
        case 1: dt = FR_F64; break;
        case 2: q.scale_value = NAN; break;
        case 3: q.keep_prob = INFINITY; break;
        case 4: q.input_layout = (fr_layout)99; break;
        case 5: q.out_dtype = FR_I32; break;
        case 6: q.prefix_len = -1; break;
        case 7: h = (fr_mask_hint)9; break;
        case 8: q.actual_seq_qlen = seq, q.actual_seq_len = 2; break;
        case 9: q.prefix = big, q.prefix_len = 1; break;
        case 10: q.pre_tokens = big[0]; break;
        case 11: qi.dy = fr_tensor_make(FR_F32, &one, 1, &s1); break;
        }
        j = (char *)&e;
        memset(&e, 0, sizeof e);
        fr_status st = fr_case_json_hinted(op, dt, &q, &qi, h, &j, &e);
        CHECK(st == bad[i].st && j == NULL && strstr(e.msg, bad[i].msg), "case %d: %s '%s', expected %s '%s'",
              bad[i].what, fr_status_name(st), e.msg, fr_status_name(bad[i].st), bad[i].msg);
    }
    CHECK(fr_case_json(FR_CASE_FWD, FR_BF16, NULL, &in, &j, &e) == FR_E_NULL &&
              fr_case_json(FR_CASE_FWD, FR_BF16, &p, NULL, &j, &e) == FR_E_NULL &&
              fr_case_json(FR_CASE_FWD, FR_BF16, &p, &in, NULL, &e) == FR_E_NULL, "NULL arguments");
    /* written, then read back the same */
    int64_t kv[2] = {4, 9};
    p.actual_seq_qlen = seq;
    p.actual_seq_kvlen = kv;
    p.actual_seq_len = 2;
    p.out_dtype = FR_F16;
    p.softmax_layout = FR_SOFTMAX_SAME_AS_INPUT;
    in.fwd.query = in.fwd.key = in.fwd.value = fr_tensor_make(FR_BF16, &one, 1, &s1);
    CHECK_OK(fr_case_json_hinted(FR_CASE_FWD, FR_BF16, &p, &in, FR_MASK_HINT_ADD_MIN, &j, &e), e);
    fr_case c;
    if (CHECKED(j != NULL, "no text")) {
        CHECK(strstr(j, "\"hints\"") && strstr(j, "\"additive_min\"") && j[strlen(j) - 1] == '\n', "text: %s", j);
        fr_status st = fr_case_parse_json(j, strlen(j), &c, "written", &e);
        CHECK(st == FR_OK && c.mask_hint == FR_MASK_HINT_ADD_MIN && c.params.actual_seq_len == 2 &&
                  c.actual_seq_qlen[1] == 5 && c.actual_seq_kvlen[1] == 9 && c.params.out_dtype == FR_F16 &&
                  c.params.softmax_layout == FR_SOFTMAX_SAME_AS_INPUT && c.params.input_layout == FR_TND &&
                  c.files[FR_CI_QUERY] && !strcmp(c.files[FR_CI_QUERY], "query.npy"),
              "read back: %s", e.msg);
        if (st == FR_OK) fr_case_free(&c);
        free(j);
    }
    CHECK_OK(fr_case_json(FR_CASE_BWD, FR_E4M3FN, &p, &in, &j, &e), e);
    CHECK(j && !strstr(j, "hints") && strstr(j, "\"e4m3fn\"") && strstr(j, "\"bwd\""), "no hint written: %s",
          j ? j : "");
    free(j);
}

int main(void) {
    uint64_t rng;
    char tmp[] = "/tmp/fr_io_case_XXXXXX";
    if (!io_test_open("test_io_case", &rng, tmp)) return 1;
    test_paths();
    test_fwd_round_trip(tmp, &rng);
    test_bwd_round_trip(tmp, &rng);
    test_json_malformed();
    test_case_json();
    test_load_errors(tmp, &rng);
    test_alloc_outputs(&rng);
    remove_tree(tmp);
    return io_report("test_io_case");
}
