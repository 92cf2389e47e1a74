/* The edges of the exec and persistent IUTs (src/verify/iut/iut_exec.c) that test_iut_exec, test_caps,
 * test_iut_repro and the hostile corpus leave, each with its status and message:
 *   - outputs: not a .npy file, a descr with no dtype of its own, another number of dimensions, data cut short, a
 *     socket (cannot open);
 *   - exec runners: killed by a signal (a simple command and a compound one, whose shell re-raises it), silent exits
 *     3 and 77, a runner that removes its case directory or swaps another directory in for it, FLASHREF_KEEP_TMP naming
 *     the kept directory in a failure, a TMPDIR that vanished after open and a case that cannot be written (the run's
 *     own failure, not the implementation's);
 *   - persistent runners (tests/iut/scripts/edge_p.sh): a long message, a failure with only stdout to show, no
 *     message, 77 without a reason, a status number out of range, an echo given once then dropped, CR and spaces around
 *     message and echo, an echo of another directory of the same length or of nothing, a status before any case,
 *     death without a status line (with stdout, silent, after closing stdin), a runner that stops reading its stdin
 *     (a timeout, not a crash), capability lines overlong, blank, refused mid-case, after the first answer, ending
 *     in CR, declared again after a restart, and a repro hook killed by a signal;
 *   - the status line parser and a worker's status words, bad arguments to the entry points, out of descriptors
 *     (for the case directory, for the runner's pipes: the run's own failure), variants in a command of tabs and
 *     variants declared without the one running.
 * usage: test_iut_exec_edges SCRIPTS_DIR [seed] */
#define _GNU_SOURCE

#include "iut_testutil.h"
#include "verify/iut/iut_exec.h"
#include "verify/iut/iut_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *scripts;
static char root[600], tmp[700];

static fr_iut *open_spec(const char *spec) {
    fr_error err;
    fr_iut *iut = NULL;
    fr_status st = fr_iut_open(spec, &iut, &err);
    CHECK(st == FR_OK, "open %s: %s: %s", spec, fr_status_name(st), err.msg);
    return st == FR_OK ? iut : NULL;
}

static fr_status run(fr_iut *iut, const fr_case *c, fr_error *err) {
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    memset(err, 0, sizeof *err);
    fr_status st = fr_iut_run(iut, c, 0, &o, err);
    fr_case_outputs_free(&o);
    return st;
}

/* Opens spec, runs c once, closes: the status, err the message. */
static fr_status run_once(const char *spec, const fr_case *c, fr_error *err) {
    fr_iut *iut = open_spec(spec);
    if (!iut) return FR_E_INTERNAL;
    fr_status st = run(iut, c, err);
    fr_iut_close(iut);
    return st;
}

/* Entries of the temporary area (TMPDIR of the runs). */
static int tmp_entries(const char *skip_suffix) {
    DIR *d = opendir(tmp);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t l = strlen(e->d_name), s = skip_suffix ? strlen(skip_suffix) : 0;
        if (s && l >= s && !strcmp(e->d_name + l - s, skip_suffix)) continue;
        n++;
    }
    closedir(d);
    return n;
}

static void clear_tmp(void) {
    iut_rmtree(tmp);
    mkdir(tmp, 0700);
}

/* A version 1.0 .npy file: header for descr and shape (a Python tuple), then data_bytes zero bytes. */
static bool write_npy(const char *path, const char *descr, const char *shape, size_t data_bytes) {
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t total = ((size_t)10 + (size_t)len + 1 + 63) / 64 * 64, hl = total - 10;
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(hl & 0xFF), f);
    fputc((int)(hl >> 8), f);
    fputs(dict, f);
    for (size_t k = (size_t)len; k < hl - 1; k++) fputc(' ', f);
    fputc('\n', f);
    for (size_t k = 0; k < data_bytes; k++) fputc(0, f);
    return fclose(f) == 0;
}

/* Writes the reference outputs into root/name, then lets fix replace attention_out.npy; points copy_outputs.sh
 * there. */
static const char *prepare(const char *name, const fr_case_outputs *ref) {
    static char dir[800];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    fr_error err;
    CHECK(fr_case_write_outputs(dir, ref, &err) == FR_OK, "write %s: %s", dir, err.msg);
    setenv("FR_IUT_SRC", dir, 1);
    unsetenv("FR_IUT_SRC_FILE");
    return dir;
}

static void outputs(const fr_case *c, const fr_case_outputs *ref) {
    char spec[1200], path[1000];
    snprintf(spec, sizeof spec, "exec:sh %s/copy_outputs.sh", scripts);
    const fr_tensor *ao = &ref->fwd.attention_out;
    size_t bytes = (size_t)fr_tensor_numel(ao) * fr_dtype_size(ao->dtype);
    char shape[128];
    snprintf(shape, sizeof shape, "(%lld, %lld, %lld, %lld)", (long long)ao->shape[0], (long long)ao->shape[1],
             (long long)ao->shape[2], (long long)ao->shape[3]);
    fr_error err;
    fr_status st;
    char want[300];

    /* Not a .npy file at all. */
    snprintf(path, sizeof path, "%s/attention_out.npy", prepare("garbage", ref));
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("this is not a numpy file\n", f);
        fclose(f);
    }
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_OUTPUT && !strcmp(err.msg, "exec: attention_out.npy: bad magic (not an .npy file)"),
          "garbage output: %s: %s", fr_status_name(st), err.msg);

    /* A descr flashref reads only as bit patterns (no dtype of its own). */
    snprintf(path, sizeof path, "%s/attention_out.npy", prepare("int8", ref));
    CHECK(write_npy(path, "|i1", shape, bytes / 4));
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_OUTPUT && !strcmp(err.msg, "shape: exec: attention_out.npy: dtype ? (descr '|i1'), expected fp32 "
                                                "(descr '<f4', the operator's)"),
          "int8 output: %s: %s", fr_status_name(st), err.msg);

    /* Another number of dimensions. */
    snprintf(path, sizeof path, "%s/attention_out.npy", prepare("ndim", ref));
    CHECK(write_npy(path, "<f4", "(3, 3)", 36));
    st = run_once(spec, c, &err);
    snprintf(want, sizeof want, "shape: exec: attention_out.npy: shape [3,3], expected [%lld,%lld,%lld,%lld]",
             (long long)ao->shape[0], (long long)ao->shape[1], (long long)ao->shape[2], (long long)ao->shape[3]);
    CHECK(st == FR_E_OUTPUT && !strcmp(err.msg, want), "2-d output: %s: %s", fr_status_name(st), err.msg);

    /* The right header, half the data: refused from the file's size, before any data is read. */
    snprintf(path, sizeof path, "%s/attention_out.npy", prepare("short", ref));
    CHECK(write_npy(path, "<f4", shape, bytes / 2));
    st = run_once(spec, c, &err);
    snprintf(want, sizeof want, "exec: attention_out.npy: data size %zu bytes does not match shape and descr '<f4' "
             "(%zu bytes expected)", bytes / 2, bytes);
    CHECK(st == FR_E_OUTPUT && !strcmp(err.msg, want), "short output: %s: %s", fr_status_name(st), err.msg);

    /* A socket in place of an output: it cannot be opened (and is never waited on). */
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        snprintf(spec, sizeof spec, "exec:sh %s/edge.sh socket", scripts);
        st = run_once(spec, c, &err);
        CHECK(st == FR_E_IO && !strcmp(err.msg, "exec: attention_out.npy: cannot open: No such device or address"),
              "socket output: %s: %s", fr_status_name(st), err.msg);
    } else {
        printf("  SKIP socket output: no python3 to bind a UNIX socket\n");
    }

    /* The same failure with no error record to fill. */
    snprintf(spec, sizeof spec, "exec:sh %s/copy_outputs.sh", scripts);
    setenv("FR_IUT_SRC", root, 1);
    fr_iut *iut = open_spec(spec);
    if (iut) {
        prepare("garbage", ref); /* the garbage file is still there: prepare rewrites only the good outputs */
        snprintf(path, sizeof path, "%s/attention_out.npy", prepare("garbage2", ref));
        f = fopen(path, "w");
        if (f) {
            fputs("garbage\n", f);
            fclose(f);
        }
        fr_case_outputs o;
        memset(&o, 0, sizeof o);
        st = fr_iut_run(iut, c, 0, &o, NULL);
        CHECK(st == FR_E_OUTPUT, "garbage, err NULL: %s", fr_status_name(st));
        fr_case_outputs_free(&o);
        fr_iut_close(iut);
    }
    CHECK(tmp_entries(NULL) == 0, "case directories left in %s", tmp);
}

static void exec_statuses(const fr_case *c) {
    char spec[1200];
    fr_error err;
    fr_status st;

    /* Killed by a signal: the simple command is exec'd (its own signal); the compound one's shell re-raises it. */
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh segv", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "crash: killed by signal 11 (SIGSEGV); no stderr"), "segv: %s: %s",
          fr_status_name(st), err.msg);
    snprintf(spec, sizeof spec, "exec:FR_EDGE=1 sh %s/edge.sh segv", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_INTERNAL && !strncmp(err.msg, "crash: killed by signal 11 (SIGSEGV); ", 38),
          "segv (compound): %s: %s", fr_status_name(st), err.msg);
    /* A shell word first: run as given. */
    snprintf(spec, sizeof spec, "exec:eval sh %s/edge.sh quiet3", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "exec: exit status 3; no stderr"), "quiet3: %s: %s",
          fr_status_name(st), err.msg);
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh quiet77", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_UNSUPPORTED && !strcmp(err.msg, "exec: exit status 77 (not supported); no stderr"),
          "quiet77: %s: %s", fr_status_name(st), err.msg);

    /* The runner removes its case directory, or swaps another one in: nothing of the case is left either way (the
     * directory it moved away is its own doing, emptied through our descriptor). */
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh rmdir", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_UNSUPPORTED && tmp_entries(NULL) == 0, "rmdir: %s: %s, %d entries left", fr_status_name(st),
          err.msg, tmp_entries(NULL));
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh swapdir", scripts);
    st = run_once(spec, c, &err);
    CHECK(st == FR_E_UNSUPPORTED && tmp_entries("-moved") == 0 && tmp_entries(NULL) == 1,
          "swapdir: %s: %s, %d entries left besides the moved one", fr_status_name(st), err.msg, tmp_entries("-moved"));
    clear_tmp();

    /* A command starting with a blank is run as given (no exec); an empty FLASHREF_KEEP_TMP keeps nothing. */
    snprintf(spec, sizeof spec, "exec: sh %s/edge.sh quiet3", scripts);
    setenv("FLASHREF_KEEP_TMP", "", 1);
    st = run_once(spec, c, &err);
    unsetenv("FLASHREF_KEEP_TMP");
    CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "exec: exit status 3; no stderr") && tmp_entries(NULL) == 0,
          "leading blank: %s: %s", fr_status_name(st), err.msg);
    /* An empty TMPDIR is /tmp. */
    setenv("TMPDIR", "", 1);
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh quiet77", scripts);
    st = run_once(spec, c, &err);
    setenv("TMPDIR", tmp, 1);
    CHECK(st == FR_E_UNSUPPORTED && !strcmp(err.msg, "exec: exit status 77 (not supported); no stderr"),
          "empty TMPDIR: %s: %s", fr_status_name(st), err.msg);

    /* FLASHREF_KEEP_TMP: a failure names the kept directory. */
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh fail3", scripts);
    setenv("FLASHREF_KEEP_TMP", "1", 1);
    st = run_once(spec, c, &err);
    unsetenv("FLASHREF_KEEP_TMP");
    char want[900];
    snprintf(want, sizeof want, "exec: exit status 3; stderr: edge.sh: fail3-marker (case kept in %s/flashref-case-",
             tmp);
    CHECK(st == FR_E_INTERNAL && !strncmp(err.msg, want, strlen(want)) && tmp_entries(NULL) == 1,
          "kept: %s: %s", fr_status_name(st), err.msg);
    clear_tmp();
    /* ... and with no error record to name it in. */
    fr_iut *kept = open_spec(spec);
    if (kept) {
        fr_case_outputs o;
        memset(&o, 0, sizeof o);
        setenv("FLASHREF_KEEP_TMP", "1", 1);
        st = fr_iut_run(kept, c, 0, &o, NULL);
        unsetenv("FLASHREF_KEEP_TMP");
        fr_case_outputs_free(&o);
        CHECK(st == FR_E_INTERNAL && tmp_entries(NULL) == 1, "kept, err NULL: %s, %d entries", fr_status_name(st),
              tmp_entries(NULL));
        fr_iut_close(kept);
    }
    clear_tmp();

    /* The temporary area gone after open: the run's own failure. */
    fr_iut *iut = open_spec(spec);
    if (iut) {
        char gone[800];
        snprintf(gone, sizeof gone, "%s/vanished", root);
        mkdir(gone, 0700);
        setenv("TMPDIR", gone, 1);
        fr_iut *iut2 = open_spec(spec);
        rmdir(gone);
        if (iut2) {
            st = run(iut2, c, &err);
            snprintf(want, sizeof want, "exec: cannot create a temporary directory in %s: No such file or directory",
                     gone);
            CHECK(st == FR_E_IO && !strcmp(err.msg, want) && fr_iut_failed_itself(iut2), "vanished TMPDIR: %s: %s",
                  fr_status_name(st), err.msg);
            fr_iut_close(iut2);
        }
        setenv("TMPDIR", tmp, 1);

        /* A case that cannot be written (files limited to 100 bytes): the run's own failure, no runner started. */
        struct rlimit old, lim;
        if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
            void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
            lim.rlim_cur = 100;
            lim.rlim_max = old.rlim_max;
            st = setrlimit(RLIMIT_FSIZE, &lim) == 0 ? run(iut, c, &err) : FR_E_INTERNAL;
            setrlimit(RLIMIT_FSIZE, &old);
            signal(SIGXFSZ, prev);
            CHECK(st == FR_E_IO && fr_iut_failed_itself(iut) && strstr(err.msg, "/case.json: write error") &&
                      !strstr(err.msg, "fail3-marker"),
                  "case not written: %s: %s", fr_status_name(st), err.msg);
            printf("  case not written: %s: %s\n", fr_status_name(st), err.msg);
        }
        fr_iut_close(iut);
    }
    CHECK(tmp_entries(NULL) == 0, "case directories left in %s", tmp);
}

/* Runs iut on c with the descriptors limited to the lowest free one + extra (err may be NULL). */
static fr_status run_limited(fr_iut *iut, const fr_case *c, int extra, fr_error *err) {
    struct rlimit old;
    if (getrlimit(RLIMIT_NOFILE, &old) != 0) return FR_E_INTERNAL;
    int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (lowest < 0) return FR_E_INTERNAL;
    close(lowest);
    fr_case_outputs o;
    memset(&o, 0, sizeof o);
    if (err) memset(err, 0, sizeof *err);
    fr_status st = FR_E_INTERNAL;
    struct rlimit lim = {(rlim_t)(lowest + extra), old.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &lim) == 0) {
        st = fr_iut_run(iut, c, 0, &o, err);
        setrlimit(RLIMIT_NOFILE, &old);
    }
    fr_case_outputs_free(&o);
    return st;
}

/* Out of descriptors: for the case directory itself (the run's own failure), then for the runner's pipes (exec:, and
 * persistent: starting its runner); err NULL takes the same paths. */
static void no_descriptors(const fr_case *c) {
    char spec[1200];
    fr_error err;
    snprintf(spec, sizeof spec, "exec:sh %s/edge.sh quiet77", scripts);
    fr_iut *iut = open_spec(spec);
    if (!iut) return;
    fr_status st = run_limited(iut, c, 0, &err);
    char want[900];
    snprintf(want, sizeof want, "exec: cannot open %s/flashref-case-", tmp);
    CHECK(st == FR_E_IO && fr_iut_failed_itself(iut) && !strncmp(err.msg, want, strlen(want)) &&
              strstr(err.msg, ": Too many open files"),
          "no descriptor for the case directory: %s: %s", fr_status_name(st), err.msg);
    for (int mode = 0; mode < 2; mode++) {
        const char *label = mode ? "persistent" : "exec";
        if (mode) {
            fr_iut_close(iut);
            snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh quiet77", scripts);
            if (!(iut = open_spec(spec))) return;
        }
        int found = -1;
        snprintf(want, sizeof want, "%s: cannot create pipes: Too many open files", label);
        for (int extra = 1; extra <= 8 && found < 0; extra++) {
            st = run_limited(iut, c, extra, &err);
            printf("  %s: lowest free descriptor + %d: %s: %s\n", label, extra, fr_status_name(st), err.msg);
            if (strstr(err.msg, "cannot create pipes")) found = extra;
        }
        CHECK(found > 0 && st == FR_E_IO && !strcmp(err.msg, want) && fr_iut_failed_itself(iut),
              "%s: no descriptors for the pipes: %s: %s (the run's own failure: %d)", label, fr_status_name(st),
              err.msg, (int)fr_iut_failed_itself(iut));
        if (found > 0) {
            st = run_limited(iut, c, found, NULL);
            CHECK(st == FR_E_IO && fr_iut_failed_itself(iut), "%s: no descriptors for the pipes, err NULL: %s", label,
                  fr_status_name(st));
        }
        st = run(iut, c, &err); /* descriptors back: the runner starts */
        CHECK(st == FR_E_UNSUPPORTED && !fr_iut_failed_itself(iut), "%s: after the limit: %s: %s", label,
              fr_status_name(st), err.msg);
    }
    fr_iut_close(iut);
    CHECK(tmp_entries(NULL) == 0, "case directories left in %s", tmp);
}

typedef struct pcase {
    const char *mode;
    fr_status st;
    const char *msg;  /* the whole message, or its start when prefix */
    bool prefix;
    const char *also; /* a further part it must contain (NULL: none) */
} pcase;

static void persistent_statuses(const fr_case *c) {
    static const pcase k[] = {
        {"long", FR_E_INTERNAL, "persistent: status 1: mmmmmmmmmm", true, "; stderr: edge_p: long-marker on stderr"},
        {"stdout", FR_E_INTERNAL, "persistent: status 2: bad; stdout: ", true, "edge_p: stdout-marker"},
        {"nomsg", FR_E_INTERNAL, "persistent: status 3: (no message); stdout: flashref-status: 3", false, NULL},
        {"quiet77", FR_E_UNSUPPORTED, "persistent: status 77 (not supported): (no reason given)", false, NULL},
        {"err77", FR_E_UNSUPPORTED, "persistent: status 77 (not supported): not this one; stderr: edge_p: err77-marker",
         false, NULL},
        {"huge", FR_E_INTERNAL,
         "persistent: status -1: malformed status line: flashref-status: 99999999999999999999999 too big", true, NULL},
        {"crlf", FR_E_UNSUPPORTED, "persistent: status 77 (not supported): crlf-marker", false, NULL},
        {"die", FR_E_INTERNAL, "crash: the runner ended without a status line (exit status 4); stdout: edge_p: "
                               "die-marker", false, NULL},
        {"silent", FR_E_INTERNAL, "crash: the runner ended without a status line (exit status 4); no stdout", false,
         NULL},
        {"nostdin", FR_E_INTERNAL, "crash: the runner ended without a status line (exit status 0)", true, NULL},
        {"capscut", FR_E_FORMAT, "persistent: the runner's capability line is refused: capabilities: the line is "
                                 "longer than 65536 bytes", false, NULL},
        {"capsblank", FR_E_FORMAT, "persistent: the runner's capability line is refused: capabilities: ", true, NULL},
        {"early_tab", FR_E_INTERNAL, "persistent: protocol error: a 'flashref-status: 0' line came before case ", true,
         "was sent"},
        {"tabcr", FR_E_INTERNAL, "persistent: protocol error: the answer names case , but the case sent was ", true,
         NULL},
        {"samelen", FR_E_INTERNAL, "persistent: protocol error: the answer names case ", true,
         "but the case sent was"},
        {"capsincase", FR_E_FORMAT, "persistent: the runner's capability line is refused: capabilities: ", true, NULL},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char spec[1200];
        snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh %s", scripts, k[i].mode);
        fr_error err;
        fr_status st = run_once(spec, c, &err);
        bool msg_ok = k[i].prefix ? !strncmp(err.msg, k[i].msg, strlen(k[i].msg)) : !strcmp(err.msg, k[i].msg);
        CHECK(st == k[i].st && msg_ok && (!k[i].also || strstr(err.msg, k[i].also)), "%s: %s: '%s' (want %s '%s')",
              k[i].mode, fr_status_name(st), err.msg, fr_status_name(k[i].st), k[i].msg);
        printf("  persistent %-8s %s: %.150s\n", k[i].mode, fr_status_name(st), err.msg);
    }

    /* An echo given once must be given always; the message names the case, so FLASHREF_KEEP_TMP adds nothing. */
    char spec[1200];
    snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh echo1", scripts);
    fr_iut *iut = open_spec(spec);
    if (iut) {
        fr_error err;
        fr_status st = run(iut, c, &err);
        CHECK(st == FR_E_UNSUPPORTED && !strcmp(err.msg, "persistent: status 77 (not supported): first"),
              "echo1 first: %s: %s", fr_status_name(st), err.msg);
        setenv("FLASHREF_KEEP_TMP", "1", 1);
        st = run(iut, c, &err);
        unsetenv("FLASHREF_KEEP_TMP");
        char want[900];
        snprintf(want, sizeof want, "persistent: protocol error: the answer to case %s/flashref-case-", tmp);
        CHECK(st == FR_E_INTERNAL && !strncmp(err.msg, want, strlen(want)) &&
                  strstr(err.msg, "does not echo it, as this runner's earlier answers did (the runner was "
                                  "restarted)") &&
                  !strstr(err.msg, "case kept in"),
              "echo1 second: %s: %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
        clear_tmp();
    }

    /* A capability line after the first answer is not a declaration: nothing declared, the cases go on. */
    snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh capslate", scripts);
    if ((iut = open_spec(spec))) {
        fr_error err;
        fr_status st1 = run(iut, c, &err), st2 = run(iut, c, &err);
        const fr_caps *caps = NULL;
        CHECK(st1 == FR_E_UNSUPPORTED && st2 == FR_E_UNSUPPORTED &&
                  !strcmp(err.msg, "persistent: status 77 (not supported): capslate") &&
                  fr_iut_caps(iut, &caps) == FR_CAPS_NONE,
              "capslate: %s, %s: %s", fr_status_name(st1), fr_status_name(st2), err.msg);
        fr_iut_close(iut);
    }

    /* A declaration ending in spaces and CR is taken. */
    snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh capscr", scripts);
    if ((iut = open_spec(spec))) {
        fr_error err;
        fr_status st = run(iut, c, &err);
        const fr_caps *caps = NULL;
        CHECK(st == FR_E_UNSUPPORTED && fr_iut_caps(iut, &caps) == FR_CAPS_DECLARED && caps &&
                  !strcmp(caps->runner, "edge_p"),
              "capscr: %s: %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }

    /* A runner that declares at every start: restarted after a crash, its second declaration is not read again. */
    char count[800];
    snprintf(count, sizeof count, "%s/capsagain.count", root);
    setenv("FR_EDGE_COUNT", count, 1);
    snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh capsagain", scripts);
    if ((iut = open_spec(spec))) {
        fr_error e1, e2, e3;
        fr_status s1 = run(iut, c, &e1), s2 = run(iut, c, &e2), s3 = run(iut, c, &e3);
        const fr_caps *caps = NULL;
        CHECK(s1 == FR_E_UNSUPPORTED && !strcmp(e1.msg, "persistent: status 77 (not supported): capsagain 1"),
              "capsagain 1: %s: %s", fr_status_name(s1), e1.msg);
        CHECK(s2 == FR_E_INTERNAL && !strcmp(e2.msg, "crash: the runner ended without a status line (exit status 0); "
                                                     "no stdout"),
              "capsagain 2: %s: %s", fr_status_name(s2), e2.msg);
        CHECK(s3 == FR_E_UNSUPPORTED && !strcmp(e3.msg, "persistent: status 77 (not supported): capsagain 3") &&
                  fr_iut_caps(iut, &caps) == FR_CAPS_DECLARED,
              "capsagain 3: %s: %s", fr_status_name(s3), e3.msg);
        fr_iut_close(iut);
    }
    unsetenv("FR_EDGE_COUNT");

    /* A runner that closed its stdin after its first answer and stays: the next case cannot be sent; it ends as a
     * timeout (once reported as a crash by SIGKILL: the kill that ended it was ours). */
    setenv("FLASHREF_EXEC_TIMEOUT", "5", 1);
    snprintf(spec, sizeof spec, "persistent:sh %s/edge_p.sh stuck", scripts);
    iut = open_spec(spec);
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    if (iut) {
        fr_error err;
        fr_status st = run(iut, c, &err);
        CHECK(st == FR_E_UNSUPPORTED, "stuck, first: %s: %s", fr_status_name(st), err.msg);
        usleep(500000); /* its stdin closed by now */
        st = run(iut, c, &err);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "timeout: the case could not be sent (the runner does not read "
                                                      "its stdin) and no status line came (the runner's process tree "
                                                      "was killed; the next case starts a fresh one); no stderr"),
              "stuck: %s: %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }

    /* A repro hook that dies by a signal (exec'd by the shell: its own signal reaches us). */
    snprintf(spec, sizeof spec, "persistent:exec sh %s/edge_p.sh repro", scripts);
    if ((iut = open_spec(spec))) {
        fr_error err;
        (void)run(iut, c, &err); /* the declaration arrives with the first case */
        char out[800];
        snprintf(out, sizeof out, "%s/repro.out", root);
        fr_status st = fr_iut_repro(iut, root, out, &err);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "repro: killed by signal 11 (SIGSEGV); no stderr"),
              "repro segv: %s: %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }
    CHECK(tmp_entries(NULL) == 0, "case directories left in %s", tmp);
}

static void parsers(void) {
    long code = 0;
    char msg[64];
    CHECK(!fr_exec_status_parse("flashref-stat", 13, &code, msg, sizeof msg), "a cut prefix parsed");
    CHECK(!fr_exec_status_parse("flashref-state: 0", 17, &code, msg, sizeof msg), "another word parsed");
    CHECK(fr_exec_status_parse("flashref-status: 5\0junk", 23, &code, msg, sizeof msg) && code == 5 && !msg[0],
          "embedded NUL: %ld '%s'", code, msg);
    CHECK(fr_exec_status_parse("flashref-status:7 \tx", 20, &code, msg, sizeof msg) && code == 7,
          "tab after the number: %ld '%s'", code, msg);
    char longline[700];
    int n = snprintf(longline, sizeof longline, "flashref-status: 1 ");
    memset(longline + n, 'q', sizeof longline - (size_t)n - 1);
    longline[sizeof longline - 1] = '\0';
    CHECK(fr_exec_status_parse(longline, strlen(longline), &code, msg, sizeof msg) && code == 1 &&
              strlen(msg) == sizeof msg - 1 && msg[0] == 'q',
          "long line: %ld, %zu bytes", code, strlen(msg));
    CHECK(fr_exec_status_parse("flashref-status: x", 18, &code, msg, sizeof msg) && code == -1 &&
              !strcmp(msg, "malformed status line: flashref-status: x"),
          "no number: %ld '%s'", code, msg);

    CHECK(fr_exec_status_parse("flashref-status: 5\r", 19, &code, msg, sizeof msg) && code == 5 && !msg[0],
          "CR after the number: %ld '%s'", code, msg);
    CHECK(fr_exec_status_parse("flashref-status: 6\tx", 20, &code, msg, sizeof msg) && code == 6 && !strcmp(msg, "\tx"),
          "tab right after the number: %ld '%s'", code, msg);

    const char *rest = NULL;
    CHECK(fr_exec_worker_status("FR_E_SHAPEX: not a name", &rest) == FR_E_INTERNAL && !strcmp(rest, "FR_E_SHAPEX: not "
                                                                                                   "a name"),
          "a name's prefix: '%s'", rest);
    CHECK(fr_exec_worker_status("FR_E_SHAPE:tight", &rest) == FR_E_SHAPE && !strcmp(rest, "tight"),
          "no space: '%s'", rest);
    CHECK(fr_exec_worker_status("FR_E_SHAPE: spaced", &rest) == FR_E_SHAPE && !strcmp(rest, "spaced"),
          "space: '%s'", rest);
    CHECK(fr_exec_worker_status("FR_E_UNSUPPORTED: not a FAIL word", &rest) == FR_E_INTERNAL &&
              !strcmp(rest, "not a FAIL word"),
          "unsupported: '%s'", rest);
    CHECK(fr_exec_worker_status("FR_E_NOT_AVAILABLE: x", &rest) == FR_E_INTERNAL && !strcmp(rest, "x"),
          "not available: '%s'", rest);
    CHECK(fr_exec_worker_status("something else", &rest) == FR_E_INTERNAL && !strcmp(rest, "something else"),
          "unknown: '%s'", rest);
}

static void arguments(const fr_case *c) {
    fr_error err;
    fr_iut slot;
    memset(&slot, 0, sizeof slot);
    fr_status st = fr_iut_exec_open(NULL, false, &slot, &err);
    CHECK(st == FR_E_NULL && !strcmp(err.msg, "exec: NULL"), "NULL cmd: %s: %s", fr_status_name(st), err.msg);
    st = fr_iut_exec_open("true", true, NULL, &err);
    CHECK(st == FR_E_NULL && !strcmp(err.msg, "persistent: NULL"), "NULL iut: %s: %s", fr_status_name(st), err.msg);
    static const char *const bad[] = {"inf", "-1", "1e999", "nan", "2s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("FLASHREF_EXEC_TIMEOUT", bad[i], 1);
        fr_iut *iut = NULL;
        st = fr_iut_open("persistent:true", &iut, &err);
        char want[128];
        snprintf(want, sizeof want, "FLASHREF_EXEC_TIMEOUT: '%s' is not a number of seconds > 0", bad[i]);
        CHECK(st == FR_E_INVALID_ARG && !iut && !strcmp(err.msg, want), "FLASHREF_EXEC_TIMEOUT=%s: %s: %s", bad[i],
              fr_status_name(st), err.msg);
        if (iut) fr_iut_close(iut);
    }
    setenv("FLASHREF_EXEC_TIMEOUT", "", 1); /* empty: the default */
    fr_iut *iut = NULL;
    st = fr_iut_open("exec:true", &iut, &err);
    unsetenv("FLASHREF_EXEC_TIMEOUT");
    CHECK(st == FR_OK, "empty FLASHREF_EXEC_TIMEOUT: %s: %s", fr_status_name(st), err.msg);
    if (iut) fr_iut_close(iut);
    st = fr_iut_exec_set_timeout(NULL, 1, &err);
    CHECK(st == FR_E_INVALID_ARG && !strcmp(err.msg, "exec timeout: the IUT is not an exec IUT"), "NULL timeout: %s",
          err.msg);
    char spec[64];
    st = fr_iut_exec_variant_spec(NULL, "fp16", spec, sizeof spec, &err);
    CHECK(st == FR_E_UNSUPPORTED && strstr(err.msg, "variants are a runner's"), "variant of NULL: %s: %s",
          fr_status_name(st), err.msg);

    /* A variant spec longer than the room given. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "persistent:sh %s/repro.sh fp32", scripts);
    if ((iut = open_spec(cmd))) {
        (void)run(iut, c, &err); /* the declaration arrives with the first case */
        char small[16];
        st = fr_iut_exec_variant_spec(iut, "fp16", small, sizeof small, &err);
        CHECK(st == FR_E_INTERNAL && !strcmp(err.msg, "variant: command too long"), "variant too long: %s: %s",
              fr_status_name(st), err.msg);
        char big[1400];
        st = fr_iut_exec_variant_spec(iut, "fp16", big, sizeof big, &err);
        CHECK(st == FR_OK && strstr(big, "repro.sh fp16") && !strncmp(big, "persistent:", 11), "variant: %s: %s",
              fr_status_name(st), st == FR_OK ? big : err.msg);
        fr_iut_close(iut);
    }
    /* Words of the command separated by tabs: the variant's word is found and swapped all the same. */
    snprintf(cmd, sizeof cmd, "persistent:sh\t%s/repro.sh\tfp32", scripts);
    if ((iut = open_spec(cmd))) {
        (void)run(iut, c, &err);
        char big[1400], want[1400];
        st = fr_iut_exec_variant_spec(iut, "fp16", big, sizeof big, &err);
        snprintf(want, sizeof want, "persistent:sh\t%s/repro.sh\tfp16", scripts);
        CHECK(st == FR_OK && !strcmp(big, want), "variant, tabs: %s: %s", fr_status_name(st),
              st == FR_OK ? big : err.msg);
        fr_iut_close(iut);
    }
    /* Variants declared without the one it runs: nothing to swap. */
    snprintf(cmd, sizeof cmd, "persistent:sh %s/edge_p.sh novariant", scripts);
    if ((iut = open_spec(cmd))) {
        st = run(iut, c, &err);
        CHECK(st == FR_E_UNSUPPORTED, "novariant: %s: %s", fr_status_name(st), err.msg);
        char big[1400], want[1400];
        st = fr_iut_exec_variant_spec(iut, "a", big, sizeof big, &err);
        snprintf(want, sizeof want, "persistent:sh %s/edge_p.sh novariant declares no variants", scripts);
        CHECK(st == FR_E_UNSUPPORTED && !strcmp(err.msg, want), "novariant: %s: %s", fr_status_name(st), err.msg);
        fr_iut_close(iut);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_iut_exec_edges SCRIPTS_DIR [seed]\n");
        return 2;
    }
    scripts = argv[1];
    uint64_t seed = fr_test_seed(argc - 1, argv + 1, "test_iut_exec_edges");
    char *r = iut_tmpdir("iut-exec-edges");
    if (!r) return 1;
    snprintf(root, sizeof root, "%s", r);
    free(r);
    snprintf(tmp, sizeof tmp, "%s/tmp", root);
    mkdir(tmp, 0700);
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);

    fr_gen_spec fwd = {.name = "fwd", .layout = FR_BNSD, .B = 1, .N1 = 2, .S1 = 8, .S2 = 8, .D = 8};
    fr_error err;
    fr_case c;
    fr_status st = iut_case(&fwd, seed, root, &c, &err);
    CHECK(st == FR_OK, "fwd case: %s", err.msg);
    if (st == FR_OK) {
        fr_case_outputs ref;
        fr_engine fast = fr_engine_default(FR_ENGINE_FAST);
        if (CHECKED(fr_case_alloc_outputs(&c, false, &ref, &err) == FR_OK, "alloc: %s", err.msg)) {
            CHECK(fr_fwd(&c.params, &c.in.fwd, &ref.fwd, &fast, &err) == FR_OK, "fast: %s", err.msg);
            outputs(&c, &ref);
            fr_case_outputs_free(&ref);
        }
        exec_statuses(&c);
        persistent_statuses(&c);
        no_descriptors(&c);
        arguments(&c);
        fr_case_free(&c);
    }
    parsers();
    if (old_tmp) setenv("TMPDIR", old_tmp, 1);
    else unsetenv("TMPDIR");
    free(old_tmp);
    iut_rmtree(root);
    printf("test_iut_exec_edges: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
