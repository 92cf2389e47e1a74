/* The public verifier API (include/flashref_verify.h) from C, as the Python package uses it: a callback IUT that
 * runs the fast engine passes the quick set's equivalence cases, one that perturbs the output fails them, one that
 * returns FR_E_UNSUPPORTED skips them, one that changes its (const) inputs fails them; the exact-name option keeps
 * one case; the JSON is the suite's; fr_verify_judge_outputs judges given outputs as the suite does; output specs
 * match the outputs the engines accept; bad options are rejected with a status. Also runs under the sanitizers
 * (the Python tests cannot). */
#include "flashref_verify.h"

#include "common/check.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct calls {
    int n, fwd, bwd;
    char first[96];
    int perturb; /* 1: scale attention_out by 1.05; 2: unsupported; 3: zero the query in place, then compute */
    const char *expect; /* when set: count calls for other cases */
    int wrong;
} calls;

static fr_status cb(void *ud, const fr_verify_case *c, fr_fwd_outputs *fo, fr_bwd_outputs *bo, fr_error *err) {
    calls *k = ud;
    if (!k->n) snprintf(k->first, sizeof k->first, "%s", c->name);
    k->n++;
    if (k->expect && strcmp(c->name, k->expect)) k->wrong++;
    if (k->perturb == 2) return FR_E_UNSUPPORTED;
    if (k->perturb == 3 && c->in->fwd.query.data) /* what a careless implementation does to a const input */
        memset(c->in->fwd.query.data, 0, (size_t)fr_tensor_numel(&c->in->fwd.query) * fr_dtype_size(c->in->fwd.query.dtype));
    fr_engine e = fr_engine_default(FR_ENGINE_FAST);
    fr_status st;
    if (c->op == FR_VERIFY_FWD) {
        k->fwd++;
        st = fr_fwd(c->params, &c->in->fwd, fo, &e, err);
        if (st == FR_OK && k->perturb == 1 && fo->attention_out.dtype == FR_F32) {
            float *o = fo->attention_out.data;
            int64_t n = fr_tensor_numel(&fo->attention_out);
            for (int64_t i = 0; i < n; i++)
                o[i] *= 1.05f;
        }
    } else {
        k->bwd++;
        st = fr_bwd(c->params, c->in, bo, &e, err);
    }
    return st;
}

static cJSON *parse(const fr_verify_result *r) {
    char *js = NULL;
    fr_error err;
    memset(&err, 0, sizeof err);
    CHECK(fr_verify_result_json(r, &js, &err) == FR_OK, "json: %s", err.msg);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    fr_verify_free(js);
    CHECK(j != NULL, "JSON does not parse");
    return j;
}

static int count_verdict(const cJSON *j, const char *v) {
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        const cJSON *x = cJSON_GetObjectItem(c, "verdict");
        n += cJSON_IsString(x) && !strcmp(x->valuestring, v);
    }
    return n;
}

int main(void) {
    fr_error err;
    memset(&err, 0, sizeof err);
    CHECK(fr_verify_abi_version() == FR_VERIFY_ABI_VERSION, "abi");
    CHECK(fr_verify_sizeof("fr_params") == sizeof(fr_params) && fr_verify_sizeof("nope") == 0, "sizeof");

    fr_verify_opts o = fr_verify_opts_default();
    o.set = "quick";
    o.filter = "eq_";
    int listed = fr_verify_list("quick", "eq_", NULL, NULL);
    CHECK(listed > 0, "no eq_ cases in the quick set");

    /* correct */
    calls k = {0};
    fr_verify_result *r = NULL;
    CHECK(fr_verify_run_callback(&o, cb, &k, &r, &err) == FR_OK, "run: %s", err.msg);
    CHECK(r && fr_verify_result_count(r) == listed, "count %d vs listed %d", r ? fr_verify_result_count(r) : -1,
          listed);
    CHECK(k.n >= listed && k.first[0], "callback calls %d, first name '%s'", k.n, k.first);
    CHECK(fr_verify_result_overall(r) == 0 || fr_verify_result_overall(r) == 1, "overall %d",
          fr_verify_result_overall(r));
    cJSON *j = parse(r);
    CHECK(count_verdict(j, "FAIL") == 0, "a correct callback failed");
    const cJSON *th = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "thresholds"), "external");
    CHECK(cJSON_IsTrue(th), "a callback is judged as external");
    CHECK(!strcmp(cJSON_GetObjectItem(j, "impl")->valuestring, "callback"), "impl name");
    cJSON_Delete(j);
    CHECK(fr_verify_result_html(r, "test_verify_api.html", &err) == FR_OK, "html: %s", err.msg);
    remove("test_verify_api.html");
    fr_verify_result_free(r);

    /* perturbed: the fp32 forward cases fail */
    calls kp = {0};
    kp.perturb = 1;
    o.impl_name = "perturbed";
    CHECK(fr_verify_run_callback(&o, cb, &kp, &r, &err) == FR_OK, "run: %s", err.msg);
    j = parse(r);
    CHECK(count_verdict(j, "FAIL") > 0 && fr_verify_result_overall(r) == 2, "a 5%% output error was not failed");
    CHECK(!strcmp(cJSON_GetObjectItem(j, "impl")->valuestring, "perturbed"), "impl name");
    cJSON_Delete(j);
    fr_verify_result_free(r);

    /* unsupported: everything skips */
    calls ku = {0};
    ku.perturb = 2;
    o.impl_name = NULL;
    CHECK(fr_verify_run_callback(&o, cb, &ku, &r, &err) == FR_OK, "run: %s", err.msg);
    CHECK(fr_verify_result_overall(r) == 3, "overall %d, expected SKIP", fr_verify_result_overall(r));
    fr_verify_result_free(r);

    /* issue 28 row 3: a callback that zeroes its query in place and returns what the engine computes from it
     * PASSed (the golden was computed from the clobbered inputs); every such case FAILs now, naming the input */
    calls kz = {0};
    kz.perturb = 3;
    CHECK(fr_verify_run_callback(&o, cb, &kz, &r, &err) == FR_OK, "run: %s", err.msg);
    j = parse(r);
    CHECK(count_verdict(j, "PASS") == 0 && count_verdict(j, "FAIL") == listed, "clobbered inputs: %d PASS, %d FAIL",
          count_verdict(j, "PASS"), count_verdict(j, "FAIL"));
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    const cJSON *why = c0 ? cJSON_GetObjectItem(c0, "why") : NULL;
    CHECK(why && cJSON_IsString(why) && strstr(why->valuestring, "modified its input query"), "why: %s",
          why && cJSON_IsString(why) ? why->valuestring : "(none)");
    cJSON_Delete(j);
    fr_verify_result_free(r);

    /* exactly one case */
    calls ke = {0};
    ke.expect = k.first;
    o.exact = k.first;
    o.filter = NULL;
    CHECK(fr_verify_run_callback(&o, cb, &ke, &r, &err) == FR_OK, "run: %s", err.msg);
    CHECK(fr_verify_result_count(r) == 1 && ke.n >= 1 && ke.wrong == 0, "exact: %d cases, %d calls, %d for others",
          fr_verify_result_count(r), ke.n, ke.wrong);
    fr_verify_result_free(r);
    o.exact = NULL;

    /* an --impl spec */
    o.filter = "eq_";
    CHECK(fr_verify_run_impl(&o, "fast", &r, &err) == FR_OK && fr_verify_result_count(r) == listed, "impl: %s",
          err.msg);
    fr_verify_result_free(r);

    /* bad options */
    o.set = "nope";
    CHECK(fr_verify_run_callback(&o, cb, &k, &r, &err) == FR_E_INVALID_ARG && r == NULL, "unknown set accepted");
    o.set = "quick";
    o.k_out = -1;
    CHECK(fr_verify_run_callback(&o, cb, &k, &r, &err) == FR_E_INVALID_ARG && strstr(err.msg, "k_out"),
          "negative k_out accepted: %s", err.msg);
    o = fr_verify_opts_default();
    CHECK(fr_verify_run_callback(&o, NULL, NULL, &r, &err) == FR_E_NULL, "NULL callback accepted");
    CHECK(fr_verify_run_impl(&o, "nonsense", &r, &err) == FR_E_INVALID_ARG, "bad impl accepted");

    /* output specs: what fr_fwd accepts */
    float q[2 * 3 * 4], kk[2 * 5 * 4];
    for (int i = 0; i < 24; i++) q[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < 40; i++) kk[i] = (float)(i % 5) * 0.1f;
    fr_params p = fr_params_default();
    p.head_num = 2;
    p.input_layout = FR_BSH;
    fr_bwd_inputs in;
    memset(&in, 0, sizeof in);
    in.fwd.query = fr_tensor_make(FR_F32, q, 3, (int64_t[]){1, 3, 8});
    in.fwd.key = fr_tensor_make(FR_F32, kk, 3, (int64_t[]){1, 5, 8});
    in.fwd.value = in.fwd.key;
    fr_tensor sp[FR_VERIFY_NUM_OUTPUTS];
    CHECK(fr_verify_output_specs(FR_VERIFY_FWD, &p, &in, sp, &err) == FR_OK, "specs: %s", err.msg);
    CHECK(sp[0].dtype == FR_F32 && sp[0].ndim == 3 && sp[0].shape[2] == 8 && sp[1].ndim == 4 && sp[1].shape[3] == 8 &&
              sp[3].dtype == FR_DT_NONE,
          "specs wrong");
    float out[24], mx[2 * 3 * 8], sm[2 * 3 * 8];
    fr_fwd_outputs fo = {fr_tensor_make(FR_F32, out, 3, sp[0].shape), fr_tensor_make(FR_F32, mx, 4, sp[1].shape),
                         fr_tensor_make(FR_F32, sm, 4, sp[2].shape)};
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    CHECK(fr_fwd(&p, &in.fwd, &fo, &e, &err) == FR_OK, "fwd with the specs' shapes: %s", err.msg);
    /* fr_verify_judge_outputs: the golden's own output (rounded to fp32) PASSes; 2% off FAILs with the judge's
     * numbers; only attention_out given, the statistics are filled from the golden; a wrong shape is `shape` */
    fr_fwd_outputs only;
    memset(&only, 0, sizeof only);
    only.attention_out = fo.attention_out;
    char *jj = NULL;
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &only, NULL, NULL, &jj, &err) == FR_OK, "judge: %s", err.msg);
    cJSON *jr = jj ? cJSON_Parse(jj) : NULL;
    CHECK(jr && !strcmp(cJSON_GetObjectItem(jr, "verdict")->valuestring, "PASS"), "judge of the golden: %s", jj);
    cJSON_Delete(jr);
    fr_verify_free(jj);
    for (int i = 0; i < 24; i++) out[i] *= 1.02f;
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &only, NULL, NULL, &jj, &err) == FR_OK, "judge: %s", err.msg);
    jr = jj ? cJSON_Parse(jj) : NULL;
    CHECK(jr && !strcmp(cJSON_GetObjectItem(jr, "verdict")->valuestring, "FAIL") &&
              strstr(cJSON_GetObjectItem(jr, "why")->valuestring, "attention_out"),
          "judge of a 2%% error: %s", jj);
    cJSON_Delete(jr);
    fr_verify_free(jj);
    fr_fwd_outputs wrong;
    memset(&wrong, 0, sizeof wrong);
    wrong.attention_out = fr_tensor_make(FR_F32, out, 3, (int64_t[]){1, 3, 4});
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &wrong, NULL, NULL, &jj, &err) == FR_OK, "judge: %s", err.msg);
    jr = jj ? cJSON_Parse(jj) : NULL;
    CHECK(jr && !strcmp(cJSON_GetObjectItem(jr, "diagnosis")->valuestring, "shape"), "judge of a wrong shape: %s", jj);
    cJSON_Delete(jr);
    fr_verify_free(jj);
    p.head_num = 3;
    CHECK(fr_verify_judge_outputs(FR_VERIFY_FWD, &p, &in, &only, NULL, NULL, &jj, &err) == FR_E_HEADS,
          "judge: an invalid problem accepted");
    CHECK(fr_verify_output_specs(FR_VERIFY_FWD, &p, &in, sp, &err) == FR_E_HEADS, "bad head_num accepted");

    /* metrics */
    double a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8];
    for (int i = 0; i < 8; i++) b[i] = a[i] * 1.001;
    char *js = NULL;
    CHECK(fr_verify_metrics_json(b, a, 2, 4, FR_BF16, &js, &err) == FR_OK, "metrics: %s", err.msg);
    cJSON *m = js ? cJSON_Parse(js) : NULL;
    CHECK(m && fabs(cJSON_GetObjectItem(m, "rel_l2")->valuedouble - 1e-3) < 1e-9, "rel_l2");
    cJSON_Delete(m);
    fr_verify_free(js);
    CHECK(fr_verify_metrics_json(b, a, 2, 4, FR_I32, &js, &err) == FR_E_DTYPE, "int ulp dtype accepted");

    printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures != 0;
}
