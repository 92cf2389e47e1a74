/* flashref version */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

int cmd_version(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: flashref version\nPrints the library version, the case format and the engines available.\n");
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
    return 0;
}
