/* flashref suite (placeholder until implemented) */
#include "cli.h"

int cmd_suite(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("suite");
}
