/* Implementations under test by command (docs/exec-protocol.md; iut_exec.h has the contract). Two protocols:
 *   exec:CMD        one `/bin/sh -c "CMD 'DIR'"` per case;
 *   persistent:CMD  one long-lived `/bin/sh -c CMD` that reads case directories on stdin, one per line, and answers
 *                   each with a line `flashref-status: N[ message]` on stdout.
 * Either way a case is a fresh temporary directory holding case.json and the inputs, the runner is contained
 * (iut_proc.h: process group, child subreaper: no process it started outlives its case, or, persistent, its run),
 * a deadline covers running and reading the outputs back, outputs are opened relative to the directory without
 * following symbolic links or blocking (regular files only), their header is checked against the operator's dtype
 * and shape before any data is read, and the directory is removed through its descriptor (unlinkat, never
 * following a link), so a runner that swaps it for a symlink cannot make us delete elsewhere. */
#define _GNU_SOURCE

#include "verify/iut/iut_exec.h"
#include "verify/iut/iut_internal.h"
#include "verify/iut/iut_proc.h"

#include "core/cleanup.h"
#include "core/core.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXEC_SKIP_STATUS 77
/* The judge prefixes the status name and keeps 384 bytes: a message this long keeps its end (the real error). */
#define EXEC_MSG_ROOM 360
#define STATUS_PREFIX "flashref-status:"

typedef struct exec_impl {
    char *cmd;        /* CMD ARGS as given (NULL for a worker) */
    int (*fn)(void *ud); /* worker: the function the forked runner runs (plugins, iut_plugin.c) */
    void *ud;
    const char *label; /* "exec", "persistent", "plugin" */
    double timeout_s; /* per case */
    bool persistent;  /* persistent or worker: one runner for many cases */
    bool echoes;      /* persistent: the runner echoes each case directory in its answers (then it must, always) */
    fr_proc proc;     /* persistent: the running runner */
    bool running;
    char hello[200];  /* worker: what its first status line said (the plugin's name) */
    bool reported;    /* the last case's status came from the worker itself (its own FR_E_NOMEM is its verdict) */
    bool unstarted;   /* the last case's runner could not be started here (pipes, memory, fork): our failure */
    fr_iut *iut;      /* the IUT this is (capabilities and refusals are recorded there) */
    int proto;        /* persistent: 2 offered (capability line first); 1 after a runner that never spoke -2 */
    bool spoke;       /* a runner of this IUT has sent a status or capability line under proto */
    bool answered;    /* the running runner has sent a status line (a capability line after it is not first) */
} exec_impl;

/* ---------------------------------------------------------------------------------------------------------------- */
/* Temporary directories. */

static bool keep_tmp(void) {
    const char *k = getenv("FLASHREF_KEEP_TMP");
    return k && *k;
}

static const char *tmp_base(void) {
    const char *base = getenv("TMPDIR");
    return base && *base ? base : "/tmp";
}

/* A fresh directory TMPDIR/flashref-case-XXXXXX (malloc'd path) and a descriptor on it. */
static fr_status make_tmp_dir(char **out, int *dfd, fr_error *err) {
    const char *base = tmp_base();
    size_t n = strlen(base) + sizeof "/flashref-case-XXXXXX";
    char *p = malloc(n);
    if (!p) return fr_fail(err, FR_E_NOMEM, "exec: out of memory");
    snprintf(p, n, "%s/flashref-case-XXXXXX", base);
    if (!mkdtemp(p)) {
        fr_status st = fr_fail(err, FR_E_IO, "exec: cannot create a temporary directory in %s: %s", base,
                               fr_io_strerror());
        free(p);
        return st;
    }
    *dfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0) {
        fr_status st = fr_fail(err, FR_E_IO, "exec: cannot open %s: %s", p, fr_io_strerror());
        rmdir(p);
        free(p);
        return st;
    }
    *out = p;
    return FR_OK;
}

/* Removes the case directory: its contents through dfd, then the name itself: our directory, or a symbolic link
 * (removed, not followed) or another directory the runner put there. */
static void remove_case_dir(const char *path, int dfd) {
    struct stat mine, now;
    bool have_mine = fstat(dfd, &mine) == 0;
    fr_clear_dir_fd(dfd, 0);
    fchmod(dfd, 0700);
    if (lstat(path, &now) != 0) return;
    if (S_ISDIR(now.st_mode) && have_mine && now.st_ino == mine.st_ino && now.st_dev == mine.st_dev) {
        rmdir(path);
    } else if (S_ISDIR(now.st_mode)) {
        int o = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (o >= 0) {
            fr_clear_dir_fd(o, 0);
            close(o);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Outputs: opened relative to the case directory, header checked before the data is read into o. */

static void shape_str(int ndim, const int64_t *shape, char *s, size_t n) {
    size_t k = (size_t)snprintf(s, n, "[");
    for (int d = 0; d < ndim && k < n; d++) k += (size_t)snprintf(s + k, n - k, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (k < n) snprintf(s + k, n - k, "]");
}

/* One output file read into want. label: "exec", "persistent" or a worker's ("plugin"), for the messages; a wrong
 * dtype or shape is reported with the prefix "shape:" (the judge's diagnosis `shape`, docs/verifier.md step 2). */
static fr_status read_one_output(int dfd, const char *label, const char *file, fr_tensor *want, double deadline,
                                 fr_error *err) {
    int fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return fr_fail(err, FR_E_IO, "%s: %s: missing (%s without writing it)", label, file,
                           !strcmp(label, "exec")         ? "the command exited 0"
                           : !strcmp(label, "persistent") ? "the runner answered 'flashref-status: 0'"
                                                          : "the implementation returned FR_OK");
        if (e == ELOOP)
            return fr_fail(err, FR_E_OUTPUT, "%s: %s: a symbolic link (outputs must be regular files)", label, file);
        return fr_fail(err, FR_E_IO, "%s: %s: cannot open: %s", label, file, fr_io_strerror_r(e, (char[128]){0}, 128));
    }
    fr_npy_header h;
    fr_status st = fr_npy_read_fd_header(fd, &h, file, err);
    fr_dtype dt = FR_DT_NONE;
    if (st != FR_OK) {
        char m[FR_MSG_LEN];
        snprintf(m, sizeof m, "%s: %.480s", label, err ? err->msg : file);
        st = fr_fail(err, st == FR_E_NOMEM ? st : FR_E_OUTPUT, "%s", m);
    } else if (fr_npy_header_dtype(&h, want->dtype, &dt, file, NULL) != FR_OK) {
        fr_dtype got = fr_npy_native_dtype(h.descr);
        st = fr_fail(err, FR_E_OUTPUT, "shape: %s: %s: dtype %s (descr '%s'), expected %s (descr '%s', the operator's)",
                     label, file, got != FR_DT_NONE ? fr_dtype_name(got) : "?", h.descr, fr_dtype_name(want->dtype),
                     fr_npy_descr_for(want->dtype));
    } else if (h.ndim != want->ndim || memcmp(h.shape, want->shape, sizeof(int64_t) * (size_t)h.ndim) != 0) {
        char a[160], b[160];
        shape_str(h.ndim, h.shape, a, sizeof a);
        shape_str(want->ndim, want->shape, b, sizeof b);
        st = fr_fail(err, FR_E_OUTPUT, "shape: %s: %s: shape %s, expected %s", label, file, a, b);
    }
    /* The data, in chunks so that the deadline also covers a slow or huge read. */
    size_t total = st == FR_OK ? (size_t)h.data_bytes : 0, done = 0;
    while (st == FR_OK && done < total) {
        if (fr_proc_now() > deadline) {
            st = fr_fail(err, FR_E_INTERNAL, "timeout: reading %s took past the deadline", file);
            break;
        }
        size_t chunk = total - done < ((size_t)16 << 20) ? total - done : (size_t)16 << 20;
        ssize_t r = pread(fd, (char *)want->data + done, chunk, (off_t)(h.data_offset + (int64_t)done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            st = fr_fail(err, FR_E_OUTPUT, "%s: %s: read error or truncated while reading", label, file);
            break;
        }
        done += (size_t)r;
    }
    close(fd);
    return st;
}

static fr_status take_outputs(int dfd, const char *label, fr_case_outputs *o, double deadline, fr_error *err) {
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        fr_tensor *want = fr_case_output_slot(o, (fr_case_output)k);
        if (!fr_tensor_present(want)) continue;
        char file[64];
        snprintf(file, sizeof file, "%s.npy", fr_case_output_name((fr_case_output)k));
        fr_status st = read_one_output(dfd, label, file, want, deadline, err);
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Messages. */

/* err->msg = head + "; stderr: " + the last lines of the tail that fit in EXEC_MSG_ROOM. */
static fr_status fail_with_tail(fr_error *err, fr_status st, const char *head, const fr_tail *t, const char *what) {
    char text[EXEC_MSG_ROOM];
    size_t hn = strlen(head) + strlen(what) + 16;
    size_t room = hn < EXEC_MSG_ROOM - 48 ? EXEC_MSG_ROOM - hn : 48;
    char h2[EXEC_MSG_ROOM];
    fr_utf8_sanitize(head, strlen(head), h2, sizeof h2);
    if (!t || !t->len) return fr_fail(err, st, "%s; no %s", h2, what);
    fr_tail_text(t, text, room);
    return fr_fail(err, st, "%s; %s: %s", h2, what, text);
}

/* Whether CMD ARGS is one simple command (words of plain characters, the first no assignment and no shell word):
 * then the shell can exec it and its death by a signal reaches us as that signal. */
static bool simple_command(const char *cmd) {
    static const char *const kShellWords[] = {"if", "then", "else", "elif", "fi", "case", "esac", "for", "while",
                                              "until", "do", "done", "time", "cd", "exec", "eval", "export", "set",
                                              "unset", ".", "source", "!", "{", "}", "trap", "ulimit", "umask"};
    size_t first = strcspn(cmd, " ");
    if (first == 0) return false;
    for (const char *q = cmd; *q; q++)
        if (!(isalnum((unsigned char)*q) || strchr(" _./=+@%:,-", *q))) return false;
    if (memchr(cmd, '=', first)) return false;
    for (size_t k = 0; k < sizeof kShellWords / sizeof kShellWords[0]; k++)
        if (strlen(kShellWords[k]) == first && !strncmp(cmd, kShellWords[k], first)) return false;
    return true;
}

/* The shell line of a runner: "exec CMD ARGS[ 'DIR']" when CMD ARGS is a simple command, so that the runner replaces
 * the shell and a crash of it is seen as its signal (a shell in between turns SIGSEGV into exit status 139);
 * otherwise the line as given, followed by a re-raise of the signal a status above 128 stands for (the shell's
 * convention), so that a compound command line reports a crash too. DIR (NULL: none) has every ' written '\''.
 * malloc'd. */
static char *command_line(const char *cmd, const char *dir) {
    bool simple = simple_command(cmd);
    static const char kReraise[] = "; s=$?; if [ $s -gt 128 ] && [ $s -lt 160 ]; then trap - $((s - 128)); "
                                   "kill -$((s - 128)) $$; fi; exit $s";
    size_t n = strlen(cmd) + 16 + sizeof kReraise;
    for (const char *q = dir ? dir : ""; *q; q++) n += *q == '\'' ? 4 : 1;
    char *s = malloc(n);
    if (!s) return NULL;
    size_t k = (size_t)snprintf(s, n, "%s%s", simple ? "exec " : "", cmd);
    if (dir) {
        s[k++] = ' ';
        s[k++] = '\'';
        for (const char *q = dir; *q; q++) {
            if (*q == '\'') {
                memcpy(s + k, "'\\''", 4);
                k += 4;
            } else {
                s[k++] = *q;
            }
        }
        s[k++] = '\'';
    }
    s[k] = '\0';
    if (!simple) snprintf(s + k, n - k, "%s", kReraise);
    return s;
}

/* fr_proc_start failed with st: a runner we could not start (no descriptors for its pipes, no memory, no process) is
 * our failure, recorded for exec_run. err->msg is copied first: it is also the message being written. */
static fr_status not_started(exec_impl *ei, fr_status st, fr_error *err) {
    char m[FR_MSG_LEN];
    snprintf(m, sizeof m, "%.480s", err ? err->msg : "cannot start");
    ei->unstarted = true;
    return fr_fail(err, st == FR_E_NOMEM ? st : FR_E_IO, "%s: %s", ei->label, m);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* exec: one process per case. */

static fr_status exec_one(exec_impl *ei, const char *dir, int dfd, fr_case_outputs *o, double deadline,
                          fr_error *err) {
    char *cmdline = command_line(ei->cmd, dir);
    if (!cmdline) return fr_fail(err, FR_E_NOMEM, "exec: out of memory");
    fr_proc_spec spec = {.cmdline = cmdline};
    fr_proc p;
    fr_status st = fr_proc_start(&p, &spec, err);
    free(cmdline);
    if (st != FR_OK) return not_started(ei, st, err);
    fr_tail errt;
    memset(&errt, 0, sizeof errt);
    int r = fr_proc_poll(&p, deadline, NULL, &errt, NULL, NULL);
    fr_proc_end(&p); /* every process it started is gone from here on */
    char what[96], head[200];
    if (r == 0) {
        snprintf(head, sizeof head, "timeout: no exit after %g s (the command's process tree was killed)",
                 ei->timeout_s);
        return fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
    }
    fr_proc_describe(p.wstatus, what, sizeof what);
    if (WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == 0) return take_outputs(dfd, ei->label, o, deadline, err);
    if (WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == EXEC_SKIP_STATUS) {
        snprintf(head, sizeof head, "exec: exit status 77 (not supported)");
        return fail_with_tail(err, FR_E_UNSUPPORTED, head, &errt, "stderr");
    }
    snprintf(head, sizeof head, "%s%s", WIFSIGNALED(p.wstatus) ? "crash: " : "exec: ", what);
    return fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* persistent: one runner for many cases. */

typedef struct status_line {
    bool got;
    long code;
    char msg[300];
    int dups;           /* further status lines read after the first: a protocol error */
    const char *expect; /* the case directory sent (NULL: none yet); an answer may echo it after a tab */
    bool echo;          /* the answer echoed a directory */
    bool other_dir;     /* ... another one than the case sent */
    char echoed[200];
    exec_impl *ei;      /* a command runner: capability lines are taken (NULL: a worker) */
} status_line;

/* Whether a status line echoes a directory: "flashref-status: N[ message]\tDIR" (the part after the last tab). */
static void check_echo(status_line *s, const char *line, size_t n) {
    const char *tab = memrchr(line, '\t', n);
    if (!tab || !s->expect) return;
    s->echo = true;
    size_t l = n - (size_t)(tab + 1 - line);
    while (l && tab[l] == '\r') l--;
    if (l != strlen(s->expect) || strncmp(tab + 1, s->expect, l) != 0) {
        s->other_dir = true;
        fr_utf8_sanitize(tab + 1, l, s->echoed, sizeof s->echoed);
    }
}

/* A capability line (persistent-2): taken when it comes before the runner's first status line and nothing was
 * declared yet (a restarted runner declares again: its line is not read twice). Refused when malformed or cut. */
static void take_caps_line(exec_impl *ei, const char *text, size_t n, bool cut) {
    fr_iut *iut = ei->iut;
    if (!iut || ei->answered || iut->caps_state == FR_CAPS_DECLARED) return;
    fr_error e;
    if (cut) {
        snprintf(iut->refused, sizeof iut->refused, "capabilities: the line is longer than %d bytes",
                 FR_CAPS_MAX_BYTES);
        return;
    }
    while (n && *text == ' ') text++, n--;
    while (n && (text[n - 1] == '\r' || text[n - 1] == ' ')) n--;
    fr_iut_take_caps(iut, text, n, &e);
}

bool fr_exec_status_parse(const char *line, size_t n, long *code, char *msg, size_t cap) {
    if (n < sizeof STATUS_PREFIX - 1 || strncmp(line, STATUS_PREFIX, sizeof STATUS_PREFIX - 1) != 0) return false;
    /* Only the line's n bytes are read (the caller cuts an echo off there), from a NUL-terminated copy: a NUL byte of
     * the line's own ends it (strtol stops there too). A message is at most cap bytes, so a longer line loses its tail. */
    char buf[512];
    size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
    memcpy(buf, line, m);
    buf[m] = '\0';
    const char *p = buf + sizeof STATUS_PREFIX - 1;
    while (*p == ' ') p++;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    /* the number ends the word: "0abc" is no status 0 */
    if (end == p || errno || (*end && *end != ' ' && *end != '\t' && *end != '\r')) {
        *code = -1;
        snprintf(msg, cap, "malformed status line: ");
        size_t k = strlen(msg);
        fr_utf8_sanitize(line, n, msg + k, cap - k);
        return true;
    }
    while (*end == ' ') end++;
    size_t l = strlen(end);
    while (l && (end[l - 1] == '\r' || end[l - 1] == ' ')) l--;
    fr_utf8_sanitize(end, l, msg, cap);
    *code = v;
    return true;
}

static bool on_line(void *ud, const char *line, size_t n, bool cut) {
    status_line *s = ud;
    exec_impl *ei = s->ei;
    if (!s->got && ei && !strncmp(line, FR_CAPS_PREFIX, sizeof FR_CAPS_PREFIX - 1)) {
        ei->spoke = true;
        take_caps_line(ei, line + sizeof FR_CAPS_PREFIX - 1, n - (sizeof FR_CAPS_PREFIX - 1), cut);
        return ei->iut && ei->iut->refused[0]; /* a refused declaration ends the wait at once */
    }
    if (n < sizeof STATUS_PREFIX - 1 || strncmp(line, STATUS_PREFIX, sizeof STATUS_PREFIX - 1) != 0) return false;
    if (s->got) { /* a second answer (in the same read, or before the next case was sent) */
        s->dups++;
        return true;
    }
    if (ei) ei->spoke = ei->answered = true;
    const char *tab = memchr(line, '\t', n);
    check_echo(s, line, n);
    if (tab) n = (size_t)(tab - line); /* the echo is not part of the message */
    (void)fr_exec_status_parse(line, n, &s->code, s->msg, sizeof s->msg);
    s->got = true;
    return true;
}

static const char *const kPersistentEnv1[] = {"FLASHREF_PROTOCOL=persistent-1", NULL};
static const char *const kPersistentEnv2[] = {"FLASHREF_PROTOCOL=persistent-2", NULL};

fr_status fr_exec_worker_status(const char *msg, const char **rest) {
    *rest = msg;
    for (int k = 1; k < FR_STATUS_COUNT; k++) {
        const char *n = fr_status_name((fr_status)k);
        size_t l = strlen(n);
        if (!strncmp(msg, n, l) && msg[l] == ':') {
            *rest = msg[l + 1] == ' ' ? msg + l + 2 : msg + l + 1;
            return k == FR_E_UNSUPPORTED || k == FR_E_NOT_AVAILABLE ? FR_E_INTERNAL : (fr_status)k;
        }
    }
    return FR_E_INTERNAL;
}

/* Starts the runner. A worker first answers with a status line of its own (0 and its name, or why it cannot run):
 * FR_E_NOT_AVAILABLE with its message when it cannot. */
static fr_status start_runner(exec_impl *ei, fr_tail *errt, fr_error *err) {
    char *line = ei->fn ? NULL : command_line(ei->cmd, NULL); /* a worker runs no shell */
    if (!ei->fn && !line) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", ei->label);
    fr_proc_spec spec = {.cmdline = line, .fn = ei->fn, .ud = ei->ud, .pipe_in = true, .pipe_out = true,
                         .setenv = ei->proto == 2 ? kPersistentEnv2 : kPersistentEnv1};
    fr_status st = fr_proc_start(&ei->proc, &spec, err);
    free(line);
    if (st != FR_OK) return not_started(ei, st, err);
    ei->running = true;
    ei->answered = false;
    if (!ei->fn) return FR_OK;
    status_line sl;
    memset(&sl, 0, sizeof sl);
    int r = fr_proc_poll(&ei->proc, fr_proc_now() + ei->timeout_s, NULL, errt, on_line, &sl);
    if (r == 2 && sl.code == 0) {
        snprintf(ei->hello, sizeof ei->hello, "%.190s", sl.msg);
        return FR_OK;
    }
    fr_proc_end(&ei->proc);
    ei->running = false;
    char what[96];
    if (r == 2) return fr_fail(err, FR_E_NOT_AVAILABLE, "%s", sl.msg);
    if (r == 0) return fr_fail(err, FR_E_NOT_AVAILABLE, "%s: the worker did not start within %g s", ei->label,
                               ei->timeout_s);
    fr_proc_describe(ei->proc.wstatus, what, sizeof what);
    char head[160];
    snprintf(head, sizeof head, "%s: the worker ended before it was ready (%s)", ei->label, what);
    return fail_with_tail(err, FR_E_NOT_AVAILABLE, head, errt, "stderr");
}

static fr_status persistent_once(exec_impl *ei, const char *dir, int dfd, fr_case_outputs *o, double deadline,
                                 bool *fell_back, fr_error *err);

/* Negotiation (docs/exec-protocol.md): the runner is offered persistent-2. A runner that ends before it ever sent a
 * status or capability line under it (one written for persistent-1 only, say, that took the unknown value for
 * "not persistent" and exited) is started again under persistent-1, once, with the same case; that protocol then
 * stays. */
static fr_status persistent_one(exec_impl *ei, const char *dir, int dfd, fr_case_outputs *o, double deadline,
                                fr_error *err) {
    bool fell_back = false;
    fr_status st = persistent_once(ei, dir, dfd, o, deadline, &fell_back, err);
    if (fell_back) st = persistent_once(ei, dir, dfd, o, deadline, &fell_back, err);
    if (ei->iut && ei->iut->caps_state == FR_CAPS_PENDING && (ei->answered || ei->proto == 1))
        ei->iut->caps_state = FR_CAPS_NONE; /* answered without a declaration */
    return st;
}

static fr_status persistent_once(exec_impl *ei, const char *dir, int dfd, fr_case_outputs *o, double deadline,
                                 bool *fell_back, fr_error *err) {
    fr_status st;
    fr_tail outt, errt;
    memset(&outt, 0, sizeof outt);
    memset(&errt, 0, sizeof errt);
    char head[400], what[96];
    bool fresh = !ei->running;
    if (!ei->running && (st = start_runner(ei, &errt, err)) != FR_OK) {
        if (!ei->fn) return st;
        /* A worker that no longer starts (it did when the IUT was opened): this case's crash. */
        snprintf(head, sizeof head, "crash: the %s worker did not restart: %.300s", ei->label, err ? err->msg : "");
        return fr_fail(err, FR_E_INTERNAL, "%s", head);
    }
    /* Every answer must be the one to the case just sent: a status line already waiting before the case is sent (a
     * status printed at start-up, a second answer to the previous case) would be taken for this case's answer and
     * every later answer would land one case late. It is a protocol error; the runner is restarted. */
    status_line pre;
    memset(&pre, 0, sizeof pre);
    pre.ei = ei->fn ? NULL : ei; /* a capability line written at start-up is taken here */
    /* A runner just started gets a moment to show a status line it writes before reading (a slower one is caught at
     * the next case, when its real answer arrives early there). */
    if (!ei->fn && fr_proc_poll(&ei->proc, fr_proc_now() + (fresh ? 0.2 : 0.0), NULL, &errt, on_line, &pre) == 2) {
        fr_proc_end(&ei->proc);
        ei->running = false;
        if (ei->iut && ei->iut->refused[0])
            return fr_fail(err, FR_E_FORMAT, "%s: the runner's capability line is refused: %.300s", ei->label,
                           ei->iut->refused);
        return fr_fail(err, FR_E_INTERNAL,
                       "%s: protocol error: a '%s %ld' line came before case %s was sent (a status written before "
                       "reading a case, or a second answer to the previous case); a persistent runner answers each "
                       "case directory exactly once, after reading it (the runner was restarted)",
                       ei->label, STATUS_PREFIX, pre.code, dir);
    }
    status_line sl;
    memset(&sl, 0, sizeof sl);
    sl.expect = dir;
    sl.ei = ei->fn ? NULL : ei;
    size_t n = strlen(dir);
    char *line = malloc(n + 2);
    if (!line) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", ei->label);
    memcpy(line, dir, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    bool sent = fr_proc_write(&ei->proc, line, n + 1, deadline);
    free(line);
    int r = sent ? fr_proc_poll(&ei->proc, deadline, &outt, &errt, on_line, &sl)
                 : fr_proc_poll(&ei->proc, fr_proc_now() + 1.0, &outt, &errt, on_line, &sl);
    if (r == 2 && !ei->fn && !(ei->iut && ei->iut->refused[0])) /* what the runner wrote with its answer: a second
                                                                   * status line there is an error too */
        (void)fr_proc_poll(&ei->proc, fr_proc_now(), &outt, &errt, on_line, &sl);
    if (ei->iut && ei->iut->refused[0]) { /* its declaration is refused: the runner is not trusted further */
        fr_proc_end(&ei->proc);
        ei->running = false;
        return fr_fail(err, FR_E_FORMAT, "%s: the runner's capability line is refused: %.300s", ei->label,
                       ei->iut->refused);
    }
    if (r == 1 && !ei->fn && ei->proto == 2 && !ei->spoke && !*fell_back) {
        fr_proc_end(&ei->proc);
        ei->running = false;
        ei->proto = 1;
        *fell_back = true;
        return FR_E_INTERNAL;
    }
    *fell_back = false;
    /* A runner that echoed its case once must echo it every time: an answer without the echo is not paired. */
    bool unpaired = r == 2 && !ei->fn && ei->echoes && !sl.echo;
    if (r == 2 && sl.echo) ei->echoes = true;
    if (r == 2 && (sl.dups || sl.other_dir || unpaired)) {
        fr_proc_end(&ei->proc);
        ei->running = false;
        if (unpaired)
            snprintf(head, sizeof head, "%s: protocol error: the answer to case %.200s does not echo it, as this "
                     "runner's earlier answers did (the runner was restarted)", ei->label, dir);
        else if (sl.other_dir)
            snprintf(head, sizeof head, "%s: protocol error: the answer names case %.150s, but the case sent was "
                     "%.150s (the runner was restarted)", ei->label, sl.echoed, dir);
        else
            snprintf(head, sizeof head, "%s: protocol error: case %.200s was answered %d times; a persistent runner "
                     "answers each case directory exactly once (the runner was restarted)", ei->label, dir,
                     sl.dups + 1);
        st = fr_fail(err, FR_E_INTERNAL, "%s", head);
    } else if (r == 2) {
        if (sl.code == 0) {
            st = take_outputs(dfd, ei->label, o, deadline, err);
        } else if (sl.code == EXEC_SKIP_STATUS) {
            snprintf(head, sizeof head, "%s: status 77 (not supported): %.280s", ei->label,
                     sl.msg[0] ? sl.msg : "(no reason given)");
            st = errt.len && !ei->fn ? fail_with_tail(err, FR_E_UNSUPPORTED, head, &errt, "stderr")
                                     : fr_fail(err, FR_E_UNSUPPORTED, "%s", ei->fn ? sl.msg : head);
        } else if (ei->fn) {
            const char *rest;
            st = fr_exec_worker_status(sl.msg, &rest);
            ei->reported = true;
            st = fr_fail(err, st, "%s", rest);
        } else {
            snprintf(head, sizeof head, "%s: status %ld: %.280s", ei->label, sl.code, sl.msg[0] ? sl.msg : "(no message)");
            st = fail_with_tail(err, FR_E_INTERNAL, head, errt.len ? &errt : &outt, errt.len ? "stderr" : "stdout");
        }
    } else if (r == 0 || !sent) {
        bool gone = ei->proc.exited; /* ended by itself: read before fr_proc_end kills it (that is no crash) */
        fr_proc_end(&ei->proc);
        ei->running = false;
        if (!sent && gone) goto crashed;
        if (ei->fn) /* a plugin's worker: no status lines in its words */
            snprintf(head, sizeof head, "timeout: the %s did not finish the case within %g s (its worker process was "
                     "killed; the next case starts a fresh one)", ei->label, ei->timeout_s);
        else if (!sent)
            snprintf(head, sizeof head, "timeout: the case could not be sent (the runner does not read its stdin) and "
                     "no status line came (the runner's process tree was killed; the next case starts a fresh one)");
        else
            snprintf(head, sizeof head, "timeout: no status line after %g s (the runner's process tree was killed; "
                     "the next case starts a fresh one)", ei->timeout_s);
        st = fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
    } else {
        fr_proc_end(&ei->proc);
        ei->running = false;
    crashed:
        fr_proc_describe(ei->proc.wstatus, what, sizeof what);
        if (ei->fn) { /* the plugin's code ran in the worker: its stderr is what it said (stdout is the worker's) */
            snprintf(head, sizeof head, "crash: the %s worker ended before finishing the case (%s)", ei->label, what);
            st = fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
        } else {
            snprintf(head, sizeof head, "crash: the runner ended without a status line (%s)", what);
            st = fail_with_tail(err, FR_E_INTERNAL, head, errt.len ? &errt : &outt, errt.len ? "stderr" : "stdout");
        }
    }
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */

static fr_status exec_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads; /* the command manages its own threads */
    exec_impl *ei = iut->impl;
    char *dir = NULL;
    int dfd = -1;
    fr_status st = make_tmp_dir(&dir, &dfd, err);
    if (st != FR_OK) {
        iut->own_failure = true;
        return st;
    }
    bool keep = keep_tmp();
    int slot = keep ? -1 : fr_cleanup_add_dir(dir); /* removed by fr_cleanup_run on SIGINT/SIGTERM */
    if ((st = fr_case_write(c, dir, err)) != FR_OK) {
        iut->own_failure = true; /* our temporary area (a full disk, no memory), not the implementation */
    } else {
        double deadline = fr_proc_now() + ei->timeout_s;
        ei->reported = ei->unstarted = false;
        st = ei->persistent ? persistent_one(ei, dir, dfd, o, deadline, err) : exec_one(ei, dir, dfd, o, deadline, err);
        /* Out of memory on our side (the command line, a pipe's process, reading the outputs back) and a runner we
         * could not start (no descriptors for its pipes, no process) are the run's failure, never the
         * implementation's verdict. */
        if ((st == FR_E_NOMEM && !ei->reported) || ei->unstarted) iut->own_failure = true;
    }
    if (st != FR_OK && keep && err && strstr(err->msg, dir) == NULL) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " (case kept in %s)", dir);
    }
    if (!keep) remove_case_dir(dir, dfd);
    fr_cleanup_drop(slot);
    close(dfd);
    free(dir);
    return st;
}

static void exec_close(fr_iut *iut) {
    exec_impl *ei = iut->impl;
    if (!ei) return;
    if (ei->running) fr_proc_close(&ei->proc, 5.0);
    if (ei->fn) free(ei->ud);
    free(ei->cmd);
    free(ei);
    iut->impl = NULL;
}

static fr_status exec_set_timeout(fr_iut *iut, double seconds, fr_error *err) {
    ((exec_impl *)iut->impl)->timeout_s = seconds;
    (void)err;
    return FR_OK;
}

/* "'S'" with every ' of S written as '\'' (appended to b at k; returns the new length, or n when it does not fit). */
static size_t quote_arg(char *b, size_t n, size_t k, const char *a) {
    if (k + 1 >= n) return n;
    b[k++] = '\'';
    for (const char *q = a; *q; q++) {
        if (k + 5 >= n) return n;
        if (*q == '\'') memcpy(b + k, "'\\''", 4), k += 4;
        else b[k++] = *q;
    }
    if (k + 2 >= n) return n;
    b[k++] = '\'';
    b[k] = 0;
    return k;
}

/* The runner's repro hook (its capabilities say "repro": true): `CMD ARGS --repro 'CASE_DIR' 'OUT'`, contained and
 * under the per-case timeout like a case. */
static fr_status exec_repro(fr_iut *iut, const char *case_dir, const char *out, fr_error *err) {
    exec_impl *ei = iut->impl;
    const fr_caps *caps;
    if (ei->fn || fr_iut_caps(iut, &caps) != FR_CAPS_DECLARED || !caps->repro)
        return fr_fail(err, FR_E_UNSUPPORTED, "%s declares no repro hook (capabilities \"repro\": true)", iut->name);
    size_t n = strlen(ei->cmd) + 4 * (strlen(case_dir) + strlen(out)) + 32;
    char *cl = malloc(n);
    if (!cl) return fr_fail(err, FR_E_NOMEM, "repro: out of memory");
    size_t k = (size_t)snprintf(cl, n, "%s --repro ", ei->cmd);
    k = quote_arg(cl, n, k, case_dir);
    if (k + 1 < n) cl[k++] = ' ', cl[k] = 0;
    k = quote_arg(cl, n, k, out);
    fr_proc_spec spec = {.cmdline = cl};
    fr_proc p;
    fr_status st = k < n ? fr_proc_start(&p, &spec, err) : fr_fail(err, FR_E_INTERNAL, "repro: command too long");
    free(cl);
    if (st != FR_OK) return st;
    fr_tail errt;
    memset(&errt, 0, sizeof errt);
    int r = fr_proc_poll(&p, fr_proc_now() + ei->timeout_s, NULL, &errt, NULL, NULL);
    fr_proc_end(&p);
    char what[96], head[200];
    if (r == 0) {
        snprintf(head, sizeof head, "repro: no exit after %g s (killed)", ei->timeout_s);
        return fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
    }
    if (WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == 0) return FR_OK;
    if (WIFEXITED(p.wstatus) && WEXITSTATUS(p.wstatus) == EXEC_SKIP_STATUS)
        return fail_with_tail(err, FR_E_UNSUPPORTED, "repro: exit status 77 (the runner declines this case)", &errt,
                              "stderr");
    fr_proc_describe(p.wstatus, what, sizeof what);
    snprintf(head, sizeof head, "repro: %s", what);
    return fail_with_tail(err, FR_E_INTERNAL, head, &errt, "stderr");
}

static const fr_iut_ops kExecOps = {exec_run, exec_close, exec_set_timeout, exec_repro};

fr_status fr_iut_exec_variant_spec(const fr_iut *iut, const char *variant, char *spec, size_t n, fr_error *err) {
    if (!iut || iut->ops != &kExecOps || !iut->impl || ((exec_impl *)iut->impl)->fn)
        return fr_fail(err, FR_E_UNSUPPORTED, "%s: variants are a runner's (persistent: or exec:)",
                       iut ? iut->name : "NULL");
    const exec_impl *ei = iut->impl;
    const fr_caps *c;
    if (fr_iut_caps(iut, &c) != FR_CAPS_DECLARED || !c->variant[0] || !c->nvariants)
        return fr_fail(err, FR_E_UNSUPPORTED, "%s declares no variants", iut->name);
    bool known = false;
    for (int i = 0; i < c->nvariants; i++) known |= !strcmp(c->variants[i], variant);
    if (!known) return fr_fail(err, FR_E_INVALID_ARG, "variant '%.64s': not among the runner's variants", variant);
    /* the declared variant must be exactly one whitespace-separated word of the command */
    size_t vl = strlen(c->variant);
    const char *at = NULL, *p = ei->cmd;
    int hits = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        if ((size_t)(p - w) == vl && !strncmp(w, c->variant, vl)) hits++, at = w;
    }
    if (hits != 1)
        return fr_fail(err, FR_E_UNSUPPORTED, "%s: its variant '%s' is %s word of the command, so it cannot be swapped",
                       iut->name, c->variant, hits ? "more than one" : "not a");
    int w = snprintf(spec, n, "%s:%.*s%s%s", ei->persistent ? "persistent" : "exec", (int)(at - ei->cmd), ei->cmd,
                     variant, at + vl);
    if (w < 0 || (size_t)w >= n) return fr_fail(err, FR_E_INTERNAL, "variant: command too long");
    return FR_OK;
}

fr_status fr_iut_exec_open(const char *cmd, bool persistent, fr_iut *iut, fr_error *err) {
    const char *kind = persistent ? "persistent" : "exec";
    if (!cmd || !iut) return fr_fail(err, FR_E_NULL, "%s: NULL", kind);
    const char *p = cmd;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p)
        return fr_fail(err, FR_E_INVALID_ARG, "--impl: %s: expected %s:\"CMD ARGS\", got an empty command", kind, kind);
    double timeout = FR_EXEC_DEFAULT_TIMEOUT_S;
    const char *env = getenv("FLASHREF_EXEC_TIMEOUT");
    if (env && *env) {
        char *end;
        errno = 0;
        double v = strtod(env, &end);
        if (errno || *end || !isfinite(v) || v <= 0)
            return fr_fail(err, FR_E_INVALID_ARG, "FLASHREF_EXEC_TIMEOUT: '%.64s' is not a number of seconds > 0",
                           env);
        timeout = v;
    }
    /* The temporary area must work before the first case: a broken TMPDIR is the run's error, not a FAIL. */
    if (persistent && strchr(tmp_base(), '\n'))
        return fr_fail(err, FR_E_INVALID_ARG, "persistent: TMPDIR contains a newline (case directories are sent one "
                                              "per line)");
    char *probe = NULL;
    int pfd = -1;
    fr_status st = make_tmp_dir(&probe, &pfd, err);
    if (st != FR_OK) return st;
    close(pfd);
    rmdir(probe);
    free(probe);
    exec_impl *ei = calloc(1, sizeof *ei);
    char *dup = malloc(strlen(cmd) + 1);
    if (!ei || !dup) {
        free(ei);
        free(dup);
        return fr_fail(err, FR_E_NOMEM, "%s: out of memory", kind);
    }
    strcpy(dup, cmd);
    ei->cmd = dup;
    ei->timeout_s = timeout;
    ei->persistent = persistent;
    ei->label = kind;
    ei->iut = iut;
    ei->proto = 2;
    iut->kind = FR_IUT_EXEC;
    iut->ops = &kExecOps;
    iut->impl = ei;
    iut->caps_state = persistent ? FR_CAPS_PENDING : FR_CAPS_NONE;
    return FR_OK;
}

fr_status fr_iut_worker_open(int (*fn)(void *ud), void *ud, const char *label, fr_iut *iut, fr_error *err) {
    exec_impl *ei = calloc(1, sizeof *ei);
    if (!ei) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", label);
    ei->fn = fn;
    ei->ud = ud;
    ei->label = label;
    ei->persistent = true;
    ei->proto = 1; /* a worker answers its own first status line, never a capability line */
    ei->timeout_s = FR_EXEC_DEFAULT_TIMEOUT_S;
    const char *env = getenv("FLASHREF_EXEC_TIMEOUT");
    if (env && *env) {
        char *end;
        errno = 0;
        double v = strtod(env, &end);
        if (errno || *end || !isfinite(v) || v <= 0) {
            free(ei);
            return fr_fail(err, FR_E_INVALID_ARG, "FLASHREF_EXEC_TIMEOUT: '%.64s' is not a number of seconds > 0",
                           env);
        }
        ei->timeout_s = v;
    }
    /* The temporary area must work, and the worker must start (it loads the library and checks its ABI). */
    char *probe = NULL;
    int pfd = -1;
    fr_status st = make_tmp_dir(&probe, &pfd, err);
    if (st == FR_OK) {
        close(pfd);
        rmdir(probe);
        free(probe);
        fr_tail errt;
        memset(&errt, 0, sizeof errt);
        st = start_runner(ei, &errt, err);
    }
    if (st != FR_OK) {
        free(ei);
        return st;
    }
    iut->ops = &kExecOps;
    iut->impl = ei;
    if (ei->hello[0]) snprintf(iut->name, sizeof iut->name, "%s", ei->hello);
    return FR_OK;
}

fr_status fr_iut_exec_set_timeout(fr_iut *iut, double seconds, fr_error *err) {
    if (!iut || iut->ops != &kExecOps || !iut->impl)
        return fr_fail(err, FR_E_INVALID_ARG, "exec timeout: the IUT is not an exec IUT");
    return fr_iut_set_timeout(iut, seconds, err);
}
