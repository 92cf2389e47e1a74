/* The msprobe dump reader from C (io/msprobe.h, verify/cases/npu_call.h, fr_suite_verify_msprobe), without Python:
 *   1. the dump msprobe itself wrote (tests/data/msprobe/dump, FR_MSPROBE_DUMP): every entry read, every call rebuilt
 *      (a backward with its forward) and the whole dump judged PASS, 12 calls by name; a copy with three entries
 *      edited (a null dk, a null dq, a shape dump.json misstates) judged as it must be; a tree of four ranks;
 *   2. fr_mp_parse_json on small hand-written texts: what it reads (NaN / Infinity statistics, every kind of value,
 *      names it does not count) and each malformed text's exact status and message;
 *   3. fr_mp_find on temporary trees (root, step/rank, a linked rank, nothing, no root);
 *   4. fr_npu_rebuild on hand-written calls over .npy tensor files: binding errors, the mapping (v1/v2 spellings,
 *      scale / scale_value, keep_prob, TND lists and v3's tensors, sparse modes) and files that do not match.
 * Small on purpose (a few seconds): the Python tests (tests/python_pkg/test_msprobe.py) compare this mapping with
 * flashref.npu.bind on dumps msprobe writes; this test is what the C coverage sample sees of the reader. */
#define _GNU_SOURCE
#include "common/check.h"
#include "common/kit.h"
#include "io/msprobe.h"
#include "io/npy.h"
#include "verify/cases/npu_call.h"
#include "verify/suite/suite.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FR_MSPROBE_DUMP
#error "FR_MSPROBE_DUMP (tests/data/msprobe/dump) is set by tests/verify_suite/CMakeLists.txt"
#endif

static char g_tmp[256];

static char *path_of(const char *a, const char *b) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s", a, b) < 0) abort();
    return p;
}

static bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(text, 1, strlen(text), f) == strlen(text);
    return fclose(f) == 0 && ok;
}

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = '\0';
    if (len) *len = (size_t)n;
    return b;
}

/* A copy of the committed dump at dst, its dump.json replaced by json (NULL: copied as is). */
static bool copy_dump(const char *dst, const char *json) {
    char *ddata = path_of(dst, "dump_tensor_data"), *sdata = path_of(FR_MSPROBE_DUMP, "dump_tensor_data");
    bool ok = mkdir(dst, 0700) == 0 && mkdir(ddata, 0700) == 0;
    char *sj = path_of(FR_MSPROBE_DUMP, "dump.json"), *dj = path_of(dst, "dump.json");
    char *text = json ? NULL : read_text(sj, NULL);
    ok = ok && write_text(dj, json ? json : text ? text : "");
    free(text);
    free(sj);
    free(dj);
    DIR *dp = ok ? opendir(sdata) : NULL;
    ok = ok && dp;
    for (struct dirent *de; ok && (de = readdir(dp));) {
        if (de->d_name[0] == '.') continue;
        char *from = path_of(sdata, de->d_name), *to = path_of(ddata, de->d_name);
        size_t n;
        char *bytes = read_text(from, &n);
        FILE *f = bytes ? fopen(to, "wb") : NULL;
        ok = f && fwrite(bytes, 1, n, f) == n;
        if (f && fclose(f) != 0) ok = false;
        free(bytes);
        free(from);
        free(to);
    }
    if (dp) closedir(dp);
    free(ddata);
    free(sdata);
    return ok;
}

static bool contains(const char *s, const char *w) { return w == NULL || (s && strstr(s, w)); }

/* ---- 1. the dump msprobe wrote ---- */

static const fr_mp_entry *forward_of(const fr_mp_dump *d, const fr_mp_entry *e) {
    if (!e->backward) return NULL;
    char want[300];
    snprintf(want, sizeof want, "%.*s.forward", (int)(strlen(e->name) - strlen(".backward")), e->name);
    for (int k = 0; k < d->n; k++)
        if (!strcmp(d->e[k].name, want)) return &d->e[k];
    return NULL;
}

static void test_committed_entries(void) {
    fr_mp_dump d;
    fr_error err;
    fr_status st = fr_mp_open(FR_MSPROBE_DUMP, NULL, &d, &err);
    if (!CHECKED(st == FR_OK, "open: %s", err.msg)) return;
    CHECK(!strcmp(d.task, "tensor") && !strcmp(d.level, "L1") && !strcmp(d.framework, "pytorch"), "%s %s %s", d.task,
          d.level, d.framework);
    CHECK(d.n == 12 && d.others == 0 && d.datafd >= 0 && d.dirfd >= 0, "%d entries, %d others", d.n, d.others);
    int nbwd = 0;
    for (int k = 0; k < d.n; k++) {
        const fr_mp_entry *e = &d.e[k];
        nbwd += e->backward;
        CHECK(!strcmp(e->prefix, "NPU") && fr_npu_is_fa(e->prefix, e->api) && e->has_input && e->has_output, "%s",
              e->name);
        CHECK(e->backward ? e->nargs == 3 && e->nkwargs == 0 : e->nargs == 5 && e->nout == 7, "%s: %d args, %d out",
              e->name, e->nargs, e->nout);
    }
    CHECK(nbwd == 5, "%d backward entries", nbwd);
    /* the first call as make_dump.py made it: q, k, v, 4, "BSH", scale=8**-0.5 */
    const fr_mp_entry *e0 = &d.e[0];
    CHECK(!strcmp(e0->name, "NPU.npu_fusion_attention.0.forward") && e0->count == 0 && !e0->backward &&
          !strcmp(e0->api, "npu_fusion_attention"));
    if (e0->nargs == 5 && e0->nout == 7 && e0->nkwargs == 1) {
        const fr_mp_value *q = &e0->args[0];
        CHECK(q->kind == FR_MP_TENSOR && q->dtype == FR_F32 && q->ndim == 3 && q->shape[0] == 2 && q->shape[1] == 16 &&
              q->shape[2] == 32 && !q->npy && q->data_name &&
                    !strcmp(q->data_name, "NPU.npu_fusion_attention.0.forward.input.0.pt"));
        CHECK(e0->args[3].kind == FR_MP_INT && e0->args[3].i == 4 && e0->args[4].kind == FR_MP_STR &&
              !strcmp(e0->args[4].s, "BSH"));
        CHECK(!strcmp(e0->kwnames[0], "scale") && e0->kwargs[0].kind == FR_MP_FLOAT &&
              fabs(e0->kwargs[0].f - 0.3535533905932738) < 1e-15);
        /* the empty fourth output has no data; outputs 4, 5 are None; numels an int */
        CHECK(e0->out[3].kind == FR_MP_TENSOR && !e0->out[3].data_name && e0->out[3].ndim == 1 &&
              e0->out[3].shape[0] == 0);
        CHECK(e0->out[4].kind == FR_MP_NULL && e0->out[5].kind == FR_MP_NULL && e0->out[6].kind == FR_MP_INT &&
              e0->out[6].i == 2048);
        /* a tensor file checked against dump.json and read */
        int fd;
        fr_pt_info info;
        if (CHECKED(fr_mp_tensor_open(&d, q, "q", &fd, &info, &err) == FR_OK, "%s", err.msg)) {
            fr_tensor t;
            CHECK(info.dtype == FR_F32 && info.ndim == 3 && info.shape[2] == 32);
            if (CHECKED(fr_mp_tensor_read(fd, &info, &t, "q", &err) == FR_OK, "%s", err.msg)) {
                CHECK(t.data && isfinite(((float *)t.data)[0]));
                free(t.data);
            }
            close(fd);
        }
        CHECK(fr_mp_tensor_open(&d, &e0->out[3], "out3", &fd, &info, &err) == FR_E_FORMAT &&
              contains(err.msg, "records no data") && fd == -1, "%s", err.msg);
        CHECK(fr_mp_tensor_open(&d, &e0->args[3], "head_num", &fd, &info, &err) == FR_E_FORMAT &&
              contains(err.msg, "not a tensor"), "%s", err.msg);
    }
    /* every call rebuilt: the forward entries as their functions, the backward entries as the grad calls autograd
     * made */
    for (int k = 0; k < d.n; k++) {
        const fr_mp_entry *e = &d.e[k], *fwd = forward_of(&d, e);
        fr_npu_case nc;
        st = fr_npu_rebuild(&d, e, fwd, &nc, &err);
        if (!CHECKED(st == FR_OK, "%s: %s: %s", e->name, fr_status_name(st), err.msg)) continue;
        bool v2 = !strcmp(e->api, "npu_fusion_attention_v2");
        const char *want = e->backward ? (v2 ? "npu_fusion_attention_grad_v2" : "npu_fusion_attention_grad")
                                       : (v2 ? "npu_fusion_attention_v2" : "npu_fusion_attention");
        CHECK(!strcmp(nc.api, want) && nc.c.op == (e->backward ? FR_CASE_BWD : FR_CASE_FWD) && !nc.skip[0], "%s: %s %s",
              e->name, nc.api, nc.skip);
        CHECK(contains(nc.note, want) && (!e->backward || contains(nc.note, "autograd")), "%s: %s", e->name, nc.note);
        CHECK(nc.c.in.fwd.query.data && nc.c.in.fwd.key.data && nc.c.in.fwd.value.data, "%s", e->name);
        if (e->backward) {
            CHECK(nc.npu.bwd.dq.data && nc.npu.bwd.dk.data && nc.npu.bwd.dv.data && nc.c.in.dy.data &&
                  nc.c.in.attention_in.data && nc.c.in.softmax_max.data, "%s", e->name);
        } else {
            CHECK(nc.npu.fwd.attention_out.data && nc.npu.fwd.softmax_max.data && nc.npu.fwd.softmax_sum.data, "%s",
                  e->name);
        }
        /* what make_dump.py passed */
        const fr_params *p = &nc.c.params;
        if (e->count == 0 && !v2) CHECK(p->input_layout == FR_BSH && p->head_num == 4 && nc.c.dtype == FR_F32);
        if (e->count == 1 && !v2)
            CHECK(p->input_layout == FR_BNSD && p->pre_tokens == 5 && p->next_tokens == 1 && nc.c.dtype == FR_F16 &&
                  nc.c.in.fwd.atten_mask.data, "%s: %lld %lld", e->name, (long long)p->pre_tokens,
                  (long long)p->next_tokens);
        if (e->count == 2 && !v2)
            CHECK(p->input_layout == FR_TND && p->actual_seq_len == 2 && p->actual_seq_qlen[1] == 14 &&
                  p->actual_seq_kvlen[0] == 9 && p->softmax_layout == FR_SOFTMAX_SAME_AS_INPUT);
        if (e->count == 3 && !v2 && e->backward) CHECK(nc.npu.bwd.dsink.data && !nc.absent, "%s: absent %x", e->name,
                                                       nc.absent);
        if (e->count == 4) CHECK(p->sparse_mode == 1 && nc.c.dtype == FR_BF16);
        if (e->count == 5) CHECK(p->input_layout == FR_SBH && nc.c.in.fwd.real_shift.data);
        if (v2) CHECK(p->pse_type == 2 && p->input_layout == FR_BSND && fabs(p->scale_value - 0.25) < 1e-12);
        fr_npu_case_free(&nc);
    }
    /* a backward entry needs its forward */
    const fr_mp_entry *b0 = &d.e[1];
    fr_npu_case nc;
    CHECK(fr_npu_rebuild(&d, b0, NULL, &nc, &err) == FR_E_FORMAT && contains(err.msg, "forward entry"), "%s", err.msg);
    CHECK(fr_npu_rebuild(&d, b0, b0, &nc, &err) == FR_E_FORMAT && contains(err.msg, "forward entry"), "%s", err.msg);
    CHECK(fr_npu_rebuild(NULL, b0, NULL, &nc, &err) == FR_E_NULL);
    fr_mp_free(&d);
    CHECK(d.dirfd == -1 && d.datafd == -1 && d.n == 0);
    fr_mp_free(NULL);

    /* a want filter: MindSpeed's and other APIs are counted, not read */
    st = fr_mp_open(FR_MSPROBE_DUMP, fr_npu_is_fa, &d, &err);
    CHECK(st == FR_OK && d.n == 12 && d.others == 0, "%s", err.msg);
    fr_mp_free(&d);
    CHECK(fr_mp_open(g_tmp, NULL, &d, &err) == FR_E_IO && contains(err.msg, "dump.json: missing"), "%s", err.msg);
    char *nowhere = path_of(g_tmp, "nowhere");
    CHECK(fr_mp_open(nowhere, NULL, &d, &err) == FR_E_IO, "%s", err.msg);
    free(nowhere);
    CHECK(fr_mp_open(NULL, NULL, &d, &err) == FR_E_NULL);
    /* a dump.json past 1 GiB is refused before it is read (a sparse file: no disk used) */
    char *hdir = path_of(g_tmp, "huge"), *hj = path_of(hdir, "dump.json");
    int fd = mkdir(hdir, 0700) == 0 ? open(hj, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
    if (CHECKED(fd >= 0 && ftruncate(fd, FR_MP_JSON_MAX + 1) == 0, "%s", strerror(errno)))
        CHECK(fr_mp_open(hdir, NULL, &d, &err) == FR_E_FORMAT && contains(err.msg, "dump a narrower scope"), "%s",
              err.msg);
    if (fd >= 0) close(fd);
    unlink(hj);
    free(hj);
    free(hdir);
}

static int g_progress;
static void on_progress(void *ud, int done, int total, const fr_case_result *last) {
    (void)ud;
    g_progress++;
    CHECK(done == total && last && last->name[0]);
}

static const fr_case_result *result_named(const fr_suite_result *r, const char *name) {
    for (int k = 0; k < r->n; k++)
        if (!strcmp(r->cases[k].name, name)) return &r->cases[k];
    return NULL;
}

static void test_committed_verify(void) {
    fr_suite_opts o = fr_suite_opts_default();
    o.threads = 1;
    o.progress = on_progress;
    fr_suite_result r;
    fr_error err;
    int nd = -1, no = -1;
    g_progress = 0;
    fr_status st = fr_suite_verify_msprobe(FR_MSPROBE_DUMP, &o, NULL, &r, &nd, &no, &err);
    if (CHECKED(st == FR_OK, "%s", err.msg)) {
        CHECK(r.n == 12 && r.planned == 12 && nd == 1 && no == 0 && g_progress == 12, "%d cases, %d dumps", r.n, nd);
        CHECK(r.overall == FR_PASS && r.input_errors == 0, "overall %s", fr_verdict_name(r.overall));
        for (int k = 0; k < r.n; k++) {
            const fr_case_result *c = &r.cases[k];
            CHECK(c->j.verdict == FR_PASS, "%s: %s: %s", c->name, fr_verdict_name(c->j.verdict), c->j.why);
            CHECK(!strncmp(c->name, "NPU.npu_fusion_attention", 24) && c->bwd == !!strstr(c->name, ".backward") &&
                  c->cat == (c->bwd ? FR_CAT_GRADIENTS : FR_CAT_EQUIVALENCE), "%s", c->name);
        }
        const fr_case_result *c1 = result_named(&r, "NPU.npu_fusion_attention.1.forward"),
                             *c2 = result_named(&r, "NPU.npu_fusion_attention.2.backward");
        CHECK(c1 && (c1->tags & FR_TAG_MASK) && c1->S1 == 12, "mask tag");
        CHECK(c2 && (c2->tags & FR_TAG_VARLEN), "varlen tag");
        CHECK(!strcmp(r.cases[0].name, "NPU.npu_fusion_attention.0.forward") &&
              !strcmp(r.cases[11].name, "NPU.npu_fusion_attention_v2.0.backward"));
    }
    fr_suite_result_free(&r);

    /* --write: the rebuilt call as a case folder with the NPU's outputs beside it */
    o = fr_suite_opts_default();
    o.threads = 1;
    o.only = "NPU.npu_fusion_attention.3.backward";
    char *wdir = path_of(g_tmp, "written");
    st = fr_suite_verify_msprobe(FR_MSPROBE_DUMP, &o, wdir, &r, NULL, NULL, &err);
    CHECK(st == FR_OK && r.n == 1 && r.overall == FR_PASS, "%s", err.msg);
    char *cdir = path_of(wdir, o.only);
    CHECK(fr_test_file_contains(cdir, "case.json", "\"sink\""), "%s/case.json", cdir);
    fr_case c;
    if (CHECKED(fr_case_load(cdir, &c, &err) == FR_OK, "%s", err.msg)) {
        CHECK(c.op == FR_CASE_BWD && c.params.head_num == 2 && c.params.input_layout == FR_BNSD);
        fr_case_free(&c);
    }
    free(cdir);
    fr_suite_result_free(&r);
    /* a write that fails stops the run with its status */
    char *file = path_of(g_tmp, "a_file");
    CHECK(write_text(file, "x"));
    st = fr_suite_verify_msprobe(FR_MSPROBE_DUMP, &o, file, &r, NULL, NULL, &err);
    CHECK(st != FR_OK && contains(err.msg, "--write"), "%s: %s", fr_status_name(st), err.msg);
    fr_suite_result_free(&r);
    free(file);
    free(wdir);

    st = fr_suite_verify_msprobe("/nonexistent/msprobe/dump", NULL, NULL, &r, &nd, &no, &err);
    CHECK(st == FR_E_IO && nd == 0, "%s", err.msg);
}

/* A copy with three entries edited: a backward without dk (judged without it), a backward without dq (not judged),
 * a forward whose dump.json shape differs from its file (that call and its backward cannot be loaded). */
static void test_edited_copy(void) {
    char *sj = path_of(FR_MSPROBE_DUMP, "dump.json");
    char *text = read_text(sj, NULL);
    free(sj);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!CHECKED(root != NULL)) return;
    cJSON *data = cJSON_GetObjectItem(root, "data");
    cJSON *b3 = cJSON_GetObjectItem(cJSON_GetObjectItem(data, "NPU.npu_fusion_attention.3.backward"), "output");
    cJSON_ReplaceItemInArray(b3, 1, cJSON_CreateNull());
    cJSON *b1 = cJSON_GetObjectItem(cJSON_GetObjectItem(data, "NPU.npu_fusion_attention.1.backward"), "output");
    cJSON_ReplaceItemInArray(b1, 0, cJSON_CreateNull());
    cJSON *q0 = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(data, "NPU.npu_fusion_attention.0.forward"), "input_args"), 0);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(q0, "shape"), 2, cJSON_CreateNumber(33));
    /* the dropout call of a dump without its mask: keep_prob 0.5 on call 5, reported, not judged */
    cJSON *f5 = cJSON_GetObjectItem(cJSON_GetObjectItem(data, "NPU.npu_fusion_attention.5.forward"), "input_kwargs");
    cJSON *kp = cJSON_CreateObject();
    cJSON_AddStringToObject(kp, "type", "float");
    cJSON_AddNumberToObject(kp, "value", 0.5);
    cJSON_AddItemToObject(f5, "keep_prob", kp);
    /* an entry of another API (msprobe's "list" not narrowed) */
    cJSON *other = cJSON_CreateObject();
    cJSON_AddItemToObject(other, "input_args", cJSON_CreateArray());
    cJSON_AddItemToObject(data, "Tensor.add.0.forward", other);
    char *json = cJSON_Print(root);
    cJSON_Delete(root);
    char *dir = path_of(g_tmp, "edited");
    bool ok = CHECKED(json && copy_dump(dir, json));
    free(json);
    if (!ok) {
        free(dir);
        return;
    }
    fr_suite_opts o = fr_suite_opts_default();
    o.threads = 1;
    fr_suite_result r;
    fr_error err;
    int nd, no;
    fr_status st = fr_suite_verify_msprobe(dir, &o, NULL, &r, &nd, &no, &err);
    if (CHECKED(st == FR_OK, "%s", err.msg)) {
        CHECK(r.n == 12 && nd == 1 && no == 1 && r.overall == FR_FAIL && r.input_errors == 2, "%d %d %d %s %d", r.n,
              nd, no, fr_verdict_name(r.overall), r.input_errors);
        const fr_case_result *c;
        c = result_named(&r, "NPU.npu_fusion_attention.3.backward");
        CHECK(c && c->j.verdict == FR_PASS && contains(c->extra, "not judged: dk"), "%s", c ? c->extra : "");
        c = result_named(&r, "NPU.npu_fusion_attention.1.backward");
        CHECK(c && c->j.verdict == FR_SKIP && contains(c->j.why, "no dq"), "%s", c ? c->j.why : "");
        c = result_named(&r, "NPU.npu_fusion_attention.5.forward");
        CHECK(c && c->j.verdict == FR_SKIP && contains(c->j.why, "(seed, offset)") &&
              contains(c->j.why, "dropout_mask="), "%s", c ? c->j.why : "");
        for (int k = 0; k < 2; k++) {
            c = result_named(&r, k ? "NPU.npu_fusion_attention.0.backward" : "NPU.npu_fusion_attention.0.forward");
            CHECK(c && c->j.verdict == FR_FAIL && c->input_error && contains(c->j.why, "cannot load the call") &&
                  contains(c->j.why, "dump.json says"), "%s", c ? c->j.why : "");
        }
        c = result_named(&r, "NPU.npu_fusion_attention.4.forward");
        CHECK(c && c->j.verdict == FR_PASS);
    }
    fr_suite_result_free(&r);

    /* a tree of ranks: one dump (filtered to one call), a linked rank, a statistics dump, a broken dump.json */
    char *tree = path_of(g_tmp, "ranks"), *step = path_of(tree, "step0");
    char *r0 = path_of(step, "rank0"), *r1 = path_of(step, "rank1"), *r2 = path_of(step, "rank2"),
         *r3 = path_of(step, "rank3");
    ok = mkdir(tree, 0700) == 0 && mkdir(step, 0700) == 0 && copy_dump(r0, NULL) && symlink(dir, r1) == 0 &&
         mkdir(r2, 0700) == 0 && mkdir(r3, 0700) == 0;
    char *j2 = path_of(r2, "dump.json"), *j3 = path_of(r3, "dump.json");
    ok = ok && write_text(j2, "{\"task\": \"statistics\", \"data\": {\"NPU.npu_fusion_attention.0.forward\": {}}}") &&
         write_text(j3, "{\"task\": \"tensor\", \"data\": {");
    if (CHECKED(ok)) {
        o.filter = "npu_fusion_attention.4.forward";
        st = fr_suite_verify_msprobe(tree, &o, NULL, &r, &nd, &no, &err);
        if (CHECKED(st == FR_OK, "%s", err.msg)) {
            CHECK(nd == 4 && r.n == 4 && r.input_errors == 3 && r.overall == FR_FAIL, "%d dumps, %d results", nd, r.n);
            const fr_case_result *c = result_named(&r, "step0/rank0/NPU.npu_fusion_attention.4.forward");
            CHECK(c && c->j.verdict == FR_PASS);
            c = result_named(&r, "step0/rank1");
            CHECK(c && c->input_error && contains(c->j.why, "symbolic link"), "%s", c ? c->j.why : "");
            c = result_named(&r, "step0/rank2");
            CHECK(c && c->input_error && contains(c->j.why, "holds no tensors") && contains(c->j.why, "statistics"),
                  "%s", c ? c->j.why : "");
            c = result_named(&r, "step0/rank3");
            CHECK(c && c->input_error && contains(c->j.why, "not valid JSON"), "%s", c ? c->j.why : "");
        }
        fr_suite_result_free(&r);
    }
    free(j2);
    free(j3);
    free(r0);
    free(r1);
    free(r2);
    free(r3);
    free(step);
    free(tree);
    free(dir);
}

/* ---- 2. dump.json texts ---- */

#define TENSOR(dt, shape, name)                                                                                        \
    "{\"type\": \"torch.Tensor\", \"dtype\": \"torch." dt "\", \"shape\": [" shape "], \"data_name\": \"" name "\"}"
#define INT(v) "{\"type\": \"int\", \"value\": " #v "}"
#define FLT(v) "{\"type\": \"float\", \"value\": " #v "}"
#define STR(v) "{\"type\": \"str\", \"value\": \"" v "\"}"
#define BOOL(v) "{\"type\": \"bool\", \"value\": " #v "}"
#define DUMP(entries) "{\"task\": \"tensor\", \"level\": \"L1\", \"framework\": \"pytorch\", \"data\": {" entries "}}"
#define FA0 "\"NPU.npu_fusion_attention.0.forward\""

static bool want_fa_only(const char *prefix, const char *api) {
    return !strcmp(prefix, "NPU") && !strcmp(api, "npu_fusion_attention");
}

/* A dump.json whose one entry's input_args holds n nulls (nested: inside one list argument). */
static char *big_list(int n, int nested) {
    size_t cap = (size_t)n * 6 + 200, w;
    char *big = malloc(cap);
    if (!big) abort();
    w = (size_t)snprintf(big, cap, "{\"data\": {" FA0 ": {\"input_args\": [%s", nested ? "[" : "");
    for (int k = 0; k < n; k++) w += (size_t)snprintf(big + w, cap - w, "%snull", k ? "," : "");
    snprintf(big + w, cap - w, "%s]}}}", nested ? "]" : "");
    return big;
}

static void test_parse_valid(void) {
    static const char text[] = DUMP(
        FA0 ": {\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2, 3], "
        "\"Max\": NaN, \"Min\": -Infinity, \"Mean\": Infinity, \"Norm\": NaN, \"requires_grad\": true, \"data_name\": "
        "\"x.pt\"}, " INT(3) ", " FLT(0.5) ", " BOOL(true) ", " STR("NaN \\\" Infinity -Infinity") ", [" INT(1) ", ["
        INT(2) ", null]], {\"type\": \"slice\", \"value\": [1, 2]}, {\"a\": 1}, {\"type\": \"numpy.ndarray\", "
        "\"dtype\": \"float32\", \"shape\": [], \"data_name\": null}, null, {\"type\": \"torch.Tensor\", \"dtype\": "
        "\"torch.complex64\", \"shape\": [1]}, " INT(-7) ", " FLT(-Infinity) ", {\"type\": "
        "\"torch.nn.parameter.Parameter\", \"dtype\": \"torch.bfloat16\", \"shape\": [4], \"data_name\": \"w.pt\"}], "
        "\"input_kwargs\": {\"scale\": " INT(1) ", \"b\": " BOOL(false) "}, \"output\": [null], \"parameters\": {}, "
        "\"grad\": 1},"
        "\"NPU.npu_fusion_attention.0.backward\": {\"input\": [" TENSOR("float16", "1", "dy.pt") "], \"output\": []},"
        "\"NPU.npu_fusion_attention.1.forward\": {\"input\": [" INT(1) "], \"parameters\": null},"
        "\"Tensor.add.0.forward\": {\"input_args\": []},"
        "\"MindSpeed.npu_fusion_attention.0.forward\": {\"input_args\": []},"
        "\"npu_fusion_attention.0.forward\": {},"         /* no prefix */
        "\"NPU.npu_fusion_attention.forward\": {},"       /* no count */
        "\"NPU.npu_fusion_attention.0.sideways\": {},"    /* neither direction */
        "\"NPU.npu_fusion_attention.x1.forward\": {},"
        "\"NPU/../npu_fusion_attention.0.forward\": {},"  /* path characters */
        "\".NPU.npu_fusion_attention.0.forward\": {},"
        "\"NPU..npu_fusion_attention.0.forward\": {},"
        "\"NPU.npu_fusion_attention.123456789012.forward\": {}," /* a count of 12 digits */
        "\"NPU.npu_fusion_attention_0123456789012345678901234567890123456789012345678901234567890123.0.forward\": {},"
        "\"NPU_0123456789012345678901234567890123456789.npu_fusion_attention.0.forward\": {},"
        "\"\": {},"
        "\"NPU. npu_fusion_attention.0.forward\": {}");
    fr_mp_dump d;
    fr_error err;
    fr_status st = fr_mp_parse_json(text, strlen(text), NULL, &d, NULL, &err);
    if (!CHECKED(st == FR_OK, "%s", err.msg)) return;
    CHECK(d.n == 5 && d.others == 12 && d.dirfd == -1 && d.datafd == -1, "%d entries, %d others", d.n, d.others);
    CHECK(!strcmp(d.task, "tensor") && !strcmp(d.level, "L1") && !strcmp(d.framework, "pytorch"));
    if (d.n == 5) {
        const fr_mp_entry *e = &d.e[0];
        CHECK(e->nargs == 14 && e->nkwargs == 2 && e->nout == 1 && e->has_input && e->has_output, "%d %d %d", e->nargs,
              e->nkwargs, e->nout);
        if (e->nargs == 14) {
            const fr_mp_value *a = e->args;
            CHECK(a[0].kind == FR_MP_TENSOR && a[0].dtype == FR_F32 && a[0].ndim == 2 && a[0].shape[1] == 3 &&
                  !strcmp(a[0].data_name, "x.pt") && !strcmp(a[0].dtype_name, "torch.float32"));
            CHECK(a[1].kind == FR_MP_INT && a[1].i == 3 && a[1].f == 3.0);
            CHECK(a[2].kind == FR_MP_FLOAT && a[2].f == 0.5);
            CHECK(a[3].kind == FR_MP_BOOL && a[3].i == 1);
            CHECK(a[4].kind == FR_MP_STR && !strcmp(a[4].s, "NaN \" Infinity -Infinity"), "[%s]", a[4].s);
            CHECK(a[5].kind == FR_MP_LIST && a[5].n == 2 && a[5].items[0].kind == FR_MP_INT &&
                  a[5].items[1].kind == FR_MP_LIST && a[5].items[1].n == 2 && a[5].items[1].items[0].i == 2 &&
                  a[5].items[1].items[1].kind == FR_MP_NULL);
            CHECK(a[6].kind == FR_MP_OTHER && !strcmp(a[6].s, "slice"));
            CHECK(a[7].kind == FR_MP_OTHER && !strcmp(a[7].s, "dict"));
            CHECK(a[8].kind == FR_MP_TENSOR && a[8].npy && a[8].dtype == FR_F32 && a[8].ndim == 0 && !a[8].data_name);
            CHECK(a[9].kind == FR_MP_NULL);
            CHECK(a[10].kind == FR_MP_TENSOR && a[10].dtype == FR_DT_NONE && !strcmp(a[10].dtype_name,
                  "torch.complex64") && !a[10].data_name);
            CHECK(a[11].kind == FR_MP_INT && a[11].i == -7);
            CHECK(a[12].kind == FR_MP_FLOAT && isinf(a[12].f) && a[12].f < 0);
            CHECK(a[13].kind == FR_MP_TENSOR && a[13].dtype == FR_BF16 && !a[13].npy &&
                  !strcmp(a[13].data_name, "w.pt"));
            CHECK(!strcmp(e->kwnames[0], "scale") && e->kwargs[0].kind == FR_MP_INT &&
                  e->kwargs[1].kind == FR_MP_BOOL &&
                  e->kwargs[1].i == 0);
            CHECK(e->out[0].kind == FR_MP_NULL);
        }
        const fr_mp_entry *b = &d.e[1];
        CHECK(b->backward && b->nargs == 1 && b->args[0].dtype == FR_F16 && b->nout == 0 && b->has_output);
        /* "input" is a backward's key only */
        const fr_mp_entry *f1 = &d.e[2];
        CHECK(!f1->backward && f1->count == 1 && !f1->has_input && !f1->has_output && f1->nargs == 0);
        CHECK(!strcmp(d.e[3].prefix, "Tensor") && !strcmp(d.e[3].api, "add") && !fr_npu_is_fa("Tensor", "add"));
        CHECK(!strcmp(d.e[4].prefix, "MindSpeed") && fr_npu_is_fa("MindSpeed", d.e[4].api) &&
              !fr_npu_is_fa("MindSpeed", "npu_fusion_attention_grad"));
    }
    fr_mp_free(&d);
    /* want: only NPU's npu_fusion_attention */
    st = fr_mp_parse_json(text, strlen(text), want_fa_only, &d, "w", &err);
    CHECK(st == FR_OK && d.n == 3 && d.others == 14, "%d %d", d.n, d.others);
    fr_mp_free(&d);
    /* len bounds the text: the same text cut inside "data" is not JSON */
    st = fr_mp_parse_json(text, 60, NULL, &d, "cut", &err);
    CHECK(st == FR_E_FORMAT && contains(err.msg, "cut: not valid JSON"), "%s", err.msg);
    /* an empty data object, keys of the wrong types ignored */
    static const char empty[] = "{\"task\": 1, \"level\": null, \"data\": {}}";
    st = fr_mp_parse_json(empty, strlen(empty), NULL, &d, NULL, &err);
    CHECK(st == FR_OK && d.n == 0 && d.others == 0 && !d.task[0] && !d.e);
    fr_mp_free(&d);
    CHECK(fr_mp_parse_json(NULL, 0, NULL, &d, NULL, &err) == FR_E_FORMAT && contains(err.msg, "dump.json: not valid"),
          "%s", err.msg);
    CHECK(fr_mp_parse_json(NULL, 5, NULL, &d, NULL, &err) == FR_E_NULL);
    CHECK(fr_mp_parse_json(empty, strlen(empty), NULL, NULL, NULL, &err) == FR_E_NULL);

    /* lists nested 8 deep (the limit) */
    static const char deep[] = DUMP(FA0 ": {\"input_args\": [[[[[[[[[" INT(8) "]]]]]]]]]}");
    st = fr_mp_parse_json(deep, strlen(deep), NULL, &d, NULL, &err);
    if (CHECKED(st == FR_OK && d.n == 1, "%s", err.msg)) {
        const fr_mp_value *v = &d.e[0].args[0];
        int depth = 1;
        while (v->kind == FR_MP_LIST && v->n == 1) v = &v->items[0], depth++;
        CHECK(depth == 9 && v->kind == FR_MP_INT && v->i == 8, "%d", depth);
    }
    fr_mp_free(&d);
    /* lists at the limit of 65536 items and one past it, nested and at the top */
    for (int extra = 0; extra < 2; extra++) {
        for (int nested = 0; nested < 2; nested++) {
            int n = 65536 + extra;
            char *big = big_list(n, nested);
            st = fr_mp_parse_json(big, strlen(big), NULL, &d, NULL, &err);
            if (extra)
                CHECK(st == FR_E_FORMAT &&
                      contains(err.msg, nested ? "a list of 65537 items" : "input_args: 65537 items"),
                      "%s", err.msg);
            else
                CHECK(st == FR_OK && d.n == 1 && (nested ? d.e[0].args[0].n : d.e[0].nargs) == n, "%s", err.msg);
            fr_mp_free(&d);
            free(big);
        }
    }
}

typedef struct bad_text {
    const char *text;
    fr_status st;
    const char *word;
} bad_text;

static void test_parse_malformed(void) {
    static const bad_text bad[] = {
        {"{\"data\": {", FR_E_FORMAT, "not valid JSON (near byte"},
        {"{\"data\": {}} trailing", FR_E_FORMAT, "not valid JSON"},
        {"[1, 2]", FR_E_FORMAT, "an array, expected an object with \"data\""},
        {"\"data\"", FR_E_FORMAT, "a string, expected an object"},
        {"NaN", FR_E_FORMAT, "null, expected an object"},
        {"{}", FR_E_FORMAT, "\"data\" is missing"},
        {"{\"data\": [1]}", FR_E_FORMAT, "\"data\" is an array"},
        {"{\"data\": Infinity}", FR_E_FORMAT, "\"data\" is a number"},
        {DUMP(FA0 ": [1]"), FR_E_FORMAT, "data.NPU.npu_fusion_attention.0.forward: an array, expected an object"},
        {DUMP(FA0 ": true"), FR_E_FORMAT, "a bool, expected an object"},
        {DUMP(FA0 ": {}, " FA0 ": {}"), FR_E_FORMAT, "listed twice"},
        {DUMP(FA0 ": {\"input_args\": {}}"), FR_E_FORMAT, "input_args: an object, expected a list"},
        {DUMP(FA0 ": {\"output\": 3}"), FR_E_FORMAT, "output: a number, expected a list"},
        {DUMP(FA0 ": {\"input_args\": [1]}"), FR_E_FORMAT, "input_args[0]: a number where a recorded value belongs"},
        {DUMP(FA0 ": {\"input_args\": [null, \"x\"]}"), FR_E_FORMAT, "input_args[1]: a string where"},
        {DUMP(FA0 ": {\"input_args\": [[[true]]]}"), FR_E_FORMAT, "a bool where"},
        {DUMP(FA0 ": {\"input_kwargs\": []}"), FR_E_FORMAT, "input_kwargs: an array, expected an object"},
        {DUMP(FA0 ": {\"input_kwargs\": {\"a\": " INT(1) "}, \"input_kwargs\": {}}"), FR_E_FORMAT,
         "repeated or too large"},
        {DUMP(FA0 ": {\"input_kwargs\": {\"a\": " INT(1) ", \"a\": " INT(2) "}}"), FR_E_FORMAT, "\"a\" given twice"},
        {DUMP(FA0 ": {\"input_kwargs\": {\"scale\": 2}}"), FR_E_FORMAT, "input_kwargs.scale: a number where"},
        {DUMP(FA0 ": {\"input_args\": [" INT(1) "], \"input_args\": [" INT(2) "]}"), FR_E_FORMAT, "two input lists"},
        {DUMP(FA0 ": {\"output\": [], \"output\": []}"), FR_E_FORMAT, "two output lists"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"torch.Tensor\", \"shape\": [1]}]}"), FR_E_FORMAT,
         "a tensor without a string \"dtype\" and a \"shape\" list"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": 3}]}"),
         FR_E_FORMAT, "without a string \"dtype\""},
        {DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "-1", "a.pt") "]}"), FR_E_FORMAT, "shape is not a list"},
        {DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "1.5", "a.pt") "]}"), FR_E_FORMAT, "sizes >= 0"},
        {DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "\"2\"", "a.pt") "]}"), FR_E_FORMAT, "shape is not"},
        {DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "1e300", "a.pt") "]}"), FR_E_FORMAT, "shape is not"},
        {DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "1,1,1,1,1,1,1,1,1", "a.pt") "]}"), FR_E_FORMAT,
         "shape is not a list of at most"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [], "
              "\"data_name\": 5}]}"), FR_E_FORMAT, "data_name is a number, not a file name"},
        {DUMP(FA0 ": {\"input_args\": [[[[[[[[[[null]]]]]]]]]]}"), FR_E_FORMAT, "lists nested deeper than 8"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"int\", \"value\": 1.5}]}"), FR_E_FORMAT,
         "an int whose value is a number"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"int\", \"value\": 1e20}]}"), FR_E_FORMAT, "an int whose value"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"int\"}]}"), FR_E_FORMAT, "an int whose value is missing"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"float\", \"value\": \"1\"}]}"), FR_E_FORMAT,
         "a float whose value is a string"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"float\"}]}"), FR_E_FORMAT, "a float whose value is missing"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"bool\", \"value\": 1}]}"), FR_E_FORMAT,
         "a bool whose value is a number"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"bool\"}]}"), FR_E_FORMAT, "a bool whose value is missing"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"str\", \"value\": null}]}"), FR_E_FORMAT,
         "a str whose value is null"},
        {DUMP(FA0 ": {\"input_args\": [{\"type\": \"str\"}]}"), FR_E_FORMAT, "a str whose value is missing"},
        {DUMP(FA0 ": {\"output\": [" INT(1) ", [" INT(2) ", {\"type\": \"int\", \"value\": []}]]}"), FR_E_FORMAT,
         "output[1]: an int whose value is an array"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fr_mp_dump d;
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_status st = fr_mp_parse_json(bad[k].text, strlen(bad[k].text), NULL, &d, "t.json", &err);
        CHECK(st == bad[k].st && contains(err.msg, bad[k].word) && !strncmp(err.msg, "t.json: ", 8),
              "text %zu: %s (want %s): %s", k, fr_status_name(st), fr_status_name(bad[k].st), err.msg);
        CHECK(d.n == 0 && d.e == NULL && d.dirfd == -1, "text %zu: not left empty", k);
        fr_mp_free(&d);
    }
    /* data_name: parsed as written, refused as a path when the tensor is opened */
    static const char *const names[] = {"../x.pt", "a/b.pt", "a\\\\b.pt", "..", ".", "", "a\\u0001b.pt", "a\\nb.pt",
                                        "x\\u007f.pt"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char text[400];
        snprintf(text, sizeof text, DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "1", "%s") "]}"), names[k]);
        fr_mp_dump d;
        fr_error err;
        fr_status st = fr_mp_parse_json(text, strlen(text), NULL, &d, NULL, &err);
        if (!CHECKED(st == FR_OK && d.n == 1, "name %zu: %s", k, err.msg)) continue;
        int fd = 7;
        fr_pt_info info;
        st = fr_mp_tensor_open(&d, &d.e[0].args[0], "arg", &fd, &info, &err);
        CHECK(st == FR_E_FORMAT && contains(err.msg, "is not a plain file name") && fd == -1, "name %zu: %s", k,
              err.msg);
        fr_mp_free(&d);
    }
    /* a plain name, but a dump parsed from text has no dump_tensor_data */
    static const char plain[] = DUMP(FA0 ": {\"input_args\": [" TENSOR("float32", "1", "q.pt") "]}");
    fr_mp_dump d;
    fr_error err;
    if (CHECKED(fr_mp_parse_json(plain, strlen(plain), NULL, &d, NULL, &err) == FR_OK)) {
        int fd;
        fr_pt_info info;
        CHECK(fr_mp_tensor_open(&d, &d.e[0].args[0], "q", &fd, &info, &err) == FR_E_IO &&
              contains(err.msg, "no dump_tensor_data"), "%s", err.msg);
        fr_mp_free(&d);
    }
}

/* ---- 3. finding the dumps ---- */

static void touch_json(const char *dir) {
    char *p = path_of(dir, "dump.json");
    CHECK(write_text(p, "{\"data\": {}}"));
    free(p);
}

static void test_find(void) {
    char *root = path_of(g_tmp, "find");
    char *s0 = path_of(root, "step0"), *s1 = path_of(root, "step1");
    char *r0 = path_of(s0, "rank0"), *r1 = path_of(s0, "rank1"), *r10 = path_of(s0, "rank10"),
         *hidden = path_of(s0, ".rank2"), *lk = path_of(s0, "rank3"), *empty = path_of(s1, "rank0");
    bool ok = mkdir(root, 0700) == 0 && mkdir(s0, 0700) == 0 && mkdir(s1, 0700) == 0 && mkdir(r1, 0700) == 0 &&
              mkdir(r0, 0700) == 0 && mkdir(r10, 0700) == 0 && mkdir(hidden, 0700) == 0 && mkdir(empty, 0700) == 0;
    if (!CHECKED(ok, "tree: %s", strerror(errno))) goto out;
    char **dirs;
    int n;
    fr_error err;
    /* no dump.json anywhere: format error naming the layout */
    CHECK(fr_mp_find(root, &dirs, &n, &err) == FR_E_FORMAT && contains(err.msg, "no dump.json") && !dirs && n == 0,
          "%s", err.msg);
    CHECK(symlink(r0, lk) == 0);
    touch_json(r0);
    touch_json(r1);
    touch_json(hidden);
    char *f = path_of(s0, "notes.txt");
    CHECK(write_text(f, "not a dump"));
    free(f);
    fr_status st = fr_mp_find(root, &dirs, &n, &err);
    if (CHECKED(st == FR_OK && n == 3, "%s: %d found", err.msg, n)) {
        CHECK(!strcmp(dirs[0], r0) && !strcmp(dirs[1], r1) && !strcmp(dirs[2], lk), "%s %s %s", dirs[0], dirs[1],
              dirs[2]);
        CHECK(!fr_mp_found_link(root, dirs[0]) && !fr_mp_found_link(root, dirs[1]) && fr_mp_found_link(root, dirs[2]));
    }
    for (int k = 0; k < n; k++) free(dirs[k]);
    free(dirs);
    /* a rank directly below root */
    st = fr_mp_find(s0, &dirs, &n, &err);
    CHECK(st == FR_OK && n == 3 && !strcmp(dirs[0], r0) && fr_mp_found_link(s0, dirs[2]), "%s", err.msg);
    for (int k = 0; k < n; k++) free(dirs[k]);
    free(dirs);
    /* root holding dump.json: root itself, never a link even when root is one */
    st = fr_mp_find(r1, &dirs, &n, &err);
    CHECK(st == FR_OK && n == 1 && !strcmp(dirs[0], r1) && !fr_mp_found_link(r1, dirs[0]), "%s", err.msg);
    for (int k = 0; k < n; k++) free(dirs[k]);
    free(dirs);
    st = fr_mp_find(lk, &dirs, &n, &err);
    CHECK(st == FR_OK && n == 1 && !fr_mp_found_link(lk, dirs[0]), "%s", err.msg);
    for (int k = 0; k < n; k++) free(dirs[k]);
    free(dirs);
    /* a root that does not exist, or is a file */
    char *none = path_of(root, "none");
    CHECK(fr_mp_find(none, &dirs, &n, &err) == FR_E_IO && contains(err.msg, "none"), "%s", err.msg);
    free(none);
    char *file = path_of(r0, "dump.json");
    CHECK(fr_mp_find(file, &dirs, &n, &err) == FR_E_IO, "%s", err.msg);
    CHECK(fr_mp_find(NULL, &dirs, &n, &err) == FR_E_NULL);
    /* dump.json that is a directory, or a link: found, refused by fr_mp_open */
    char *jd = path_of(empty, "dump.json");
    CHECK(mkdir(jd, 0700) == 0);
    fr_mp_dump d;
    CHECK(fr_mp_open(empty, NULL, &d, &err) == FR_E_IO && contains(err.msg, "not a regular file"), "%s", err.msg);
    rmdir(jd);
    CHECK(symlink(file, jd) == 0);
    CHECK(fr_mp_open(empty, NULL, &d, &err) == FR_E_FORMAT && contains(err.msg, "symbolic link"), "%s", err.msg);
    /* dump_tensor_data that is a file or a link */
    char *td = path_of(r1, "dump_tensor_data");
    CHECK(write_text(td, "x"));
    CHECK(fr_mp_open(r1, NULL, &d, &err) == FR_E_FORMAT && contains(err.msg, "not a directory"), "%s", err.msg);
    unlink(td);
    CHECK(symlink(r0, td) == 0);
    CHECK(fr_mp_open(r1, NULL, &d, &err) == FR_E_FORMAT && contains(err.msg, "symbolic link"), "%s", err.msg);
    free(td);
    free(jd);
    free(file);
out:
    free(r0);
    free(r1);
    free(r10);
    free(hidden);
    free(lk);
    free(empty);
    free(s0);
    free(s1);
    free(root);
}

/* ---- 4. calls rebuilt from hand-written entries over .npy files ---- */

static char *g_dump; /* the hand-written dump's folder */

static void npy(const char *name, fr_dtype dt, int ndim, const int64_t *shape, const void *values) {
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    size_t es = fr_dtype_size(dt);
    unsigned char *buf = calloc((size_t)n + 1, es);
    if (values) memcpy(buf, values, (size_t)n * es);
    else if (dt == FR_F32)
        for (int64_t k = 0; k < n; k++) ((float *)buf)[k] = (float)((k * 37 % 17) - 8) / 8.0f;
    fr_tensor t = fr_tensor_make(dt, buf, ndim, shape);
    char *dir = path_of(g_dump, "dump_tensor_data"), *p = path_of(dir, name);
    fr_error err;
    CHECK(fr_npy_write_file(p, &t, 0, &err) == FR_OK, "%s: %s", name, err.msg);
    free(p);
    free(dir);
    free(buf);
}

static bool make_npy_dump(void) {
    g_dump = path_of(g_tmp, "hand");
    char *data = path_of(g_dump, "dump_tensor_data");
    bool ok = mkdir(g_dump, 0700) == 0 && mkdir(data, 0700) == 0;
    if (ok) {
        const int64_t bnsd[4] = {1, 2, 4, 8}, m4[4] = {1, 2, 4, 4}, m2[2] = {4, 4}, tnd_q[3] = {6, 2, 8},
                      tnd_k[3] = {8, 2, 8}, two[1] = {2}, three[1] = {3}, drop[1] = {48}, dshort[1] = {2};
        static const char *const f32[] = {"q", "k", "v", "o", "smax", "ssum", "dy", "dq", "dk", "dv", "qr", "kr"};
        for (size_t k = 0; k < sizeof f32 / sizeof f32[0]; k++) {
            char n[32];
            snprintf(n, sizeof n, "%s.npy", f32[k]);
            npy(n, FR_F32, 4, bnsd, NULL);
        }
        npy("qi.npy", FR_I64, 4, bnsd, NULL);
        const int64_t bsh[3] = {1, 4, 16}, sbh[3] = {4, 1, 16}, bsnd[4] = {1, 4, 2, 8};
        npy("bsh.npy", FR_F32, 3, bsh, NULL);
        npy("sbh.npy", FR_F32, 3, sbh, NULL);
        npy("bsnd.npy", FR_F32, 4, bsnd, NULL);
        unsigned char mk[32] = {0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1};
        npy("mask.npy", FR_BOOL, 4, m4, mk);
        npy("mask2.npy", FR_BOOL, 2, m2, mk);
        unsigned char ones[48];
        memset(ones, 0xff, sizeof ones);
        npy("drop.npy", FR_U8, 1, drop, ones);
        npy("dshort.npy", FR_U8, 1, dshort, ones);
        static const char *const tq[] = {"tq", "to", "tsmax", "tssum", "tdy", "tdq"};
        for (size_t k = 0; k < sizeof tq / sizeof tq[0]; k++) {
            char n[32];
            snprintf(n, sizeof n, "%s.npy", tq[k]);
            npy(n, FR_F32, 3, tnd_q, NULL);
        }
        npy("tk.npy", FR_F32, 3, tnd_k, NULL);
        npy("tv.npy", FR_F32, 3, tnd_k, NULL);
        npy("tdk.npy", FR_F32, 3, tnd_k, NULL);
        npy("tdv.npy", FR_F32, 3, tnd_k, NULL);
        int64_t sq[2] = {2, 6}, skv[2] = {3, 8}, s3[3] = {1, 2, 6};
        int32_t sq32[2] = {2, 6};
        npy("sq.npy", FR_I64, 1, two, sq);
        npy("skv.npy", FR_I64, 1, two, skv);
        npy("sq32.npy", FR_I32, 1, two, sq32);
        npy("s3.npy", FR_I64, 1, three, s3);
        npy("sqf.npy", FR_F32, 1, two, NULL);
        npy("sink.npy", FR_F32, 1, two, NULL);
        char *q = path_of(data, "q.npy"), *lk = path_of(data, "link.npy"), *fifo = path_of(data, "fifo.npy"),
             *sub = path_of(data, "sub.npy");
        ok = symlink(q, lk) == 0 && mkfifo(fifo, 0600) == 0 && mkdir(sub, 0700) == 0;
        free(q);
        free(lk);
        free(fifo);
        free(sub);
    }
    free(data);
    return ok;
}

#define QT(name) TENSOR("float32", "1, 2, 4, 8", name)
#define QKV QT("q.npy") ", " QT("k.npy") ", " QT("v.npy")
#define FWD_OUT "\"output\": [" QT("o.npy") ", " QT("smax.npy") ", " QT("ssum.npy") ", null, null, null, " INT(256) "]"
#define FWD(args, kwargs) "{\"input_args\": [" args "], \"input_kwargs\": {" kwargs "}, " FWD_OUT "}"
#define FA(kwargs) FWD(QKV ", " INT(2) ", " STR("BNSD"), kwargs)
#define WITH_Q(q) FWD(q ", " QT("k.npy") ", " QT("v.npy") ", " INT(2) ", " STR("BNSD"), "") /* another query */
#define GRAD_KW                                                                                                        \
    "\"softmax_max\": " QT("smax.npy") ", \"softmax_sum\": " QT("ssum.npy") ", \"attention_in\": " QT("o.npy")
#define GRAD(kwargs, outs)                                                                                             \
    "{\"input_args\": [" QKV ", " QT("dy.npy") ", " INT(2) ", " STR("BNSD") "], \"input_kwargs\": {" GRAD_KW kwargs  \
    "}, \"output\": [" QT("dq.npy") ", " QT("dk.npy") ", " QT("dv.npy") outs "]}"
#define BWD "{\"input\": [" QT("dy.npy") ", null, null], \"output\": [" QT("dq.npy") ", " QT("dk.npy") ", " \
    QT("dv.npy") "]}"
#define TNDQ TENSOR("float32", "6, 2, 8", "tq.npy") ", " TENSOR("float32", "8, 2, 8", "tk.npy") ", " \
    TENSOR("float32", "8, 2, 8", "tv.npy")
#define TND_OUT(st)                                                                                                    \
    "\"output\": [" TENSOR("float32", "6, 2, 8", "to.npy") ", " TENSOR("float32", st, "tsmax.npy") ", "              \
    TENSOR("float32", st, "tssum.npy") "]"
/* query, key and value all the same file of another layout */
#define LAY3(shape, f) TENSOR("float32", shape, f) ", " TENSOR("float32", shape, f) ", " TENSOR("float32", shape, f)
#define SEQ "\"actual_seq_qlen\": [" INT(2) ", " INT(6) "], \"actual_seq_kvlen\": [" INT(3) ", " INT(8) "]"

typedef struct rb_case {
    const char *what;
    const char *api;    /* NPU.<api>.0 (prefix "MindSpeed." when it starts so) */
    const char *fwd;    /* the forward entry's body (NULL: none in the dump) */
    const char *bwd;    /* non-NULL: the backward entry's body, which is rebuilt (with the forward) */
    fr_status st;
    const char *word;   /* in the message (an error) or in skip (FR_OK); NULL: FR_OK and judged */
    void (*check)(const char *what, const fr_npu_case *nc);
} rb_case;

static void ck_default(const char *w, const fr_npu_case *nc) {
    const fr_params *p = &nc->c.params;
    CHECK(p->head_num == 2 && p->input_layout == FR_BNSD && p->scale_value == 1.0 && p->keep_prob == 1.0 &&
          p->pre_tokens == 2147483647 && p->next_tokens == 2147483647 && p->sparse_mode == 0 && p->pse_type == 1 &&
          !fr_tensor_present(&nc->c.in.fwd.drop_mask) && nc->c.dtype == FR_F32, "%s", w);
    const float *o = nc->npu.fwd.attention_out.data;
    CHECK(o && o[1] == (float)((37 % 17) - 8) / 8.0f, "%s: the output's data", w);
}
static void ck_kp0(const char *w, const fr_npu_case *nc) {
    const fr_tensor *m = &nc->c.in.fwd.drop_mask;
    CHECK(nc->c.params.keep_prob == 1e-12 && m->dtype == FR_U8 && m->ndim == 1 && m->shape[0] == 48 && m->data &&
          ((unsigned char *)m->data)[0] == 0, "%s", w);
}
static void ck_kp0_tnd(const char *w, const fr_npu_case *nc) {
    /* N1 * (2 * 3 + 4 * 5) = 52 bits: (52 + 127) / 128 * 128 / 8 + 32 bytes */
    const fr_tensor *m = &nc->c.in.fwd.drop_mask;
    CHECK(m->dtype == FR_U8 && m->shape[0] == 48 && m->data, "%s: %lld", w, (long long)m->shape[0]);
}
static void ck_kp0_grad(const char *w, const fr_npu_case *nc) {
    const fr_tensor *m = &nc->c.in.fwd.drop_mask;
    /* numels 4096 given: (4096 + 127) / 128 * 128 / 8 + 32 bytes */
    CHECK(nc->c.op == FR_CASE_BWD && m->dtype == FR_U8 && m->shape[0] == 4096 / 8 + 32 && m->data, "%s: %lld", w,
          (long long)m->shape[0]);
}
static void ck_mask(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.params.keep_prob == 0.5 && nc->c.in.fwd.drop_mask.shape[0] == 48 &&
          ((unsigned char *)nc->c.in.fwd.drop_mask.data)[3] == 0xff, "%s", w);
}
static void ck_v1_band(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.params.pre_tokens == 2 && nc->c.params.next_tokens == 0 && nc->c.params.scale_value == 1.0, "%s", w);
}
static void ck_v2(const char *w, const fr_npu_case *nc) {
    const fr_params *p = &nc->c.params;
    CHECK(p->pre_tokens == 1 && p->next_tokens == 0 && p->q_start_idx == 1 && p->kv_start_idx == 2 &&
          p->pse_type == 1 && !strcmp(nc->api, "npu_fusion_attention_v2"), "%s: %s", w, nc->api);
}
static void ck_grad(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.op == FR_CASE_BWD && nc->c.params.scale_value == 0.5 && nc->c.in.dy.data &&
          nc->c.in.softmax_max.data && nc->npu.bwd.dq.data && nc->npu.bwd.dv.data && !nc->absent &&
          !strcmp(nc->api, "npu_fusion_attention_grad"), "%s: %s", w, nc->api);
}
static void ck_grad_v2(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.op == FR_CASE_BWD && nc->c.params.pre_tokens == 3 && !strcmp(nc->api, "npu_fusion_attention_grad_v2"),
          "%s", w);
}
static void ck_sparse1(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.params.sparse_mode == 1 && nc->c.in.fwd.atten_mask.dtype == FR_BOOL &&
          nc->c.in.fwd.atten_mask.data, "%s",
          w);
}
static void ck_tnd(const char *w, const fr_npu_case *nc) {
    const fr_params *p = &nc->c.params;
    const fr_tensor *s = &nc->npu.fwd.softmax_max;
    /* the NPU's [T, N1, 8] statistics are [N1, T, 8] in memory: relabelled */
    CHECK(p->input_layout == FR_TND && p->actual_seq_len == 2 && p->actual_seq_qlen[0] == 2 &&
          p->actual_seq_kvlen[1] == 8 && p->softmax_layout == FR_SOFTMAX_DEFAULT && s->shape[0] == 2 &&
          s->shape[1] == 6 && s->shape[2] == 8, "%s: [%lld, %lld, %lld]", w, (long long)s->shape[0],
          (long long)s->shape[1], (long long)s->shape[2]);
}
static void ck_tnd_same(const char *w, const fr_npu_case *nc) {
    const fr_tensor *s = &nc->npu.fwd.softmax_max;
    CHECK(nc->c.params.softmax_layout == FR_SOFTMAX_SAME_AS_INPUT && s->shape[0] == 6 && s->shape[1] == 2, "%s", w);
}
static void ck_v3(const char *w, const fr_npu_case *nc) {
    const fr_params *p = &nc->c.params;
    CHECK(p->actual_seq_len == 2 && p->actual_seq_qlen[1] == 6 && p->actual_seq_kvlen[0] == 3 &&
          !strcmp(nc->api, "npu_fusion_attention_v3"), "%s", w);
}
static void ck_mindspeed(const char *w, const fr_npu_case *nc) {
    CHECK(nc->c.params.pre_tokens == 3 && !strcmp(nc->api, "npu_fusion_attention_v2"), "%s: %s", w, nc->api);
}
static void ck_dk_absent(const char *w, const fr_npu_case *nc) {
    CHECK(nc->absent == (1u << FR_CO_DK) && nc->npu.bwd.dq.data && !nc->npu.bwd.dk.data, "%s: %x", w, nc->absent);
}
static void ck_rope(const char *w, const fr_npu_case *nc) {
    CHECK(fr_tensor_present(&nc->c.in.fwd.query_rope) && nc->npu.bwd.dq_rope.data && nc->npu.bwd.dk_rope.data &&
          nc->npu.bwd.dsink.data, "%s: absent %x", w, nc->absent);
}

static const rb_case rb_cases[] = {
    /* binding, as torch's argument parser binds */
    {"defaults", "npu_fusion_attention", FA(""), NULL, FR_OK, NULL, ck_default},
    {"layout case-insensitive", "npu_fusion_attention", FWD(QKV ", " INT(2) ", " STR("bnsd"), ""), NULL, FR_OK, NULL,
     ck_default},
    {"keywords for positionals", "npu_fusion_attention",
     FWD(QKV, "\"head_num\": " INT(2) ", \"input_layout\": " STR("BNSD") ", \"scale\": " INT(1)), NULL, FR_OK, NULL,
     ck_default},
    {"None for optional", "npu_fusion_attention", FA("\"pse\": null, \"atten_mask\": null, \"prefix\": null"), NULL,
     FR_OK, NULL, ck_default},
    {"head_num a str", "npu_fusion_attention", FWD(QKV ", " STR("2") ", " STR("BNSD"), ""), NULL, FR_E_FORMAT,
     "argument 'head_num' (position 4) must be int, not str", NULL},
    {"head_num None", "npu_fusion_attention", FWD(QKV ", null, " STR("BNSD"), ""), NULL, FR_E_FORMAT,
     "must be int, not None", NULL},
    {"layout a slice", "npu_fusion_attention", FWD(QKV ", " INT(2) ", {\"type\": \"slice\"}", ""), NULL, FR_E_FORMAT,
     "must be str, not slice", NULL},
    {"scale a bool", "npu_fusion_attention", FA("\"scale\": " BOOL(true)), NULL, FR_E_FORMAT,
     "must be float, not bool", NULL},
    {"sync an int", "npu_fusion_attention", FA("\"sync\": " INT(1)), NULL, FR_E_FORMAT, "must be bool, not int", NULL},
    {"query an int", "npu_fusion_attention", FWD(INT(1) ", " QT("k.npy") ", " QT("v.npy") ", " INT(2) ", " STR("BNSD"),
                                                 ""), NULL, FR_E_FORMAT, "must be Tensor, not int", NULL},
    {"seq a float list", "npu_fusion_attention", FA("\"actual_seq_qlen\": [" FLT(1.5) "]"), NULL, FR_E_FORMAT,
     "must be int[], not list", NULL},
    {"seq an int", "npu_fusion_attention", FA("\"actual_seq_qlen\": " INT(1)), NULL, FR_E_FORMAT,
     "must be int[]", NULL},
    {"missing input_layout", "npu_fusion_attention", FWD(QKV ", " INT(2), ""), NULL, FR_E_FORMAT,
     "missing required argument 'input_layout' (pos 5)", NULL},
    {"unknown keyword", "npu_fusion_attention", FA("\"dropout\": " FLT(0.1)), NULL, FR_E_FORMAT,
     "got an unexpected keyword argument 'dropout'", NULL},
    {"twice", "npu_fusion_attention", FA("\"head_num\": " INT(2)), NULL, FR_E_FORMAT,
     "got multiple values for argument 'head_num'", NULL},
    {"too many positionals", "npu_fusion_attention_grad",
     "{\"input_args\": [" QKV ", " QT("dy.npy") ", " INT(2) ", " STR("BNSD") ", null]}", NULL, FR_E_FORMAT,
     "takes 6 positional arguments but the dump records 7", NULL},
    {"no inputs", "npu_fusion_attention", "{" FWD_OUT "}", NULL, FR_E_FORMAT, "no inputs in the dump", NULL},
    {"not fusion attention", "npu_flash_attention", FA(""), NULL, FR_E_INVALID_ARG,
     "not a fusion-attention call", NULL},
    /* op-plugin's checks */
    {"head_num 0", "npu_fusion_attention", FWD(QKV ", " INT(0) ", " STR("BNSD"), ""), NULL, FR_E_HEADS,
     "head_num must > 0", NULL},
    {"unknown layout", "npu_fusion_attention", FWD(QKV ", " INT(2) ", " STR("NSBD"), ""), NULL, FR_E_LAYOUT,
     "but got NSBD", NULL},
    {"empty layout", "npu_fusion_attention", FWD(QKV ", " INT(2) ", " STR(""), ""), NULL, FR_E_LAYOUT,
     "input_layout should be", NULL},
    {"padding_mask", "npu_fusion_attention", FA("\"padding_mask\": " QT("q.npy")), NULL, FR_E_INVALID_ARG,
     "padding_mask: not supported", NULL},
    {"softmax_layout BSH", "npu_fusion_attention", FA("\"softmax_layout\": " STR("BSH")), NULL, FR_E_INVALID_ARG,
     "only supported softmax_layout=TND (got 'BSH')", NULL},
    {"softmax_layout TND, BNSD", "npu_fusion_attention", FA("\"softmax_layout\": " STR("TND")), NULL, FR_E_INVALID_ARG,
     "only supported when input_layout_str=TND", NULL},
    {"grad: softmax_layout", "npu_fusion_attention_grad",
     "{\"input_args\": [" TNDQ ", " TENSOR("float32", "6, 2, 8", "tdy.npy") ", " INT(2) ", " STR("TND") "], "
     "\"input_kwargs\": {" SEQ ", \"softmax_layout\": " STR("SBH") "}}", NULL, FR_E_INVALID_ARG,
     "The param softmax_layout is not supported (got 'SBH')", NULL},
    /* dropout */
    {"keep_prob 1", "npu_fusion_attention", FA("\"keep_prob\": " FLT(1.0) ", \"dropout_mask\": " QT("nofile.npy")),
     NULL, FR_OK, NULL, ck_default},
    /* keep_prob 0 is outside the operator's (0, 1]; within 1e-9 of 0 torch_npu's all-zero mask */
    {"keep_prob 0", "npu_fusion_attention", FA("\"keep_prob\": " INT(0)), NULL, FR_E_KEEP_PROB,
     "keep_prob: 0 is outside",
     NULL},
    {"keep_prob 1e-12", "npu_fusion_attention", FA("\"keep_prob\": " FLT(1e-12)), NULL, FR_OK, NULL, ck_kp0},
    {"keep_prob 0.5 no mask", "npu_fusion_attention", FA("\"keep_prob\": " FLT(0.5)), NULL, FR_OK,
     "(seed, offset) with its Philox generator", NULL},
    {"keep_prob 0.5 with mask", "npu_fusion_attention",
     FA("\"keep_prob\": " FLT(0.5) ", \"dropout_mask\": " TENSOR("uint8", "48", "drop.npy")), NULL, FR_OK, NULL,
     ck_mask},
    {"keep_prob 0.5 short mask", "npu_fusion_attention",
     FA("\"keep_prob\": " FLT(0.5) ", \"dropout_mask\": " TENSOR("uint8", "2", "dshort.npy")), NULL, FR_E_DROPOUT,
     "flashref's operator refuses the call (FR_E_DROPOUT)", NULL},
    {"keep_prob 0.5, backward", "npu_fusion_attention", FA("\"keep_prob\": " FLT(0.5)), BWD, FR_OK,
     "the grad function regenerates the mask", NULL},
    /* the all-zero mask's length (torch_npu's numels) in each layout: B * N1 * S1 * S2 bits, rounded up */
    {"keep_prob 1e-12 BSH", "npu_fusion_attention",
     FWD(LAY3("1, 4, 16", "bsh.npy") ", " INT(2) ", " STR("BSH"), "\"keep_prob\": " FLT(1e-12)), NULL, FR_OK, NULL,
     ck_kp0},
    {"keep_prob 1e-12 SBH", "npu_fusion_attention",
     FWD(LAY3("4, 1, 16", "sbh.npy") ", " INT(2) ", " STR("SBH"), "\"keep_prob\": " FLT(1e-12)), NULL, FR_OK, NULL,
     ck_kp0},
    {"keep_prob 1e-12 BSND", "npu_fusion_attention",
     FWD(LAY3("1, 4, 2, 8", "bsnd.npy") ", " INT(2) ", " STR("BSND"), "\"keep_prob\": " FLT(1e-12)), NULL, FR_OK,
     NULL, ck_kp0},
    {"keep_prob 1e-12 TND", "npu_fusion_attention",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {" SEQ ", \"keep_prob\": "
     FLT(1e-12) "}, " TND_OUT("6, 2, 8") "}", NULL, FR_OK, NULL, ck_kp0_tnd},
    {"keep_prob 0 grad, numels",
     "npu_fusion_attention_grad", GRAD(", \"keep_prob\": " FLT(1e-12) ", \"numels\": " INT(4096),
                                                                   ""), NULL, FR_OK, NULL, ck_kp0_grad},
    /* v1 / v2 spellings, scale / scale_value */
    {"v1 pre_tockens", "npu_fusion_attention", FA("\"pre_tockens\": " INT(2) ", \"next_tockens\": " INT(0)), NULL,
     FR_OK, NULL, ck_v1_band},
    {"v1 pre_tokens", "npu_fusion_attention", FA("\"pre_tokens\": " INT(2)), NULL, FR_E_FORMAT,
     "unexpected keyword argument 'pre_tokens'", NULL},
    {"v2 pre_tokens", "npu_fusion_attention_v2",
     FA("\"pre_tokens\": " INT(1) ", \"next_tokens\": " INT(0) ", \"q_start_idx\": [" INT(1) "], \"kv_start_idx\": ["
        INT(2) "]"), NULL, FR_OK, NULL, ck_v2},
    {"v2 pre_tockens", "npu_fusion_attention_v2", FA("\"pre_tockens\": " INT(1)), NULL, FR_E_FORMAT,
     "unexpected keyword argument 'pre_tockens'", NULL},
    {"MindSpeed is v2", "MindSpeed.npu_fusion_attention", FA("\"pre_tokens\": " INT(3)), NULL, FR_OK, NULL,
     ck_mindspeed},
    {"grad scale_value", "npu_fusion_attention_grad", GRAD(", \"scale_value\": " FLT(0.5), ", null, null"), NULL, FR_OK,
     NULL, ck_grad},
    {"grad scale", "npu_fusion_attention_grad", GRAD(", \"scale\": " FLT(0.5), ""), NULL, FR_E_FORMAT,
     "unexpected keyword argument 'scale'", NULL},
    {"grad_v2", "npu_fusion_attention_grad_v2", GRAD(", \"pre_tokens\": " INT(3), ", null, null, null, null"), NULL,
     FR_OK, NULL, ck_grad_v2},
    {"grad_v2 rope, sink", "npu_fusion_attention_grad_v2",
     GRAD(", \"query_rope\": " QT("qr.npy") ", \"key_rope\": " QT("kr.npy") ", \"sink\": "
          TENSOR("float32", "2", "sink.npy"),
          ", null, " QT("qr.npy") ", " QT("kr.npy") ", " TENSOR("float32", "2", "sink.npy")), NULL, FR_OK, NULL,
     ck_rope},
    {"grad without dq", "npu_fusion_attention_grad",
     "{\"input_args\": [" QKV ", " QT("dy.npy") ", " INT(2) ", " STR("BNSD") "], \"input_kwargs\": {" GRAD_KW "}, "
     "\"output\": [null, " QT("dk.npy") ", " QT("dv.npy") "]}", NULL, FR_OK, "no dq for this call", NULL},
    {"grad of grad", "npu_fusion_attention_grad", GRAD("", ""), BWD, FR_E_FORMAT,
     "a backward of a grad function", NULL},
    /* autograd backward entries */
    {"backward", "npu_fusion_attention", FA(""), BWD, FR_OK, NULL, NULL},
    {"backward without dk", "npu_fusion_attention", FA(""),
     "{\"input\": [" QT("dy.npy") "], \"output\": [" QT("dq.npy") ", null, " QT("dv.npy") "]}", FR_OK, NULL,
     ck_dk_absent},
    {"backward without input", "npu_fusion_attention", FA(""), "{\"output\": []}", FR_E_FORMAT,
     "the backward entry has no \"input\" (dy)", NULL},
    {"backward, dy null", "npu_fusion_attention", FA(""), "{\"input\": [null], \"output\": []}", FR_OK,
     "no gradient of attention_out (dy)", NULL},
    {"backward, no outputs of the forward", "npu_fusion_attention", "{\"input_args\": [" QKV ", " INT(2) ", "
     STR("BNSD") "]}", BWD, FR_OK, "the forward's outputs", NULL},
    {"backward without forward", "npu_fusion_attention", NULL, BWD, FR_E_FORMAT, "its forward entry", NULL},
    {"forward without outputs", "npu_fusion_attention", "{\"input_args\": [" QKV ", " INT(2) ", " STR("BNSD") "]}",
     NULL, FR_OK, "no attention_out of this call", NULL},
    /* sparse modes */
    {"sparse 1", "npu_fusion_attention", FA("\"sparse_mode\": " INT(1) ", \"atten_mask\": "
                                            TENSOR("bool", "1, 2, 4, 4", "mask.npy")), NULL, FR_OK, NULL, ck_sparse1},
    {"sparse 0, [S1, S2] mask", "npu_fusion_attention",
     FA("\"atten_mask\": " TENSOR("bool", "4, 4", "mask2.npy")), NULL, FR_OK, NULL, NULL},
    {"sparse 9", "npu_fusion_attention", FA("\"sparse_mode\": " INT(9)), NULL, FR_E_SPARSE_MODE,
     "refuses the call (FR_E_SPARSE_MODE)", NULL},
    {"prefix", "npu_fusion_attention", FA("\"sparse_mode\": " INT(5) ", \"prefix\": [" INT(2) "], \"atten_mask\": "
                                          TENSOR("bool", "1, 2, 4, 4", "mask.npy")), NULL, FR_OK, NULL, NULL},
    /* TND: lists (v1, v2), tensors (v3) */
    {"TND without lists", "npu_fusion_attention",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], " TND_OUT("6, 2, 8") "}", NULL, FR_E_SEQLEN,
     "TND needs actual_seq_qlen and actual_seq_kvlen", NULL},
    {"TND lists of two sizes", "npu_fusion_attention",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_qlen\": [" INT(2) ", "
     INT(6) "], \"actual_seq_kvlen\": [" INT(8) "]}, " TND_OUT("6, 2, 8") "}", NULL, FR_E_SEQLEN,
     "must be the same (got 2 and 1 entries)", NULL},
    {"TND", "npu_fusion_attention",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {" SEQ "}, " TND_OUT("6, 2, 8") "}",
     NULL, FR_OK, NULL, ck_tnd},
    {"TND softmax_layout TND", "npu_fusion_attention",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {" SEQ ", \"softmax_layout\": "
     STR("TND") "}, " TND_OUT("6, 2, 8") "}", NULL, FR_OK, NULL, ck_tnd_same},
    {"v3 tensors", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_qlen\": "
     TENSOR("int64", "2", "sq.npy") ", \"actual_seq_kvlen\": " TENSOR("int64", "2", "skv.npy") "}, " TND_OUT("6, 2, 8")
     "}", NULL, FR_OK, NULL, ck_v3},
    {"v3 int32", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_qlen\": "
     TENSOR("int32", "2", "sq32.npy") ", \"actual_seq_kvlen\": " TENSOR("int64", "2", "skv.npy") "}, "
     TND_OUT("6, 2, 8") "}", NULL, FR_OK, NULL, ck_v3},
    {"v3 lists", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {" SEQ "}}", NULL, FR_E_FORMAT,
     "argument 'actual_seq_qlen' (position 15) must be Tensor, not list", NULL},
    {"v3 float lengths", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_qlen\": "
     TENSOR("float32", "2", "sqf.npy") "}}", NULL, FR_E_FORMAT, "a 1-D int32/int64 tensor", NULL},
    {"v3 lengths of two sizes", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_qlen\": "
     TENSOR("int64", "3", "s3.npy") ", \"actual_seq_kvlen\": " TENSOR("int64", "2", "skv.npy") "}}", NULL, FR_E_SEQLEN,
     "have 3 and 2 entries", NULL},
    {"v3 missing length file", "npu_fusion_attention_v3",
     "{\"input_args\": [" TNDQ ", " INT(2) ", " STR("TND") "], \"input_kwargs\": {\"actual_seq_kvlen\": "
     TENSOR("int64", "2", "nofile.npy") "}}", NULL, FR_E_IO, "dump_tensor_data/nofile.npy: missing", NULL},
    /* tensor files that do not match dump.json, or are not files */
    {"shape differs", "npu_fusion_attention", WITH_Q(TENSOR("float32", "1, 2, 4, 9", "q.npy")), NULL, FR_E_FORMAT,
     "the file holds fp32 [1, 2, 4, 8], dump.json says torch.float32 [1, 2, 4, 9]", NULL},
    {"dtype differs", "npu_fusion_attention", WITH_Q(TENSOR("float16", "1, 2, 4, 8", "q.npy")), NULL, FR_E_FORMAT,
     "dump.json says torch.float16", NULL},
    {"int64 query", "npu_fusion_attention", WITH_Q(TENSOR("int64", "1, 2, 4, 8", "qi.npy")), NULL, FR_E_DTYPE,
     "query: dtype int64", NULL},
    {"missing file", "npu_fusion_attention", FA("\"pse\": " QT("nofile.npy")), NULL, FR_E_IO,
     "nofile.npy: missing", NULL},
    {"linked file", "npu_fusion_attention", WITH_Q(QT("link.npy")), NULL, FR_E_FORMAT,
     "link.npy is a symbolic link: not followed", NULL},
    {"a FIFO", "npu_fusion_attention", WITH_Q(QT("fifo.npy")), NULL, FR_E_IO, "not a regular file", NULL},
    {"a directory", "npu_fusion_attention", WITH_Q(QT("sub.npy")), NULL, FR_E_IO, "not a regular file", NULL},
    {"a path", "npu_fusion_attention", WITH_Q(QT("../dump.json")), NULL, FR_E_FORMAT, "not a plain file name", NULL},
    {"a torch file missing", "npu_fusion_attention", WITH_Q(QT("q.pt")), NULL, FR_E_IO, "q.pt: missing", NULL},
};

static void test_rebuild(void) {
    if (!CHECKED(make_npy_dump(), "the hand-written dump: %s", strerror(errno))) return;
    char *json_path = path_of(g_dump, "dump.json");
    for (size_t k = 0; k < sizeof rb_cases / sizeof rb_cases[0]; k++) {
        const rb_case *c = &rb_cases[k];
        const char *prefix = "NPU.", *api = c->api;
        if (!strncmp(api, "MindSpeed.", 10)) prefix = "MindSpeed.", api += 10;
        char *json = NULL;
        int n;
        if (c->fwd && c->bwd)
            n = asprintf(&json, "{\"task\": \"tensor\", \"data\": {\"%s%s.0.forward\": %s, \"%s%s.0.backward\": %s}}",
                         prefix, api, c->fwd, prefix, api, c->bwd);
        else
            n = asprintf(&json, "{\"task\": \"tensor\", \"data\": {\"%s%s.0.%s\": %s}}", prefix, api,
                         c->bwd ? "backward" : "forward", c->bwd ? c->bwd : c->fwd);
        if (!CHECKED(n > 0 && write_text(json_path, json), "%s", c->what)) {
            free(json);
            continue;
        }
        free(json);
        fr_mp_dump d;
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_status st = fr_mp_open(g_dump, NULL, &d, &err);
        if (!CHECKED(st == FR_OK && d.n >= 1, "%s: %s", c->what, err.msg)) continue;
        const fr_mp_entry *e = &d.e[d.n - 1], *fwd = d.n == 2 ? &d.e[0] : NULL;
        fr_npu_case nc;
        st = fr_npu_rebuild(&d, e, fwd, &nc, &err);
        if (c->st != FR_OK) {
            CHECK(st == c->st && contains(err.msg, c->word) && contains(err.msg, e->name), "%s: %s (want %s): %s",
                  c->what, fr_status_name(st), fr_status_name(c->st), err.msg);
        } else if (CHECKED(st == FR_OK, "%s: %s: %s", c->what, fr_status_name(st), err.msg)) {
            if (c->word) {
                CHECK(contains(nc.skip, c->word), "%s: skip '%s'", c->what, nc.skip);
            } else {
                CHECK(!nc.skip[0] && nc.c.in.fwd.query.data && nc.c.in.fwd.key.data && nc.c.in.fwd.value.data,
                      "%s: skip '%s'", c->what, nc.skip);
                if (nc.c.op == FR_CASE_FWD) CHECK(nc.npu.fwd.attention_out.data, "%s", c->what);
                else CHECK(nc.npu.bwd.dq.data && nc.c.in.dy.data && nc.c.in.attention_in.data, "%s", c->what);
                if (c->check) c->check(c->what, &nc);
            }
            fr_npu_case_free(&nc);
        }
        fr_mp_free(&d);
    }
    free(json_path);
    /* the schemas */
    int n = 0;
    while (fr_npu_schemas[n]) n++;
    CHECK(n == FR_NPU_NUM_API && fr_npu_api_index("npu_fusion_attention_grad_v3") == 5 &&
          fr_npu_api_index("npu_fusion_attention_") == -1 && fr_npu_api_index(NULL) == -1);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "%s/fr_msprobe_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_parse_valid();
    test_parse_malformed();
    test_find();
    test_committed_entries();
    test_committed_verify();
    test_edited_copy();
    test_rebuild();
    free(g_dump);
    fr_test_rm_rf(g_tmp);
    return fr_test_exit("test_msprobe_reader");
}
