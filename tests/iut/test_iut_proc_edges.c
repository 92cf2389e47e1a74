/* The edges of contained processes and captured text (src/verify/iut/iut_proc.c) that test_iut_proc leaves: UTF-8
 * above U+10FFFF, a lone continuation byte, an embedded NUL, output rooms too small for a character; tails fed more
 * than they hold, cut inside a character and read into no room; wait statuses that are neither an exit nor a known
 * signal; a runner's environment overriding the verifier's (a longer name that starts alike untouched, a name alone
 * removing it); no descriptors left for the pipes, one pipe short each time (FR_E_IO, nothing started, nothing
 * leaked); an interrupt flag ending a wait (and one not raised changing nothing); a write to a runner that never
 * reads (false at the deadline) and to an ended one; a supervisor killed from outside (the runner reported killed,
 * its group gone); the line reader cutting an overlong line; a function runner without pipes, closed after it exited.
 * usage: test_iut_proc_edges */
#define _GNU_SOURCE
#include "iut_testutil.h"
#include "verify/iut/iut_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void utf8(void) {
    static const struct {
        const char *in, *out;
    } k[] = {
        {"above \xf4\x90\x80\x80 max", "above \\xF4\\x90\\x80\\x80 max"}, /* U+110000 */
        {"lead \xf5\x80", "lead \\xF5\\x80"},                           /* no such lead byte */
        {"cont \x80 alone", "cont \\x80 alone"},
        {"four \xf0\x9f\x98\x80 ok", "four \xf0\x9f\x98\x80 ok"},
        {"cut4 \xf0\x9f\x98", "cut4 \\xF0\\x9F\\x98"},
        {"bad cont \xe2\x28\xa1", "bad cont \\xE2(\\xA1"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char out[256];
        fr_utf8_sanitize(k[i].in, strlen(k[i].in), out, sizeof out);
        CHECK(!strcmp(out, k[i].out), "sanitize %zu: got '%s', want '%s'", i, out, k[i].out);
    }
    /* An embedded NUL ends the text; a character that does not fit whole is left out; no room writes nothing. */
    char out[16];
    fr_utf8_sanitize("ab\0cd", 5, out, sizeof out);
    CHECK(!strcmp(out, "ab"), "embedded NUL: '%s'", out);
    fr_utf8_sanitize("\xc3\xa9\xc3\xa9", 4, out, 4);
    CHECK(!strcmp(out, "\xc3\xa9"), "room 4 for two 2-byte characters: '%s'", out);
    fr_utf8_sanitize("a\x01", 2, out, 5);
    CHECK(!strcmp(out, "a"), "room 5 for a and an escape: '%s'", out);
    out[0] = 'Z';
    fr_utf8_sanitize("abc", 3, out, 0);
    CHECK(out[0] == 'Z', "room 0 wrote '%c'", out[0]);
    CHECK(fr_utf8_invalid_at("ok \xc3\xa9", 5) == 5, "valid text: %zu", fr_utf8_invalid_at("ok \xc3\xa9", 5));
    size_t at = fr_utf8_invalid_at("ok \xed\xa0\x80", 6);
    CHECK(at == 3, "surrogate at 3: %zu", at);
}

static void tails(void) {
    fr_tail t;
    memset(&t, 0, sizeof t);
    char out[64];
    out[0] = 'Z';
    CHECK(fr_tail_text(&t, out, 0) == 0 && out[0] == 'Z', "room 0");
    CHECK(fr_tail_text(&t, out, sizeof out) == 0 && out[0] == '\0', "empty tail: '%s'", out);
    /* One chunk larger than the tail: its last FR_TAIL_BYTES kept, the earlier part marked. */
    size_t n = FR_TAIL_BYTES + 100;
    char *big = malloc(n);
    if (!CHECKED(big != NULL)) return;
    memset(big, 'a', n);
    memcpy(big + n - 5, "\nEND\n", 5);
    fr_tail_add(&t, big, n);
    free(big);
    CHECK(t.len == FR_TAIL_BYTES && t.total == n, "len %zu total %zu", t.len, t.total);
    size_t w = fr_tail_text(&t, out, sizeof out);
    CHECK(!strcmp(out, "...END") && w == 6, "big chunk: '%s' (%zu)", out, w);
    /* A last line of two-byte characters longer than the room: cut at a character boundary. */
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 100; i++) fr_tail_add(&t, "\xc3\xa9", 2);
    w = fr_tail_text(&t, out, 40);
    CHECK(w == 37 && !strncmp(out, "...\xc3\xa9", 5) && fr_utf8_invalid_at(out, w) == w, "cut characters: '%s' (%zu)",
          out, w);
    /* One overflowed line that fits the room whole: marked as cut. */
    memset(&t, 0, sizeof t);
    big = malloc(5000);
    if (CHECKED(big != NULL)) {
        memset(big, 'b', 5000);
        fr_tail_add(&t, big, 5000);
        free(big);
        char *wide = malloc(8192);
        if (CHECKED(wide != NULL)) {
            w = fr_tail_text(&t, wide, 8192);
            CHECK(w == 3 + FR_TAIL_BYTES && !strncmp(wide, "...bbb", 6), "overflowed line: %zu bytes", w);
            free(wide);
        }
    }
    /* Only blank lines: nothing. */
    memset(&t, 0, sizeof t);
    fr_tail_add(&t, "\n \r\n", 4);
    CHECK(fr_tail_text(&t, out, sizeof out) == 0 && !strcmp(out, ""), "blank tail: '%s'", out);
}

static void describe(void) {
    char b[96];
    fr_proc_describe(0x137f, b, sizeof b); /* stopped by SIGSTOP: neither exited nor signalled */
    CHECK(!strcmp(b, "wait status 0x137f"), "stopped: '%s'", b);
    fr_proc_describe(SIGRTMIN + 2, b, sizeof b); /* a real-time signal has no abbreviation */
    char want[64];
    snprintf(want, sizeof want, "killed by signal %d (SIG?)", SIGRTMIN + 2);
    CHECK(!strcmp(b, want), "real-time signal: '%s', want '%s'", b, want);
    fr_proc_describe(9, b, sizeof b);
    CHECK(!strcmp(b, "killed by signal 9 (SIGKILL)"), "SIGKILL: '%s'", b);
}

/* Runs cmd with stdout piped; its first line into line. Returns fr_proc_poll's last answer. */
static bool first_line_cb(void *ud, const char *line, size_t n, bool cut) {
    (void)cut;
    snprintf(ud, 256, "%.*s", (int)n, line);
    return true;
}

static void environment(void) {
    setenv("FR_EDGE_VAR", "old", 1);
    setenv("FR_EDGE_KEEP", "kept", 1);
    setenv("FR_EDGE_NOEQ", "dropped", 1);
    setenv("FR_EDGE_VARX", "longer", 1); /* its name starts with FR_EDGE_VAR: not overridden */
    /* An entry without '=' removes the variable of that name (and is passed on as it is, which a shell ignores). */
    static const char *const extra[] = {"FR_EDGE_VAR=new", "FR_EDGE_ADDED=added", "FR_EDGE_NOEQ", NULL};
    fr_proc_spec s = {.cmdline = "echo \"$FR_EDGE_VAR $FR_EDGE_VARX $FR_EDGE_KEEP $FR_EDGE_ADDED "
                                 "${FR_EDGE_NOEQ-unset}\"",
                      .pipe_out = true, .setenv = extra};
    fr_proc p;
    fr_error err;
    fr_status st = fr_proc_start(&p, &s, &err);
    if (!CHECKED(st == FR_OK, "start: %s", err.msg)) return;
    char line[256] = "";
    int r = fr_proc_poll(&p, fr_proc_now() + 20, NULL, NULL, first_line_cb, line);
    fr_proc_end(&p);
    CHECK(r == 2 && !strcmp(line, "new longer kept added unset"), "environment: r %d, '%s'", r, line);
    unsetenv("FR_EDGE_NOEQ");
    unsetenv("FR_EDGE_VARX");
    unsetenv("FR_EDGE_VAR");
    unsetenv("FR_EDGE_KEEP");
}

/* With no descriptor left, the pipes cannot be made: FR_E_IO with the reason, nothing started. */
static void no_descriptors(void) {
    struct rlimit old;
    if (!CHECKED(getrlimit(RLIMIT_NOFILE, &old) == 0)) return;
    int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!CHECKED(lowest >= 0)) return;
    close(lowest);
    /* extra descriptors: 0 none, 2 the stdin socket only (piped) or stderr (not), 4, 6: one pipe short each time */
    for (int k = 0; k < 6; k++) {
        bool piped = k < 4;
        int extra = piped ? 2 * k : 2 * (k - 4);
        struct rlimit lim = {(rlim_t)(lowest + extra), old.rlim_max};
        fr_proc_spec s = {.cmdline = "exit 0", .pipe_in = piped, .pipe_out = piped};
        fr_proc p;
        fr_error err;
        memset(&err, 0, sizeof err);
        fr_status st = setrlimit(RLIMIT_NOFILE, &lim) == 0 ? fr_proc_start(&p, &s, &err) : FR_E_INTERNAL;
        setrlimit(RLIMIT_NOFILE, &old);
        CHECK(st == FR_E_IO && strstr(err.msg, "cannot create pipes") && strstr(err.msg, "Too many open files"),
              "no descriptors (pipes %d, %d free): %s: %s", (int)piped, extra, fr_status_name(st), err.msg);
        if (st == FR_OK) fr_proc_end(&p);
    }
    int again = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(again == lowest, "descriptors leaked: the lowest free is %d, was %d", again, lowest);
    if (again >= 0) close(again);
}

static void interrupted(void) {
    static volatile sig_atomic_t flag;
    fr_proc_spec s = {.cmdline = "exec sleep 30"};
    fr_proc p;
    fr_error err;
    if (!CHECKED(fr_proc_start(&p, &s, &err) == FR_OK, "start: %s", err.msg)) return;
    flag = 0; /* a flag that is not raised changes nothing: the deadline ends the wait */
    fr_proc_interrupt_on(&flag);
    int r0 = fr_proc_poll(&p, fr_proc_now() + 0.1, NULL, NULL, NULL, NULL);
    CHECK(r0 == 0 && !p.exited, "flag not raised: poll returned %d", r0);
    flag = 1;
    double t0 = fr_proc_now();
    int r = fr_proc_poll(&p, t0 + 30, NULL, NULL, NULL, NULL);
    bool exited = p.exited; /* before fr_proc_end, which kills it */
    fr_proc_interrupt_on(NULL);
    fr_proc_end(&p);
    CHECK(r == 0 && !exited, "interrupt: poll returned %d (exited %d), not 0", r, (int)exited);
    printf("  interrupt flag: poll ended after %.2f s\n", fr_proc_now() - t0);
}

/* A runner that never reads its stdin: a write larger than the socket buffer ends false at the deadline; once the
 * runner is ended, every write is false at once. */
static void writes(void) {
    fr_proc_spec s = {.cmdline = "exec sleep 30", .pipe_in = true, .pipe_out = true};
    fr_proc p;
    fr_error err;
    if (!CHECKED(fr_proc_start(&p, &s, &err) == FR_OK, "start: %s", err.msg)) return;
    size_t n = (size_t)16 << 20;
    char *buf = calloc(1, n);
    if (CHECKED(buf != NULL)) {
        bool ok = fr_proc_write(&p, buf, n, fr_proc_now() + 0.3);
        CHECK(!ok, "16 MiB written to a runner that does not read");
    }
    fr_proc_end(&p);
    CHECK(!fr_proc_write(&p, "x\n", 2, fr_proc_now() + 1), "write after fr_proc_end succeeded");
    fr_proc_end(&p); /* twice is safe */
    fr_proc_close(&p, 0.1);
    free(buf);
}

/* Alive and not a zombie (an init that does not reap is not ours to judge). */
static bool alive(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *r = strrchr(buf, ')');
    return r && r[1] == ' ' && r[2] != 'Z';
}

/* The supervisor killed from outside: the runner is reported killed (SIGKILL) and its process group does not
 * outlive fr_proc_end. */
static void supervisor_killed(void) {
    fr_proc_spec s = {.cmdline = "exec sleep 30"};
    fr_proc p;
    fr_error err;
    if (!CHECKED(fr_proc_start(&p, &s, &err) == FR_OK, "start: %s", err.msg)) return;
    for (int k = 0; k < 200 && p.runner <= 0; k++) fr_proc_poll(&p, fr_proc_now() + 0.05, NULL, NULL, NULL, NULL);
    pid_t runner = p.runner;
    CHECK(runner > 0, "the supervisor never reported the runner");
    kill(p.sup, SIGKILL);
    int r = fr_proc_poll(&p, fr_proc_now() + 20, NULL, NULL, NULL, NULL);
    CHECK(r == 1 && p.sup_died && WIFSIGNALED(p.wstatus) && WTERMSIG(p.wstatus) == SIGKILL,
          "supervisor killed: r %d sup_died %d status 0x%x", r, (int)p.sup_died, (unsigned)p.wstatus);
    fr_proc_end(&p);
    bool gone = false;
    for (int k = 0; k < 200 && !gone; k++) {
        gone = !alive(runner);
        if (!gone) usleep(10000);
    }
    CHECK(gone, "runner %d outlived its killed supervisor", (int)runner);
}

typedef struct lines {
    int n, cut;
    size_t len[4];
} lines;

static bool count_line(void *ud, const char *line, size_t n, bool cut) {
    lines *l = ud;
    (void)line;
    if (l->n < 4) l->len[l->n] = n;
    l->n++;
    l->cut += cut;
    return false;
}

static void line_reader(void) {
    fr_proc *ls = calloc(1, sizeof *ls);
    if (!CHECKED(ls != NULL)) return;
    lines l;
    memset(&l, 0, sizeof l);
    size_t n = FR_PROC_LINE_MAX + 10;
    char *buf = malloc(n + 8);
    if (CHECKED(buf != NULL)) {
        memset(buf, 'x', n);
        memcpy(buf + n, "\nab", 3);
        bool got = fr_proc_feed_lines(ls, buf, n + 3, count_line, &l); /* "ab" waits for its newline */
        CHECK(!got && l.n == 1 && l.cut == 1 && l.len[0] == FR_PROC_LINE_MAX - 1, "overlong: %d lines, %d cut, %zu",
              l.n, l.cut, l.len[0]);
        fr_proc_feed_lines(ls, "c\n", 2, count_line, &l);
        CHECK(l.n == 2 && l.cut == 1 && l.len[1] == 3, "the line after: %d lines, %d cut, %zu bytes", l.n, l.cut,
              l.len[1]);
    }
    free(buf);
    free(ls);
}

static int exit7(void *ud) {
    (void)ud;
    return 7;
}

/* A function runner without pipes (stdin and stdout /dev/null); fr_proc_close after it exited does not wait. */
static void fn_runner(void) {
    fr_proc_spec s = {.fn = exit7};
    fr_proc p;
    fr_error err;
    if (!CHECKED(fr_proc_start(&p, &s, &err) == FR_OK, "start: %s", err.msg)) return;
    int r = fr_proc_poll(&p, fr_proc_now() + 20, NULL, NULL, NULL, NULL);
    CHECK(r == 1 && WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == 7, "fn runner: r %d status 0x%x", r,
          (unsigned)p.wstatus);
    double t0 = fr_proc_now();
    fr_proc_close(&p, 10.0);
    CHECK(p.sup == 0 && p.in < 0 && p.out < 0 && p.err < 0 && p.stat < 0 && fr_proc_now() - t0 < 9.0,
          "fr_proc_close after exit: sup %d, in %d out %d err %d stat %d", (int)p.sup, p.in, p.out, p.err, p.stat);
}

int main(void) {
    utf8();
    tails();
    describe();
    environment();
    no_descriptors();
    interrupted();
    writes();
    supervisor_killed();
    line_reader();
    fn_runner();
    printf("test_iut_proc_edges: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
