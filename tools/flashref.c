/* flashref: the command-line tool. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FR_HAVE_MPI
#include "dist/dist.h"
static fr_dist g_dist = {0, 1, 0};
int cli_rank(void) { return g_dist.rank; }
int cli_size(void) { return g_dist.size; }
const fr_dist *cli_dist(void) { return &g_dist; }
void cli_dist_stats(const char *what, int64_t bytes) {
    const char *v = getenv("FLASHREF_DIST_STATS");
    if (v && !strcmp(v, "1"))
        fprintf(stderr, "flashref %s: dist: rank %d of %d wrote %lld bytes\n", what, g_dist.rank, g_dist.size,
                (long long)bytes);
}
void cli_dist_read_stats(const char *what, int64_t read, int64_t total) {
    const char *v = getenv("FLASHREF_DIST_STATS");
    if (v && !strcmp(v, "1"))
        fprintf(stderr, "flashref %s: dist: rank %d of %d read %lld of %lld query bytes\n", what, g_dist.rank,
                g_dist.size, (long long)read, (long long)total);
}
#else
int cli_rank(void) { return 0; }
int cli_size(void) { return 1; }
#endif

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"version", cmd_version, "print the library version and what this build and machine support"},
    {"case", cmd_case, "case check DIR: validate a case directory and print what it describes"},
    {"run", cmd_run, "run DIR --engine golden|fast|emulate [--out DIR]: compute a case's outputs"},
    {"golden", cmd_golden, "golden --out DIR [--set NAME | parameters]: generate case directories with golden outputs"},
    {"suite", cmd_suite, "suite [--impl IUT] [--set NAME]: run the verification suite against an implementation"},
    {"verify", cmd_verify, "verify DIR...: judge outputs already written into case directories"},
    {"hunt", cmd_hunt, "hunt --impl IUT [--budget 10m] [--out DIR]: draw until the budget is spent, cluster and shrink failures"},
    {"selftest", cmd_selftest, "selftest: run the suite against the built-in broken implementations"},
    {"study", cmd_study, "study order-invariance|seqlen: numerics studies"},
};

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: flashref COMMAND [ARGS]   (flashref COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv) {
#ifdef FR_HAVE_MPI
    fr_dist_init(&argc, &argv, &g_dist); /* MPI only under mpirun */
    int rc = dispatch(argc, argv);
    fr_dist_finalize(&g_dist);
    return rc;
#else
    return dispatch(argc, argv);
#endif
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    fr_isa isa;
    fr_error err;
    if (fr_isa_selected(&isa, &err) != FR_OK) { /* an unknown FLASHREF_ISA: say so rather than guess */
        fprintf(stderr, "flashref: %s\n", err.msg);
        return 2;
    }
    if (!strcmp(argv[1], "--version")) return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "flashref: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
