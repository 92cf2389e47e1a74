/* Contained child processes (iut_proc.h has the design): a supervisor per runner that is a child subreaper, so every
 * descendant of the runner, setsid'd or not, is killed and reaped before the case ends. */
#define _GNU_SOURCE

#include "verify/iut/iut_proc.h"

#include "core/cleanup.h"
#include "core/core.h"
#include "core/coverage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double fr_proc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* Tails and UTF-8. */

void fr_tail_add(fr_tail *t, const char *p, size_t n) {
    t->total += n;
    if (n >= FR_TAIL_BYTES) {
        memcpy(t->b, p + n - FR_TAIL_BYTES, FR_TAIL_BYTES);
        t->len = FR_TAIL_BYTES;
        return;
    }
    if (t->len + n > FR_TAIL_BYTES) {
        size_t drop = t->len + n - FR_TAIL_BYTES;
        memmove(t->b, t->b + drop, t->len - drop);
        t->len -= drop;
    }
    memcpy(t->b + t->len, p, n);
    t->len += n;
}

/* Length of the valid UTF-8 sequence starting at s[0] (n bytes available), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) k = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, min = 0x10000;
    else return 0;
    if (n < k) return 0;
    unsigned v = c & (0x7Fu >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    return k;
}

size_t fr_utf8_invalid_at(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len(u + i, n - i);
        if (!l) return i;
        i += l;
    }
    return n;
}

void fr_utf8_sanitize(const char *s, size_t n, char *out, size_t room) {
    if (!room) return;
    size_t k = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && u[i];) {
        size_t l = utf8_len(u + i, n - i);
        bool ctl = l == 1 && ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7F);
        if (l == 0 || ctl) {
            if (k + 5 > room) break;
            snprintf(out + k, 5, "\\x%02X", u[i]);
            k += 4;
            i++;
        } else {
            if (k + l + 1 > room) break;
            memcpy(out + k, u + i, l);
            k += l;
            i += l;
        }
    }
    out[k] = '\0';
}

size_t fr_tail_text(const fr_tail *t, char *out, size_t room) {
    if (!room) return 0;
    size_t n = t->len;
    while (n > 0 && (t->b[n - 1] == '\n' || t->b[n - 1] == '\r' || t->b[n - 1] == ' ')) n--;
    /* Sanitising may grow the text up to 4x: take the last lines whose sanitised form fits. */
    size_t start = n;
    char tmp[FR_TAIL_BYTES * 4 + 8];
    for (;;) {
        size_t prev = start;
        while (prev > 0 && t->b[prev - 1] != '\n') prev--; /* start of the line ending at start */
        if (prev == 0 && start == 0) break;
        size_t from = prev > 0 && start == prev ? prev - 1 : prev;
        while (from > 0 && t->b[from - 1] != '\n') from--;
        fr_utf8_sanitize(t->b + from, n - from, tmp, sizeof tmp);
        size_t need = strlen(tmp) + (from > 0 || t->total > t->len ? 4 : 0);
        if (need + 1 > room) break;
        start = from;
        if (from == 0) break;
    }
    if (start == n && n > 0) {
        /* Not even the last line fits: its last part. */
        fr_utf8_sanitize(t->b, n, tmp, sizeof tmp);
        size_t l = strlen(tmp), keep = room > 5 ? room - 5 : 0;
        size_t s0 = l > keep ? l - keep : 0;
        while (s0 < l && ((unsigned char)tmp[s0] & 0xC0) == 0x80) s0++;
        int w = snprintf(out, room, "...%s", tmp + s0);
        return w < 0 ? 0 : (size_t)w < room ? (size_t)w : room - 1;
    }
    fr_utf8_sanitize(t->b + start, n - start, tmp, sizeof tmp);
    int w = snprintf(out, room, "%s%s", start > 0 || t->total > t->len ? "..." : "", tmp);
    return w < 0 ? 0 : (size_t)w < room ? (size_t)w : room - 1;
}

void fr_proc_describe(int ws, char *buf, size_t n) {
    if (WIFEXITED(ws))
        snprintf(buf, n, "exit status %d", WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws))
        snprintf(buf, n, "killed by signal %d (SIG%s)", WTERMSIG(ws),
                 sigabbrev_np(WTERMSIG(ws)) ? sigabbrev_np(WTERMSIG(ws)) : "?");
    else
        snprintf(buf, n, "wait status 0x%x", (unsigned)ws);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The supervisor (runs in the forked child). */

static volatile sig_atomic_t g_sup_stop;
static void sup_on_signal(int sig) {
    (void)sig;
    g_sup_stop = 1;
}

static void close_from(int lo, int except) {
    if (except >= lo) {
        if (except > lo) syscall(SYS_close_range, (unsigned)lo, (unsigned)except - 1, 0u);
        lo = except + 1;
    }
    if (syscall(SYS_close_range, (unsigned)lo, ~0u, 0u) != 0)
        for (int fd = lo; fd < 4096; fd++)
            if (fd != except) close(fd);
}

/* Kills every child of this process (and its process group when it leads one). Returns how many it found. */
/* Alike tests/iut/test_iut_exec.c:live_in_group: kept apart because that test counts live processes itself,
 * independently of this cleanup it checks. */
static int kill_children(void) {
    pid_t self = getpid();
    DIR *d = opendir("/proc");
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0) continue;
        buf[r] = '\0';
        char *rp = strrchr(buf, ')');
        if (!rp) continue;
        char state;
        long ppid;
        if (sscanf(rp + 1, " %c %ld", &state, &ppid) != 2 || ppid != (long)self) continue;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        found++;
        if (getpgid(pid) == pid) kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    closedir(d);
    return found;
}

static void kill_tree(pid_t runner) {
    if (runner > 0) kill(-runner, SIGKILL);
    for (int it = 0; it < 100000; it++) {
        kill_children();
        int st;
        pid_t r = waitpid(-1, &st, 0);
        if (r < 0 && errno == ECHILD) return;
    }
}

static void write_full(int fd, const void *b, size_t n) {
    const char *p = b;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

typedef struct child_fds {
    int in, out, err, statw;
} child_fds;

static void runner_main(const fr_proc_spec *s, const child_fds *c, char *const *envp) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int nul = open("/dev/null", O_RDWR);
    int in = c->in >= 0 ? c->in : nul, out = c->out >= 0 ? c->out : nul;
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(c->err, 2) < 0) _exit(126);
    close_from(3, -1);
    if (s->fn) {
        int rc = s->fn(s->ud);
        fr_coverage_flush();
        _exit(rc);
    }
    char *argv[] = {"sh", "-c", (char *)s->cmdline, NULL};
    execve("/bin/sh", argv, envp);
    _exit(127);
}

static void supervisor_main(const fr_proc_spec *s, child_fds *c, pid_t parent, char *const *envp) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sup_on_signal; /* no SA_RESTART: waitpid returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(0); /* the verifier died before the line above */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t r = fork();
    if (r == 0) runner_main(s, c, envp);
    int32_t pid32 = (int32_t)r;
    write_full(c->statw, &pid32, 4);
    if (r < 0) _exit(1);
    /* Only the status pipe stays open here: the runner must see end of file when the verifier closes its stdin. */
    close_from(0, c->statw);
    int ws = 0;
    bool done = false;
    while (!g_sup_stop) {
        pid_t w = waitpid(-1, &ws, 0);
        if (w == r) {
            done = true;
            break;
        }
        if (w < 0 && errno == ECHILD) break;
    }
    if (done) {
        int32_t ws32 = (int32_t)ws;
        write_full(c->statw, &ws32, 4);
    }
    kill_tree(r);
    fr_coverage_flush();
    _exit(0);
}

/* ---------------------------------------------------------------------------------------------------------------- */
/* The verifier's side. */

static char **build_env(const char *const *extra) {
    size_t n = 0, m = 0;
    while (environ && environ[n]) n++;
    while (extra && extra[m]) m++;
    char **e = malloc((n + m + 1) * sizeof *e);
    if (!e) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool over = false;
        for (size_t j = 0; j < m && !over; j++) {
            const char *eq = strchr(extra[j], '=');
            size_t l = eq ? (size_t)(eq - extra[j]) : strlen(extra[j]);
            over = !strncmp(environ[i], extra[j], l) && environ[i][l] == '=';
        }
        if (!over) e[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++) e[k++] = (char *)extra[j];
    e[k] = NULL;
    return e;
}

static void set_flags(int fd, bool nonblock) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (nonblock) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

fr_status fr_proc_start(fr_proc *p, const fr_proc_spec *s, fr_error *err) {
    memset(p, 0, sizeof *p);
    p->in = p->out = p->err = p->stat = p->cleanup = -1;
    int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1}, statp[2] = {-1, -1};
    fr_status st = FR_OK;
    if ((s->pipe_in && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inp) != 0) ||
        (s->pipe_out && pipe2(outp, O_CLOEXEC) != 0) || pipe2(errp, O_CLOEXEC) != 0 || pipe2(statp, O_CLOEXEC) != 0)
        st = fr_fail(err, FR_E_IO, "cannot create pipes: %s", strerror(errno));
    char **envp = st == FR_OK ? build_env(s->setenv) : NULL;
    if (st == FR_OK && !envp) st = fr_fail(err, FR_E_NOMEM, "out of memory");
    pid_t sup = -1;
    if (st == FR_OK) {
        pid_t parent = getpid();
        fflush(NULL); /* nothing buffered is written twice */
        sup = fork();
        if (sup == 0) {
            child_fds c = {inp[1], outp[1], errp[1], statp[1]};
            supervisor_main(s, &c, parent, envp);
        }
        if (sup < 0) st = fr_fail(err, FR_E_IO, "cannot fork: %s", strerror(errno));
    }
    free(envp);
    close_fd(&inp[1]);
    close_fd(&outp[1]);
    close_fd(&errp[1]);
    close_fd(&statp[1]);
    if (st != FR_OK) {
        close_fd(&inp[0]);
        close_fd(&outp[0]);
        close_fd(&errp[0]);
        close_fd(&statp[0]);
        return st;
    }
    p->sup = sup;
    p->cleanup = fr_cleanup_add_pid(sup); /* stopped by fr_cleanup_run on SIGINT/SIGTERM */
    p->in = inp[0];
    p->out = outp[0];
    p->err = errp[0];
    p->stat = statp[0];
    if (p->in >= 0) set_flags(p->in, true);
    if (p->out >= 0) set_flags(p->out, true);
    set_flags(p->err, true);
    set_flags(p->stat, true);
    return FR_OK;
}

/* Reads the supervisor's reports: the runner's pid, then its wait status. */
static void read_stat(fr_proc *p) {
    while (p->stat >= 0) {
        ssize_t r = read(p->stat, p->statbuf + p->statlen, sizeof p->statbuf - p->statlen);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return; /* EAGAIN */
        if (r == 0) {
            close_fd(&p->stat); /* the supervisor is gone */
            return;
        }
        p->statlen += (size_t)r;
        if (p->statlen >= 4 && !p->runner) {
            int32_t v;
            memcpy(&v, p->statbuf, 4);
            p->runner = v > 0 ? (pid_t)v : -1;
        }
        if (p->statlen >= 8 && !p->exited) {
            int32_t v;
            memcpy(&v, p->statbuf + 4, 4);
            p->wstatus = v;
            p->exited = true;
        }
    }
}

/* Reads what fd holds now. Returns false at end of file. Lines go to on_line (when given); got_line is set when it
 * returned true. */
static bool drain(int *fd, fr_tail *t, fr_proc *ls, fr_proc_line_fn on_line, void *ud, bool *got_line) {
    char buf[8192];
    for (;;) {
        ssize_t r = read(*fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                close_fd(fd);
                return false;
            }
            return true;
        }
        if (t) fr_tail_add(t, buf, (size_t)r);
        if (on_line && fr_proc_feed_lines(ls, buf, (size_t)r, on_line, ud)) *got_line = true;
    }
}

bool fr_proc_feed_lines(fr_proc *ls, const char *buf, size_t n, fr_proc_line_fn on_line, void *ud) {
    bool got = false;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            ls->line[ls->linelen] = '\0';
            if (on_line(ud, ls->line, ls->linelen, ls->linecut)) got = true;
            ls->linelen = 0;
            ls->linecut = false;
        } else if (ls->linelen + 1 < sizeof ls->line) {
            ls->line[ls->linelen++] = buf[i];
        } else {
            ls->linecut = true; /* the rest of an overlong line is dropped; the callback is told */
        }
    }
    return got;
}

static volatile sig_atomic_t *g_interrupt;
void fr_proc_interrupt_on(volatile sig_atomic_t *flag) { g_interrupt = flag; }

int fr_proc_poll(fr_proc *p, double deadline, fr_tail *out, fr_tail *errt, fr_proc_line_fn on_line, void *ud) {
    fr_proc *lsp = p;
    for (;;) {
        bool got = false;
        if (p->out >= 0) drain(&p->out, out, lsp, on_line, ud, &got);
        if (p->err >= 0) drain(&p->err, errt, p, NULL, NULL, NULL);
        read_stat(p);
        if (got) return 2;
        if (p->exited) {
            /* What it wrote before exiting is in the pipes now: read it once more. */
            if (p->out >= 0) drain(&p->out, out, lsp, on_line, ud, &got);
            if (p->err >= 0) drain(&p->err, errt, p, NULL, NULL, NULL);
            return got ? 2 : 1;
        }
        if (p->stat < 0) {
            /* The supervisor died without reporting (killed from outside, by the runner itself perhaps): treat as
             * killed; fr_proc_end still kills the runner's group. */
            p->exited = true;
            p->sup_died = true;
            p->wstatus = SIGKILL;
            return 1;
        }
        double left = deadline - fr_proc_now();
        if (left <= 0 || (g_interrupt && *g_interrupt)) return 0; /* an interrupted hunt ends the wait as a timeout */
        struct pollfd pf[3] = {{p->out, POLLIN, 0}, {p->err, POLLIN, 0}, {p->stat, POLLIN, 0}};
        int ms = left > 0.2 ? 200 : (int)(left * 1000) + 1;
        poll(pf, 3, ms);
    }
}

bool fr_proc_write(fr_proc *p, const char *buf, size_t n, double deadline) {
    while (n) {
        if (p->in < 0) return false;
        ssize_t w = send(p->in, buf, n, MSG_NOSIGNAL);
        if (w > 0) {
            buf += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            double left = deadline - fr_proc_now();
            if (left <= 0) return false;
            struct pollfd pf = {p->in, POLLOUT, 0};
            poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
            continue;
        }
        return false;
    }
    return true;
}

void fr_proc_end(fr_proc *p) {
    close_fd(&p->in);
    if (p->sup > 0) {
        read_stat(p);
        if (p->runner > 0 && (!p->exited || p->sup_died)) kill(-p->runner, SIGKILL);
        kill(p->sup, SIGTERM);
        int ws;
        double until = fr_proc_now() + 10.0;
        for (;;) {
            pid_t w = waitpid(p->sup, &ws, WNOHANG);
            if (w == p->sup || (w < 0 && errno != EINTR)) break;
            if (fr_proc_now() > until) {
                kill(p->sup, SIGKILL); /* the supervisor is stuck: last resort */
                while (waitpid(p->sup, &ws, 0) < 0 && errno == EINTR) {
                }
                break;
            }
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        read_stat(p);
        fr_cleanup_drop(p->cleanup);
        p->cleanup = -1;
        p->sup = 0;
    }
    close_fd(&p->out);
    close_fd(&p->err);
    close_fd(&p->stat);
}

void fr_proc_close(fr_proc *p, double grace) {
    close_fd(&p->in);
    if (p->sup > 0 && !p->exited) {
        fr_proc_poll(p, fr_proc_now() + grace, NULL, NULL, NULL, NULL);
    }
    fr_proc_end(p);
}
