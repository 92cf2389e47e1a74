/* flashref verify (placeholder until implemented) */
#include "cli.h"

int cmd_verify(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("verify");
}
