/* The table of what an interrupted run must clean (cleanup.h). */
#define _GNU_SOURCE
#include "core/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 64, FREE = 0, CLAIMED = 1, READY = 2 };
enum { KIND_DIR, KIND_FILE, KIND_PID };

typedef struct cleanup_slot {
    atomic_int state;
    int kind;
    pid_t pid;
    char path[4096];
} cleanup_slot;

/* Process-global by nature: a signal handler has no other way to find what the run holds. */
static cleanup_slot g_slots[SLOTS];

static int add(int kind, const char *path, pid_t pid) {
    if (path && strlen(path) >= sizeof g_slots[0].path) return -1;
    for (int k = 0; k < SLOTS; k++) {
        int want = FREE;
        if (!atomic_compare_exchange_strong(&g_slots[k].state, &want, CLAIMED)) continue;
        g_slots[k].kind = kind;
        g_slots[k].pid = pid;
        if (path) strcpy(g_slots[k].path, path);
        atomic_store(&g_slots[k].state, READY);
        return k;
    }
    return -1;
}

int fr_cleanup_add_dir(const char *path) { return add(KIND_DIR, path, 0); }
int fr_cleanup_add_file(const char *path) { return add(KIND_FILE, path, 0); }
int fr_cleanup_add_pid(pid_t pid) { return add(KIND_PID, NULL, pid); }

void fr_cleanup_drop(int slot) {
    if (slot >= 0 && slot < SLOTS) atomic_store(&g_slots[slot].state, FREE);
}

/* /proc/self/fd/N without snprintf (not async-signal-safe). */
static void fd_path(int fd, char *p) {
    static const char head[] = "/proc/self/fd/";
    memcpy(p, head, sizeof head - 1);
    char d[16];
    int n = 0;
    do d[n++] = (char)('0' + fd % 10), fd /= 10;
    while (fd && n < 15);
    for (int k = 0; k < n; k++) p[sizeof head - 1 + k] = d[n - 1 - k];
    p[sizeof head - 1 + n] = '\0';
}

void fr_clear_dir_fd(int dfd, int depth) {
    if (depth > 512) return;
    fchmod(dfd, 0700); /* a runner may have made it unreadable or unwritable */
    for (int pass = 0; pass < 4; pass++) {
        /* Listed with getdents64 into a buffer on the stack, not opendir: a cleanup that needs memory would leave the
         * directory behind exactly when memory is short, and a signal handler may not allocate. */
        if (lseek(dfd, 0, SEEK_SET) != 0) return;
        int removed = 0, seen = 0;
        _Alignas(8) char buf[1024];
        long got;
        while ((got = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
            for (long off = 0; off < got;) {
                const struct dirent64_raw {
                    uint64_t ino;
                    int64_t next;
                    unsigned short reclen;
                    unsigned char type;
                    char d_name[];
                } *e = (const void *)(buf + off);
                off += e->reclen;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                seen++;
                struct stat sb;
                if (fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
                if (S_ISDIR(sb.st_mode)) {
                    /* A mode-000 directory cannot be opened for reading: make it ours again without following a
                     * link (O_PATH opens it, then the chmod goes through /proc/self/fd, which names that inode). */
                    int pfd = openat(dfd, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                    if (pfd >= 0) {
                        char pp[32];
                        fd_path(pfd, pp);
                        chmod(pp, 0700);
                        close(pfd);
                    }
                    int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                    if (sub >= 0) {
                        fr_clear_dir_fd(sub, depth + 1);
                        close(sub);
                    }
                    removed += unlinkat(dfd, e->d_name, AT_REMOVEDIR) == 0;
                } else {
                    removed += unlinkat(dfd, e->d_name, 0) == 0;
                }
            }
        if (seen == 0 || removed == 0) return;
    }
}

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

void fr_cleanup_run(void) {
    int saved = errno;
    /* First the processes, so that no runner writes into a directory while it is removed. */
    for (int k = 0; k < SLOTS; k++)
        if (atomic_load(&g_slots[k].state) == READY && g_slots[k].kind == KIND_PID) kill(g_slots[k].pid, SIGTERM);
    for (int k = 0; k < SLOTS; k++) {
        if (atomic_load(&g_slots[k].state) != READY || g_slots[k].kind != KIND_PID) continue;
        /* The supervisor kills its runner's tree on SIGTERM at once; SIGKILL after 2 s (then the runner dies of
         * its own PR_SET_PDEATHSIG). */
        int ws, waited = 0;
        while (waitpid(g_slots[k].pid, &ws, WNOHANG) == 0 && waited < 2000) sleep_ms(5), waited += 5;
        if (waited >= 2000) {
            kill(g_slots[k].pid, SIGKILL);
            waitpid(g_slots[k].pid, &ws, 0);
        }
        atomic_store(&g_slots[k].state, FREE);
    }
    for (int k = 0; k < SLOTS; k++) {
        if (atomic_load(&g_slots[k].state) != READY) continue;
        if (g_slots[k].kind == KIND_FILE) {
            unlink(g_slots[k].path);
        } else if (g_slots[k].kind == KIND_DIR) {
            int fd = open(g_slots[k].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) {
                fr_clear_dir_fd(fd, 0);
                close(fd);
            }
            rmdir(g_slots[k].path);
        }
        atomic_store(&g_slots[k].state, FREE);
    }
    errno = saved;
}
