/* Contained child processes for the implementations under test that run outside the verifier (exec:, persistent:,
 * plugin: workers). Every such process runs under a small supervisor: a forked process that marks itself a child
 * subreaper (PR_SET_CHILD_SUBREAPER), starts the runner in a process group of its own, reports the runner's exit,
 * and then kills and reaps everything left below it, setsid'd and double-forked descendants included (they are
 * reparented to the supervisor, not to init). When the verifier dies, the supervisor is told (PR_SET_PDEATHSIG) and
 * does the same. So when fr_proc_end returns, no process the runner started is alive.
 *
 *   fr_proc p;  fr_proc_start(&p, &spec, &err);        // runner started; p.in / p.out / p.err are the pipes
 *   fr_proc_poll(&p, deadline, &out_tail, &err_tail);  // reads the pipes until the runner exits or the deadline
 *   fr_proc_end(&p);                                   // kills whatever is left, reaps the supervisor
 *
 * fork rather than posix_spawn for the supervisor: it must run code (the subreaper loop), not a program. The
 * verifier may hold idle OpenMP threads when it forks; the child uses only the C library (glibc makes malloc safe
 * after fork) and never OpenMP. */
#ifndef FR_VERIFY_IUT_PROC_H
#define FR_VERIFY_IUT_PROC_H

#include "flashref.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The last bytes of a stream, kept as whole lines where possible (the real error is usually the last line). */
#define FR_TAIL_BYTES 4096
typedef struct fr_tail {
    char b[FR_TAIL_BYTES];
    size_t len;   /* bytes held (<= FR_TAIL_BYTES) */
    size_t total; /* bytes seen */
} fr_tail;

void fr_tail_add(fr_tail *t, const char *p, size_t n);
/* The last lines of the tail that fit in room - 1 bytes, as valid UTF-8 (invalid bytes and control characters other
 * than newline and tab written as \xNN), trailing blank lines dropped, NUL-terminated. An earlier part that did not
 * fit is marked by a leading "...". Returns the length written. */
size_t fr_tail_text(const fr_tail *t, char *out, size_t room);
/* Copies s into out (room bytes) as valid UTF-8, escaping invalid bytes and control characters other than newline
 * and tab as \xNN. */
void fr_utf8_sanitize(const char *s, size_t n, char *out, size_t room);
/* The offset of the first byte of s[0..n) that does not begin a valid UTF-8 sequence (no overlong form, surrogate or
 * code point above U+10FFFF); n when all of it is valid. */
size_t fr_utf8_invalid_at(const char *s, size_t n);

typedef struct fr_proc_spec {
    const char *cmdline;        /* run as /bin/sh -c cmdline, or NULL with fn */
    int (*fn)(void *ud);        /* run in the forked child instead (stdin/stdout/stderr already set); its return is
                                 * the exit status */
    void *ud;
    bool pipe_in;               /* stdin from p.in (a socket: writes never raise SIGPIPE); else /dev/null */
    bool pipe_out;              /* stdout to p.out; else /dev/null */
    const char *const *setenv;  /* extra "NAME=VALUE" entries for the runner's environment (NULL-terminated) */
} fr_proc_spec;

/* The longest stdout line passed whole to a line callback (a capability line may be this long). */
#define FR_PROC_LINE_MAX 65536

typedef struct fr_proc {
    pid_t sup;       /* the supervisor (0: none) */
    int cleanup;     /* its slot in core/cleanup.h's table (-1: none) */
    pid_t runner;    /* the runner (= its process group), once the supervisor reported it */
    int in, out, err, stat; /* our ends, -1 when closed */
    bool exited;     /* the runner has exited; wstatus is its wait status */
    bool sup_died;   /* the supervisor died before reporting (the runner's group is killed from here) */
    int wstatus;
    char statbuf[8];
    size_t statlen;
    char line[FR_PROC_LINE_MAX]; /* the stdout line being read (a longer one is cut: `cut` tells the callback) */
    size_t linelen;
    bool linecut;
} fr_proc;

fr_status fr_proc_start(fr_proc *p, const fr_proc_spec *s, fr_error *err);

/* Reads stdout (into out, may be NULL to discard; line callback below) and stderr (into errt) until the runner has
 * exited (returns 1), the deadline (CLOCK_MONOTONIC seconds) passed (returns 0), or a complete stdout line was passed
 * to on_line and it returned true (returns 2). A line longer than FR_PROC_LINE_MAX - 1 bytes is passed cut to that
 * length with cut set. */
typedef bool (*fr_proc_line_fn)(void *ud, const char *line, size_t n, bool cut);
int fr_proc_poll(fr_proc *p, double deadline, fr_tail *out, fr_tail *errt, fr_proc_line_fn on_line, void *ud);
/* The stdout line reader of fr_proc_poll: splits n bytes read into lines (a line longer than fr_proc.line is cut, cut set,
 * its rest dropped up to the newline) and passes each complete one to on_line; a partial line waits in ls for the
 * next call. Returns whether on_line returned true for any. */
bool fr_proc_feed_lines(fr_proc *ls, const char *buf, size_t n, fr_proc_line_fn on_line, void *ud);
/* While *flag (set by a signal handler; NULL: none) is non-zero, fr_proc_poll returns 0 at once, as when its deadline
 * passed: an interrupted hunt (verify/suite/hunt.h) does not wait out a case. Process-wide; the hunt sets and clears
 * it. */
void fr_proc_interrupt_on(volatile sig_atomic_t *flag);

/* Writes all of buf to the runner's stdin; false when the runner is gone or the deadline passed. */
bool fr_proc_write(fr_proc *p, const char *buf, size_t n, double deadline);

/* Ends the runner: closes its stdin, kills its group and every descendant, reaps the supervisor. If the runner
 * exited before, p->wstatus holds its status. Safe to call twice. */
void fr_proc_end(fr_proc *p);

/* A runner's stdin closed politely: waits up to grace seconds for it to exit on its own, then ends it. */
void fr_proc_close(fr_proc *p, double grace);

double fr_proc_now(void);

/* "exit status 3", "killed by signal 11 (SIGSEGV)" */
void fr_proc_describe(int wstatus, char *buf, size_t n);

#endif
