/* Implementations under test by command (docs/case-format.md, "Implementation under test"; iut_exec.h has the
 * contract). One case: a fresh temporary directory with case.json and the inputs, `/bin/sh -c "CMD ARGS 'DIR'"` in
 * its own process group with stdin/stdout on /dev/null and stderr captured through a pipe (its last 2 KB kept), a
 * deadline, then the exit status decides: 0 reads the outputs back and checks them against the operator's dtypes and
 * shapes, 77 is a SKIP, anything else a FAIL with the status and stderr. posix_spawn rather than fork: the verifier
 * may hold OpenMP threads, and a forked child of a threaded process may only call async-signal-safe functions. */
#define _POSIX_C_SOURCE 200809L

#include "verify/iut_exec.h"
#include "verify/iut_internal.h"

#include "core/core.h"
#include "io/io_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define EXEC_SKIP_STATUS 77
#define TAIL_BYTES 2048

typedef struct exec_impl {
    char *cmd;        /* CMD ARGS as given */
    double timeout_s; /* per case */
} exec_impl;

/* ---------------------------------------------------------------------------------------------------------------- */
/* The last TAIL_BYTES bytes of a stream. */

typedef struct tail_buf {
    char b[TAIL_BYTES];
    size_t len;   /* bytes held (<= TAIL_BYTES) */
    size_t total; /* bytes seen */
} tail_buf;

static void tail_add(tail_buf *t, const char *p, size_t n) {
    t->total += n;
    if (n >= TAIL_BYTES) {
        memcpy(t->b, p + n - TAIL_BYTES, TAIL_BYTES);
        t->len = TAIL_BYTES;
        return;
    }
    if (t->len + n > TAIL_BYTES) {
        size_t drop = t->len + n - TAIL_BYTES;
        memmove(t->b, t->b + drop, t->len - drop);
        t->len -= drop;
    }
    memcpy(t->b + t->len, p, n);
    t->len += n;
}

/* The last `room - 1` bytes of the tail as a printable, NUL-terminated string (control bytes other than newline and
 * tab become '?', trailing blank lines are dropped). */
static void tail_text(const tail_buf *t, char *out, size_t room) {
    size_t n = t->len;
    while (n > 0 && (t->b[n - 1] == '\n' || t->b[n - 1] == '\r' || t->b[n - 1] == ' ')) n--;
    size_t start = n + 1 > room ? n + 1 - room : 0;
    size_t k = 0;
    for (size_t i = start; i < n; i++) {
        unsigned char ch = (unsigned char)t->b[i];
        out[k++] = (ch == '\n' || ch == '\t' || (ch >= 0x20 && ch != 0x7F) || ch >= 0x80) ? (char)ch : '?';
    }
    out[k] = '\0';
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Temporary directories. */

/* Removes dir and everything under it, without following symbolic links. Best effort: returns false when something
 * stayed behind. Depth is bounded by what a runner creates; 32 levels is plenty and stops a runaway recursion. */
static bool remove_tree(const char *dir, int depth) {
    if (depth > 32) return false;
    DIR *d = opendir(dir);
    if (!d) return rmdir(dir) == 0;
    bool ok = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = fr_io_join(dir, e->d_name);
        if (!p) {
            ok = false;
            break;
        }
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            ok = remove_tree(p, depth + 1) && ok;
        else
            ok = unlink(p) == 0 && ok;
        free(p);
    }
    closedir(d);
    return rmdir(dir) == 0 && ok;
}

static bool keep_tmp(void) {
    const char *k = getenv("FLASHREF_KEEP_TMP");
    return k && *k;
}

/* A fresh directory TMPDIR/flashref-case-XXXXXX (malloc'd path). */
static fr_status make_tmp_dir(char **out, fr_error *err) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
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
    *out = p;
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Running the command. */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "CMD ARGS 'DIR'" with every ' of DIR written as '\'' (malloc'd). */
static char *command_line(const char *cmd, const char *dir) {
    size_t n = strlen(cmd) + 4;
    for (const char *q = dir; *q; q++) n += *q == '\'' ? 4 : 1;
    char *s = malloc(n);
    if (!s) return NULL;
    size_t k = (size_t)snprintf(s, n, "%s '", cmd);
    for (const char *q = dir; *q; q++) {
        if (*q == '\'') {
            memcpy(s + k, "'\\''", 4);
            k += 4;
        } else {
            s[k++] = *q;
        }
    }
    s[k++] = '\'';
    s[k] = '\0';
    return s;
}

typedef struct run_result {
    bool timed_out;
    int wstatus; /* waitpid status (valid when !timed_out) */
} run_result;

/* Reads what the pipe holds now (non-blocking); returns false at end of file or on a hard error. */
static bool drain(int fd, tail_buf *t) {
    char buf[4096];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
            tail_add(t, buf, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

static fr_status spawn_and_wait(const char *cmdline, double timeout_s, tail_buf *tail, run_result *rr,
                                fr_error *err) {
    int pfd[2];
    if (pipe(pfd) != 0) return fr_fail(err, FR_E_IO, "exec: pipe: %s", fr_io_strerror());
    /* Close-on-exec for both ends: other commands spawned meanwhile must not hold our pipe open (the dup2 onto the
     * child's stderr clears the flag on that copy only). */
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0); /* its own group: the timeout kills the shell and all it started */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {"sh", "-c", (char *)cmdline, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        return fr_fail(err, FR_E_IO, "exec: cannot start /bin/sh: %s", fr_io_strerror_r(rc, (char[128]){0}, 128));
    }

    double deadline = now_s() + timeout_s;
    bool exited = false, open_pipe = true;
    memset(rr, 0, sizeof *rr);
    for (;;) {
        if (open_pipe) open_pipe = drain(pfd[0], tail);
        if (!exited) {
            pid_t w = waitpid(pid, &rr->wstatus, WNOHANG);
            if (w == pid) exited = true;
            else if (w < 0 && errno != EINTR) {
                fr_status st = fr_fail(err, FR_E_IO, "exec: waitpid: %s", fr_io_strerror());
                kill(-pid, SIGKILL);
                close(pfd[0]);
                return st;
            }
        }
        /* Done when the shell has exited: what it wrote is in the pipe already (drained once more below); a
         * background process it left may hold the pipe open forever, so end of file is not waited for. */
        if (exited) {
            if (open_pipe) drain(pfd[0], tail);
            break;
        }
        double left = deadline - now_s();
        if (left <= 0) {
            kill(-pid, SIGKILL); /* the group: sh and everything it started (the zombie keeps the id reserved) */
            kill(pid, SIGKILL);
            while (waitpid(pid, &rr->wstatus, 0) < 0 && errno == EINTR) {
            }
            if (open_pipe) drain(pfd[0], tail);
            rr->timed_out = true;
            break;
        }
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        struct pollfd pf = {open_pipe ? pfd[0] : -1, POLLIN, 0};
        poll(&pf, 1, ms); /* fd -1: a plain sleep */
    }
    close(pfd[0]);
    return FR_OK;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Outputs. */

static void shape_str(const fr_tensor *t, char *s, size_t n) {
    size_t k = (size_t)snprintf(s, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(s + k, n - k, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    if (k < n) snprintf(s + k, n - k, "]");
}

/* Reads the command's outputs from dir into o (allocated by fr_iut_run), checking each file's dtype and shape. */
static fr_status take_outputs(const fr_case *c, const char *dir, fr_case_outputs *o, fr_error *err) {
    /* A missing file is named here, without the temporary directory's path (gone by the time anyone reads it). */
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        if (!fr_tensor_present(fr_case_output_slot(o, (fr_case_output)k))) continue;
        const char *name = fr_case_output_name((fr_case_output)k);
        char file[64];
        snprintf(file, sizeof file, "%s.npy", name);
        char *path = fr_io_join(dir, file);
        if (!path) return fr_fail(err, FR_E_NOMEM, "exec: out of memory");
        struct stat sb;
        bool there = stat(path, &sb) == 0;
        free(path);
        if (!there) return fr_fail(err, FR_E_IO, "exec: %s: missing (the command exited 0 without writing it)", file);
    }
    fr_case_outputs d;
    memset(&d, 0, sizeof d);
    fr_status st = fr_case_load_outputs(c, dir, &d, err);
    if (st != FR_OK) return st;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS && st == FR_OK; k++) {
        fr_tensor *want = fr_case_output_slot(o, (fr_case_output)k);
        const fr_tensor *got = fr_case_output_cslot(&d, (fr_case_output)k);
        const char *name = fr_case_output_name((fr_case_output)k);
        if (!fr_tensor_present(want)) continue;
        if (!fr_tensor_present(got)) {
            st = fr_fail(err, FR_E_IO, "exec: %s.npy: missing (the command exited 0 without writing it)", name);
        } else if (got->dtype != want->dtype) {
            st = fr_fail(err, FR_E_OUTPUT, "exec: %s.npy: dtype %s, expected %s (the operator's dtype)", name,
                         fr_dtype_name(got->dtype), fr_dtype_name(want->dtype));
        } else if (got->ndim != want->ndim ||
                   memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)want->ndim) != 0) {
            char a[160], b[160];
            shape_str(got, a, sizeof a);
            shape_str(want, b, sizeof b);
            st = fr_fail(err, FR_E_OUTPUT, "exec: %s.npy: shape %s, expected %s", name, a, b);
        } else {
            int64_t n = fr_tensor_numel(want);
            if (n > 0 && !fr_tensor_is_contiguous(got))
                st = fr_fail(err, FR_E_INTERNAL, "exec: %s.npy: loaded tensor is not contiguous", name);
            else if (n > 0)
                memcpy(want->data, got->data, (size_t)n * fr_dtype_size(want->dtype));
        }
    }
    fr_case_outputs_free(&d);
    return st;
}

/* ---------------------------------------------------------------------------------------------------------------- */

static fr_status exec_run(fr_iut *iut, const fr_case *c, int threads, fr_case_outputs *o, fr_error *err) {
    (void)threads; /* the command manages its own threads */
    const exec_impl *ei = iut->impl;
    char *dir = NULL, *cmdline = NULL;
    fr_status st = make_tmp_dir(&dir, err);
    if (st != FR_OK) return st;
    bool keep = keep_tmp();
    if ((st = fr_case_write(c, dir, err)) != FR_OK) goto out;
    if (!(cmdline = command_line(ei->cmd, dir))) {
        st = fr_fail(err, FR_E_NOMEM, "exec: out of memory");
        goto out;
    }
    tail_buf tail;
    memset(&tail, 0, sizeof tail);
    run_result rr;
    if ((st = spawn_and_wait(cmdline, ei->timeout_s, &tail, &rr, err)) != FR_OK) goto out;

    char what[96];
    if (rr.timed_out)
        snprintf(what, sizeof what, "timed out after %g s (process group killed)", ei->timeout_s);
    else if (WIFEXITED(rr.wstatus))
        snprintf(what, sizeof what, "exit status %d", WEXITSTATUS(rr.wstatus));
    else if (WIFSIGNALED(rr.wstatus))
        snprintf(what, sizeof what, "killed by signal %d", WTERMSIG(rr.wstatus));
    else
        snprintf(what, sizeof what, "wait status 0x%x", (unsigned)rr.wstatus);
    bool ok = !rr.timed_out && WIFEXITED(rr.wstatus) && WEXITSTATUS(rr.wstatus) == 0;
    bool skip = !rr.timed_out && WIFEXITED(rr.wstatus) && WEXITSTATUS(rr.wstatus) == EXEC_SKIP_STATUS;
    if (ok) {
        st = take_outputs(c, dir, o, err);
    } else {
        char head[200], text[FR_MSG_LEN];
        int hn = snprintf(head, sizeof head, "exec: %s%s%s; stderr%s: ", what, keep ? "; case kept in " : "",
                          keep ? dir : "", tail.total > tail.len ? " (tail)" : "");
        size_t room = FR_MSG_LEN - (hn > 0 && (size_t)hn < sizeof head ? (size_t)hn : sizeof head - 1);
        tail_text(&tail, text, room < sizeof text ? room : sizeof text);
        st = fr_fail(err, skip ? FR_E_UNSUPPORTED : FR_E_INTERNAL, "%s%s", head, tail.len ? text : "(empty)");
    }
out:
    if (st != FR_OK && keep && err && strstr(err->msg, dir) == NULL) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " (case kept in %s)", dir);
    }
    if (!keep) remove_tree(dir, 0);
    free(cmdline);
    free(dir);
    return st;
}

static void exec_close(fr_iut *iut) {
    exec_impl *ei = iut->impl;
    if (!ei) return;
    free(ei->cmd);
    free(ei);
    iut->impl = NULL;
}

static const fr_iut_ops kExecOps = {exec_run, exec_close};

fr_status fr_iut_exec_open(const char *cmd, fr_iut *iut, fr_error *err) {
    if (!cmd || !iut) return fr_fail(err, FR_E_NULL, "exec: NULL");
    const char *p = cmd;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) return fr_fail(err, FR_E_INVALID_ARG, "--impl: exec: expected exec:\"CMD ARGS\", got an empty command");
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
    exec_impl *ei = calloc(1, sizeof *ei);
    char *dup = malloc(strlen(cmd) + 1);
    if (!ei || !dup) {
        free(ei);
        free(dup);
        return fr_fail(err, FR_E_NOMEM, "exec: out of memory");
    }
    strcpy(dup, cmd);
    ei->cmd = dup;
    ei->timeout_s = timeout;
    iut->kind = FR_IUT_EXEC;
    iut->ops = &kExecOps;
    iut->impl = ei;
    return FR_OK;
}

fr_status fr_iut_exec_set_timeout(fr_iut *iut, double seconds, fr_error *err) {
    if (!iut || iut->ops != &kExecOps || !iut->impl)
        return fr_fail(err, FR_E_INVALID_ARG, "exec timeout: the IUT is not an exec IUT");
    if (!isfinite(seconds) || seconds <= 0)
        return fr_fail(err, FR_E_INVALID_ARG, "exec timeout: %g is not a number of seconds > 0", seconds);
    ((exec_impl *)iut->impl)->timeout_s = seconds;
    return FR_OK;
}
