/* The pairwise coverage report (coverage.h). */
#include "verify/report/coverage.h"

#include "core/core.h"
#include "verify/report/text.h"

#include <cjson/cJSON.h>
#include "io/json_checked.h" /* after cJSON.h: every add checked (its caller clears and asks) */
#include <stdlib.h>
#include <string.h>

fr_status fr_coverage_report_from(fr_coverage *cv, int cases, fr_coverage_report *cr, fr_error *err) {
    memset(cr, 0, sizeof *cr);
    cr->cv = *cv;
    memset(cv, 0, sizeof *cv);
    cr->cases = cases;
    cr->allowed_map = malloc((size_t)cr->cv.npairs);
    if (!cr->allowed_map) {
        fr_coverage_report_free(cr);
        return fr_fail(err, FR_E_NOMEM, "coverage: out of memory");
    }
    fr_status st = fr_matrix_allowed(cr->allowed_map, err);
    if (st != FR_OK) {
        fr_coverage_report_free(cr);
        return st;
    }
    for (int p = 0; p < cr->cv.npairs; p++) {
        cr->allowed += cr->allowed_map[p];
        cr->covered += cr->allowed_map[p] && cr->cv.hits[p];
        cr->outside += !cr->allowed_map[p] && cr->cv.hits[p];
    }
    return FR_OK;
}

fr_status fr_coverage_report_of(const fr_suite_result *r, fr_coverage_report *cr, fr_error *err) {
    fr_coverage cv;
    fr_status st = fr_coverage_init(&cv, err);
    if (st != FR_OK) return st;
    fr_suite_coverage(r, &cv);
    int n = 0;
    for (int k = 0; k < r->n; k++)
        n += r->cases[k].has_cell;
    st = fr_coverage_report_from(&cv, n, cr, err);
    fr_coverage_free(&cv);
    return st;
}

void fr_coverage_report_free(fr_coverage_report *cr) {
    if (!cr) return;
    fr_coverage_free(&cr->cv);
    free(cr->allowed_map);
    memset(cr, 0, sizeof *cr);
}

void fr_coverage_print_line(FILE *f, const fr_coverage_report *cr) {
    fprintf(f, "coverage: %d/%d allowed pairs of option-matrix values (%d axes) in %d generated cases", cr->covered,
            cr->allowed, FR_AX_COUNT, cr->cases);
    if (cr->outside) fprintf(f, " (+%d pairs the draws never produced)", cr->outside);
    fprintf(f, "\n");
}

/* Covered / allowed pairs between axes a and b. */
static void axis_pair(const fr_coverage_report *cr, int a, int b, int *cov, int *all) {
    const fr_axis *ax = fr_matrix_axes();
    *cov = *all = 0;
    for (int va = 0; va < ax[a].n; va++)
        for (int vb = 0; vb < ax[b].n; vb++) {
            int p = fr_coverage_index(a, va, b, vb);
            *all += cr->allowed_map[p];
            *cov += cr->allowed_map[p] && cr->cv.hits[p];
        }
}

/* Alike coverage.c:fr_coverage_html: kept apart because it is the same table in another output format (text columns
 * here, HTML cells there); the numbers come from the same report. */
void fr_coverage_print_table(FILE *f, const fr_coverage_report *cr, int max_list) {
    const fr_axis *ax = fr_matrix_axes();
    fr_coverage_print_line(f, cr);
    fprintf(f, "axes and values:\n");
    for (int a = 0; a < FR_AX_COUNT; a++) {
        fprintf(f, "  %-15s", ax[a].name);
        for (int v = 0; v < ax[a].n; v++)
            fprintf(f, "%s%s", v ? " | " : " ", ax[a].values[v]);
        fprintf(f, "\n");
    }
    fprintf(f, "covered/allowed value pairs per pair of axes (row axis x column axis):\n%16s", "");
    for (int b = 1; b < FR_AX_COUNT; b++)
        fprintf(f, " %7.7s", ax[b].name);
    fprintf(f, "\n");
    for (int a = 0; a < FR_AX_COUNT - 1; a++) {
        fprintf(f, "  %-14.14s", ax[a].name);
        for (int b = 1; b < FR_AX_COUNT; b++) {
            if (b <= a) {
                fprintf(f, " %7s", "");
                continue;
            }
            int cov, all;
            axis_pair(cr, a, b, &cov, &all);
            char cell[16];
            snprintf(cell, sizeof cell, "%d/%d", cov, all);
            fprintf(f, " %7s", cell);
        }
        fprintf(f, "\n");
    }
    int shown = 0;
    for (int p = 0; p < cr->cv.npairs; p++) {
        if (!cr->allowed_map[p] || cr->cv.hits[p]) continue;
        if (shown++ >= max_list) continue;
        int a, va, b, vb;
        fr_coverage_pair(p, &a, &va, &b, &vb);
        fprintf(f, "  uncovered: %s = %s  x  %s = %s\n", ax[a].name, ax[a].values[va], ax[b].name, ax[b].values[vb]);
    }
    if (shown > max_list) fprintf(f, "  ... %d more uncovered pairs\n", shown - max_list);
    for (int p = 0; p < cr->cv.npairs; p++) {
        if (cr->allowed_map[p] || !cr->cv.hits[p]) continue;
        int a, va, b, vb;
        fr_coverage_pair(p, &a, &va, &b, &vb);
        fprintf(f, "  covered, never drawn: %s = %s  x  %s = %s\n", ax[a].name, ax[a].values[va], ax[b].name,
                ax[b].values[vb]);
    }
}

/* Alike coverage.c:fr_coverage_print_table: kept apart because it is the same table in another output format (HTML
 * cells here, text columns there); the numbers come from the same report. */
void fr_coverage_html(FILE *f, const fr_coverage_report *cr) {
    const fr_axis *ax = fr_matrix_axes();
    fprintf(f,
            "<h2>Option-matrix coverage</h2><p>%d of the %d pairs of axis values that validation allows were "
            "exercised by the %d generated cases of this run (%d axes).</p>",
            cr->covered, cr->allowed, cr->cases, FR_AX_COUNT);
    fprintf(f, "<table><tr><th>axis</th><th>values (cases)</th></tr>");
    for (int a = 0; a < FR_AX_COUNT; a++) {
        fprintf(f, "<tr><td>%s</td><td>", ax[a].name);
        int other = a == 0 ? 1 : 0; /* a value's case count: the hits of its pairs with one other axis */
        for (int v = 0; v < ax[a].n; v++) {
            uint32_t n = 0;
            for (int w = 0; w < ax[other].n; w++)
                n += cr->cv.hits[fr_coverage_index(a, v, other, w)];
            fprintf(f, "%s", v ? ", " : "");
            fr_report_html_text(f, ax[a].values[v]);
            fprintf(f, " (%u)", n);
        }
        fprintf(f, "</td></tr>");
    }
    fprintf(f, "</table><p class=note>Covered / allowed value pairs for each pair of axes:</p><table><tr><th></th>");
    for (int b = 1; b < FR_AX_COUNT; b++)
        fprintf(f, "<th>%s</th>", ax[b].name);
    fprintf(f, "</tr>");
    for (int a = 0; a < FR_AX_COUNT - 1; a++) {
        fprintf(f, "<tr><th>%s</th>", ax[a].name);
        for (int b = 1; b < FR_AX_COUNT; b++) {
            if (b <= a) {
                fprintf(f, "<td></td>");
                continue;
            }
            int cov, all;
            axis_pair(cr, a, b, &cov, &all);
            fprintf(f, "<td%s>%d/%d</td>", cov < all ? " class=WARN" : "", cov, all);
        }
        fprintf(f, "</tr>");
    }
    fprintf(f, "</table>");
    int gaps = cr->allowed - cr->covered;
    if (gaps) {
        fprintf(f, "<p>Uncovered allowed pairs (%d):</p><ul>", gaps);
        int shown = 0;
        for (int p = 0; p < cr->cv.npairs && shown < 200; p++) {
            if (!cr->allowed_map[p] || cr->cv.hits[p]) continue;
            int a, va, b, vb;
            fr_coverage_pair(p, &a, &va, &b, &vb);
            fprintf(f, "<li>%s = ", ax[a].name);
            fr_report_html_text(f, ax[a].values[va]);
            fprintf(f, " &#215; %s = ", ax[b].name);
            fr_report_html_text(f, ax[b].values[vb]);
            fprintf(f, "</li>");
            shown++;
        }
        fprintf(f, "</ul>");
    }
}

void *fr_coverage_json(const fr_coverage_report *cr) {
    const fr_axis *ax = fr_matrix_axes();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "cases", cr->cases);
    cJSON_AddNumberToObject(o, "pairs_allowed", cr->allowed);
    cJSON_AddNumberToObject(o, "pairs_covered", cr->covered);
    cJSON_AddNumberToObject(o, "pairs_hit_not_drawn", cr->outside);
    cJSON *axes = cJSON_CreateArray();
    for (int a = 0; a < FR_AX_COUNT; a++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", ax[a].name);
        cJSON_AddItemToObject(x, "values", cJSON_CreateStringArray(ax[a].values, ax[a].n));
        cJSON_AddItemToArray(axes, x);
    }
    cJSON_AddItemToObject(o, "axes", axes);
    cJSON *pairs = cJSON_CreateArray();
    for (int a = 0; a < FR_AX_COUNT; a++)
        for (int b = a + 1; b < FR_AX_COUNT; b++) {
            int cov, all;
            axis_pair(cr, a, b, &cov, &all);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "a", ax[a].name);
            cJSON_AddStringToObject(x, "b", ax[b].name);
            cJSON_AddNumberToObject(x, "allowed", all);
            cJSON_AddNumberToObject(x, "covered", cov);
            cJSON_AddItemToArray(pairs, x);
        }
    cJSON_AddItemToObject(o, "axis_pairs", pairs);
    cJSON *gaps = cJSON_CreateArray();
    for (int p = 0; p < cr->cv.npairs; p++) {
        if (!cr->allowed_map[p] || cr->cv.hits[p]) continue;
        int a, va, b, vb;
        fr_coverage_pair(p, &a, &va, &b, &vb);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, ax[a].name, ax[a].values[va]);
        cJSON_AddStringToObject(x, ax[b].name, ax[b].values[vb]);
        cJSON_AddItemToArray(gaps, x);
    }
    cJSON_AddItemToObject(o, "uncovered", gaps);
    return o;
}
