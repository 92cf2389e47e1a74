/* The distributed layer (design.md "Growth path"): one problem, or a list of cases, split across MPI ranks. It sits
 * above the engines and below tools/, and is built only when an MPI is found (FR_HAVE_MPI); without one, or when the
 * process was not started by mpirun, everything here runs as a single process of rank 0 of 1.
 *
 * One problem (fr_dist_fwd / fr_dist_bwd, golden engine): each rank computes a contiguous part of the golden's fixed
 * task grid (src/golden/golden_part.h: (head, query block) forward and pass A, (kv head, key block) pass B), with
 * the whole K/V replicated on every rank, into full-size output tensors; the parts are merged onto rank 0 by a
 * bitwise XOR reduction of each rank's changes (every element has exactly one owner, so the merge moves bits and
 * never adds numbers). The grid does not depend on the rank count: rank 0's outputs are bit-identical to the
 * single-process fr_fwd / fr_bwd for every rank count. Other engines run whole on rank 0. A case run for its
 * files (fr_dist_run_to_dir, dist_io.c) skips the merge: each rank writes its own rows into the output .npy files,
 * after reading only the query-side rows its tasks use (fr_dist_case_load, dist_read.c). */
#ifndef FR_DIST_DIST_H
#define FR_DIST_DIST_H

#include "flashref.h"

#include <stdint.h>

typedef struct fr_dist {
    int rank, size; /* 0 of 1 when not under mpirun */
    int active;     /* MPI was initialised here (and must be finalised) */
} fr_dist;

/* Initialises MPI when the environment says mpirun started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
 * PMI_SIZE), else leaves d as rank 0 of 1 without touching MPI: a plain `flashref run` stays a plain process. */
void fr_dist_init(int *argc, char ***argv, fr_dist *d);
void fr_dist_finalize(fr_dist *d);

/* Forward / backward of one problem across the ranks; every rank must call it with the same problem (inputs read
 * by each rank) and its own output tensors (of the same shapes and strides), whatever they hold: the golden split
 * first copies rank 0's output bytes to the other ranks, so the merge never depends on them. Returns the same status
 * on every rank (the first failure's, by rank); rank 0's outputs hold the result, the others' no result. */
fr_status fr_dist_fwd(const fr_dist *d, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                      const fr_engine *e, fr_error *err);
fr_status fr_dist_bwd(const fr_dist *d, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                      const fr_engine *e, fr_error *err);

/* One case across the ranks with its outputs written in parallel into dir (collective; the case, loaded by every
 * rank, and o, allocated by fr_case_alloc_outputs on every rank). Golden engine: each rank computes its part of
 * the task grid (no merge); rank 0 creates each output .npy (header, data area of the full size) in dir; after a
 * barrier every rank opens each file (no O_CREAT, O_NOFOLLOW), checks that its header and size are the ones
 * expected, and pwrite()s only the rows its tasks own (the backward's dk/dv rows are owned whole by one pass B
 * task, so nothing is reduced across ranks; dsink by rank 0). The files are byte-identical to a single process's
 * fr_case_write_outputs. Other engines run whole on rank 0, which writes every file. Under one process it is
 * fr_fwd / fr_bwd then fr_case_write_outputs. With the golden split, o holds only this rank's part afterwards
 * (the other elements keep their prefill). *written (may be NULL): the bytes this rank wrote (headers and data).
 * Returns the same status on every rank; on failure after rank 0 created the files it removes them (a half-written
 * output must not look like a result). The files must be on a file system every rank sees under the same path. */
struct fr_case;
struct fr_case_outputs;
fr_status fr_dist_run_to_dir(const fr_dist *d, const struct fr_case *c, struct fr_case_outputs *o,
                             const fr_engine *e, const char *dir, int64_t *written, fr_error *err);

/* Loads case dir on this rank (no communication). Under R > 1 ranks with the golden engine, the query-side inputs
 * are read only where this rank's part of the task grid reads them (pread of its rows, the rest zero-filled and never
 * touched): a forward's query and query_rope; a backward's query, query_rope, dy, attention_in, softmax_max and
 * softmax_sum, at the rows fr_golden_bwd_need names (golden_part.h). K, V and the other inputs are read whole. Any
 * other case, and one whose problem does not validate, is read whole, as fr_case_load reads it. *read and *total
 * (may be NULL): the bytes of query / query_rope data read, and their full size. */
fr_status fr_dist_case_load(const fr_dist *d, const char *dir, const fr_engine *e, struct fr_case *c, int64_t *read,
                            int64_t *total, fr_error *err);

/* Whether every rank read the same case (collective; after fr_dist_case_load, before computing): a digest of
 * dir/case.json and of every input file c lists, each read whole and streamed (dist_digest.c), compared across the
 * ranks. FR_E_FORMAT on every rank, naming the first file and rank that differ from rank 0, when they do (a case
 * folder that is not the same on every node); FR_OK under one process. A rank that could not load the case passes
 * c NULL (and every rank fails), so that no rank waits for it. */
struct fr_case;
fr_status fr_dist_same_case(const fr_dist *d, const char *dir, const struct fr_case *c, fr_error *err);

/* The status every rank returns (collective): the first failing rank's (by rank), with its message where it is
 * this rank, "dist: rank K of R failed" elsewhere. */
fr_status fr_dist_agree(const fr_dist *d, fr_status st, fr_error *err);
/* Whether any rank passes a nonzero flag (collective; flag itself when single). */
int fr_dist_any(const fr_dist *d, int flag);
/* The sum of v over the ranks (collective). */
int64_t fr_dist_sum(const fr_dist *d, int64_t v);
/* The largest value over the ranks (collective). */
int64_t fr_dist_max(const fr_dist *d, int64_t v);
void fr_dist_barrier(const fr_dist *d);
/* Merges a byte buffer onto rank 0: each rank passes its buffer and the bytes it started from (base: the same
 * length); rank 0 ends with base XOR (the XOR of every rank's buf ^ base) = every rank's changes (collective). */
int fr_dist_merge_bytes(const fr_dist *d, void *buf, const void *base, size_t n);

/* The suite's gather (fr_suite_opts.gather, ud = the fr_dist): every case computed by rank k % R is sent to rank 0
 * (the result record and its row gains), in case order; returns the first failing rank's status everywhere (and on
 * rank 0 alone FR_E_NOMEM when it could not hold a case's row gains: every case is still received). */
struct fr_suite_result;
fr_status fr_dist_gather_cases(void *ud, struct fr_suite_result *res, int total, const unsigned char *mine,
                               fr_status st, fr_error *err);

#endif
