/* The flashref command: one file per subcommand (cmd_NAME.c), dispatched by flashref.c; the helpers they share are
 * cli_util.c (below the commands, so that nothing calls back up into flashref.c). Exit status: 0 success, 1 a verdict
 * failed (suite/verify/selftest), 2 usage or input error. */
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
/* The state main() initialises with fr_dist_init (flashref.c) and the commands read through cli_dist(). */
fr_dist *cli_dist_state(void);
/* With FLASHREF_DIST_STATS=1: "flashref WHAT: dist: rank r of R wrote N bytes" on stderr (tests/dist checks that
 * ranks other than 0 write their part of the outputs). */
void cli_dist_stats(const char *what, int64_t bytes);
/* With FLASHREF_DIST_STATS=1: "flashref WHAT: dist: rank r of R read N of M query bytes" (query and query_rope). */
void cli_dist_read_stats(const char *what, int64_t read, int64_t total);
#endif

/* The progress line of one long engine call (cli_progress.c): cli_progress_begin sets e->progress when stderr is a
 * terminal (or FLASHREF_PROGRESS=1; =0 turns it off), so that the engine's reports draw "flashref WHAT: 12.3% (1234
 * of 10000 blocks), 41.2 blocks/s, 30s spent, about 3m 12s left" from the first second on; cli_progress_end
 * clears it. Quiet otherwise, and on every rank but 0. */
typedef struct cli_progress {
    char what[64];
    double t0, last;
    int forced, drawn;
} cli_progress;
void cli_progress_begin(cli_progress *p, const char *what, fr_engine *e);
void cli_progress_end(cli_progress *p);

/* True when argv[1..] holds -h or --help. */
int cli_wants_help(int argc, char **argv);

#endif
