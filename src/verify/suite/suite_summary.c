/* The suite-level summary after a run: counts per category and verdict, the overall verdict, the primary diagnosis,
 * and the length-series check that needs every case of a series judged first. */
#include "verify/suite/suite_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int diag_generic(fr_diag d) {
    /* Consequences of many defects: chosen only when nothing more specific was found. */
    return d == FR_DIAG_PRECISION || d == FR_DIAG_NAN || d == FR_DIAG_MASK || d == FR_DIAG_PSE ||
           d == FR_DIAG_GRADIENT || d == FR_DIAG_ERROR_STATUS || d == FR_DIAG_FULLY_MASKED || d == FR_DIAG_UNKNOWN;
}

/* The tag a diagnosis is the purpose of (0: none). */
static unsigned diag_purpose(fr_diag d) {
    switch (d) {
    case FR_DIAG_TILE_TAIL: return FR_TAG_TAIL;
    case FR_DIAG_HEAD_DIM: return FR_TAG_HEADDIM;
    case FR_DIAG_VARLEN: return FR_TAG_VARLEN;
    case FR_DIAG_MASK_SENTINEL: return FR_TAG_SENTINEL;
    case FR_DIAG_NAN_LEAK: return FR_TAG_NAN_KV;
    case FR_DIAG_OVERFLOW: return FR_TAG_LARGE;
    case FR_DIAG_INDEX32: return FR_TAG_INDEX64;
    case FR_DIAG_DROPOUT: return FR_TAG_DROPOUT;
    case FR_DIAG_STALE_MAX: return FR_TAG_PEAKED;
    case FR_DIAG_NAN_FULLY_MASKED:
    case FR_DIAG_FULLY_MASKED: return FR_TAG_D1;
    default: return 0;
    }
}

void fr_suite_summarize(fr_suite_result *r) {
    memset(r->count, 0, sizeof r->count);
    int nd[FR_DIAG_COUNT][2];
    memset(nd, 0, sizeof nd);
    bool fail = false, warn = false, any = false;
    r->input_errors = 0;
    for (int k = 0; k < r->n; k++) {
        const fr_case_result *c = &r->cases[k];
        r->count[c->cat][c->j.verdict]++;
        if (c->input_error) { /* FAIL overall, but it names no cause in the implementation */
            r->input_errors++;
            fail = true;
            continue;
        }
        /* A case designed for a failure class that gets that diagnosis is stronger evidence than a side effect. */
        int w = (diag_purpose(c->j.diag) & c->purpose) ? 3 : 1;
        if (c->j.verdict == FR_FAIL) fail = true, nd[c->j.diag][0] += w;
        if (c->j.verdict == FR_WARN) warn = true, nd[c->j.diag][1] += w;
        if (c->j.verdict != FR_SKIP) any = true;
    }
    r->overall = fail ? FR_FAIL : warn ? FR_WARN : any ? FR_PASS : FR_SKIP;
    r->primary = FR_DIAG_NONE;
    int col = fail ? 0 : 1, best = 0;
    if (fail || warn)
        for (int pass = 0; pass < 2 && r->primary == FR_DIAG_NONE; pass++)
            for (int d = 1; d < FR_DIAG_COUNT; d++)
                if ((pass == 1 || !diag_generic((fr_diag)d)) && nd[d][col] > best) {
                    best = nd[d][col];
                    r->primary = (fr_diag)d;
                }
}

/* Length series: the IUT's error relative to the ideal pipeline's must not grow with S2 (verification-method.md 3, WARN
 * "error that grows with sequence length faster than the ideal pipeline's"). */
void fr_suite_check_growth(fr_suite_result *r, const fr_judge_opts *jo) {
    for (int a = 0; a < r->n; a++) {
        if (!r->cases[a].series[0]) continue;
        bool first = true;
        for (int b = 0; b < a && first; b++)
            first = strcmp(r->cases[b].series, r->cases[a].series) != 0;
        if (!first) continue;
        int lo = -1, hi = -1, cnt = 0;
        for (int b = a; b < r->n; b++) {
            const fr_case_result *c = &r->cases[b];
            const fr_out_judgement *o = &c->j.out[FR_CO_ATTENTION_OUT];
            if (strcmp(c->series, r->cases[a].series) || !o->present || !o->have_ideal || !(o->ideal.rel_l2 > 0) ||
                (c->j.verdict != FR_PASS && c->j.verdict != FR_WARN))
                continue;
            cnt++;
            if (lo < 0 || c->S2 < r->cases[lo].S2) lo = b;
            if (hi < 0 || c->S2 > r->cases[hi].S2) hi = b;
        }
        if (cnt < 3) continue;
        const fr_out_judgement *ol = &r->cases[lo].j.out[FR_CO_ATTENTION_OUT],
                               *oh = &r->cases[hi].j.out[FR_CO_ATTENTION_OUT];
        double rl = ol->m.rel_l2 / ol->ideal.rel_l2, rh = oh->m.rel_l2 / oh->ideal.rel_l2;
        fr_case_result *c = &r->cases[hi];
        snprintf(c->extra, sizeof c->extra,
                 "series %s: error / ideal's %.3g at S2 = %lld, %.3g at S2 = %lld (%d cases)", c->series, rl,
                 (long long)r->cases[lo].S2, rh, (long long)c->S2, cnt);
        if (rh > jo->growth_warn * fmax(rl, 0.5) && rh > 1.0) {
            char why[200];
            snprintf(why, sizeof why,
                     "error grows with S2 faster than the ideal pipeline's: %.3g -> %.3g x (warn above "
                     "%g x)",
                     rl, rh, jo->growth_warn);
            fr_suite_downgrade(c, FR_WARN, FR_DIAG_GROWTH, why);
        }
    }
}

