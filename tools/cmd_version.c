/* flashref version */
#include "cli.h"

#include <stdio.h>

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
    return 0;
}
