/* Parameter and engine defaults (spec section 1.2); engine names are a column of the engine table (engine/engine.c). */
#include "core/core.h"

#include <string.h>

fr_params fr_params_default(void) {
    fr_params p;
    memset(&p, 0, sizeof p);
    p.head_num = 0; /* required */
    p.input_layout = FR_LAYOUT_NONE;
    p.scale_value = 1.0;
    p.keep_prob = 1.0;
    p.pre_tokens = FR_TOKENS_MAX;
    p.next_tokens = FR_TOKENS_MAX;
    p.inner_precise = 0;
    p.sparse_mode = FR_SPARSE_DEFAULT_MASK;
    p.pse_type = FR_PSE_OUTER_ADD_MUL;
    p.out_dtype = FR_DT_NONE;
    p.softmax_layout = FR_SOFTMAX_DEFAULT;
    return p;
}

fr_engine fr_engine_default(fr_engine_kind kind) {
    fr_engine e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    return e;
}
