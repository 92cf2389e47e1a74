/* The golden's work split into parts, for a layer above the engines (src/dist): part `rank` of `size` computes a
 * contiguous range of the golden's fixed task grid and writes only the output elements those tasks own:
 *   forward:  tasks (head, query block of GD_BR rows), in (h, b, block) order: their attention_out rows and
 *             softmax max/sum;
 *   backward: pass A tasks (head, query block): their dq / dq_rope rows; pass B tasks (kv head, key block of GD_BC):
 *             their dk / dv / dk_rope rows; dsink (cheap: per-row terms from the inputs) is written by part 0.
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

#endif
