/* Shared by flashref suite, verify and selftest: option parsing for thresholds and outputs, the live progress line,
 * and the closing outputs (case lines, summary, history, JSON, HTML). */
#ifndef FR_TOOLS_CMD_SUITE_H
#define FR_TOOLS_CMD_SUITE_H

#include "verify/report/report.h"
#include "verify/suite/suite.h"

typedef struct suite_cli {
    fr_suite_opts o;
    const char *impl, *json, *html, *history, *write_dir;
    bool list, verbose, quiet;
    bool allow_empty; /* --allow-empty: a run that judged nothing exits 0, not 3 */
    double timeout;   /* --timeout SECONDS (0: FLASHREF_EXEC_TIMEOUT or the default) */
    bool seed_set; /* --seed given (a random batch without it draws a fresh seed) */
    bool coverage; /* --coverage: print the pairwise coverage and exit */
    bool force;    /* --force: --write replaces a non-empty DIR's contents (never merged otherwise) */
} suite_cli;

/* Exit statuses of suite / verify / selftest (printed by --help, docs/verifier.md). */
#define SUITE_EXIT_OK 0      /* every judged case PASS or WARN */
#define SUITE_EXIT_FAIL 1    /* at least one case FAIL */
#define SUITE_EXIT_INPUT 2   /* usage or input error: bad option, unreadable case, unwritable report path */
#define SUITE_EXIT_EMPTY 3   /* nothing was judged: every case SKIP, or no case matched (--allow-empty: 0) */
#define SUITE_EXIT_STOPPED 4 /* stopped early: the implementation failed identically 5 times in a row */

/* The start of every command's parsing: with --help (or -h) among the arguments, usage(stdout) and false (the
 * command exits 0); otherwise true with s zeroed and holding the library's default suite options. */
bool suite_cli_begin(int argc, char **argv, suite_cli *s, void (*usage)(FILE *));
/* False (and "flashref CMD: --set: 'X' (quick, default, long or all)" on stderr) for an unknown --set. */
bool suite_cli_check_set(const char *cmd, const suite_cli *s);
/* Checks before the run that the report paths (--json, --report, --history) can be written, that --promote is a
 * directory that can be written or created and that --regression is a readable directory: prints "flashref CMD:
 * --json PATH: cannot write: REASON" and returns false otherwise. */
bool suite_cli_check_paths(const char *cmd, const suite_cli *s);
/* The exit-status lines of --help. */
void suite_cli_help_exit(FILE *f);

/* Parses one option at argv[*i] (advancing *i past its value). Returns 1 when consumed, 0 when not an option of
 * this group, -1 on a bad value (message printed). */
int suite_cli_option(const char *cmd, int argc, char **argv, int *i, suite_cli *s);
/* suite_cli_option, with an option of none of its groups reported as "flashref CMD: unknown WHAT 'ARG'" followed by
 * usage(stderr). False on a bad value or an unknown option (the command exits 2). */
bool suite_cli_take(const char *cmd, const char *what, int argc, char **argv, int *i, suite_cli *s,
                    void (*usage)(FILE *));
/* Progress callback: a live line on stderr when it is a terminal, nothing otherwise. */
void suite_cli_progress(void *ud, int done, int total, const fr_case_result *last);
/* Prints the non-passing case lines (all with verbose), history, summary; writes JSON / HTML. Returns the exit
 * status above (2 when a report could not be written). */
int suite_cli_finish(const char *cmd, const suite_cli *s, const fr_suite_result *r);
/* The option help shared by the commands. */
void suite_cli_help(FILE *f);

#endif
