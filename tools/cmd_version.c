/* flashref version */
#include "cli.h"
#include "core/osm_bound.h"

#include <stdio.h>
#include <stdlib.h>

int cmd_version(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: flashref version\nPrints the library version, the case format, the engines available, the "
               "proved accuracy of the golden and the a-priori fp32 bound of the verifier.\n");
        return 0;
    }
    printf("flashref %s (header %s), case format %s\n", fr_version(), FLASHREF_VERSION_STRING, FLASHREF_CASE_FORMAT);
    static const fr_engine_kind kinds[] = {FR_ENGINE_GOLDEN, FR_ENGINE_FAST, FR_ENGINE_EMULATE};
    for (int i = 0; i < 3; i++) {
        fr_engine e = fr_engine_default(kinds[i]);
        fr_error err;
        fr_status st = fr_engine_available(&e, &err);
        printf("engine %-8s %s\n", fr_engine_name(kinds[i]), st == FR_OK ? "available" : err.msg);
    }
    /* the one CPU dispatcher: the variant in use and what the CPU offers (FLASHREF_ISA checked in main) */
    fr_isa isa = FR_ISA_AUTO;
    fr_error err;
    fr_status st = fr_isa_selected(&isa, &err);
    const char *env = getenv("FLASHREF_ISA");
    printf("isa      %s in use (FLASHREF_ISA%s%s); this CPU offers:", st == FR_OK ? fr_isa_name(isa) : err.msg,
           env ? "=" : " unset", env ? env : "");
    for (int k = 0; fr_isa_variant(k) != FR_ISA_AUTO; k++)
        if (fr_isa_available(fr_isa_variant(k))) printf(" %s", fr_isa_name(fr_isa_variant(k)));
    printf("\n");
    /* The theorems of proofs/round (README there), evaluated by core/osm_bound.c: per output element, in units of
     * max|v|, for scores spanning a range of 0 (each unit of range adds 2 u). */
    fr_osm_bound_params g = fr_osm_bound_f64_golden(), a = fr_osm_bound_f32_any(0);
    printf("golden   proved accuracy of its softmax . V (golden_f64_bound): |out - exact| <= %.3g max|v| at 4096 "
           "keys, %.3g at 1M keys\n",
           fr_osm_bound_golden(&g, 4096, 4096 / 64, 0, 1), fr_osm_bound_golden(&g, 1048576, 1048576 / 64, 0, 1));
    printf("a-priori fp32 bound of the verifier (any online softmax, any tiles, exps within 2 ulp): %.3g max|v| at "
           "4096 keys, %.3g at 1M keys\n",
           fr_osm_bound_kernel(&a, 4096, 4096, 0, 1), fr_osm_bound_kernel(&a, 1048576, 1048576, 0, 1));
    return 0;
}
