/* flashref golden (placeholder until implemented) */
#include "cli.h"

int cmd_golden(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_not_available("golden");
}
