/* Every layer maps every ISA variant of the one list (src/core/variants.inc), and maps nothing else: a variant
 * registered in one place but missing from another fails here with a line naming the place to edit
 * (docs/adding-an-isa-variant.md lists them in order). Checked for every row whatever this CPU runs (nothing here
 * executes a variant's code):
 *   - the dispatcher (src/core/isa.c): name <-> enum round trip, the enum values usable as bits of its cache;
 *   - the family column: a row at or below the variant, whose own family is itself;
 *   - the kernels (src/kernels): a resolved table with the variant's name, enum and bf16 column;
 *   - the golden (src/golden/golden_gemm.h): an fp64 product for the variant's family, and no product for anything
 *     that is not a family;
 *   - the array conversions (src/core/convert_array.c): a row for the variant's family, and no row for anything else.
 * The table slots are checked by test_kernels_slots (no empty slot after inheritance); the source tree (a file
 * ops_<name>.c per row and no other, no cpuid outside src/core/isa.c, no hand-written list of names) by
 * check_variants.py beside this file; Python by tests/python_pkg/test_ops.py. */
#include "common/check.h"
#include "core/convert.h"
#include "core/isa.h"
#include "golden/golden_gemm.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>

/* The golden's products, as its X-macro lists them. */
static const struct {
    const char *name;
    fr_isa isa;
} k_golden[] = {
#define GD_ROW(name, e) {#name, e},
    GD_GEMM_VARIANTS(GD_ROW)
#undef GD_ROW
};
enum { N_GOLDEN = (int)(sizeof k_golden / sizeof k_golden[0]) };

/* The bf16 column of each row, in list order. */
static const bool k_bf16_dot[] = {
#define FR_VARIANT(name, e, family, bf16, ...) bf16,
#include "core/variants.inc"
#undef FR_VARIANT
};

static int index_of(fr_isa isa) {
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_list[k] == isa) return k;
    return -1;
}

/* Whether some row of the list has family f. */
static bool is_family(fr_isa f) {
    for (int k = 0; k < fr_isa_count; k++)
        if (fr_isa_family(fr_isa_list[k]) == f) return true;
    return false;
}

int main(void) {
    printf("test_variant_registry: %d variants in src/core/variants.inc\n", fr_isa_count);
    CHECK(fr_isa_count >= 1 && fr_isa_list[0] == FR_ISA_SCALAR, "the list starts with scalar, the reference");
    CHECK(fr_isa_variant(fr_isa_count) == FR_ISA_AUTO, "fr_isa_variant past the end");
    for (int k = 0; k < fr_isa_count; k++) {
        fr_isa v = fr_isa_list[k], f = fr_isa_family(v), parsed = FR_ISA_AUTO;
        const char *name = fr_isa_name(v), *fname = fr_isa_name(f);
        const fr_kops *t = fr_kops_table(v);
        int g = -1;
        for (int j = 0; j < N_GOLDEN; j++)
            if (k_golden[j].isa == f) g = j;
        bool conv = false;
        for (int j = 0; fr_convert_family_at(j) != FR_ISA_AUTO; j++)
            if (fr_convert_family_at(j) == f) conv = true;
        printf("  %-10s family %-8s kernels %s, golden product %s, conversions %s\n", name, fname, t ? "yes" : "NONE",
               g >= 0 ? k_golden[g].name : "NONE", conv ? fname : "NONE");

        /* the dispatcher */
        CHECK(v != FR_ISA_AUTO && (int)v > 0 && (int)v < 32 && index_of(v) == k,
              "%s: its fr_isa value %d must be unique, not FR_ISA_AUTO and below 32 (src/core/isa.c keeps a bit per "
              "variant)", name, (int)v);
        CHECK(fr_isa_variant(k) == v, "fr_isa_variant(%d) is not %s", k, name);
        CHECK(strcmp(name, "unknown") && fr_isa_parse(name, &parsed, NULL) == FR_OK && parsed == v,
              "%s: fr_isa_name / fr_isa_parse do not round-trip (src/core/isa.c)", name);
        /* the family column */
        int fk = index_of(f);
        CHECK(fk >= 0 && fk <= k && fr_isa_family(f) == f,
              "%s: its family %s must be a row at or below it whose own family is itself (src/core/variants.inc)",
              name, fname);
        /* the kernels */
        CHECK(t && t->isa == v && !strcmp(t->name, name) && t->bf16_gemm == k_bf16_dot[k],
              "%s: no resolved kernel table with its name, enum and bf16 column (src/kernels/ops_%s.c, "
              "fr_kops_over_%s; src/kernels/dispatch.c)", name, name, name);
        /* the golden's fp64 product and the array conversions, by family */
        CHECK(g >= 0,
              "%s: the golden has no fp64 product for its family %s: add gd_gemm_acc_%s to GD_GEMM_VARIANTS "
              "(src/golden/golden_gemm.h) and its file src/golden/golden_gemm_%s.c", name, fname, fname, fname);
        CHECK(conv, "%s: the array conversions have no row for its family %s: add one to k_rows in "
                    "src/core/convert_array.c (NULL entries run the scalar loops)", name, fname);
    }

    /* and the other way: nothing mapped that the list does not have */
    for (int j = 0; j < N_GOLDEN; j++)
        CHECK(is_family(k_golden[j].isa) && !strcmp(k_golden[j].name, fr_isa_name(k_golden[j].isa)),
              "golden product gd_gemm_acc_%s (src/golden/golden_gemm.h GD_GEMM_VARIANTS) serves no family of "
              "src/core/variants.inc under that name", k_golden[j].name);
    for (int j = 0; fr_convert_family_at(j) != FR_ISA_AUTO; j++)
        CHECK(is_family(fr_convert_family_at(j)),
              "conversion row %d of src/core/convert_array.c (family %s) serves no family of src/core/variants.inc",
              j, fr_isa_name(fr_convert_family_at(j)));
    CHECK(fr_kops_table(FR_ISA_AUTO) == NULL, "fr_kops_table(FR_ISA_AUTO)");
    return fr_test_exit("test_variant_registry");
}
