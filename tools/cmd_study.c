/* flashref study (placeholder until implemented) */
#include "cli.h"

int cmd_study(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("study");
}
