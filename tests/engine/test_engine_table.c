/* The engine table (src/engine/engine.h): one row per fr_engine_kind, each with its name and three entries, and the
 * public entries that dispatch through it refusing a kind that has no row. A kind added to include/flashref.h
 * without its row (or a row without its kind) fails here, naming the kind. */
#include "common/check.h"
#include "engine/engine.h"

#include <string.h>

int main(void) {
    /* The kinds are 0 .. count-1, each in exactly one row. */
    for (int k = 0; k < fr_engine_count; k++) {
        const fr_engine_ops *r = &fr_engine_table[k];
        CHECK(r->name && *r->name, "row %d: no name", k);
        CHECK(r->available && r->fwd && r->bwd, "row %d (%s): an entry is NULL", k, r->name);
        CHECK((int)r->kind >= 0 && (int)r->kind < fr_engine_count, "row %d (%s): kind %d outside 0..%d", k, r->name,
              (int)r->kind, fr_engine_count - 1);
        CHECK(fr_engine_ops_of(r->kind) == r, "row %d (%s): kind %d has another row first", k, r->name, (int)r->kind);
        CHECK(!strcmp(fr_engine_name(r->kind), r->name), "kind %d: fr_engine_name says %s, the row %s", (int)r->kind,
              fr_engine_name(r->kind), r->name);
        for (int j = 0; j < k; j++)
            CHECK(strcmp(fr_engine_table[j].name, r->name), "rows %d and %d share the name %s", j, k, r->name);
    }
    const fr_engine_kind kinds[] = {FR_ENGINE_GOLDEN, FR_ENGINE_FAST, FR_ENGINE_EMULATE};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        CHECK(fr_engine_ops_of(kinds[k]) != NULL, "fr_engine_kind %d has no row in src/engine/engine.c",
              (int)kinds[k]);
    CHECK(fr_engine_count == (int)(sizeof kinds / sizeof kinds[0]), "%d rows, %d kinds in include/flashref.h",
          fr_engine_count, (int)(sizeof kinds / sizeof kinds[0]));

    /* A kind without a row: no name, not available, refused by fr_fwd / fr_bwd before anything is read. */
    fr_engine_kind bad = (fr_engine_kind)fr_engine_count;
    CHECK(fr_engine_ops_of(bad) == NULL);
    CHECK(!strcmp(fr_engine_name(bad), "invalid"));
    fr_engine e = fr_engine_default(bad);
    fr_error err;
    CHECK(fr_engine_available(&e, &err) == FR_E_INVALID_ARG);
    CHECK(strstr(err.msg, "unknown kind") != NULL, "message: %s", err.msg);
    fr_params p = fr_params_default();
    fr_fwd_inputs in;
    memset(&in, 0, sizeof in);
    fr_fwd_outputs out;
    memset(&out, 0, sizeof out);
    CHECK(fr_fwd(&p, &in, &out, &e, &err) == FR_E_INVALID_ARG);
    fr_bwd_inputs bin;
    memset(&bin, 0, sizeof bin);
    fr_bwd_outputs bout;
    memset(&bout, 0, sizeof bout);
    CHECK(fr_bwd(&p, &bin, &bout, &e, &err) == FR_E_INVALID_ARG);
    CHECK(fr_engine_available(NULL, &err) == FR_E_NULL);
    return fr_test_exit("test_engine_table");
}
