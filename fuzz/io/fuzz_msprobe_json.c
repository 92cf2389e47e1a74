/* libFuzzer: msprobe's dump.json (io/msprobe.h) on arbitrary text: every entry either parses into values whose
 * counts, names and shapes are in range, or the whole file is refused with a message; nothing is opened. */
#include "io/msprobe.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const fr_mp_value *v, int depth) {
    if (depth > 8) abort();
    if (v->kind == FR_MP_TENSOR && (v->ndim < 0 || v->ndim > FR_MAX_DIMS)) abort();
    if ((v->kind == FR_MP_STR || v->kind == FR_MP_OTHER) && !v->s) abort();
    for (int k = 0; k < v->n; k++) walk(&v->items[k], depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fr_mp_dump d;
    fr_error err;
    if (fr_mp_parse_json((const char *)data, size, NULL, &d, "fuzz", &err) != FR_OK) {
        if (!err.msg[0]) abort();
        return 0;
    }
    for (int k = 0; k < d.n; k++) {
        const fr_mp_entry *e = &d.e[k];
        if (!e->name || !e->api[0] || !e->prefix[0] || strlen(e->name) > 255) abort();
        for (int q = 0; q < e->nargs; q++) walk(&e->args[q], 0);
        for (int q = 0; q < e->nkwargs; q++) {
            if (!e->kwnames[q]) abort();
            walk(&e->kwargs[q], 0);
        }
        for (int q = 0; q < e->nout; q++) walk(&e->out[q], 0);
    }
    fr_mp_free(&d);
    return 0;
}
