/* The exec IUT (src/verify/iut/iut_exec.c) with small shell runners (scripts/): exit 0 with prepared outputs (forward and
 * backward, equal to what was prepared, the temporary case directory gone afterwards, kept with FLASHREF_KEEP_TMP,
 * quoted when TMPDIR has a space and a quote), exit 77 -> SKIP, exit 3 -> failure with the stderr tail, outputs of the
 * wrong dtype or shape -> FR_E_OUTPUT naming the file, a missing output -> failure naming it, a command that hangs ->
 * timeout, and a negative control (wrong values pass the protocol but fail the comparison).
 * usage: test_iut_exec SCRIPTS_DIR [seed] */
#define _POSIX_C_SOURCE 200809L

#include "iut_testutil.h"
#include "verify/iut/iut_exec.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *scripts;
static const char *root;
static bool persistent; /* every script through persistent: (tests/iut/scripts/persist.sh) instead of exec: */

static fr_iut *open_script(const char *name) {
    char spec[1200];
    if (persistent)
        snprintf(spec, sizeof spec, "persistent:sh '%s/persist.sh' '%s/%s'", scripts, scripts, name);
    else
        snprintf(spec, sizeof spec, "exec:sh '%s/%s'", scripts, name);
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_OK && fr_iut_get_kind(iut) == FR_IUT_EXEC, "open %s: %s: %s", spec, fr_status_name(st), err.msg);
    return st == FR_OK ? iut : NULL;
}

/* Writes o into root/name and points FR_IUT_SRC there. */
static void prepare(const char *name, const fr_case_outputs *o) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    fr_error err;
    fr_status st = fr_case_write_outputs(dir, o, &err);
    CHECK(st == FR_OK, "write %s: %s", dir, err.msg);
    setenv("FR_IUT_SRC", dir, 1);
    /* A persistent runner keeps the environment it started with: it reads the source from this file. */
    char file[1100];
    snprintf(file, sizeof file, "%s/src.txt", root);
    FILE *f = fopen(file, "w");
    if (f) {
        fprintf(f, "%s\n", dir);
        fclose(f);
    }
    setenv("FR_IUT_SRC_FILE", file, 1);
}

static bool exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The last line of the log file (the case directory the runner saw). */
static void last_logged(const char *log, char *out, size_t n) {
    out[0] = '\0';
    FILE *f = fopen(log, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        snprintf(out, n, "%s", line);
    }
    fclose(f);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Live (not zombie) processes whose process group is pgid, from /proc/PID/stat ("pid (comm) S ppid pgrp ..."). */
/* Alike src/verify/iut/iut_proc.c:kill_children: kept apart because this test counts the group's live processes itself,
 * independently of the library cleanup it checks. */
static int live_in_group(long pgid) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *r = strrchr(buf, ')');
        char state;
        long ppid, pgrp;
        if (r && sscanf(r + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3 && pgrp == pgid && state != 'Z') n++;
    }
    closedir(d);
    return n;
}

/* Runs script on c; returns the status, err holds the message, o the outputs (freed by the caller). */
static fr_status run(fr_iut *iut, const fr_case *c, fr_case_outputs *o, fr_error *err) {
    memset(o, 0, sizeof *o);
    memset(err, 0, sizeof *err);
    return fr_iut_run(iut, c, 0, o, err);
}

static void protocol(const fr_case *c, const char *tag) {
    fr_error err;
    fr_case_outputs ref, o, g;
    /* What a correct implementation writes: the fast engine in the operator's dtypes. */
    CHECK(fr_case_alloc_outputs(c, false, &ref, &err) == FR_OK, "alloc: %s", err.msg);
    fr_engine fast = fr_engine_default(FR_ENGINE_FAST);
    fr_status st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &ref.fwd, &fast, &err)
                                        : fr_bwd(&c->params, &c->in, &ref.bwd, &fast, &err);
    CHECK(st == FR_OK, "%s: fast: %s", tag, err.msg);
    CHECK(iut_golden(c, &g, &err) == FR_OK, "%s: golden: %s", tag, err.msg);
    char src[256];
    snprintf(src, sizeof src, "%s-ok", tag);
    prepare(src, &ref);

    char log[1024], seen[1024];
    snprintf(log, sizeof log, "%s/runner.log", root);
    setenv("FR_IUT_LOG", log, 1);
    fr_iut *iut = open_script("copy_outputs.sh");
    if (!iut) return;

    /* exit 0: the outputs arrive bit for bit, match the golden, and the case directory is removed. */
    st = run(iut, c, &o, &err);
    CHECK(st == FR_OK, "%s: copy_outputs: %s: %s", tag, fr_status_name(st), err.msg);
    if (st == FR_OK) {
        for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
            const fr_tensor *a = fr_case_output_cslot(&o, (fr_case_output)k);
            const fr_tensor *b = fr_case_output_cslot(&ref, (fr_case_output)k);
            if (!fr_tensor_present(b)) continue;
            size_t bytes = (size_t)fr_tensor_numel(b) * fr_dtype_size(b->dtype);
            CHECK(a->dtype == b->dtype && (!bytes || !memcmp(a->data, b->data, bytes)), "%s: %s differs from what the "
                  "runner wrote", tag, fr_case_output_name((fr_case_output)k));
        }
        double r = iut_compare(&o, &g);
        CHECK(r <= 1, "%s: worst error / tolerance %g", tag, r);
        printf("  %s: exit 0: outputs as written, worst error / tolerance vs golden %.3g\n", tag, r);
    }
    fr_case_outputs_free(&o);
    last_logged(log, seen, sizeof seen);
    CHECK(seen[0] && !exists(seen), "%s: case directory '%s' not removed (or never seen)", tag, seen);

    /* FLASHREF_KEEP_TMP keeps it, with the case and the outputs. */
    setenv("FLASHREF_KEEP_TMP", "1", 1);
    st = run(iut, c, &o, &err);
    unsetenv("FLASHREF_KEEP_TMP");
    fr_case_outputs_free(&o);
    last_logged(log, seen, sizeof seen);
    char p[1200];
    snprintf(p, sizeof p, "%s/%s.npy", seen, c->op == FR_CASE_FWD ? "attention_out" : "dq");
    CHECK(st == FR_OK && exists(p), "%s: FLASHREF_KEEP_TMP: %s, '%s' missing", tag, fr_status_name(st), p);
    if (seen[0]) iut_rmtree(seen);

    /* A TMPDIR with a space and a quote: the directory argument is quoted for the shell. */
    char odd[1024];
    snprintf(odd, sizeof odd, "%s/it's a dir", root);
    mkdir(odd, 0700);
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", odd, 1);
    st = run(iut, c, &o, &err);
    if (saved) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    free(saved);
    fr_case_outputs_free(&o);
    last_logged(log, seen, sizeof seen);
    CHECK(st == FR_OK && strstr(seen, "it's a dir/flashref-case-") && !exists(seen), "%s: odd TMPDIR: %s: %s (%s)",
          tag, fr_status_name(st), err.msg, seen);
    unsetenv("FR_IUT_LOG");

    /* Negative control: wrong values in the right files pass the protocol and fail the comparison. */
    fr_tensor *first = fr_case_output_slot(&ref, c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ);
    if (first->dtype == FR_BF16) ((uint16_t *)first->data)[0] ^= 0x4000; /* exponent bit: far off */
    else if (first->dtype == FR_F32) ((float *)first->data)[0] += 1.0f;
    snprintf(src, sizeof src, "%s-wrong", tag);
    prepare(src, &ref);
    st = run(iut, c, &o, &err);
    double r = st == FR_OK ? iut_compare(&o, &g) : 0;
    CHECK(st == FR_OK && r > 1, "%s: negative control: %s, worst error / tolerance %g (must exceed 1)", tag,
          fr_status_name(st), r);
    fr_case_outputs_free(&o);

    /* Wrong dtype: the golden's fp64 files. */
    snprintf(src, sizeof src, "%s-f64", tag);
    prepare(src, &g);
    st = run(iut, c, &o, &err);
    const char *fname = c->op == FR_CASE_FWD ? "attention_out.npy" : "dq.npy";
    CHECK(st == FR_E_OUTPUT && strstr(err.msg, fname) && strstr(err.msg, "fp64"), "%s: wrong dtype: %s: %s", tag,
          fr_status_name(st), err.msg);
    printf("  %s: wrong dtype: %s: %s\n", tag, fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    /* Wrong shape: the last dimension of one output cut to 1. */
    fr_case_output which = c->op == FR_CASE_FWD ? FR_CO_SOFTMAX_MAX : FR_CO_DV;
    fr_tensor *t = fr_case_output_slot(&ref, which);
    fr_tensor keep = *t;
    int64_t sh[FR_MAX_DIMS];
    memcpy(sh, t->shape, sizeof sh);
    sh[t->ndim - 1] = 1;
    *t = fr_tensor_make(t->dtype, t->data, t->ndim, sh);
    snprintf(src, sizeof src, "%s-shape", tag);
    prepare(src, &ref);
    *t = keep;
    st = run(iut, c, &o, &err);
    char want[64];
    snprintf(want, sizeof want, "%s.npy: shape", fr_case_output_name(which));
    CHECK(st == FR_E_OUTPUT && strstr(err.msg, want), "%s: wrong shape: %s: %s", tag, fr_status_name(st), err.msg);
    printf("  %s: wrong shape: %s: %s\n", tag, fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);

    /* A missing output: only the first one written. */
    fr_case_outputs part;
    memset(&part, 0, sizeof part);
    part.op = ref.op;
    *fr_case_output_slot(&part, c->op == FR_CASE_FWD ? FR_CO_ATTENTION_OUT : FR_CO_DQ) = *first;
    snprintf(src, sizeof src, "%s-part", tag);
    prepare(src, &part);
    st = run(iut, c, &o, &err);
    const char *missing = c->op == FR_CASE_FWD ? "softmax_max.npy: missing" : "dk.npy: missing";
    CHECK(st != FR_OK && st != FR_E_UNSUPPORTED && strstr(err.msg, missing), "%s: missing output: %s: %s", tag,
          fr_status_name(st), err.msg);
    printf("  %s: missing output: %s: %s\n", tag, fr_status_name(st), err.msg);
    fr_case_outputs_free(&o);
    fr_iut_close(iut);
    fr_case_outputs_free(&ref);
    fr_case_outputs_free(&g);
}

/* Runs script name once on c: *st and err are what the run returned (false: the script could not be opened). */
static bool run_script(const char *name, const fr_case *c, fr_status *st, fr_error *err) {
    fr_iut *iut = open_script(name);
    if (!iut) return false;
    fr_case_outputs o;
    *st = run(iut, c, &o, err);
    fr_case_outputs_free(&o);
    fr_iut_close(iut);
    return true;
}

static void exit_codes(const fr_case *c) {
    fr_error err;
    fr_case_outputs o;
    fr_iut *iut;
    fr_status st;
    if (run_script("exit77.sh", c, &st, &err)) {
        CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "exit status 77") && strstr(err.msg, "exit77-marker"),
              "exit 77: %s: %s", fr_status_name(st), err.msg);
        printf("  exit 77: %s: %s\n", fr_status_name(st), err.msg);
    }
    if (run_script("exit3.sh", c, &st, &err)) {
        CHECK(st != FR_OK && st != FR_E_UNSUPPORTED && strstr(err.msg, "exit status 3") &&
                  strstr(err.msg, "exit3-marker: cannot open /dev/npu0") && strstr(err.msg, "stderr: ..."),
              "exit 3: %s: %s", fr_status_name(st), err.msg);
        printf("  exit 3: %s: %s\n", fr_status_name(st), err.msg);
    }
    if (run_script("nothing.sh", c, &st, &err)) {
        CHECK(st != FR_OK && st != FR_E_UNSUPPORTED && strstr(err.msg, "attention_out.npy: missing"), "nothing: %s: %s",
              fr_status_name(st), err.msg);
        printf("  exit 0, no outputs: %s: %s\n", fr_status_name(st), err.msg);
    }
    char log[1024], pg[1024];
    snprintf(log, sizeof log, "%s/hang.pid", root);
    setenv("FR_IUT_LOG", log, 1);
    if ((iut = open_script("hang.sh"))) {
        CHECK(fr_iut_exec_set_timeout(iut, 1.0, &err) == FR_OK, "set timeout: %s", err.msg);
        double t0 = now_s();
        st = run(iut, c, &o, &err);
        double dt = now_s() - t0;
        /* The whole process group is gone (the background sleep too): no live process has it (zombies are allowed:
         * an init that does not reap is not ours to judge). */
        last_logged(log, pg, sizeof pg);
        long pgid = strtol(pg, NULL, 10);
        bool gone = false;
        for (int k = 0; k < 100 && pgid > 1 && !gone; k++) {
            gone = live_in_group(pgid) == 0;
            if (!gone) nanosleep(&(struct timespec){0, 20000000}, NULL);
        }
        CHECK(gone, "hang: process group %ld still has members after the timeout", pgid);
        CHECK(st != FR_OK && st != FR_E_UNSUPPORTED && !strncmp(err.msg, "timeout:", 8) && strstr(err.msg, "hang-marker") &&
                  dt >= 0.9 && dt < 10,
              "hang: %s after %.2f s: %s", fr_status_name(st), dt, err.msg);
        printf("  hang: %s after %.2f s, process group %ld %s: %s\n", fr_status_name(st), dt, pgid,
               gone ? "gone" : "ALIVE", err.msg);
        fr_case_outputs_free(&o);
        fr_iut_close(iut);
    }
    unsetenv("FR_IUT_LOG");
}

static void settings(void) {
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open("exec:   ", &iut, &err);
    CHECK(st == FR_E_INVALID_ARG && !iut, "empty command: %s", fr_status_name(st));
    setenv("FLASHREF_EXEC_TIMEOUT", "ten", 1);
    st = fr_iut_open("exec:true", &iut, &err);
    CHECK(st == FR_E_INVALID_ARG && strstr(err.msg, "FLASHREF_EXEC_TIMEOUT") && strstr(err.msg, "ten"),
          "bad FLASHREF_EXEC_TIMEOUT: %s: %s", fr_status_name(st), err.msg);
    setenv("FLASHREF_EXEC_TIMEOUT", "2.5", 1);
    st = fr_iut_open("exec:true", &iut, &err);
    CHECK(st == FR_OK, "FLASHREF_EXEC_TIMEOUT=2.5: %s", err.msg);
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    if (st == FR_OK) {
        CHECK(fr_iut_exec_set_timeout(iut, 0, &err) == FR_E_INVALID_ARG, "timeout 0 accepted");
        CHECK(fr_iut_exec_set_timeout(iut, NAN, &err) == FR_E_INVALID_ARG, "timeout NaN accepted");
        fr_iut_close(iut);
    }
    if (fr_iut_open("golden", &iut, &err) == FR_OK) {
        CHECK(fr_iut_exec_set_timeout(iut, 5, &err) == FR_E_INVALID_ARG, "timeout on an engine accepted");
        fr_iut_close(iut);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_iut_exec SCRIPTS_DIR [seed]\n");
        return 2;
    }
    scripts = argv[1];
    uint64_t seed = fr_test_seed(argc - 1, argv + 1, "test_iut_exec");
    char *r = iut_tmpdir("iut-exec");
    if (!r) return 1;
    root = r;
    fr_gen_spec fwd = {.name = "fwd", .dtype = FR_BF16, .layout = FR_BSND, .B = 2, .N1 = 4, .N2 = 2, .S1 = 12,
                       .S2 = 20, .D = 16, .sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL, .mask = FR_GEN_MASK_CANONICAL};
    fr_gen_spec bwd = {.name = "bwd", .bwd = true, .dtype = FR_F32, .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 10,
                       .S2 = 14, .D = 8};
    fr_error err;
    fr_case cf, cb;
    fr_status st = iut_case(&fwd, seed, root, &cf, &err);
    CHECK(st == FR_OK, "fwd case: %s", err.msg);
    fr_status stb = iut_case(&bwd, seed, root, &cb, &err);
    CHECK(stb == FR_OK, "bwd case: %s", err.msg);
    for (int mode = 0; mode < 2; mode++) {
        persistent = mode == 1;
        printf("%s:\n", persistent ? "persistent:" : "exec:");
        if (st == FR_OK) {
            protocol(&cf, "fwd");
            exit_codes(&cf);
        }
        if (stb == FR_OK) protocol(&cb, "bwd");
    }
    if (st == FR_OK) fr_case_free(&cf);
    if (stb == FR_OK) fr_case_free(&cb);
    settings();
    iut_rmtree(root);
    free(r);
    printf("test_iut_exec: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
