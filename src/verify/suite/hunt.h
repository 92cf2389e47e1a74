/* The hunt (docs/verifier.md, "The hunt"): random configurations drawn inside what the implementation supports (its
 * declared capabilities, iut/caps.h, and what it SKIPped so far), weighted towards the corners where attention kernels
 * break, each judged like a suite draw; the failures clustered by diagnosis, kind and configuration, one
 * representative per cluster shrunk (cases/shrink.h), written as a regression case and, through the implementation's
 * repro hook, as a standalone reproducer.
 *
 *   fr_hunt_opts o = fr_hunt_opts_default();  o.max_draws = 200;  o.out_dir = "build/hunt/x";
 *   fr_hunt_result r;  fr_hunt_run(iut, &o, &r, &err);  ... r.clusters[k] ...  fr_hunt_result_free(&r);
 */
#ifndef FR_VERIFY_HUNT_H
#define FR_VERIFY_HUNT_H

#include "verify/suite/suite.h"

#include <signal.h>
#include <stdio.h>

/* What a failure is: wrong (order-one error, garbage, non-finite output, a failing status) or imprecise (a few
 * times the plain reference's error). Wrong clusters are listed first. */
typedef enum fr_hunt_kind { FR_HUNT_WRONG = 0, FR_HUNT_IMPRECISE = 1 } fr_hunt_kind;
const char *fr_hunt_kind_name(fr_hunt_kind k); /* "wrong", "imprecise" */

/* The corners a draw can be pushed into (besides boundary sizes): named in findings. */
typedef enum fr_hunt_corner {
    FR_CORNER_NONE = 0,
    FR_CORNER_DECODE,        /* 1..8 query rows, batch > 1, a broadcast mask [S1,S2] / [1,1,S1,S2] / [B,1,S1,S2] */
    FR_CORNER_PAD_RIGHT,     /* right-padding mask [B,1,S1,S2] */
    FR_CORNER_PAD_LEFT,      /* left-padding mask */
    FR_CORNER_NEARLY_MASKED, /* one key kept per row, some rows fully masked */
    FR_CORNER_FIRST_MASKED,  /* the first 128 keys masked, every 7th row fully masked */
    FR_CORNER_EXTREME,       /* large-magnitude inputs: extreme scores */
    FR_CORNER_NAN_MASKED,    /* NaN / Inf in K and V at masked positions */
    FR_CORNER_ODD_KEYS,      /* a prime key count or a tile residue (64k +- 1, 128k +- 1) */
    FR_CORNER_HEAD_DIM,      /* a head dim from 1..576 off the usual ones */
    FR_CORNER_GQA_BCAST,     /* GQA with a broadcast mask */
    FR_CORNER_CAUSAL_NE,     /* causal (sparse_mode 2 or 3) with S1 != S2: top-left vs bottom-right alignment */
    FR_CORNER_VARLEN_EMPTY,  /* TND with an empty query sequence among non-empty ones */
    FR_CORNER_COUNT
} fr_hunt_corner;
const char *fr_hunt_corner_name(fr_hunt_corner c);

/* One draw of the hunt: the configuration, its value post-processing and the mask handover hint. */
typedef struct fr_hunt_draw {
    fr_draw d;
    fr_suite_mod mod;
    fr_mask_hint hint;
    fr_hunt_corner corner;
} fr_hunt_draw;

typedef struct fr_hunt_progress {
    int draws, judged, skipped, failed, warned, clusters;
    double elapsed_s, budget_s;
    const char *phase; /* "drawing", "shrinking", "writing" */
} fr_hunt_progress;

typedef struct fr_hunt_opts {
    uint64_t seed;          /* draws depend only on the seed and the answers so far */
    double budget_s;        /* wall-clock budget for drawing (0: none; then max_draws must be > 0) */
    int max_draws;          /* cap on draws (0: none): a budget that makes a hunt reproducible draw for draw */
    const char *out_dir;    /* findings.markdown, findings.json, cluster_K/ (NULL: nothing written) */
    int threads;
    fr_judge_opts judge;
    fr_draw_limits lim;
    int max_shrink;         /* clusters shrunk (the first, wrong before imprecise; default 8) */
    bool no_corners;        /* plain matrix draws only (for comparison) */
    bool no_learn;          /* do not learn from SKIPs */
    FILE *trace;            /* non-NULL: one line per draw (name, verdict, diagnosis, corner, configuration) */
    volatile sig_atomic_t *stop; /* set (by a signal handler): stop after the current judgement, write nothing */
    void (*progress)(void *ud, const fr_hunt_progress *p);
    void *progress_ud;
} fr_hunt_opts;

fr_hunt_opts fr_hunt_opts_default(void);

typedef struct fr_hunt_cluster {
    fr_diag diag;
    fr_hunt_kind kind;
    fr_verdict verdict;       /* FAIL, or WARN (precision-only) */
    char key[160];            /* the configuration part of the cluster: op, dtype, corner, mask handover */
    int count;                /* draws in the cluster */
    fr_hunt_draw first;       /* its first draw */
    fr_hunt_draw smallest;    /* the shrunk representative (== first when not shrunk) */
    char first_config[400], smallest_config[400];
    char why[384];            /* the first draw's verdict line */
    double rel_l2, x_plain;   /* attention_out (or dq) rel-L2 vs the golden and as a multiple of the plain's */
    int shrink_runs;          /* 0: not shrunk */
    char case_dir[512];       /* written regression case ("" none) */
    char repro[512];          /* written reproducer ("" none) */
    char repro_note[300];     /* why there is no reproducer */
} fr_hunt_cluster;

typedef struct fr_hunt_result {
    int draws, judged, skipped, passed, warned, failed;
    int not_drawable;         /* draws that found nothing inside the capabilities (drawn anyway) */
    double seconds;
    bool interrupted;         /* opts.stop was set: nothing was written */
    char stopped[FR_MSG_LEN]; /* non-empty: the implementation gave up or its declaration was refused */
    char caps[400];           /* the capabilities the draws honoured ("nothing declared") */
    char learned[1200];       /* axis values and pairs of values excluded after SKIPs */
    int pairs_covered, pairs_allowed; /* pairwise coverage of the judged draws */
    fr_hunt_cluster *clusters;
    int nclusters;
} fr_hunt_result;

/* Runs the hunt. FR_OK when it ran (whatever it found; r->interrupted when stopped); FR_E_INVALID_ARG for options
 * that bound nothing; FR_E_IO when out_dir cannot be written. */
fr_status fr_hunt_run(fr_iut *iut, const fr_hunt_opts *o, fr_hunt_result *r, fr_error *err);
void fr_hunt_result_free(fr_hunt_result *r);
/* Shrinks c's first draw (fr_hunt_run does it for the first max_shrink clusters): while a smaller configuration
 * (same value corner and mask handover) still gives the same verdict and diagnosis, take it. */
fr_status fr_hunt_shrink_cluster(fr_iut *iut, const fr_hunt_opts *o, fr_hunt_cluster *c, fr_error *err);

/* The findings as JSON ("flashref-hunt/1") and markdown (malloc'd text). */
fr_status fr_hunt_json(const fr_hunt_result *r, const fr_iut *iut, const fr_hunt_opts *o, char **out, fr_error *err);
fr_status fr_hunt_markdown(const fr_hunt_result *r, const fr_iut *iut, const fr_hunt_opts *o, char **out,
                           fr_error *err);

/* ---- drawing (hunt_draw.c) ---- */

/* Whether the declared capabilities admit spec (with the mask hint); *why (when non-NULL) names the first axis that
 * does not. */
bool fr_hunt_caps_admit(const fr_caps *c, const fr_gen_spec *s, fr_mask_hint hint, const char **why);

/* What the hunt learned from SKIPs. A SKIPped draw's suspects are its axis values that no judged draw has shown
 * yet; a still unjudged value is excluded once it was the only suspect of FR_HUNT_LEARN_SKIPS SKIPped draws, or one
 * of at most FR_HUNT_LEARN_SUSPECTS suspects of one more (a value that merely came with an unsupported one is not
 * blamed: it is judged in other draws), on axes the declaration leaves open; on a declared axis (whose values SKIP
 * for conditions outside the vocabulary) only with twice the evidence: a declared value that is never judged is a
 * declaration that promised too much. A SKIPped draw all of whose values were judged elsewhere SKIPs for a
 * combination (a framework that takes a pse in fp32 only, a sink that a 16-bit tensor cannot hold): its suspects are
 * its pairs of values that no judged draw has shown together, and a pair is excluded once it was a suspect of
 * FR_HUNT_LEARN_PAIR_SKIPS such draws and is still never judged. Pairs are learned on every axis, declared or not (a
 * combination is outside the declaration's vocabulary). Recomputed after every draw from the kept SKIPped cells. */
#define FR_HUNT_LEARN_SKIPS 2
#define FR_HUNT_LEARN_SUSPECTS 2
#define FR_HUNT_LEARN_PAIR_SKIPS 3
#define FR_HUNT_LEARN_KEEP 2048
typedef struct fr_hunt_learn {
    int judged[FR_AX_COUNT][FR_AX_MAX_VALUES];
    unsigned char judged_pair[FR_AX_COUNT][FR_AX_MAX_VALUES][FR_AX_COUNT][FR_AX_MAX_VALUES]; /* 0, 1: seen together */
    unsigned char skipped_cells[FR_HUNT_LEARN_KEEP][FR_AX_COUNT];
    int nskipped;
    bool excluded[FR_AX_COUNT][FR_AX_MAX_VALUES];
    bool excluded_declared[FR_AX_COUNT][FR_AX_MAX_VALUES]; /* with twice the evidence: even where declared */
    bool excluded_pair[FR_AX_COUNT][FR_AX_MAX_VALUES][FR_AX_COUNT][FR_AX_MAX_VALUES]; /* [a][v][b][w], a < b */
    unsigned short pair_blame[FR_AX_COUNT][FR_AX_MAX_VALUES][FR_AX_COUNT][FR_AX_MAX_VALUES]; /* scratch */
} fr_hunt_learn;
void fr_hunt_learn_note(fr_hunt_learn *l, const int cell[FR_AX_COUNT], bool judged);
/* Whether learning may exclude values of axis a for direction dir (0 fwd, 1 bwd): not where the declaration c names
 * that axis (a declared value that SKIPs does so for a reason outside the vocabulary, and stays drawn). */
bool fr_hunt_learn_applies(const fr_caps *c, int dir, int a);
bool fr_hunt_learn_excluded(const fr_hunt_learn *l, int axis, int value);
/* Whether learning excludes value v of axis a for direction dir under the declaration c (fr_hunt_learn_applies, or
 * the evidence that overrides a declaration). */
bool fr_hunt_learn_excludes(const fr_hunt_learn *l, const fr_caps *c, int dir, int axis, int value);
/* Whether the cell holds a pair of values that learning excluded. */
bool fr_hunt_learn_pair_in(const fr_hunt_learn *l, const int cell[FR_AX_COUNT]);

/* Draw k of a hunt (name "hunt_K"): inside caps (NULL: anything) and what l excludes (NULL: nothing), pushed into a
 * corner or to boundary sizes most of the time (unless no_corners). FR_OK; *inside false when no candidate fitted
 * (the last candidate is returned). */
void fr_hunt_draw_one(uint64_t seed, int k, const fr_caps *caps, const fr_hunt_learn *l, const fr_draw_limits *lim,
                      bool no_corners, fr_hunt_draw *out, bool *inside);

#endif
