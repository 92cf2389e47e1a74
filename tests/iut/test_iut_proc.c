/* Contained processes and captured text (src/verify/iut/iut_proc.c): UTF-8 sanitising (invalid, overlong, surrogate,
 * truncated sequences and control characters escaped as \xNN, valid text unchanged), stderr tails that keep the last
 * lines, and containment: a setsid'd grandchild of a runner that exited, and a runner past its deadline, are both
 * gone when fr_proc_end returns. usage: test_iut_proc */
#define _GNU_SOURCE
#include "iut_testutil.h"
#include "verify/iut/iut_proc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void utf8(void) {
    static const struct {
        const char *in, *out;
    } k[] = {
        {"plain ascii", "plain ascii"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"bad \xff\xfe end", "bad \\xFF\\xFE end"},
        {"overlong \xc0\x80", "overlong \\xC0\\x80"},
        {"surrogate \xed\xa0\x80", "surrogate \\xED\\xA0\\x80"},
        {"cut \xe2\x82", "cut \\xE2\\x82"},
        {"esc \x1b[31m tab\tnl\n", "esc \\x1B[31m tab\tnl\n"},
        {"del \x7f", "del \\x7F"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char out[256];
        fr_utf8_sanitize(k[i].in, strlen(k[i].in), out, sizeof out);
        CHECK(!strcmp(out, k[i].out), "sanitize %zu: got '%s', want '%s'", i, out, k[i].out);
    }
    char small[8];
    fr_utf8_sanitize("abc\xff\xff\xff", 6, small, sizeof small);
    CHECK(strlen(small) < sizeof small && !strncmp(small, "abc", 3), "sanitize into 8 bytes: '%s'", small);
}

static void tails(void) {
    fr_tail t;
    memset(&t, 0, sizeof t);
    char line[64];
    for (int i = 0; i < 3000; i++) {
        int n = snprintf(line, sizeof line, "noise line %d\n", i);
        fr_tail_add(&t, line, (size_t)n);
    }
    const char *last = "THE REAL ERROR \xff here\n\n";
    fr_tail_add(&t, last, strlen(last));
    char out[200];
    size_t n = fr_tail_text(&t, out, sizeof out);
    CHECK(n < sizeof out && strstr(out, "THE REAL ERROR \\xFF here") && !strncmp(out, "...", 3) &&
              out[n - 1] == 'e',
          "tail: '%s'", out);
    CHECK(strstr(out, "noise line 2999\n") != NULL, "tail lacks the line before the last: '%s'", out);
    /* A last line longer than the room: its end is kept. */
    memset(&t, 0, sizeof t);
    char big[600];
    memset(big, 'x', sizeof big);
    memcpy(big + sizeof big - 6, "TAIL!\n", 6);
    fr_tail_add(&t, big, sizeof big);
    n = fr_tail_text(&t, out, 40);
    CHECK(n < 40 && strstr(out, "TAIL!") && !strncmp(out, "...", 3), "long line: '%s'", out);
}

static bool alive(pid_t p) { return p > 0 && (kill(p, 0) == 0 || errno != ESRCH); }

static pid_t read_pid(const char *f) {
    FILE *fp = fopen(f, "r");
    long v = 0;
    if (fp) {
        if (fscanf(fp, "%ld", &v) != 1) v = 0;
        fclose(fp);
    }
    return (pid_t)v;
}

static void containment(const char *root) {
    char pidf[512], cmd[1200];
    snprintf(pidf, sizeof pidf, "%s/grandchild.pid", root);
    /* The runner exits at once, leaving a setsid'd, double-forked sleeper. */
    snprintf(cmd, sizeof cmd, "(setsid sh -c 'echo $$ > \"%s\"; exec sleep 300' &) ; sleep 0.2; exit 5", pidf);
    fr_proc_spec s = {.cmdline = cmd};
    fr_proc p;
    fr_error err;
    CHECK(fr_proc_start(&p, &s, &err) == FR_OK, "start: %s", err.msg);
    fr_tail et;
    memset(&et, 0, sizeof et);
    int r = fr_proc_poll(&p, fr_proc_now() + 30, NULL, &et, NULL, NULL);
    fr_proc_end(&p);
    pid_t g = read_pid(pidf);
    CHECK(r == 1 && WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == 5, "exit: r %d status 0x%x", r, p.wstatus);
    CHECK(g > 0 && !alive(g), "the setsid'd grandchild %d is still alive", (int)g);
    printf("  setsid grandchild %d: %s after the runner exited\n", (int)g, alive(g) ? "ALIVE" : "gone");

    /* Past the deadline: the runner and its children are killed. */
    snprintf(pidf, sizeof pidf, "%s/hang.pid", root);
    snprintf(cmd, sizeof cmd, "sleep 300 & echo $! > \"%s\"; sleep 300", pidf);
    fr_proc_spec s2 = {.cmdline = cmd};
    CHECK(fr_proc_start(&p, &s2, &err) == FR_OK, "start: %s", err.msg);
    double t0 = fr_proc_now();
    r = fr_proc_poll(&p, t0 + 0.5, NULL, &et, NULL, NULL);
    fr_proc_end(&p);
    g = read_pid(pidf);
    CHECK(r == 0 && fr_proc_now() - t0 < 20, "deadline: r %d after %.2f s", r, fr_proc_now() - t0);
    CHECK(g > 0 && !alive(g), "the background child %d of a timed-out runner is alive", (int)g);
    printf("  timed-out runner's child %d: %s\n", (int)g, alive(g) ? "ALIVE" : "gone");
}

int main(void) {
    char *root = iut_tmpdir("iut-proc");
    if (!root) return 1;
    utf8();
    tails();
    containment(root);
    iut_rmtree(root);
    free(root);
    printf("test_iut_proc: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
