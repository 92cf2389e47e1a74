/* flashref run DIR --engine golden|fast|emulate [--out DIR] [--threads N]: compute a case's outputs. */
#include "cli.h"
#include "io/casedir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit status for "this case is not supported by me" in the exec protocol (docs/case-format.md). */
#define EXIT_SKIP 77

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: flashref run DIR --engine golden|fast|emulate [--out OUTDIR] [--threads N]\n"
            "  Loads the case in DIR, allocates its outputs NaN-filled (golden: fp64; fast/emulate: the operator's\n"
            "  dtypes, softmax max/sum fp32), runs the forward or backward with the engine, and writes\n"
            "  attention_out.npy softmax_max.npy softmax_sum.npy (or dq.npy dk.npy dv.npy [dq_rope dk_rope dsink])\n"
            "  into OUTDIR (default: DIR), as docs/case-format.md describes. Options may come before or after DIR, so\n"
            "  `flashref suite --impl exec:\"flashref run --engine fast\"` works.\n"
            "  --threads N   worker threads (0 = OpenMP default); results are identical for any N\n"
            "  Under `mpirun -n R` (a build with MPI) the golden engine splits the case across the R ranks: each\n"
            "  reads the case and computes its part of the fixed task grid; rank 0 lays out the output files and\n"
            "  every rank writes its own rows into them (OUTDIR must be shared by the ranks). The files are\n"
            "  bit-identical to a single-process run for every R. Other engines run on rank 0, which writes.\n"
            "  A golden rank reads only the query-side rows its part uses (forward: query; backward: query, dy,\n"
            "  attention_in, softmax max/sum rows of its pass A blocks and pass B groups; K, V and the rest whole).\n"
            "  FLASHREF_DIST_STATS=1 prints the bytes each rank wrote and the query bytes it read.\n"
            "  On a terminal a progress line (blocks done, rate, time left) shows from the first second on;\n"
            "  FLASHREF_PROGRESS=1 prints it as plain lines (about one a second) wherever stderr goes, =0 never.\n"
            "exit status: 0 done; 2 usage, invalid case or engine not available in this build / on this CPU;\n"
            "  77 the engine does not support this case (reported as SKIP by the suite).\n");
}

int cmd_run(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        run_usage(stdout);
        return 0;
    }
    const char *dir = NULL, *out = NULL, *engine = NULL;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--engine") && i + 1 < argc) {
            engine = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            threads = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || threads < 0 || threads > 4096) {
                fprintf(stderr, "flashref run: --threads: '%s' is not a count in 0..4096\n", argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "flashref run: unknown or incomplete option '%s'\n", argv[i]);
            run_usage(stderr);
            return 2;
        } else if (!dir) {
            dir = argv[i];
        } else {
            fprintf(stderr, "flashref run: more than one case directory ('%s', '%s')\n", dir, argv[i]);
            return 2;
        }
    }
    if (!dir || !engine) {
        run_usage(stderr);
        return 2;
    }
    int kind = -1; /* the engine of that name, as fr_engine_name spells it */
    for (int k = FR_ENGINE_GOLDEN; k <= FR_ENGINE_EMULATE; k++)
        if (!strcmp(engine, fr_engine_name((fr_engine_kind)k))) kind = k;
    if (kind < 0) {
        fprintf(stderr, "flashref run: --engine: '%s' (golden, fast or emulate)\n", engine);
        return 2;
    }
    fr_engine e = fr_engine_default((fr_engine_kind)kind);
    e.num_threads = (int)threads;
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st = fr_engine_available(&e, &err);
    if (st != FR_OK) {
        fprintf(stderr, "flashref run: engine %s is not available: %s: %s\n", engine, fr_status_name(st), err.msg);
        return 2;
    }
    fr_case c;
#ifdef FR_HAVE_MPI
    /* Under mpirun a golden's ranks read only the query-side rows of their parts (src/dist/dist_read.c). */
    if (cli_size() > 1) {
        int64_t got = 0, all = 0;
        st = fr_dist_case_load(cli_dist(), dir, &e, &c, &got, &all, &err);
        if (st == FR_OK) cli_dist_read_stats("run", got, all);
    } else
#endif
        st = fr_case_load(dir, &c, &err);
    fr_case_outputs o;
    if (st != FR_OK) {
        fprintf(stderr, "flashref run: %s: %s: %s\n", dir, fr_status_name(st), err.msg);
    } else if ((st = fr_case_alloc_outputs(&c, kind == FR_ENGINE_GOLDEN, &o, &err)) != FR_OK) {
        fprintf(stderr, "flashref run: %s: invalid case: %s: %s\n", dir, fr_status_name(st), err.msg);
        fr_case_free(&c);
    }
#ifdef FR_HAVE_MPI
    /* Every rank learns whether another one failed before the collective run: a rank that stopped here alone
     * would leave the others waiting in it forever. */
    if (cli_size() > 1 && fr_dist_any(cli_dist(), st != FR_OK)) {
        if (st == FR_OK) {
            fprintf(stderr, "flashref run: rank %d: another rank could not load the case\n", cli_rank());
            fr_case_outputs_free(&o);
            fr_case_free(&c);
        }
        return 2;
    }
    /* Every rank must have read the same files: a case folder that differs between nodes would mix two problems
     * (the same status on every rank). */
    if (cli_size() > 1 && (st = fr_dist_same_case(cli_dist(), dir, &c, &err)) != FR_OK) {
        fprintf(stderr, "flashref run: %s: %s: %s\n", dir, fr_status_name(st), err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&c);
        return 2;
    }
#endif
    const char *odir = out ? out : dir;
    /* Before a computation that may take hours: an output that is a symbolic link (or not a regular file) is
     * refused now, not after it (the writer refuses it too, and never writes through a link). */
    if (st == FR_OK && cli_rank() == 0 && (st = fr_case_outputs_check(odir, &o, &err)) != FR_OK) {
        fprintf(stderr, "flashref run: %s: %s\n", fr_status_name(st), err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&c);
    }
#ifdef FR_HAVE_MPI
    if (cli_size() > 1 && fr_dist_any(cli_dist(), st != FR_OK)) {
        if (st == FR_OK) {
            fr_case_outputs_free(&o);
            fr_case_free(&c);
        }
        return 2;
    }
#endif
    if (st != FR_OK) return 2;
    int written_here = 0; /* the files are on disk already (written in parallel by the ranks) */
    cli_progress prog;    /* a line on a terminal while it computes (the library never prints) */
    char what[64];
    snprintf(what, sizeof what, "run: %s %s", engine, c.op == FR_CASE_FWD ? "fwd" : "bwd");
    cli_progress_begin(&prog, what, &e);
#ifdef FR_HAVE_MPI
    /* Under mpirun: the golden's task grid split across the ranks, each rank writing its own rows of the output
     * files (src/dist/dist_io.c); other engines run on rank 0, which writes. */
    if (cli_size() > 1) {
        int64_t bytes = 0;
        st = fr_dist_run_to_dir(cli_dist(), &c, &o, &e, odir, &bytes, &err);
        written_here = 1;
        cli_dist_stats("run", bytes);
    } else
#endif
        st = c.op == FR_CASE_FWD ? fr_fwd(&c.params, &c.in.fwd, &o.fwd, &e, &err)
                                 : fr_bwd(&c.params, &c.in, &o.bwd, &e, &err);
    cli_progress_end(&prog);
    int rc = 0;
    if (st == FR_E_UNSUPPORTED || st == FR_E_NOT_AVAILABLE) {
        fprintf(stderr, "flashref run: %s: engine %s does not support this case: %s: %s\n", dir, engine,
                fr_status_name(st), err.msg);
        rc = EXIT_SKIP;
    } else if (st != FR_OK) {
        fprintf(stderr, "flashref run: %s: engine %s: %s: %s\n", dir, engine, fr_status_name(st), err.msg);
        rc = 2;
    } else if (!written_here && (st = fr_case_write_outputs(odir, &o, &err)) != FR_OK) {
        fprintf(stderr, "flashref run: %s: %s\n", fr_status_name(st), err.msg);
        rc = 2;
    }
    fr_case_outputs_free(&o);
    fr_case_free(&c);
    return rc;
}
