/* The checks of the optional inputs (validate_opts.c), in the order fr_problem_from_fwd (validate_problem.c) runs
 * them after q/k/v: each fills its part of pb or returns the rule's status. */
#ifndef FR_CORE_VALIDATE_OPTS_H
#define FR_CORE_VALIDATE_OPTS_H

#include "core/problem.h"

fr_status vd_check_mask(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);
fr_status vd_check_pse(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);
fr_status vd_check_dropout(const fr_params *p, const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);
fr_status vd_check_sink(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);
fr_status vd_check_topk(const fr_fwd_inputs *in, fr_problem *pb, fr_error *err);

#endif
