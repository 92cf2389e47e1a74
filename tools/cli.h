/* The flashref command: one file per subcommand (cmd_NAME.c), dispatched by flashref.c. Exit status: 0 success,
 * 1 a verdict failed (suite/verify/selftest), 2 usage or input error. */
#ifndef FR_TOOLS_CLI_H
#define FR_TOOLS_CLI_H

#include "flashref.h"

int cmd_version(int argc, char **argv);
int cmd_case(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_golden(int argc, char **argv);
int cmd_suite(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_hunt(int argc, char **argv);

/* This process's rank and the rank count: 0 and 1 unless built with MPI and started by mpirun (src/dist). */
int cli_rank(void);
int cli_size(void);
#ifdef FR_HAVE_MPI
#include "dist/dist.h"
const fr_dist *cli_dist(void);
/* With FLASHREF_DIST_STATS=1: "flashref WHAT: dist: rank r of R wrote N bytes" on stderr (tests/dist checks that
 * ranks other than 0 write their part of the outputs). */
void cli_dist_stats(const char *what, int64_t bytes);
/* With FLASHREF_DIST_STATS=1: "flashref WHAT: dist: rank r of R read N of M query bytes" (query and query_rope). */
void cli_dist_read_stats(const char *what, int64_t read, int64_t total);
#endif

/* True when argv[1..] holds -h or --help. */
int cli_wants_help(int argc, char **argv);

#endif
