/* flashref golden: write case directories (docs/case-format.md) with golden (fp64) outputs, from a named set of
 * src/verify/cases/casegen.c or from one case described on the command line. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "io/casedir.h"
#include "io/io_util.h"
#include "verify/cases/casegen.h"
#include "verify/suite/suite.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void golden_usage(FILE *f) {
    fprintf(f,
            "usage: flashref golden --out DIR [--set NAME [--only SUBSTR] | --list | PARAMETERS] [--seed N]\n"
            "                       [--no-outputs] [--force]\n"
            "\n"
            "Writes one case directory (docs/case-format.md) per case under DIR (DIR/<case name>/case.json, inputs, and\n"
            "the golden engine's fp64 outputs attention_out/softmax_max/softmax_sum, or\n"
            "dq/dk/dv[/dq_rope/dk_rope/dsink] for --bwd).\n"
            "  --set NAME       a named set (see --list); --only SUBSTR keeps the cases whose name contains SUBSTR.\n"
            "                   The verifier's sets quick, default, long, all are written as flashref suite --write\n"
            "                   does (golden outputs in CASE/golden/; default seed that of flashref suite), ready\n"
            "                   for an external runner and flashref verify DIR...\n"
            "  --list           list the sets and their cases, write nothing\n"
            "  --seed N         seed of the random inputs (Philox4x32-10, src/core/rng.h); each case draws with a\n"
            "                   hash of (N, case name), so a case is reproduced by its seed and name; default 1\n"
            "  --no-outputs     write the inputs only (compute them later with flashref run DIR --engine golden)\n"
            "  (one case: a progress line on a terminal while the golden computes; FLASHREF_PROGRESS=1|0 as for run)\n"
            "  --force          replace what is there: with --set, DIR must otherwise be new or empty, and with\n"
            "                   PARAMETERS, DIR/<name>; --force removes their old contents first (symbolic links\n"
            "                   removed, never followed). Without it nothing is ever merged into an old folder, and\n"
            "                   a symbolic link in the place of a case folder or file is refused either way.\n"
            "PARAMETERS (one case, named --name, default \"case\"):\n"
            "  --layout BSH|SBH|BSND|BNSD|TND   --dtype fp32|fp16|bf16|e4m3fn|e5m2|hif8   --out-dtype fp16|bf16\n"
            "  --B --N1 --N2 --S1 --S2 --D --Dv --Drope N   --seq-q L0,L1,.. --seq-kv L0,L1,.. (TND lengths)\n"
            "  --scale X (default 1/sqrt(D))   --keep-prob P   --beta B (peaked q_i += B k_i)   --in-scale SD\n"
            "  --sparse-mode M   --pre-tokens N --next-tokens N   --mask none|canonical|ss|11ss|b1ss|bnss\n"
            "  --pse-type T   --pse none|bnss|bn1s|1nss|comp-b|comp-1|slopes-bn|slopes-n   --q-start N --kv-start N\n"
            "  --prefix (modes 5/6)   --sink   --topk W [--topk-per-kv]   --softmax-layout same_as_input   --bwd\n"
            "Exit status: 0 all cases written, 2 usage error or a case that could not be generated or computed.\n");
}

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (s && *s) {
        if (n == max) return -1;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s) return -1;
        out[n++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

static int lookup(const char *v, const char *const *names, int count) {
    for (int k = 0; k < count; k++)
        if (strcmp(v, names[k]) == 0) return k;
    return -1;
}

/* Parses one PARAMETERS option at argv[*i] into s; returns 1 when consumed, 0 when not a parameter, -1 on error. */
static int parse_param(int argc, char **argv, int *i, fr_gen_spec *s, const char **name) {
    static const char *const masks[] = {"none", "canonical", "ss", "11ss", "b1ss", "bnss"};
    static const char *const pses[] = {"none", "bnss", "bn1s", "1nss", "comp-b", "comp-1", "slopes-bn", "slopes-n"};
    const char *a = argv[*i];
    /* flags */
    if (!strcmp(a, "--bwd")) return s->bwd = true, 1;
    if (!strcmp(a, "--sink")) return s->sink = true, 1;
    if (!strcmp(a, "--prefix")) return s->prefix = true, 1;
    if (!strcmp(a, "--topk-per-kv")) return s->topk_per_kv_head = true, 1;
    struct {
        const char *opt;
        int64_t *dst;
    } ints[] = {{"--B", &s->B},
                {"--N1", &s->N1},
                {"--N2", &s->N2},
                {"--S1", &s->S1},
                {"--S2", &s->S2},
                {"--D", &s->D},
                {"--Dv", &s->Dv},
                {"--Drope", &s->Drope},
                {"--pre-tokens", &s->pre_tokens},
                {"--next-tokens", &s->next_tokens},
                {"--q-start", &s->q_start_idx},
                {"--kv-start", &s->kv_start_idx},
                {"--topk", &s->topk_w}};
    struct {
        const char *opt;
        double *dst;
    } dbls[] = {
        {"--scale", &s->scale}, {"--keep-prob", &s->keep_prob}, {"--beta", &s->beta}, {"--in-scale", &s->in_scale}};
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (!strcmp(a, ints[k].opt)) {
            char *end;
            if (!v) return -1;
            errno = 0;
            *ints[k].dst = strtoll(v, &end, 10);
            if (*end || end == v || errno == ERANGE) return -1;
            if (!strcmp(a, "--pre-tokens") || !strcmp(a, "--next-tokens")) s->set_band = true;
            return ++*i, 1;
        }
    for (size_t k = 0; k < sizeof dbls / sizeof dbls[0]; k++)
        if (!strcmp(a, dbls[k].opt)) {
            char *end;
            if (!v) return -1;
            *dbls[k].dst = strtod(v, &end);
            if (*end || end == v || !isfinite(*dbls[k].dst)) return -1;
            /* 0 would read as "unset" (keep_prob 1) downstream: the spec's range is (0, 1]. */
            if (!strcmp(a, "--keep-prob") && !(*dbls[k].dst > 0 && *dbls[k].dst <= 1)) return -1;
            return ++*i, 1;
        }
    if (!v) return 0;
    int r;
    if (!strcmp(a, "--layout")) {
        if ((s->layout = fr_layout_from_name(v)) == FR_LAYOUT_NONE) return -1;
    } else if (!strcmp(a, "--dtype")) {
        if ((s->dtype = fr_dtype_from_name(v)) == FR_DT_NONE) return -1;
    } else if (!strcmp(a, "--out-dtype")) {
        if ((s->out_dtype = fr_dtype_from_name(v)) == FR_DT_NONE) return -1;
    } else if (!strcmp(a, "--sparse-mode") || !strcmp(a, "--pse-type")) {
        char *end;
        long m = strtol(v, &end, 10);
        if (*end || end == v || m < 0 || m > 99) return -1;
        *(a[2] == 's' ? &s->sparse_mode : &s->pse_type) = (int)m;
    } else if (!strcmp(a, "--mask")) {
        if ((r = lookup(v, masks, 6)) < 0) return -1;
        s->mask = (fr_gen_mask)r;
    } else if (!strcmp(a, "--pse")) {
        if ((r = lookup(v, pses, 8)) < 0) return -1;
        s->pse = (fr_gen_pse)r;
    } else if (!strcmp(a, "--seq-q") || !strcmp(a, "--seq-kv")) {
        int n = parse_list(v, a[6] == 'q' ? s->seq_q : s->seq_kv, FR_GEN_MAX_BATCH);
        if (n < 0) return -1;
        s->B = n;
    } else if (!strcmp(a, "--softmax-layout")) {
        if (strcmp(v, "same_as_input") && strcmp(v, "")) return -1;
        s->softmax_layout = *v ? FR_SOFTMAX_SAME_AS_INPUT : FR_SOFTMAX_DEFAULT;
    } else if (!strcmp(a, "--name")) {
        /* One directory name inside --out: no '/', no "." or "..", nothing unprintable. */
        if (!*v || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, "..")) return -1;
        for (const char *q = v; *q; q++)
            if ((unsigned char)*q < 0x20 || *q == 0x7F) return -1;
        *name = v;
    } else {
        return 0;
    }
    return ++*i, 1;
}

static void list_sets(void) {
    int n;
    const fr_gen_set *sets = fr_gen_sets(&n);
    for (int k = 0; k < n; k++) {
        printf("%s (%d cases): %s\n", sets[k].name, sets[k].count, sets[k].doc);
        for (int j = 0; j < sets[k].count; j++)
            printf("  %s%s\n", sets[k].specs[j].name, sets[k].specs[j].bwd ? " (bwd)" : "");
    }
    printf("verifier sets (flashref suite --set NAME --list shows their cases):");
    for (int k = 0; fr_suite_set_names[k]; k++) printf(" %s", fr_suite_set_names[k]);
    printf("\n");
}

/* --out DIR before anything is written (collective under mpirun: rank 0 prepares, the others wait for it). A set: DIR
 * holds the set and nothing else, new or empty (--force: emptied), never a link. One case: DIR may hold other cases
 * (its own folder DIR/<name> is checked when it is written). False (message printed) when DIR cannot be used. */
static bool prepare_out(const char *out, bool set, bool force) {
    fr_error err;
    fr_status st = cli_rank() != 0 ? FR_OK : set ? fr_io_new_dir(out, force, &err) : fr_io_mkdir(out, &err);
    if (st != FR_OK) fprintf(stderr, "flashref golden: --out: %s\n", err.msg);
#ifdef FR_HAVE_MPI
    return !fr_dist_any(cli_dist(), st != FR_OK);
#else
    return st == FR_OK;
#endif
}

/* The golden outputs of the case in dir, computed with a progress line on a terminal (cli_progress.c). */
static fr_status golden_outputs(const char *dir, fr_error *err) {
    fr_case cs;
    fr_status st = fr_case_load(dir, &cs, err);
    if (st != FR_OK) return st;
    fr_case_outputs o;
    if ((st = fr_case_alloc_outputs(&cs, true, &o, err)) != FR_OK) {
        fr_case_free(&cs);
        return st;
    }
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    cli_progress prog;
    cli_progress_begin(&prog, cs.op == FR_CASE_FWD ? "golden: fwd" : "golden: bwd", &e);
    st = cs.op == FR_CASE_FWD ? fr_fwd(&cs.params, &cs.in.fwd, &o.fwd, &e, err) : fr_bwd(&cs.params, &cs.in, &o.bwd, &e, err);
    cli_progress_end(&prog);
    if (st == FR_OK) st = fr_case_write_outputs(dir, &o, err);
    fr_case_outputs_free(&o);
    fr_case_free(&cs);
    return st;
}

#ifdef FR_HAVE_MPI
/* One case across the ranks (mpirun -n R flashref golden PARAMETERS): rank 0 writes the inputs, every rank loads
 * the case (only the query-side rows its part uses, src/dist/dist_read.c), computes its part of the golden and
 * writes its rows of the output files (src/dist/dist_io.c): the same files as a single process writes. */
static int golden_one_dist(fr_gen_spec *one, const char *name, uint64_t seed, const char *out, bool inputs_only,
                           bool force) {
    one->name = name;
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s/%s", out, name) >= (int)sizeof dir) {
        if (cli_rank() == 0) fprintf(stderr, "flashref golden: path too long for case %s\n", name);
        return 2;
    }
    fr_error err;
    memset(&err, 0, sizeof err);
    fr_status st = FR_OK;
    if (cli_rank() == 0) {
        printf("flashref golden: seed %llu, case %s -> %s (%d ranks)\n", (unsigned long long)seed, name, out,
               cli_size());
        fr_gen_case c;
        st = fr_io_new_dir(dir, force, &err); /* never merged into an old case folder, never through a link */
        if (st == FR_OK && (st = fr_gen_build(one, seed, &c, &err)) == FR_OK) {
            st = fr_gen_case_write(&c, dir, true, &err);
            fr_gen_case_free(&c);
        }
        if (st != FR_OK) fprintf(stderr, "  %-34s FAILED %s: %s\n", name, fr_status_name(st), err.msg);
    }
    if (fr_dist_any(cli_dist(), st != FR_OK)) return 2;
    if (inputs_only) {
        if (cli_rank() == 0)
            printf("  %-34s %s inputs\nflashref golden: 1 case(s) written, 0 failed\n", name, one->bwd ? "bwd" : "fwd");
        return 0;
    }
    fr_case cs;
    fr_case_outputs o;
    int loaded = 0, alloc = 0;
    fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
    int64_t got = 0, all = 0;
    if ((st = fr_dist_case_load(cli_dist(), dir, &e, &cs, &got, &all, &err)) == FR_OK) loaded = 1;
    if (st == FR_OK) cli_dist_read_stats("golden", got, all);
    if (st == FR_OK && (st = fr_case_alloc_outputs(&cs, true, &o, &err)) == FR_OK) alloc = 1;
    if (fr_dist_any(cli_dist(), st != FR_OK)) {
        fprintf(stderr, "flashref golden: rank %d: %s: %s: %s\n", cli_rank(), dir, fr_status_name(st), err.msg);
        if (alloc) fr_case_outputs_free(&o);
        if (loaded) fr_case_free(&cs);
        return 2;
    }
    if ((st = fr_dist_same_case(cli_dist(), dir, &cs, &err)) != FR_OK) { /* every rank read the same files */
        if (cli_rank() == 0) fprintf(stderr, "  %-34s FAILED %s: %s\n", name, fr_status_name(st), err.msg);
        fr_case_outputs_free(&o);
        fr_case_free(&cs);
        return 2;
    }
    int64_t bytes = 0;
    cli_progress prog; /* rank 0's part */
    cli_progress_begin(&prog, cs.op == FR_CASE_FWD ? "golden: fwd (rank 0's part)" : "golden: bwd (rank 0's part)", &e);
    st = fr_dist_run_to_dir(cli_dist(), &cs, &o, &e, dir, &bytes, &err);
    cli_progress_end(&prog);
    cli_dist_stats("golden", bytes);
    if (cli_rank() == 0) {
        if (st != FR_OK) fprintf(stderr, "  %-34s FAILED %s: %s\n", name, fr_status_name(st), err.msg);
        else
            printf("  %-34s %s inputs+golden outputs\nflashref golden: 1 case(s) written, 0 failed\n", name,
                   one->bwd ? "bwd" : "fwd");
    }
    fr_case_outputs_free(&o);
    fr_case_free(&cs);
    return fr_dist_any(cli_dist(), st != FR_OK) ? 2 : 0;
}
#endif

/* A verifier's set (quick, default, long, all): the same case directories `flashref suite --write` makes, golden
 * outputs in NAME/golden/, so a team can run them and come back with flashref verify. */
static int golden_suite_set(const char *set, const char *only, uint64_t seed, const char *out, bool force) {
    struct stat sb0;
    bool made = lstat(out, &sb0) != 0;
    if (!prepare_out(out, true, force)) return 2;
    fr_error err;
    int written = 0;
    /* Under mpirun each rank writes its share of the cases (case k on rank k % R), in parallel. */
    fr_status st = fr_suite_write_cases_part(set, only, seed, out, cli_rank(), cli_size(), &written, &err);
    if (st != FR_OK) fprintf(stderr, "flashref golden: set %s: %s: %s\n", set, fr_status_name(st), err.msg);
#ifdef FR_HAVE_MPI
    if (fr_dist_any(cli_dist(), st != FR_OK)) {
        if (made && !written && cli_rank() == 0) rmdir(out);
        return 2;
    }
    written = (int)fr_dist_sum(cli_dist(), written);
    if (cli_rank() != 0) return 0;
#else
    if (st != FR_OK) {
        if (made && !written) rmdir(out);
        return 2;
    }
#endif
    printf("flashref golden: seed %llu, suite set %s: %d case(s) written to %s (golden outputs in each "
           "CASE/golden/)\n",
           (unsigned long long)seed, set, written, out);
    return 0;
}

int cmd_golden(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        golden_usage(stdout);
        return 0;
    }
    const char *out = NULL, *set = NULL, *only = NULL, *name = "case";
    uint64_t seed = 1;
    bool inputs_only = false, list = false, have_params = false, have_seed = false, force = false;
    fr_gen_spec one;
    memset(&one, 0, sizeof one);
    one.B = 1;
    one.N1 = 1;
    one.S1 = one.S2 = 16;
    one.D = 16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--out") && v)
            out = v, i++;
        else if (!strcmp(a, "--set") && v)
            set = v, i++;
        else if (!strcmp(a, "--only") && v)
            only = v, i++;
        else if (!strcmp(a, "--seed") && v) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 0);
            have_seed = true;
            /* strtoull takes "-1" as 2^64 - 1 and saturates on overflow: refuse both. */
            if (*end || end == v || v[0] == '-' || v[0] == '+' || v[0] == ' ' || errno == ERANGE) {
                fprintf(stderr, "flashref golden: --seed: not a number in 0..18446744073709551615: '%s'\n", v);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--no-outputs"))
            inputs_only = true;
        else if (!strcmp(a, "--force"))
            force = true;
        else if (!strcmp(a, "--list"))
            list = true;
        else {
            int r = parse_param(argc, argv, &i, &one, &name);
            if (r <= 0) {
                fprintf(stderr, "flashref golden: %s option '%s'%s%s\n", r < 0 ? "bad value for" : "unknown", a,
                        r < 0 && v ? ": " : "", r < 0 && v ? v : "");
                golden_usage(stderr);
                return 2;
            }
            have_params = true;
        }
    }
    if (list) {
        list_sets();
        return 0;
    }
    if (!out) {
        fprintf(stderr, "flashref golden: --out DIR is required\n");
        golden_usage(stderr);
        return 2;
    }
    if (set && have_params) {
        fprintf(stderr, "flashref golden: give either --set or case parameters, not both\n");
        return 2;
    }
    const fr_gen_spec *specs = &one;
    int count = 1;
    if (set) {
        const fr_gen_set *gs = fr_gen_set_find(set);
        if (!gs && fr_suite_set_known(set))
            return golden_suite_set(set, only, have_seed ? seed : fr_suite_opts_default().seed, out, force);
        if (!gs) {
            fprintf(stderr, "flashref golden: --set: unknown set '%s' (see --list)\n", set);
            return 2;
        }
        specs = gs->specs;
        count = gs->count;
    } else {
        one.name = name;
    }
    struct stat before;
    bool created = lstat(out, &before) != 0;
    if (!prepare_out(out, set != NULL, force)) return 2;
#ifdef FR_HAVE_MPI
    if (!set && cli_size() > 1) return golden_one_dist(&one, name, seed, out, inputs_only, force);
#endif
    if (cli_rank() == 0)
        printf("flashref golden: seed %llu, %s %s -> %s\n", (unsigned long long)seed, set ? "set" : "case",
               set ? set : name, out);
    int written = 0, failed = 0;
    for (int k = 0; k < count; k++) {
        if (only && !strstr(specs[k].name, only)) continue;
        if (k % cli_size() != cli_rank()) continue; /* another rank's case (mpirun) */
        char dir[4096];
        if (snprintf(dir, sizeof dir, "%s/%s", out, specs[k].name) >= (int)sizeof dir) {
            fprintf(stderr, "flashref golden: path too long for case %s\n", specs[k].name);
            failed++;
            continue;
        }
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_gen_case c;
        /* the case's own folder: new or empty (--force: emptied), never a link, never merged */
        fr_status st = fr_io_new_dir(dir, force, &err);
        if (st == FR_OK) st = fr_gen_build(&specs[k], seed, &c, &err);
        if (st == FR_OK) {
            /* One case (PARAMETERS): the inputs, then the golden with a progress line, as flashref run computes it
             * (the same outputs: the inputs read back are the generated ones bit for bit); a set's small cases in
             * one go. */
            st = fr_gen_case_write(&c, dir, inputs_only || !set, &err);
            fr_gen_case_free(&c);
            if (st == FR_OK && !inputs_only && !set) st = golden_outputs(dir, &err);
        }
        if (st != FR_OK) {
            fprintf(stderr, "  %-34s FAILED %s: %s\n", specs[k].name, fr_status_name(st), err.msg);
            failed++;
        } else {
            printf("  %-34s %s %s\n", specs[k].name, specs[k].bwd ? "bwd" : "fwd",
                   inputs_only ? "inputs" : "inputs+golden outputs");
            written++;
        }
    }
#ifdef FR_HAVE_MPI
    written = (int)fr_dist_sum(cli_dist(), written);
    failed = (int)fr_dist_sum(cli_dist(), failed);
    if (cli_rank() != 0) return failed ? 2 : 0;
#endif
    printf("flashref golden: %d case(s) written, %d failed\n", written, failed);
    if (!written && created) rmdir(out); /* a failed run leaves no empty --out behind (only if we made it) */
    return failed ? 2 : 0;
}
