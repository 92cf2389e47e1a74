/* flashref case (placeholder until implemented) */
#include "cli.h"

int cmd_case(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("case");
}
