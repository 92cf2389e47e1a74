/* Shared by flashref suite, verify and selftest: option parsing for thresholds and outputs, the live progress line,
 * and the closing outputs (case lines, summary, history, JSON, HTML). */
#ifndef FR_TOOLS_CMD_SUITE_H
#define FR_TOOLS_CMD_SUITE_H

#include "verify/report.h"
#include "verify/suite.h"

typedef struct suite_cli {
    fr_suite_opts o;
    const char *impl, *json, *html, *history, *write_dir;
    bool list, verbose, quiet;
    bool seed_set; /* --seed given (a random batch without it draws a fresh seed) */
    bool coverage; /* --coverage: print the pairwise coverage and exit */
} suite_cli;

/* Parses one option at argv[*i] (advancing *i past its value). Returns 1 when consumed, 0 when not an option of
 * this group, -1 on a bad value (message printed). */
int suite_cli_option(const char *cmd, int argc, char **argv, int *i, suite_cli *s);
/* Progress callback: a live line on stderr when it is a terminal, nothing otherwise. */
void suite_cli_progress(void *ud, int done, int total, const fr_case_result *last);
/* Prints the non-passing case lines (all with verbose), history, summary; writes JSON / HTML. Returns the exit
 * status: 0 all PASS/WARN/SKIP, 1 any FAIL, 2 when a report could not be written. */
int suite_cli_finish(const char *cmd, const suite_cli *s, const fr_suite_result *r);
/* The option help shared by the commands. */
void suite_cli_help(FILE *f);

#endif
