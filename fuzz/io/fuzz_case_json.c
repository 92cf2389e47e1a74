/* libFuzzer: the case.json parser on arbitrary text. What parses must be written back by fr_case_json and parse
 * again to the same problem (the format is a fixed point). */
#include "io/casedir.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_arr(const int64_t *a, const int64_t *b, int64_t n) {
    if (!a != !b) return 0;
    return !a || n == 0 || !memcmp(a, b, (size_t)n * sizeof *a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fr_case c;
    fr_error err;
    if (fr_case_parse_json((const char *)data, size, &c, "fuzz", &err) != FR_OK) return 0;
    char *json;
    /* Inputs are listed by presence of a tensor; mark the listed ones present so they are written back. */
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++)
        if (c.files[k]) fr_case_input_slot(&c.in, (fr_case_input)k)->dtype = FR_U8;
    if (fr_case_json(c.op, c.dtype, &c.params, &c.in, &json, &err) == FR_OK) {
        fr_case r;
        if (fr_case_parse_json(json, strlen(json), &r, "fuzz", &err) != FR_OK) abort();
        const fr_params *a = &c.params, *b = &r.params;
        if (r.op != c.op || r.dtype != c.dtype || a->head_num != b->head_num || a->input_layout != b->input_layout ||
            !(a->scale_value == b->scale_value || (a->scale_value != a->scale_value)) ||
            a->pre_tokens != b->pre_tokens || a->sparse_mode != b->sparse_mode || a->prefix_len != b->prefix_len ||
            a->actual_seq_len != b->actual_seq_len || !same_arr(a->prefix, b->prefix, a->prefix_len) ||
            !same_arr(a->actual_seq_qlen, b->actual_seq_qlen, a->actual_seq_len) ||
            !same_arr(a->actual_seq_kvlen, b->actual_seq_kvlen, a->actual_seq_len) || a->out_dtype != b->out_dtype ||
            a->softmax_layout != b->softmax_layout)
            abort();
        for (int k = 0; k < FR_CASE_NUM_INPUTS; k++)
            if (!c.files[k] != !r.files[k]) abort();
        fr_case_free(&r);
        free(json);
    }
    for (int k = 0; k < FR_CASE_NUM_INPUTS; k++) fr_case_input_slot(&c.in, (fr_case_input)k)->dtype = FR_DT_NONE;
    fr_case_free(&c);
    return 0;
}
