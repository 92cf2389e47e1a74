/* flashref run (placeholder until implemented) */
#include "cli.h"

int cmd_run(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("run");
}
