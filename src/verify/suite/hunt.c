/* The hunt (hunt.h): draws until the budget or the draw cap is spent, each judged like a suite draw; the SKIPs
 * teach the drawing what the implementation lacks; the failures are clustered by diagnosis, kind and configuration,
 * the first draw of each cluster shrunk (cases/shrink.c) while it still fails the same way, and written (a staging
 * directory renamed into place at the end, so that an interrupted hunt leaves no partial findings). */
#define _GNU_SOURCE /* nftw, mkdtemp */
#include "verify/suite/hunt.h"

#include "core/core.h"
#include "io/io_util.h"
#include "verify/cases/shrink.h"
#include "verify/iut/iut_proc.h"
#include "verify/suite/suite_internal.h"

#include <cjson/cJSON.h>
#include "io/json_checked.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *fr_hunt_kind_name(fr_hunt_kind k) { return k == FR_HUNT_WRONG ? "wrong" : "imprecise"; }

fr_hunt_opts fr_hunt_opts_default(void) {
    fr_hunt_opts o;
    memset(&o, 0, sizeof o);
    o.seed = 20260101;
    o.budget_s = 600;
    o.judge = fr_judge_opts_default();
    o.lim = fr_draw_limits_default();
    o.max_shrink = 8;
    return o;
}

/* The judge tags a value corner adds (they guide the diagnosis, judge.h). */
static unsigned mod_tags(fr_suite_mod m) {
    switch (m) {
    case FR_MOD_NAN_KV: return FR_TAG_NAN_KV | FR_TAG_MASK;
    case FR_MOD_FIRST_TILE_MASKED:
    case FR_MOD_ONE_KEY: return FR_TAG_D1 | FR_TAG_MASK;
    case FR_MOD_PAD_LEFT:
    case FR_MOD_PAD_RIGHT: return FR_TAG_MASK;
    default: return 0;
    }
}

/* Whether the post-processing m can be applied to spec (the shrinker may switch its mask off). */
static bool mod_fits(const fr_gen_spec *s, fr_suite_mod m) {
    bool tnd = s->layout == FR_TND;
    switch (m) {
    case FR_MOD_NAN_KV:
    case FR_MOD_FIRST_TILE_MASKED:
    case FR_MOD_ONE_KEY: return !tnd && s->mask == FR_GEN_MASK_SS;
    case FR_MOD_PAD_LEFT:
    case FR_MOD_PAD_RIGHT: return !tnd && s->mask == FR_GEN_MASK_B1SS;
    default: return true;
    }
}

static fr_status judge_draw(fr_iut *iut, const fr_gen_spec *spec, fr_suite_mod mod, fr_mask_hint hint,
                            const fr_suite_opts *so, fr_case_result *cr, fr_error *err) {
    fr_suite_item it = fr_suite_item_of_spec(spec, "hunt draw", true);
    it.mod = mod;
    it.hint = hint;
    it.tags |= mod_tags(mod);
    if (spec->in_scale >= 4) it.tags |= FR_TAG_LARGE;
    return fr_suite_run_item(iut, &it, so, cr, err);
}

/* Wrong: the implementation failed, or an output is order-one off, non-finite where the golden is finite; else
 * imprecise. *rel and *xp: the worst output's rel-L2 and its multiple of the plain reference's. */
static fr_hunt_kind kind_of(const fr_judgement *j, double *rel, double *xp) {
    *rel = 0;
    *xp = 0;
    bool wrong = j->diag == FR_DIAG_ERROR_STATUS || j->diag == FR_DIAG_CRASH || j->diag == FR_DIAG_TIMEOUT ||
                 j->diag == FR_DIAG_SHAPE || j->diag == FR_DIAG_UNWRITTEN;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_out_judgement *o = &j->out[k];
        if (!o->present) continue;
        double r = isfinite(o->m.rel_l2) ? o->m.rel_l2 : INFINITY;
        if (r > *rel || (isnan(*rel))) *rel = r, *xp = o->x_plain;
        wrong |= o->m.n_anomaly_mismatch > 0 || !(o->m.rel_l2 < 0.05);
    }
    return wrong ? FR_HUNT_WRONG : FR_HUNT_IMPRECISE;
}

/* The configuration, with the value post-processing and mask handover that are not part of the spec. */
static void describe(const fr_hunt_draw *d, char *buf, size_t n) {
    fr_matrix_describe(&d->d.spec, buf, n);
    size_t k = strlen(buf);
    if (d->mod != FR_MOD_NONE && k < n)
        k += (size_t)snprintf(buf + k, n - k, " + %s", fr_hunt_corner_name(d->corner));
    if (d->hint != FR_MASK_HINT_DEFAULT && k < n) snprintf(buf + k, n - k, ", mask as %s", fr_mask_hint_name(d->hint));
}

static void cluster_key(const fr_gen_spec *s, fr_mask_hint h, char *key, size_t n) {
    fr_dtype dt = s->dtype == FR_DT_NONE ? FR_F32 : s->dtype;
    snprintf(key, n, "%s %s%s%s", s->bwd ? "bwd" : "fwd", fr_dtype_name(dt), h ? ", mask as " : "",
             h ? fr_mask_hint_name(h) : "");
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Shrinking one cluster's representative. */

typedef struct still_ud {
    fr_iut *iut;
    const fr_suite_opts *so;
    const fr_hunt_cluster *c;
    volatile sig_atomic_t *stop;
} still_ud;

static fr_status still_fails(void *ud, const fr_gen_spec *spec, bool *fails, fr_error *err) {
    const still_ud *u = ud;
    *fails = false;
    if (u->stop && *u->stop) return fr_fail(err, FR_E_UNSUPPORTED, "interrupted");
    if (!mod_fits(spec, u->c->first.mod)) return FR_OK;
    fr_case_result cr;
    fr_status st = judge_draw(u->iut, spec, u->c->first.mod, u->c->first.hint, u->so, &cr, err);
    if (st != FR_OK) return st;
    /* The verdict and the diagnosis, not the kind: a smaller case of the same defect may stay under the "wrong"
     * error size (fewer elements hit), and the cluster is named by its first draw anyway. */
    bool severe = u->c->verdict == FR_FAIL ? cr.j.verdict == FR_FAIL
                                            : cr.j.verdict == FR_FAIL || cr.j.verdict == FR_WARN;
    *fails = severe && cr.j.diag == u->c->diag;
    fr_judgement_free(&cr.j);
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Output files. */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb, (void)flag, (void)f;
    return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}
static void rmtree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static fr_status write_file(const char *path, const char *text, fr_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return fr_fail(err, FR_E_IO, "%s: %s", path, strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    return ok ? FR_OK : fr_fail(err, FR_E_IO, "%s: write failed", path);
}

/* ---------------------------------------------------------------------------------------------------------------- */

static int cmp_cluster(const void *a, const void *b) {
    const fr_hunt_cluster *x = a, *y = b;
    if (x->kind != y->kind) return (int)x->kind - (int)y->kind;
    if (x->verdict != y->verdict) return x->verdict == FR_FAIL ? -1 : 1;
    return y->count - x->count;
}

static void progress(const fr_hunt_opts *o, const fr_hunt_result *r, double t0, const char *phase) {
    if (!o->progress) return;
    fr_hunt_progress p = {r->draws, r->judged, r->skipped, r->failed, r->warned, r->nclusters,
                          fr_suite_now_s() - t0, o->budget_s, phase};
    o->progress(o->progress_ud, &p);
}

static bool stopped(const fr_hunt_opts *o) { return o->stop && *o->stop; }

/* The draws: judged one by one, SKIPs learned, failures clustered. */
static fr_status draws_learning(fr_iut *iut, const fr_hunt_opts *o, const fr_suite_opts *so, fr_hunt_result *r,
                                fr_coverage *cv, double t0, fr_hunt_learn *learn, fr_error *err) {
    int cap = 0;
    for (int k = 0;; k++) {
        if (o->max_draws > 0 && k >= o->max_draws) break;
        if (o->budget_s > 0 && fr_suite_now_s() - t0 >= o->budget_s) break;
        if (stopped(o)) break;
        const char *why = fr_iut_gave_up(iut);
        if (why) {
            snprintf(r->stopped, sizeof r->stopped, "%s", why);
            break;
        }
        const fr_caps *caps = NULL;
        fr_iut_caps(iut, &caps);
        fr_hunt_draw d;
        bool inside;
        fr_hunt_draw_one(o->seed, k, caps, o->no_learn ? NULL : learn, &o->lim, o->no_corners, &d, &inside);
        if (!inside) r->not_drawable++;
        fr_case_result cr;
        fr_status st = judge_draw(iut, &d.d.spec, d.mod, d.hint, so, &cr, err);
        if (st != FR_OK) return st;
        r->draws++;
        if (stopped(o)) { /* the judgement the signal cut short is no finding */
            fr_judgement_free(&cr.j);
            break;
        }
        if (o->trace)
            fprintf(o->trace, "%s %s %s%s%s%s%s: %s: %.200s\n", d.d.name, fr_verdict_name(cr.j.verdict),
                    fr_diag_name(cr.j.diag), d.corner ? " [" : "", d.corner ? fr_hunt_corner_name(d.corner) : "",
                    d.hint ? ", mask as " : "", d.hint ? fr_mask_hint_name(d.hint) : "", cr.config, cr.j.why);
        bool judged = cr.j.verdict != FR_SKIP;
        fr_hunt_learn_note(learn, cr.cell, judged);
        if (judged) {
            r->judged++;
            fr_coverage_add(cv, cr.cell);
        } else {
            r->skipped++;
        }
        if (cr.j.verdict == FR_PASS) r->passed++;
        if (cr.j.verdict == FR_WARN) r->warned++;
        if (cr.j.verdict == FR_FAIL) r->failed++;
        if (cr.j.verdict == FR_FAIL || cr.j.verdict == FR_WARN) {
            double rel, xp;
            fr_hunt_kind kind = kind_of(&cr.j, &rel, &xp);
            char key[160];
            cluster_key(&d.d.spec, d.hint, key, sizeof key);
            fr_hunt_cluster *c = NULL;
            for (int i = 0; i < r->nclusters && !c; i++)
                if (r->clusters[i].diag == cr.j.diag && r->clusters[i].kind == kind &&
                    r->clusters[i].verdict == cr.j.verdict && !strcmp(r->clusters[i].key, key))
                    c = &r->clusters[i];
            if (!c) {
                if (r->nclusters == cap) {
                    int nc = cap ? 2 * cap : 16;
                    fr_hunt_cluster *p = realloc(r->clusters, (size_t)nc * sizeof *p);
                    if (!p) {
                        fr_judgement_free(&cr.j);
                        return fr_fail(err, FR_E_NOMEM, "hunt: out of memory");
                    }
                    r->clusters = p;
                    cap = nc;
                }
                c = &r->clusters[r->nclusters++];
                memset(c, 0, sizeof *c);
                c->diag = cr.j.diag;
                c->kind = kind;
                c->verdict = cr.j.verdict;
                snprintf(c->key, sizeof c->key, "%s", key);
                c->first = d;
                fr_draw_copy(&c->first.d, &d.d);
                c->smallest = c->first;
                fr_draw_copy(&c->smallest.d, &d.d);
                describe(&d, c->first_config, sizeof c->first_config);
                describe(&d, c->smallest_config, sizeof c->smallest_config);
                snprintf(c->why, sizeof c->why, "%s", cr.j.why);
                c->rel_l2 = rel;
                c->x_plain = xp;
            }
            c->count++;
        }
        fr_judgement_free(&cr.j);
        progress(o, r, t0, "drawing");
    }
    /* What was learned, for the report: single values (where declared, with twice the evidence) and pairs. */
    const fr_axis *axes = fr_matrix_axes();
    const fr_caps *caps = NULL;
    fr_iut_caps(iut, &caps);
    size_t w = 0, cap_l = sizeof r->learned;
    for (int a = 0; a < FR_AX_COUNT && !o->no_learn; a++)
        for (int v = 0; v < axes[a].n; v++)
            if ((fr_hunt_learn_excludes(learn, caps, 0, a, v) || fr_hunt_learn_excludes(learn, caps, 1, a, v)) &&
                w + 40 < cap_l)
                w += (size_t)snprintf(r->learned + w, cap_l - w, "%s%s=%s", w ? ", " : "", axes[a].name,
                                      axes[a].values[v]);
    for (int a = 0; a < FR_AX_COUNT && !o->no_learn; a++)
        for (int v = 0; v < axes[a].n; v++)
            for (int b = a + 1; b < FR_AX_COUNT; b++)
                for (int u = 0; u < axes[b].n; u++)
                    if (learn->excluded_pair[a][v][b][u] && w + 80 < cap_l)
                        w += (size_t)snprintf(r->learned + w, cap_l - w, "%s%s=%s & %s=%s", w ? ", " : "",
                                              axes[a].name, axes[a].values[v], axes[b].name, axes[b].values[u]);
    return FR_OK;
}

static fr_status hunt_draws(fr_iut *iut, const fr_hunt_opts *o, const fr_suite_opts *so, fr_hunt_result *r,
                            fr_coverage *cv, double t0, fr_error *err) {
    fr_hunt_learn *learn = calloc(1, sizeof *learn); /* about 250 KiB: the pair tables */
    if (!learn) return fr_fail(err, FR_E_NOMEM, "hunt: out of memory");
    fr_status st = draws_learning(iut, o, so, r, cv, t0, learn, err);
    free(learn);
    return st;
}

static fr_suite_opts suite_opts(const fr_iut *iut, const fr_hunt_opts *o) {
    fr_suite_opts so = fr_suite_opts_default();
    so.seed = o->seed;
    so.threads = o->threads;
    so.judge = o->judge;
    so.judge.external = so.judge.external || !fr_iut_is_builtin(iut);
    return so;
}

fr_status fr_hunt_shrink_cluster(fr_iut *iut, const fr_hunt_opts *o, fr_hunt_cluster *c, fr_error *err) {
    fr_suite_opts so = suite_opts(iut, o);
    still_ud u = {iut, &so, c, o->stop};
    fr_draw small;
    c->first.d.spec.name = c->first.d.name;
    fr_status st = fr_shrink(&c->first.d.spec, FR_SHRINK_MAX_RUNS, still_fails, &u, &small, &c->shrink_runs, err);
    if (st != FR_OK) return st;
    fr_draw_copy(&c->smallest.d, &small);
    describe(&c->smallest, c->smallest_config, sizeof c->smallest_config);
    return FR_OK;
}

fr_status fr_hunt_run(fr_iut *iut, const fr_hunt_opts *o_in, fr_hunt_result *r, fr_error *err) {
    memset(r, 0, sizeof *r);
    if (!iut || !o_in) return fr_fail(err, FR_E_NULL, "hunt: NULL");
    fr_hunt_opts o = *o_in;
    if (!(o.budget_s > 0) && o.max_draws <= 0)
        return fr_fail(err, FR_E_INVALID_ARG, "hunt: neither a budget nor a draw cap: it would never end");
    if (o.budget_s < 0 || !isfinite(o.budget_s)) return fr_fail(err, FR_E_INVALID_ARG, "hunt: budget %g", o.budget_s);
    fr_suite_opts so = suite_opts(iut, &o);
    char *stage = NULL;
    if (o.out_dir) { /* checked before the draws: a hunt must not end unable to write what it found */
        fr_status st = fr_io_mkdir(o.out_dir, err);
        if (st != FR_OK) return st;
        size_t n = strlen(o.out_dir) + 32;
        stage = malloc(n);
        if (!stage) return fr_fail(err, FR_E_NOMEM, "hunt: out of memory");
        snprintf(stage, n, "%s/.hunt-XXXXXX", o.out_dir);
        if (!mkdtemp(stage)) {
            fr_status e = fr_fail(err, FR_E_IO, "--out %s: cannot write: %s", o.out_dir, strerror(errno));
            free(stage);
            return e;
        }
    }
    fr_proc_interrupt_on(o.stop); /* a runner's case in progress ends at once when the hunt is stopped */
    fr_coverage cv;
    fr_status st = fr_coverage_init(&cv, err);
    bool have_cv = st == FR_OK;
    double t0 = fr_suite_now_s();
    if (st == FR_OK) st = hunt_draws(iut, &o, &so, r, &cv, t0, err);
    const fr_caps *caps = NULL;
    fr_iut_caps(iut, &caps);
    if (caps) fr_caps_describe(caps, r->caps, sizeof r->caps);
    else snprintf(r->caps, sizeof r->caps, "nothing declared");
    if (st == FR_OK && r->judged) {
        uint8_t *allowed = calloc((size_t)fr_coverage_npairs(), 1);
        st = allowed ? fr_matrix_allowed(allowed, err) : fr_fail(err, FR_E_NOMEM, "hunt: pairwise coverage: out of memory");
        for (int p = 0; st == FR_OK && p < cv.npairs; p++) {
            r->pairs_allowed += allowed[p];
            r->pairs_covered += allowed[p] && cv.hits[p];
        }
        free(allowed);
    }
    if (have_cv) fr_coverage_free(&cv);
    if (r->nclusters > 1) qsort(r->clusters, (size_t)r->nclusters, sizeof *r->clusters, cmp_cluster);
    for (int i = 0; i < r->nclusters; i++) { /* the copies' names point into their own storage again */
        r->clusters[i].first.d.spec.name = r->clusters[i].first.d.name;
        r->clusters[i].smallest.d.spec.name = r->clusters[i].smallest.d.name;
    }
    /* Shrink the first clusters' representatives. */
    for (int i = 0; i < r->nclusters && i < o.max_shrink && st == FR_OK && !stopped(&o) && !r->stopped[0]; i++) {
        st = fr_hunt_shrink_cluster(iut, &o, &r->clusters[i], err);
        if (st == FR_E_UNSUPPORTED && stopped(&o)) {
            st = FR_OK;
            break;
        }
        progress(&o, r, t0, "shrinking");
    }
    r->seconds = fr_suite_now_s() - t0;
    r->interrupted = stopped(&o);
    if (stage) {
        if (st == FR_OK && !r->interrupted) {
            /* Each cluster: its shrunk case in regression format and the runner's reproducer. */
            for (int i = 0; i < r->nclusters && st == FR_OK && !stopped(&o); i++) {
                fr_hunt_cluster *c = &r->clusters[i];
                char dir[600], cdir[700], rp[700];
                snprintf(dir, sizeof dir, "%.500s/cluster_%d", stage, i + 1);
                snprintf(cdir, sizeof cdir, "%s/case", dir);
                if ((st = fr_io_mkdir(dir, err)) != FR_OK) break;
                fr_gen_case g;
                st = fr_gen_build(&c->smallest.d.spec, o.seed, &g, err);
                if (st == FR_OK) {
                    st = fr_suite_apply_mod(&g, c->smallest.mod, err);
                    fr_case cc;
                    fr_suite_case_view(&g, &cc);
                    cc.mask_hint = c->smallest.hint;
                    if (st == FR_OK) st = fr_case_write(&cc, cdir, err);
                    if (st == FR_OK) { /* the golden fp64 outputs beside it, as regression cases keep them */
                        char gd[720];
                        snprintf(gd, sizeof gd, "%s/golden", cdir);
                        fr_case_outputs go;
                        st = fr_suite_run_engine(&cc, FR_ENGINE_GOLDEN, &go, err);
                        if (st == FR_OK) {
                            st = fr_case_write_outputs(gd, &go, err);
                            fr_case_outputs_free(&go);
                        }
                    }
                    fr_gen_case_free(&g);
                }
                if (st != FR_OK) break;
                snprintf(c->case_dir, sizeof c->case_dir, "%.400s/cluster_%d/case", o.out_dir, i + 1);
                snprintf(rp, sizeof rp, "%s/repro.py", dir);
                fr_error re;
                memset(&re, 0, sizeof re);
                fr_status rs = fr_iut_repro(iut, cdir, rp, &re);
                if (rs == FR_OK) snprintf(c->repro, sizeof c->repro, "%.400s/cluster_%d/repro.py", o.out_dir, i + 1);
                else snprintf(c->repro_note, sizeof c->repro_note, "%.290s", re.msg);
            }
            char *md = NULL, *js = NULL;
            if (st == FR_OK) st = fr_hunt_markdown(r, iut, &o, &md, err);
            if (st == FR_OK) st = fr_hunt_json(r, iut, &o, &js, err);
            char p[700];
            if (st == FR_OK) snprintf(p, sizeof p, "%.500s/findings.markdown", stage), st = write_file(p, md, err);
            if (st == FR_OK) snprintf(p, sizeof p, "%.500s/findings.json", stage), st = write_file(p, js, err);
            free(md);
            free(js);
            /* Into place: the previous hunt's files in out_dir (only those) go first; findings.json last. */
            if (st == FR_OK && !stopped(&o)) {
                char q[700];
                snprintf(q, sizeof q, "%.500s/findings.json", o.out_dir);
                unlink(q);
                snprintf(q, sizeof q, "%.500s/findings.markdown", o.out_dir);
                unlink(q);
                DIR *dd = opendir(o.out_dir);
                struct dirent *de;
                while (dd && (de = readdir(dd)))
                    if (!strncmp(de->d_name, "cluster_", 8)) {
                        snprintf(q, sizeof q, "%.500s/%.100s", o.out_dir, de->d_name);
                        rmtree(q);
                    }
                if (dd) closedir(dd);
                for (int i = 0; i < r->nclusters && st == FR_OK; i++) {
                    snprintf(p, sizeof p, "%.500s/cluster_%d", stage, i + 1);
                    snprintf(q, sizeof q, "%.500s/cluster_%d", o.out_dir, i + 1);
                    if (rename(p, q) != 0) st = fr_fail(err, FR_E_IO, "%s: %s", q, strerror(errno));
                }
                const char *names[] = {"findings.markdown", "findings.json"};
                for (int i = 0; i < 2 && st == FR_OK; i++) {
                    snprintf(p, sizeof p, "%.500s/%s", stage, names[i]);
                    snprintf(q, sizeof q, "%.500s/%s", o.out_dir, names[i]);
                    if (rename(p, q) != 0) st = fr_fail(err, FR_E_IO, "%s: %s", q, strerror(errno));
                }
            }
            r->interrupted = stopped(&o);
        }
        rmtree(stage);
        free(stage);
    }
    fr_proc_interrupt_on(NULL);
    return st;
}

void fr_hunt_result_free(fr_hunt_result *r) {
    if (!r) return;
    free(r->clusters);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Findings as JSON and markdown. */

static const char *impl_text(const fr_iut *iut) { return iut ? fr_iut_name(iut) : ""; }

fr_status fr_hunt_json(const fr_hunt_result *r, const fr_iut *iut, const fr_hunt_opts *o, char **out, fr_error *err) {
    *out = NULL;
    fr_json_clear();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "flashref-hunt/1");
    cJSON_AddStringToObject(root, "impl", impl_text(iut));
    const struct {
        const char *key;
        double v;
    } nums[] = { /* the run's numbers, in the format's order */
        {"seed", (double)o->seed},   {"budget_s", o->budget_s}, {"max_draws", o->max_draws},
        {"seconds", r->seconds},     {"draws", r->draws},       {"judged", r->judged},
        {"skipped", r->skipped},     {"judged_share", r->draws ? (double)r->judged / r->draws : 0},
        {"passed", r->passed},       {"warned", r->warned},     {"failed", r->failed},
        {"pairs_covered", r->pairs_covered}, {"pairs_allowed", r->pairs_allowed},
    };
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) cJSON_AddNumberToObject(root, nums[k].key, nums[k].v);
    cJSON_AddStringToObject(root, "capabilities", r->caps);
    const char *cj = fr_iut_caps_json(iut);
    if (cj) {
        cJSON *c = cJSON_Parse(cj);
        if (c) cJSON_AddItemToObject(root, "declared", c);
    }
    cJSON_AddStringToObject(root, "learned_exclusions", r->learned);
    cJSON_AddStringToObject(root, "stopped", r->stopped);
    cJSON *arr = cJSON_AddArrayToObject(root, "clusters");
    for (int i = 0; i < r->nclusters; i++) {
        const fr_hunt_cluster *c = &r->clusters[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "id", i + 1);
        cJSON_AddStringToObject(j, "kind", fr_hunt_kind_name(c->kind));
        cJSON_AddStringToObject(j, "verdict", fr_verdict_name(c->verdict));
        cJSON_AddStringToObject(j, "diagnosis", fr_diag_name(c->diag));
        cJSON_AddStringToObject(j, "diagnosis_text", fr_diag_text(c->diag));
        cJSON_AddStringToObject(j, "configuration", c->key);
        cJSON_AddStringToObject(j, "corner", fr_hunt_corner_name(c->first.corner));
        cJSON_AddStringToObject(j, "mask_handover", fr_mask_hint_name(c->first.hint));
        cJSON_AddNumberToObject(j, "count", c->count);
        cJSON_AddStringToObject(j, "first", c->first_config);
        cJSON_AddStringToObject(j, "first_name", c->first.d.name);
        cJSON_AddStringToObject(j, "smallest", c->smallest_config);
        cJSON_AddNumberToObject(j, "shrink_runs", c->shrink_runs);
        cJSON_AddStringToObject(j, "why", c->why);
        if (isfinite(c->rel_l2)) cJSON_AddNumberToObject(j, "rel_l2", c->rel_l2);
        else cJSON_AddStringToObject(j, "rel_l2", "inf");
        cJSON_AddNumberToObject(j, "x_plain", c->x_plain);
        cJSON_AddStringToObject(j, "case_dir", c->case_dir);
        cJSON_AddStringToObject(j, "repro", c->repro);
        cJSON_AddStringToObject(j, "repro_note", c->repro_note);
        cJSON_AddItemToArray(arr, j);
    }
    char *text = fr_json_failed() ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return fr_fail(err, FR_E_NOMEM, "hunt: findings JSON: out of memory");
    *out = text;
    return FR_OK;
}

/* A growing text buffer. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *q = realloc(b->p, nc);
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

fr_status fr_hunt_markdown(const fr_hunt_result *r, const fr_iut *iut, const fr_hunt_opts *o, char **out,
                           fr_error *err) {
    sbuf b = {0};
    put(&b, "# flashref hunt: %s\n\n", impl_text(iut));
    put(&b, "- seed %llu, budget %g s%s, %.1f s\n", (unsigned long long)o->seed, o->budget_s,
        o->max_draws > 0 ? " (draw cap)" : "", r->seconds);
    if (o->max_draws > 0) put(&b, "- draw cap %d\n", o->max_draws);
    put(&b, "- draws %d: judged %d (%.1f %%), skipped %d; PASS %d, WARN %d, FAIL %d\n", r->draws, r->judged,
        r->draws ? 100.0 * r->judged / r->draws : 0.0, r->skipped, r->passed, r->warned, r->failed);
    put(&b, "- pairwise coverage of the judged draws: %d of %d allowed pairs\n", r->pairs_covered, r->pairs_allowed);
    put(&b, "- capabilities: %s\n", r->caps);
    put(&b, "- learned from SKIPs: %s\n", r->learned[0] ? r->learned : "nothing excluded");
    if (r->stopped[0]) put(&b, "- stopped early: %s\n", r->stopped);
    put(&b, "\n%d cluster%s (wrong before imprecise).\n", r->nclusters, r->nclusters == 1 ? "" : "s");
    for (int i = 0; i < r->nclusters; i++) {
        const fr_hunt_cluster *c = &r->clusters[i];
        put(&b, "\n## %d. %s %s: %s (%s)\n\n", i + 1, fr_hunt_kind_name(c->kind), fr_verdict_name(c->verdict),
            fr_diag_name(c->diag), c->key);
        put(&b, "- %s\n", fr_diag_text(c->diag));
        put(&b, "- draws in the cluster: %d; corner of the first: %s\n", c->count,
            fr_hunt_corner_name(c->first.corner));
        put(&b, "- rel-L2 %.3g (%.3g x the plain reference's; NaN/Inf mismatches count as wrong)\n", c->rel_l2,
            c->x_plain);
        put(&b, "- verdict: %s\n", c->why);
        put(&b, "- first: `%s`\n", c->first_config);
        if (c->shrink_runs) put(&b, "- smallest (%d judgements): `%s`\n", c->shrink_runs, c->smallest_config);
        else put(&b, "- not shrunk\n");
        if (c->case_dir[0]) put(&b, "- case (regression format): `%s`\n", c->case_dir);
        if (c->repro[0]) put(&b, "- reproducer: `%s`\n", c->repro);
        else if (c->repro_note[0]) put(&b, "- no reproducer: %s\n", c->repro_note);
    }
    if (b.failed || !b.p) {
        free(b.p);
        return fr_fail(err, FR_E_NOMEM, "hunt: findings: out of memory");
    }
    *out = b.p;
    return FR_OK;
}
