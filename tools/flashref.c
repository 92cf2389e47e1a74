/* flashref: the command-line tool: main and the dispatch to the commands (cmd_*.c), above them; what the commands
 * share (help flags, the rank) is cli_util.c, below them. */
#include "cli.h"

#include "core/cleanup.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void usage(FILE *f) {
    fprintf(f, "usage: flashref COMMAND [ARGS]   (flashref COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
}

static int dispatch(int argc, char **argv);

/* SIGINT, SIGTERM, SIGHUP: stop the runners and remove the temporary case folders and report files the run holds
 * (core/cleanup.h), then die of the same signal, so that the shell sees 130/143 and a script calling us stops too. */
static void on_signal(int sig) {
    fr_cleanup_run();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* one cleanup at a time */
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup, a background job) stays ignored. */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[k], &sa, NULL);
    }
}

int main(int argc, char **argv) {
    catch_signals();
#ifdef FR_HAVE_MPI
    fr_dist_init(&argc, &argv, cli_dist_state()); /* MPI only under mpirun */
    int rc = dispatch(argc, argv);
    fr_dist_finalize(cli_dist_state());
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
