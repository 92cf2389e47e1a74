/* libFuzzer: the safetensors reader on arbitrary bytes; what parses must round-trip through the writer. */
#include "io/safetensors.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fr_safetensors s;
    fr_error err;
    if (fr_st_parse(data, size, &s, "fuzz", &err) != FR_OK) return 0;
    const char **names = malloc(sizeof *names * (size_t)(s.count + 1));
    fr_tensor *ts = malloc(sizeof *ts * (size_t)(s.count + 1));
    for (int i = 0; i < s.count; i++) {
        names[i] = s.entries[i].name;
        ts[i] = s.entries[i].t;
    }
    void *buf;
    size_t len;
    fr_status st = fr_st_write_mem(s.count, names, ts, s.meta_count, s.meta, &buf, &len, &err);
    /* Names that cJSON cannot re-encode are the only acceptable write failure; none exist for valid UTF-8. */
    if (st == FR_OK) {
        fr_safetensors r;
        if (fr_st_parse(buf, len, &r, "fuzz", &err) != FR_OK || r.count != s.count || r.meta_count != s.meta_count)
            abort();
        for (int i = 0; i < s.count; i++) {
            const fr_tensor *a = &s.entries[i].t, *b = fr_st_find(&r, s.entries[i].name);
            if (!b || a->dtype != b->dtype || a->ndim != b->ndim) abort();
            int64_t n = fr_tensor_numel(a);
            if (n > 0 && memcmp(a->data, b->data, (size_t)n * fr_dtype_size(a->dtype))) abort();
        }
        fr_st_free(&r);
        free(buf);
    }
    free(names);
    free(ts);
    fr_st_free(&s);
    return 0;
}
