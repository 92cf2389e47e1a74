/* The verification suites (docs/verification-method.md 4): named sets of cases in seven categories, each case run
 * against an implementation under test, the fp64 golden and the ideal pipeline of its dtype, then judged
 * (judge.h). Cases are generated in memory (casegen.h) and post-processed where a category needs it (NaN in masked
 * K/V, very negative scores, V = identity, permuted top-k lists); regression cases are read from case directories
 * with stored golden outputs.
 *
 *   fr_suite_opts o = fr_suite_opts_default();   o.set = "quick";
 *   fr_suite_result r;  fr_suite_run(iut, &o, &r, &err);   ... r.overall, r.cases[k].j ...   fr_suite_result_free(&r);
 */
#ifndef FR_VERIFY_SUITE_H
#define FR_VERIFY_SUITE_H

#include "verify/cases/sets.h"
#include "verify/iut/iut.h"

#define FR_SUITE_MAX_RANDOM 100000

typedef struct fr_case_result {
    char name[96];
    fr_suite_cat cat;
    unsigned tags;
    unsigned purpose; /* the tags the case was designed for (its diagnosis counts triple in the summary) */
    bool bwd;
    fr_dtype dtype;
    int64_t S1, S2;
    double seconds;
    fr_judgement j;  /* owns its gains */
    char extra[160]; /* category-specific note (determinism runs, order variants, properties) */
    char series[32]; /* length series this case belongs to ("" none) */
    char info[192];  /* implementation-defined cases: INFO, which reading the implementation follows ("" none) */
    bool has_cell;   /* generated case: cell is its place in the option matrix (matrix.h) */
    int cell[FR_AX_COUNT];
    char config[400];  /* random draws: the full configuration (fr_matrix_describe) */
    char smallest[400]; /* failing random draws, with shrinking: the smallest configuration failing the same way */
    int shrink_runs;    /* judgements the shrinking took (0: not shrunk) */
    bool input_error;   /* the case itself could not be used (a broken or invalid case directory, a stored golden
                           that cannot be loaded or that a fresh ideal pipeline contradicts): the run's input error
                           (exit 2), never the implementation's FAIL */
} fr_case_result;

typedef struct fr_suite_result fr_suite_result;
typedef struct fr_suite_refs fr_suite_refs; /* suite_refs.h */
typedef void (*fr_suite_progress_fn)(void *ud, int done, int total, const fr_case_result *last);

typedef struct fr_suite_opts {
    const char *set;    /* default "default" */
    const char *filter; /* only cases whose name contains it (NULL: all) */
    uint64_t seed;      /* default 20260101 */
    int threads;        /* IUT threads (0: default) */
    fr_judge_opts judge;
    const char *regression_dir; /* directory of stored regression cases (NULL: no regression cases) */
    const char *only;           /* only the case of exactly this name (NULL: all); "rnd_K" names draw K of a batch */
    int random;                 /* > 0: instead of the set, this many random draws from the option matrix (seed) */
    bool shrink;                /* shrink every failing random draw (cases/shrink.h; suite_shrink.c) */
    const char *promote_dir;    /* write every failing draw's smallest configuration there as a regression case */
    /* set_inner_precise: every case of the run (generated, order variants, regression, --write) takes inner_precise
     * (0..2; semantics-decisions.md D17) instead of its own; the golden, ideal and plain references ignore it. */
    bool set_inner_precise;
    int inner_precise;
    fr_suite_progress_fn progress;
    void *progress_ud;
    /* Distribution across processes (mpirun flashref suite, src/dist): with parts > 1 this run computes only the
     * cases k (regression directories first, then the set's cases, in order) with k % parts == part, each at its
     * place k of res->cases; gather (collective, given this part's status), when set, then fills part 0's res->cases with every other part's cases (mine[k]:
     * whether this part computed case k) before the length series and the summary, so part 0's result is that
     * of a single run. 0 / 1 / NULL: a single run. */
    int part, parts;
    fr_status (*gather)(void *ud, fr_suite_result *res, int total, const unsigned char *mine, fr_status st,
                        fr_error *err);
    void *gather_ud;
    /* refs: a cache of the references (golden, ideal pipeline, plain reference) shared by the runs given it
     * (suite_refs.h; flashref selftest, which judges the same cases for every implementation of its zoo); NULL:
     * every run computes its own. It changes no verdict and no number, only the time. */
    fr_suite_refs *refs;
} fr_suite_opts;

fr_suite_opts fr_suite_opts_default(void);

/* A cache of references for fr_suite_opts.refs, keeping at most max_bytes of outputs (past that, runs compute the
 * references they do not find, as without a cache); NULL when out of memory. Free it after the last run using it. */
fr_suite_refs *fr_suite_refs_new(size_t max_bytes);
void fr_suite_refs_free(fr_suite_refs *r);
/* The cases it holds references of, and the bytes of outputs kept. */
void fr_suite_refs_size(const fr_suite_refs *r, int *cases, size_t *bytes);

struct fr_suite_result {
    fr_case_result *cases;
    int n;
    int count[FR_CAT_COUNT][4]; /* [category][verdict] */
    fr_verdict overall;         /* FAIL if any FAIL, else WARN if any WARN, else PASS (SKIP only: SKIP) */
    fr_diag primary;            /* the diagnosis most failing (else warning) cases share; specific ones first (cases
                                   that are input errors do not count) */
    int input_errors;           /* cases with input_error: the case, not the implementation, was at fault */
    double seconds;
    int planned;                /* cases the set holds (n < planned when the run stopped early) */
    char stopped[FR_MSG_LEN];   /* non-empty: the run stopped early, and why (fr_iut_gave_up) */
};

/* Runs the set against iut. FR_OK when the suite ran (whatever the verdicts); FR_E_INVALID_ARG for an unknown set. */
fr_status fr_suite_run(fr_iut *iut, const fr_suite_opts *o, fr_suite_result *res, fr_error *err);
void fr_suite_result_free(fr_suite_result *r);
/* One case judged as the suite judges it (the IUT, the golden (or stored_golden when non-NULL), the ideal pipeline,
 * the plain reference and the judge), with no category extras: the verdict in *cr (name and category set by the
 * caller). fr_verify_judge_outputs's way in. */
fr_status fr_suite_judge_case(fr_iut *iut, const fr_case *c, const fr_case_outputs *stored_golden,
                              const fr_suite_opts *o, fr_case_result *cr, fr_error *err);

/* Writes the generated cases of a set as case directories DIR/NAME (inputs + case.json, golden fp64 outputs in
 * DIR/NAME/golden/, and DIR/NAME/suite.txt with the category and tags) so that an external implementation can run
 * them and `flashref verify` judge them. Order-invariance variants are written as separate cases. */
fr_status fr_suite_write_cases(const char *set, const char *filter, uint64_t seed, const char *dir, int *written,
                               fr_error *err);
/* The same for the cases k with k % parts == part only (one rank's share; each case directory is written whole by
 * one part). */
fr_status fr_suite_write_cases_part(const char *set, const char *filter, uint64_t seed, const char *dir, int part,
                                    int parts, int *written, fr_error *err);

/* The same for the cases o selects (set, filter, only, or random draws with their seed). */
fr_status fr_suite_write_opts(const fr_suite_opts *o, const char *dir, int *written, fr_error *err);

/* Shrinks a failing configuration (cases/shrink.c, asked by suite_shrink.c): while a smaller one (sizes halved, heads
 * and batches fewer, features switched off one by one) still FAILs with diagnosis `diag`, take it. *smallest receives the last such one;
 * *runs the judgements made (at most FR_SHRINK_MAX_RUNS). */
#define FR_SHRINK_MAX_RUNS 80
fr_status fr_suite_shrink(fr_iut *iut, const fr_gen_spec *spec, fr_diag diag, const fr_suite_opts *o,
                          fr_draw *smallest, int *runs, fr_error *err);

/* Judges case directories (outputs already written by an implementation; `flashref verify`). Each directory is
 * judged against a fresh golden run (fp64) and the ideal pipeline; a suite.txt beside case.json supplies the
 * category and tags. Fully masked rows follow D1 for external implementations (opt->external is forced on). */
fr_status fr_suite_verify_dirs(char *const *dirs, int ndirs, const fr_suite_opts *o, fr_suite_result *res,
                               fr_error *err);

/* Judges msprobe dumps (`flashref verify --msprobe`; docs/ascend.md): every npu_fusion_attention[_grad][_v2|_v3]
 * call (and MindSpeed's) of the dump directories at or below root (io/msprobe.h: fr_mp_find) rebuilt as a case
 * (cases/npu_call.h), a backward entry as the grad call of its forward, and the NPU's dumped outputs judged against
 * a fresh golden and the ideal pipeline, fully masked rows implementation-defined. Results are named by their dump
 * names (with several dumps, prefixed by the dump's directory below root) in dump.json order; filter / only select by
 * that name. A dump or call that cannot be read is its result's FAIL "cannot load ..." (an input error), a call
 * whose drop mask only the NPU knows a SKIP saying so. write_dir (NULL: none): each rebuilt call is also written as
 * a case directory write_dir/NAME with the NPU's outputs beside its inputs. *n_dumps, *n_other (may be NULL): the
 * dump directories read and the entries of other APIs they held. FR_E_IO / FR_E_FORMAT when root holds no dump. */
fr_status fr_suite_verify_msprobe(const char *root, const fr_suite_opts *o, const char *write_dir,
                                  fr_suite_result *res, int *n_dumps, int *n_other, fr_error *err);

/* The pairwise coverage of a run: cv gets every generated case's cell (cv initialized by the caller). */
void fr_suite_coverage(const fr_suite_result *r, fr_coverage *cv);
/* Suite-level summary after a run: fills count, overall and primary. */
void fr_suite_summarize(fr_suite_result *r);

#endif
