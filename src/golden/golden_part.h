/* The golden's work split into parts, for a layer above the engines (src/dist): part `rank` of `size` computes a
 * contiguous range of the golden's fixed task grid and writes only the output elements those tasks own:
 *   forward:  tasks (head, query block of GD_BR rows), in (h, b, block) order: their attention_out rows and
 *             softmax max/sum;
 *   backward: pass A tasks (head, query block): their dq / dq_rope rows; pass B tasks (kv head, key block of GD_BC):
 *             their dk / dv / dk_rope rows; dsink (cheap: per-row terms from the inputs) is written by part 0. A
 *             part reads, and its pre-pass computes D_i for, only the query-side rows fr_golden_bwd_need names.
 * The grid depends on the problem only, never on size, and each element is computed by the same arithmetic
 * whichever part owns it: the union of the parts is bit-identical to fr_golden_fwd / fr_golden_bwd. */
#ifndef FR_GOLDEN_PART_H
#define FR_GOLDEN_PART_H

#include "core/problem.h"

typedef struct fr_golden_part {
    int rank, size; /* 0 <= rank < size */
} fr_golden_part;

/* The problem must come from fr_problem_from_fwd / _bwd and the outputs be checked (as fr_fwd / fr_bwd do). */
fr_status fr_golden_fwd_part(const fr_problem *pb, const fr_params *p, const fr_fwd_inputs *in,
                             const fr_fwd_outputs *out, const fr_engine *e, const fr_golden_part *part, fr_error *err);
fr_status fr_golden_bwd_part(const fr_problem *pb, const fr_params *p, const fr_bwd_inputs *in,
                             const fr_bwd_outputs *out, const fr_engine *e, const fr_golden_part *part, fr_error *err);

/* [*t0, *t1): the tasks of part `part` among n (contiguous, balanced by count; all of them when part is NULL). */
static inline void fr_golden_part_range(const fr_golden_part *part, int64_t n, int64_t *t0, int64_t *t1) {
    if (!part || part->size <= 1) {
        *t0 = 0, *t1 = n;
        return;
    }
    *t0 = n * part->rank / part->size;
    *t1 = n * (part->rank + 1) / part->size;
}

/* Which output rows a part owns, for a layer that writes them itself (src/dist writes each rank's rows into the
 * output files). Q: the forward's and pass A's grid, (query head, GD_BR query rows); KV: pass B's, (kv head, GD_BC
 * keys). The same grid, order and split as fr_golden_fwd_part / fr_golden_bwd_part use (golden_part.c). */
typedef enum fr_golden_grid { FR_GOLDEN_GRID_Q = 0, FR_GOLDEN_GRID_KV = 1 } fr_golden_grid;

typedef struct fr_golden_rows {
    int64_t head;  /* query head (Q) or kv head (KV) */
    int64_t b;     /* batch */
    int64_t row0;  /* the batch's first row in the T dimension (TND), else 0 */
    int64_t i0, n; /* rows [i0, i0 + n) of batch b */
} fr_golden_rows;

/* Calls fn for each task of the part (all tasks when part is NULL), in task order; stops at the first nonzero
 * return of fn and returns it. FR_E_NOMEM / FR_E_OVERFLOW (as an int) when the grid cannot be built. */
int fr_golden_part_rows(const fr_problem *pb, fr_golden_grid grid, const fr_golden_part *part,
                        int (*fn)(void *ud, const fr_golden_rows *r), void *ud);

/* Which query-grid tasks (index h * TQ + block, TQ the query blocks of all batches: the order fr_golden_part_rows
 * walks) a backward part reads rows of, so that a layer that loads the inputs (src/dist) and the golden's pre-pass
 * agree on one set. FR_GOLDEN_NEED_Q: q / q_rope rows, for its pass A tasks and, for each of its pass B tasks (kv
 * head n2, a key block of batch b), every block of batch b of the group's query heads n2 G .. n2 G + G - 1.
 * FR_GOLDEN_NEED_D: D_i and the stored m, l (dy, attention_in, softmax max/sum rows): the same tasks, and on part 0
 * of a problem with a sink every task (dsink, written by part 0, sums every row's term). */
enum { FR_GOLDEN_NEED_Q = 1, FR_GOLDEN_NEED_D = 2 };

/* The need of each of the *n query-grid tasks of a backward part (malloc'd, the caller frees; every task both bits
 * when part is NULL). NULL with *rc = FR_E_NOMEM / FR_E_OVERFLOW (as an int) when it cannot be built. */
unsigned char *fr_golden_bwd_need(const fr_problem *pb, const fr_golden_part *part, int64_t *n, int *rc);

/* Calls fn, as fr_golden_part_rows does, for each query-grid task whose need has a bit of mask, in task order. */
int fr_golden_need_rows(const fr_problem *pb, const unsigned char *need, unsigned mask,
                        int (*fn)(void *ud, const fr_golden_rows *r), void *ud);

#endif
