/* Regression cases and `flashref verify` directories: directories with case.json, the inputs and golden/ (fp64
 * outputs); suite.txt gives the category and tags. Each is judged against its stored golden when there is one. */
#include "verify/suite/suite_internal.h"

#include "core/core.h"
#include "core/problem.h"
#include "io/npy.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned read_tags(const char *dir, fr_suite_cat *cat) {
    char path[4096];
    snprintf(path, sizeof path, "%s/suite.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char cname[64] = "";
    unsigned tags = 0;
    if (fscanf(f, "category=%63s tags=%u", cname, &tags) >= 1 && cat)
        for (int k = 0; k < FR_CAT_COUNT; k++) {
            char nm[64];
            fr_suite_cat_key((fr_suite_cat)k, nm, sizeof nm);
            if (!strcmp(nm, cname)) *cat = (fr_suite_cat)k;
        }
    fclose(f);
    return tags;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted subdirectory names of dir that hold a case.json (malloc'd). */
int fr_suite_list_case_dirs(const char *dir, char ***out) {
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/case.json", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, sizeof(char *) * (size_t)cap);
            if (!nv) goto nomem;
            v = nv;
        }
        v[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
        if (!v[n]) goto nomem;
        sprintf(v[n], "%s/%s", dir, de->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
nomem: /* never a shorter list taken for the whole: the run would go on without some regression cases */
    for (int k = 0; k < n; k++)
        free(v[k]);
    free(v);
    closedir(d);
    errno = ENOMEM;
    return -1;
}

const char *fr_suite_base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* The stored fp64 golden outputs of c in gdir, each header's shape checked against the operator's before its data is
 * read (a wrong-shaped reference must not reach the judge). */
static fr_status load_stored_golden(const fr_case *c, const char *gdir, fr_case_outputs *stored, fr_error *err) {
    memset(stored, 0, sizeof *stored);
    fr_case_outputs want;
    fr_status st = fr_case_alloc_outputs(c, true, &want, err);
    if (st != FR_OK) return st;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        const fr_tensor *w = fr_case_output_cslot(&want, (fr_case_output)k);
        if (!fr_tensor_present(w)) continue;
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/%s.npy", gdir, fr_case_output_name((fr_case_output)k));
        fr_npy_header h;
        /* the inputs' rule: nothing read through a link out of the case directory, not even a header */
        if (c->dir && access(path, F_OK) == 0 && !fr_case_path_inside(c->dir, path)) {
            st = fr_fail(err, FR_E_FORMAT, "%s: resolves (through a symbolic link) to a file outside the case "
                         "directory: not followed", path);
            break;
        }
        if ((st = fr_npy_read_file_header(path, &h, err)) != FR_OK) break;
        if (h.ndim != w->ndim || memcmp(h.shape, w->shape, sizeof(int64_t) * (size_t)h.ndim) != 0) {
            char a[160] = "[", b[160] = "[";
            for (int d = 0; d < h.ndim; d++)
                snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "," : "", (long long)h.shape[d]);
            for (int d = 0; d < w->ndim; d++)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "," : "", (long long)w->shape[d]);
            st = fr_fail(err, FR_E_FORMAT, "%s: shape %s], expected %s]", path, a, b);
        }
    }
    fr_case_outputs_free(&want);
    if (st == FR_OK) st = fr_case_load_outputs(c, gdir, stored, err);
    return st;
}

/* Judges one case directory: against stored golden outputs (golden/) when present, else a fresh golden. The IUT is
 * `iut`, or the outputs on disk when iut is NULL. */
fr_status fr_suite_run_dir(fr_iut *iut, const char *dir, fr_suite_cat cat, const fr_suite_opts *o, fr_case_result *cr,
                         fr_error *err) {
    memset(cr, 0, sizeof *cr);
    snprintf(cr->name, sizeof cr->name, "%s", fr_suite_base_name(dir));
    cr->cat = cat;
    cr->tags = read_tags(dir, &cr->cat);
    cr->purpose = cr->tags;
    if (cat == FR_CAT_REGRESSION) cr->cat = FR_CAT_REGRESSION;
    double t0 = fr_suite_now_s();
    fr_case c;
    fr_error le;
    fr_status st = fr_case_load(dir, &c, &le);
    /* Out of memory is the run's error, never a case's verdict (suite_judge.c). */
    if (st == FR_E_NOMEM) return fr_fail(err, st, "%s: %.400s", dir, le.msg);
    /* An invalid case (head_num 3 for N = 2, scale_value 1e400) is the input's error, named as `case check` and `run`
     * name it, not a FAIL blamed on the golden or the implementation. */
    if (st == FR_OK && (c.op == FR_CASE_FWD ? fr_validate_fwd(&c.params, &c.in.fwd, NULL, &le)
                                            : fr_validate_bwd(&c.params, &c.in, NULL, &le)) != FR_OK) {
        st = le.status;
        fr_case_free(&c);
        if (st == FR_E_NOMEM) return fr_fail(err, st, "%s: %.400s", dir, le.msg);
    }
    if (st != FR_OK) {
        cr->j.verdict = FR_FAIL;
        cr->j.diag = FR_DIAG_INPUT;
        cr->input_error = true;
        snprintf(cr->j.why, sizeof cr->j.why, "cannot load the case: %s: %.300s", fr_status_name(st), le.msg);
        return FR_OK;
    }
    if (iut) fr_suite_override_params(&c.params, o); /* outputs on disk were made as they were */
    cr->dtype = c.dtype;
    cr->bwd = c.op == FR_CASE_BWD;
    fr_problem pb;
    if ((c.op == FR_CASE_FWD ? fr_problem_from_fwd(&c.params, &c.in.fwd, &pb, NULL)
                             : fr_problem_from_bwd(&c.params, &c.in, &pb, NULL)) == FR_OK) {
        cr->S1 = pb.S1;
        cr->S2 = pb.S2;
    }
    fr_case_outputs stored;
    char gdir[4096];
    snprintf(gdir, sizeof gdir, "%s/golden", dir);
    struct stat sb;
    bool have_stored = false;
    if (stat(gdir, &sb) == 0) {
        /* A stored reference that cannot be used is this case's input error, named with its path; the other cases
         * are judged. */
        if ((st = load_stored_golden(&c, gdir, &stored, &le)) != FR_OK) {
            fr_case_free(&c);
            if (st == FR_E_NOMEM) return fr_fail(err, st, "%s: %.400s", gdir, le.msg);
            cr->j.verdict = FR_FAIL;
            cr->j.diag = FR_DIAG_INPUT;
            snprintf(cr->j.why, sizeof cr->j.why, "cannot load the stored golden: %s: %.300s", fr_status_name(st),
                     le.msg);
            cr->input_error = true;
            return FR_OK;
        }
        have_stored = true;
    }
    fr_iut *disk = NULL;
    if (!iut && (st = fr_iut_open_disk(&disk, err)) != FR_OK) {
        fr_case_free(&c);
        if (have_stored) fr_case_outputs_free(&stored);
        return st;
    }
    st = fr_suite_judge_one(iut ? iut : disk, &c, have_stored ? &stored : NULL, cr->tags, o, NULL, cr, &le);
    if (st == FR_E_NOMEM) {
        fr_judgement_free(&cr->j);
        fr_fail(err, st, "%s: %.400s", dir, le.msg);
    } else if (st != FR_OK) {
        /* This case could not be judged (out of memory, a reference the judge cannot use): its error, not the run's. */
        memset(&cr->j, 0, sizeof cr->j);
        cr->j.verdict = FR_FAIL;
        cr->j.diag = FR_DIAG_INPUT;
        cr->j.ratio = INFINITY;
        snprintf(cr->j.why, sizeof cr->j.why, "cannot judge the case %s: %s: %.300s", dir, fr_status_name(st), le.msg);
        cr->input_error = true;
        st = FR_OK;
    }
    fr_iut_close(disk);
    if (have_stored) fr_case_outputs_free(&stored);
    fr_case_free(&c);
    cr->seconds = fr_suite_now_s() - t0;
    return st;
}

