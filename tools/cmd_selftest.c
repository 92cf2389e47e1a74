/* flashref selftest (placeholder until implemented) */
#include "cli.h"

int cmd_selftest(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("selftest");
}
