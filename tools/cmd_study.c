/* flashref study order-invariance|seqlen: numerics studies on the emulator (docs/emulator.md). */
#include "cli.h"
#include "study/emu_study.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void study_usage(FILE *f) {
    fprintf(f,
            "usage: flashref study order-invariance [--T N] [--W N] [--H N] [--dl N] [--dr N] [--beta X]\n"
            "                                        [--threshold X] [--seed N] [--threads N] [--no-bwd] [--svg FILE]\n"
            "       flashref study seqlen [--lens 1024,2048,...] [--rows N] [--d N] [--seed N] [--threads N]\n"
            "                             [--svg FILE]\n"
            "  order-invariance: the FA4 sparse-MLA experiment (docs/emulator.md). Absorbed sparse MLA (one kv head,\n"
            "    latent dl + rope dr, key == value latent, scale (dl+dr)^-0.5), causal top-k rows containing the\n"
            "    query's own key, peaked inputs (q_t += beta k_t, qv_t += beta v_t), bf16, emulating FA4 on SM100\n"
            "    (exp2, kv tile 128, reverse order). For {lazy threshold, exact max, row sum from rounded P} x\n"
            "    {dominant key processed first, last}: output rel-L2 and row-gain rms vs fp64, the difference between\n"
            "    the two orders (rel-L2, gain, gain over its noise floor), and dq/dk/dv rel-L2 vs fp64 without /\n"
            "    with the o_lo dpsum fix.\n"
            "    Defaults: T 1024, W 512, H 4 (about a minute on 2 cores), dl 512, dr 64, beta 0.25, threshold 8.\n"
            "  seqlen: error vs sequence length for fp32/bf16/fp16 pipelines, exact vs lazy max, row sum fp32 vs\n"
            "    fp16. Defaults: lens 1024..65536 (x2), rows 16, d 64.\n");
}

static bool arg_i64(const char *s, int64_t lo, int64_t hi, int64_t *v) {
    char *e;
    long long x = strtoll(s, &e, 10);
    if (*e || e == s || x < lo || x > hi) return false;
    *v = x;
    return true;
}

/* ---- a minimal SVG writer ---- */
static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"};

static void svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *s) {
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='%s' font-size='%d' font-family='sans-serif'>%s</text>\n", x, y,
            anchor, size, s);
}

/* Bars: groups x series, values v[g][s]; a dashed reference line at ref (label ref_label). */
static void svg_bars(FILE *f, double x0, double y0, double w, double h, const char *title, int ng,
                     const char *const *glabels, int ns, const char *const *slabels, const double *v,
                     double ref, const char *ref_label) {
    double vmax = ref;
    for (int k = 0; k < ng * ns; k++)
        if (v[k] > vmax) vmax = v[k];
    vmax *= 1.15;
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>\n", x0, y0, w, h);
    svg_text(f, x0 + w / 2, y0 - 8, "middle", 13, title);
    double gw = w / ng, bw = gw * 0.7 / ns;
    for (int g = 0; g < ng; g++) {
        for (int s = 0; s < ns; s++) {
            double val = v[g * ns + s], bh = h * val / vmax;
            double bx = x0 + g * gw + gw * 0.15 + s * bw;
            fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'/>\n", bx, y0 + h - bh, bw * 0.95,
                    bh, colors[s % 10]);
            char lab[32];
            snprintf(lab, sizeof lab, "%.3g", val);
            svg_text(f, bx + bw / 2, y0 + h - bh - 3, "middle", 9, lab);
        }
        svg_text(f, x0 + g * gw + gw / 2, y0 + h + 15, "middle", 11, glabels[g]);
    }
    double ry = y0 + h - h * ref / vmax;
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#000' stroke-dasharray='5,4'/>\n", x0, ry,
            x0 + w, ry);
    svg_text(f, x0 + w - 4, ry - 4, "end", 10, ref_label);
    for (int s = 0; s < ns; s++) {
        /* legend over the middle group, whose bars (exact max) are the short ones */
        fprintf(f, "<rect x='%.1f' y='%.1f' width='10' height='10' fill='%s'/>\n", x0 + w * 0.38, y0 + 8 + 14 * s,
                colors[s % 10]);
        svg_text(f, x0 + w * 0.38 + 14, y0 + 17 + 14 * s, "start", 10, slabels[s]);
    }
}

static int oi_svg(const char *path, const fr_oi_result *r) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='960' height='400' viewBox='0 0 960 400'>\n"
               "<rect width='960' height='400' fill='white'/>\n");
    char title[200];
    snprintf(title, sizeof title,
             "Order invariance, emulated FA4 sparse MLA bf16 (T=S=%lld, W=%lld, H=%lld, D=%lld+%lld, beta=%g)",
             (long long)r->T, (long long)r->W, (long long)r->H, (long long)r->Dl, (long long)r->Dr, r->beta);
    svg_text(f, 480, 22, "middle", 14, title);
    const char *gl[3] = {r->rows[0].label, r->rows[1].label, r->rows[2].label};
    const char *sl[2] = {"dominant key processed first", "dominant key processed last"};
    double g[6], d[3];
    for (int k = 0; k < 3; k++) {
        g[2 * k] = r->rows[k].gain_rms[0] * 1e4;
        g[2 * k + 1] = r->rows[k].gain_rms[1] * 1e4;
        d[k] = r->rows[k].diff_gain_over_floor;
    }
    char rl[64];
    snprintf(rl, sizeof rl, "bf16 output floor %.3g", r->bf16_floor_gain * 1e4);
    svg_bars(f, 50, 60, 470, 290, "row-gain rms vs fp64 (x 1e-4)", 3, gl, 2, sl, g, r->bf16_floor_gain * 1e4, rl);
    const char *sl2[1] = {"coherent part of (last - first)"};
    svg_bars(f, 580, 60, 350, 290, "difference between orders: gain / noise floor", 3, gl, 1, sl2, d, 2.0,
             "2x (FA4 test bound)");
    fprintf(f, "</svg>\n");
    return fclose(f);
}

static int seqlen_svg(const char *path, const fr_seqlen_result *r) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const double W = 960, H = 460, x0 = 70, y0 = 50, w = 560, h = 360;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f'>\n<rect width='100%%' "
               "height='100%%' fill='white'/>\n", W, H);
    svg_text(f, x0 + w / 2, 28, "middle", 14, "Output rel-L2 vs fp64 by sequence length (emulated pipelines)");
    double lo = INFINITY, hi = -INFINITY;
    for (int p = 0; p < r->npipes; p++)
        for (int l = 0; l < r->nlens; l++) {
            double v = r->rel_l2[p][l];
            if (isfinite(v) && v > 0) lo = fmin(lo, v), hi = fmax(hi, v);
        }
    if (!(lo < hi)) lo = 1e-8, hi = 1;
    double llo = floor(log10(lo)), lhi = ceil(log10(hi));
    double xl0 = log2((double)r->len[0]), xl1 = log2((double)r->len[r->nlens - 1]);
    if (xl1 <= xl0) xl1 = xl0 + 1;
    fprintf(f, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' stroke='#444'/>\n", x0, y0, w, h);
    for (double e = llo; e <= lhi; e++) {
        double y = y0 + h - h * (e - llo) / (lhi - llo);
        char lab[16];
        snprintf(lab, sizeof lab, "1e%.0f", e);
        svg_text(f, x0 - 6, y + 4, "end", 10, lab);
        fprintf(f, "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' stroke='#ddd'/>\n", x0, y, x0 + w, y);
    }
    for (int l = 0; l < r->nlens; l++) {
        double x = x0 + w * (log2((double)r->len[l]) - xl0) / (xl1 - xl0);
        char lab[32];
        snprintf(lab, sizeof lab, "%lldK", (long long)(r->len[l] / 1024));
        svg_text(f, x, y0 + h + 16, "middle", 10, lab);
    }
    svg_text(f, x0 + w / 2, y0 + h + 34, "middle", 11, "keys per row (S2)");
    for (int p = 0; p < r->npipes; p++) {
        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' points='", colors[p % 10]);
        for (int l = 0; l < r->nlens; l++) {
            double v = r->rel_l2[p][l];
            if (!isfinite(v)) v = pow(10, lhi); /* overflow: pinned to the top */
            if (v <= 0) v = pow(10, llo);
            double x = x0 + w * (log2((double)r->len[l]) - xl0) / (xl1 - xl0);
            double y = y0 + h - h * (log10(v) - llo) / (lhi - llo);
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fprintf(f, "'/>\n");
        fprintf(f, "<rect x='%.0f' y='%.0f' width='12' height='3' fill='%s'/>\n", x0 + w + 20, y0 + 10 + 18 * p,
                colors[p % 10]);
        svg_text(f, x0 + w + 38, y0 + 15 + 18 * p, "start", 11, r->pipe[p]);
    }
    svg_text(f, x0 + w + 20, y0 + 30 + 18 * r->npipes, "start", 10, "Inf/NaN output: pinned to the top edge");
    fprintf(f, "</svg>\n");
    return fclose(f);
}

/* The end of a study run with --svg: "wrote FILE", or exit status 2 when its writer returned rc != 0. */
static int svg_done(const char *svg, int rc) {
    if (rc != 0) {
        fprintf(stderr, "flashref study: cannot write %s\n", svg);
        return 2;
    }
    printf("wrote %s\n", svg);
    return 0;
}

/* Alike cmd_study.c:do_seqlen: kept apart because each study has its own result type and SVG writer; the closing
 * "write the SVG or fail" lines are svg_done. */
static int do_order_invariance(int argc, char **argv) {
    int64_t T = 1024, W = 512, H = 4, Dl = 512, Dr = 64, seed = 1, threads = 0;
    double beta = 0.25, thr = 8.0;
    bool bwd = true;
    const char *svg = NULL;
    for (int i = 2; i < argc; i += 2) { /* option, value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--no-bwd")) {
            bwd = false;
            i--; /* no value */
            continue;
        }
        if (!v) ok = false;
        else if (!strcmp(a, "--T")) ok = arg_i64(v, 1, 1 << 20, &T);
        else if (!strcmp(a, "--W")) ok = arg_i64(v, 1, 1 << 16, &W);
        else if (!strcmp(a, "--H")) ok = arg_i64(v, 1, 256, &H);
        else if (!strcmp(a, "--dl")) ok = arg_i64(v, 1, 768, &Dl);
        else if (!strcmp(a, "--dr")) ok = arg_i64(v, 0, 768, &Dr);
        else if (!strcmp(a, "--seed")) ok = arg_i64(v, 0, INT64_MAX, &seed);
        else if (!strcmp(a, "--threads")) ok = arg_i64(v, 0, 4096, &threads);
        else if (!strcmp(a, "--beta")) beta = atof(v);
        else if (!strcmp(a, "--threshold")) thr = atof(v);
        else if (!strcmp(a, "--svg")) svg = v;
        else ok = false;
        if (!ok) {
            fprintf(stderr, "flashref study order-invariance: bad option '%s'%s%s\n", a, v ? " " : "", v ? v : "");
            return 2;
        }
    }
    if (W > T) W = T;
    printf("order invariance (FA4 sparse MLA): absorbed sparse MLA, T = S = %lld, W = %lld, H = %lld, D = %lld latent + "
           "%lld rope, beta %g, bf16, seed %lld\n",
           (long long)T, (long long)W, (long long)H, (long long)Dl, (long long)Dr, beta, (long long)seed);
    printf("emulated kernel: fa4-sm100 (exp2 with log2e folded, kv tile 128 slots, reverse tile order, P bf16 RNE)\n");
    fflush(stdout);
    fr_oi_result r;
    fr_error err;
    if (fr_study_order_invariance(T, W, H, Dl, Dr, beta, (uint64_t)seed, thr, bwd, (int)threads, &r, &err) !=
        FR_OK) {
        fprintf(stderr, "flashref study order-invariance: %s\n", err.msg);
        return 2;
    }
    printf("dominant key probability: median %.3f, p90 %.3f\n", r.self_weight_p50, r.self_weight_p90);
    printf("bf16 output floor (bf16(o_ref) vs o_ref): rel-L2 %.3e, row-gain rms %.3e\n\n", r.bf16_floor_rel_l2,
           r.bf16_floor_gain);
    printf("%-20s %-6s %11s %11s | %11s %11s %11s %9s\n", "config", "order", "out rel-L2", "gain rms", "diff rel-L2",
           "diff gain", "noise floor", "gain/floor");
    for (int k = 0; k < 3; k++) {
        const fr_oi_row *w = &r.rows[k];
        for (int o = 0; o < 2; o++) {
            printf("%-20s %-6s %11.3e %11.3e", o ? "" : w->label, o ? "last" : "first", w->out_rel_l2[o],
                   w->gain_rms[o]);
            if (o == 0)
                printf(" | %11.3e %11.3e %11.3e %8.2fx\n", w->diff_rel_l2, w->diff_gain_rms, w->diff_noise_floor,
                       w->diff_gain_over_floor);
            else
                printf(" |\n");
        }
    }
    if (bwd) {
        printf("\ngradient rel-L2 vs fp64 (bf16 gradients; dpsum from the bf16 output / with the o_lo fix)\n");
        printf("%-20s %-6s %21s %21s %21s\n", "config", "order", "dq  no-fix / o_lo", "dk  no-fix / o_lo",
               "dv  no-fix / o_lo");
        for (int k = 0; k < 3; k++) {
            const fr_oi_row *w = &r.rows[k];
            for (int o = 0; o < 2; o++)
                printf("%-20s %-6s %10.3e/%-10.3e %10.3e/%-10.3e %10.3e/%-10.3e\n", o ? "" : w->label,
                       o ? "last" : "first", w->dq[o][0], w->dq[o][1], w->dk[o][0], w->dk[o][1], w->dv[o][0],
                       w->dv[o][1]);
        }
    }
    printf("\n%.1f s\n", r.seconds);
    return svg ? svg_done(svg, oi_svg(svg, &r)) : 0;
}

/* Alike cmd_study.c:do_order_invariance: kept apart because each study has its own result type and SVG writer; the
 * closing "write the SVG or fail" lines are svg_done. */
static int do_seqlen(int argc, char **argv) {
    int64_t lens[FR_SEQLEN_MAX_LENS], S1 = 16, D = 64, seed = 1, threads = 0;
    int nl = 0;
    for (int64_t l = 1024; l <= 65536; l *= 2) lens[nl++] = l;
    const char *svg = NULL;
    for (int i = 2; i < argc; i += 2) { /* option, value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        if (!ok) {
        } else if (!strcmp(a, "--lens")) {
            nl = 0;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok && ok; tok = strtok(NULL, ",")) {
                if (nl >= FR_SEQLEN_MAX_LENS) ok = false;
                else ok = arg_i64(tok, 1, 1 << 20, &lens[nl++]);
            }
            ok = ok && nl > 0;
        } else if (!strcmp(a, "--rows")) ok = arg_i64(v, 1, 4096, &S1);
        else if (!strcmp(a, "--d")) ok = arg_i64(v, 1, 768, &D);
        else if (!strcmp(a, "--seed")) ok = arg_i64(v, 0, INT64_MAX, &seed);
        else if (!strcmp(a, "--threads")) ok = arg_i64(v, 0, 4096, &threads);
        else if (!strcmp(a, "--svg")) svg = v;
        else ok = false;
        if (!ok) {
            fprintf(stderr, "flashref study seqlen: bad option '%s'%s%s\n", a, v ? " " : "", v ? v : "");
            return 2;
        }
    }
    printf("error vs sequence length: %lld query rows x S2 keys, D %lld, q/k/v iid N(0,1) rounded to the pipeline's "
           "dtype, scale D^-0.5, seed %lld\n",
           (long long)S1, (long long)D, (long long)seed);
    printf("pipelines: P rounded to the input dtype (RNE), O accumulated in fp32, one final rounding; exact max "
           "(threshold 0, exp) or lazy (threshold 8, exp2); row sum l accumulated in fp32 or fp16\n");
    fflush(stdout);
    fr_seqlen_result r;
    fr_error err;
    if (fr_study_seqlen(lens, nl, S1, D, (uint64_t)seed, (int)threads, &r, &err) != FR_OK) {
        fprintf(stderr, "flashref study seqlen: %s\n", err.msg);
        return 2;
    }
    printf("\noutput rel-L2 vs fp64 (Inf/NaN outputs counted in brackets)\n%-24s", "pipeline \\ S2");
    for (int l = 0; l < r.nlens; l++) printf(" %9lldK", (long long)(r.len[l] / 1024));
    printf("\n");
    for (int p = 0; p < r.npipes; p++) {
        printf("%-24s", r.pipe[p]);
        for (int l = 0; l < r.nlens; l++) {
            if (r.nonfinite[p][l]) printf(" %9s", "[inf]");
            else printf(" %10.2e", r.rel_l2[p][l]);
        }
        printf("\n");
    }
    printf("\nsoftmax_sum max relative error (rescaled to the fp64 max)\n%-24s", "pipeline \\ S2");
    for (int l = 0; l < r.nlens; l++) printf(" %9lldK", (long long)(r.len[l] / 1024));
    printf("\n");
    for (int p = 0; p < r.npipes; p++) {
        printf("%-24s", r.pipe[p]);
        for (int l = 0; l < r.nlens; l++) printf(" %10.2e", r.sum_rel[p][l]);
        printf("\n");
    }
    printf("\n%.1f s\n", r.seconds);
    return svg ? svg_done(svg, seqlen_svg(svg, &r)) : 0;
}

int cmd_study(int argc, char **argv) {
    if (cli_wants_help(argc, argv) || argc < 2) {
        study_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "order-invariance")) return do_order_invariance(argc, argv);
    if (!strcmp(argv[1], "seqlen")) return do_seqlen(argc, argv);
    fprintf(stderr, "flashref study: unknown study '%s'\n", argv[1]);
    study_usage(stderr);
    return 2;
}
