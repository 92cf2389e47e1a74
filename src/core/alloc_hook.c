/* Allocation-failure injection (alloc_hook.h): the fr_hook_* functions the -DFR_ALLOC_HOOK=ON build renames the
 * library's allocating calls to. An empty file in every other build. */
#ifdef FR_ALLOC_HOOK
/* This file calls the real functions: undo the build's renaming before any header sees it. */
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef aligned_alloc
#undef posix_memalign
#undef strdup
#undef strndup
#undef getline
#undef getdelim
#undef realpath
#undef fopen
#undef fdopen
#undef opendir
#undef fdopendir
#undef fwrite
#undef fputs
#undef fputc
#undef fprintf
#undef write
#undef pwrite
#undef fflush
#undef fclose
#undef fsync
#undef _POSIX_C_SOURCE
#define _GNU_SOURCE

#include "core/alloc_hook.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* The prototypes the renamed system headers give the library's sources. */
void *fr_hook_malloc(size_t n);
void *fr_hook_calloc(size_t n, size_t s);
void *fr_hook_realloc(void *p, size_t n);
void fr_hook_free(void *p);
void *fr_hook_aligned_alloc(size_t a, size_t n);
int fr_hook_posix_memalign(void **p, size_t a, size_t n);
char *fr_hook_strdup(const char *s);
char *fr_hook_strndup(const char *s, size_t n);
ssize_t fr_hook_getline(char **line, size_t *cap, FILE *f);
ssize_t fr_hook_getdelim(char **line, size_t *cap, int delim, FILE *f);
char *fr_hook_realpath(const char *path, char *resolved);
FILE *fr_hook_fopen(const char *path, const char *mode);
FILE *fr_hook_fdopen(int fd, const char *mode);
DIR *fr_hook_opendir(const char *path);
DIR *fr_hook_fdopendir(int fd);
size_t fr_hook_fwrite(const void *p, size_t size, size_t n, FILE *f);
int fr_hook_fputs(const char *s, FILE *f);
int fr_hook_fputc(int c, FILE *f);
int fr_hook_fprintf(FILE *f, const char *fmt, ...);
ssize_t fr_hook_write(int fd, const void *p, size_t n);
ssize_t fr_hook_pwrite(int fd, const void *p, size_t n, off_t off);
int fr_hook_fflush(FILE *f);
int fr_hook_fclose(FILE *f);
int fr_hook_fsync(int fd);

/* Test-only state: the one place the library keeps process-global mutable state, in this build only. */
static atomic_long g_count, g_fail_at, g_live;
static atomic_int g_failed;
static atomic_size_t g_failed_bytes;
static int (*_Atomic g_observer)(long k);

void fr_alloc_hook_observe(int (*fn)(long k)) { atomic_store(&g_observer, fn); }

void fr_alloc_hook_set(long fail_at) {
    atomic_store(&g_count, 0);
    atomic_store(&g_live, 0);
    atomic_store(&g_failed, FR_ALLOC_NONE);
    atomic_store(&g_failed_bytes, 0);
    atomic_store(&g_fail_at, fail_at);
}
long fr_alloc_hook_count(void) { return atomic_load(&g_count); }
int fr_alloc_hook_failed(void) { return atomic_load(&g_failed); }
size_t fr_alloc_hook_failed_bytes(void) { return atomic_load(&g_failed_bytes); }
long fr_alloc_hook_live(void) { return atomic_load(&g_live); }
int fr_alloc_hook_enabled(void) { return 1; }

/* True when this call is the one to fail (errno set to ENOMEM, as the real call would). */
static bool inject(fr_alloc_kind kind) {
    long c = atomic_fetch_add(&g_count, 1) + 1;
    int (*obs)(long) = atomic_load(&g_observer);
    if (c != atomic_load(&g_fail_at) && !(obs && obs(c))) return false;
    atomic_store(&g_failed, kind);
    errno = ENOMEM;
    return true;
}

static void *counted(void *p) {
    if (p) atomic_fetch_add(&g_live, 1);
    return p;
}

/* The size a failed malloc or calloc asked for, kept for fr_alloc_hook_failed_bytes. */
static void *failed_bytes(size_t n) {
    atomic_store(&g_failed_bytes, n);
    return NULL;
}

void *fr_hook_malloc(size_t n) { return inject(FR_ALLOC_MEM) ? failed_bytes(n) : counted(malloc(n)); }
void *fr_hook_calloc(size_t n, size_t s) {
    return inject(FR_ALLOC_MEM) ? failed_bytes(s && n > SIZE_MAX / s ? SIZE_MAX : n * s) : counted(calloc(n, s));
}
void *fr_hook_aligned_alloc(size_t a, size_t n) {
    return inject(FR_ALLOC_MEM) ? NULL : counted(aligned_alloc(a, n));
}
char *fr_hook_strdup(const char *s) { return inject(FR_ALLOC_MEM) ? NULL : counted(strdup(s)); }
char *fr_hook_strndup(const char *s, size_t n) { return inject(FR_ALLOC_MEM) ? NULL : counted(strndup(s, n)); }
char *fr_hook_realpath(const char *path, char *resolved) {
    if (!resolved && inject(FR_ALLOC_MEM)) return NULL;
    char *r = realpath(path, resolved);
    return resolved ? r : counted(r);
}

void *fr_hook_realloc(void *p, size_t n) {
    if (inject(FR_ALLOC_MEM)) return NULL; /* p stays allocated, as after a real failure */
    void *q = realloc(p, n);
    if (!p) return counted(q);
    if (!q && n == 0) atomic_fetch_sub(&g_live, 1); /* realloc(p, 0) may free p */
    return q;
}

int fr_hook_posix_memalign(void **p, size_t a, size_t n) {
    if (inject(FR_ALLOC_MEM)) return ENOMEM;
    int r = posix_memalign(p, a, n);
    if (r == 0) counted(*p);
    return r;
}

void fr_hook_free(void *p) {
    if (p) atomic_fetch_sub(&g_live, 1);
    free(p);
}

ssize_t fr_hook_getdelim(char **line, size_t *cap, int delim, FILE *f) {
    if (inject(FR_ALLOC_MEM)) return -1;
    bool had = *line != NULL;
    ssize_t r = getdelim(line, cap, delim, f);
    if (!had && *line) atomic_fetch_add(&g_live, 1);
    return r;
}
ssize_t fr_hook_getline(char **line, size_t *cap, FILE *f) { return fr_hook_getdelim(line, cap, '\n', f); }

FILE *fr_hook_fopen(const char *path, const char *mode) { return inject(FR_ALLOC_STREAM) ? NULL : fopen(path, mode); }
FILE *fr_hook_fdopen(int fd, const char *mode) { return inject(FR_ALLOC_STREAM) ? NULL : fdopen(fd, mode); }
DIR *fr_hook_opendir(const char *path) { return inject(FR_ALLOC_STREAM) ? NULL : opendir(path); }
DIR *fr_hook_fdopendir(int fd) { return inject(FR_ALLOC_STREAM) ? NULL : fdopendir(fd); }

/* ---------------------------------------------------------------------------------------------------------------- */
/* A disk that fills (fr_fault_write_set): writes to regular files only; pipes, terminals and /dev/null are not on a
 * disk. The k-th write writes half of its bytes (a short write, as a filling disk gives) and every later one fails
 * with ENOSPC; fflush and fclose of a stream with bytes still buffered fail as their flush would, fsync fails. */
static atomic_long g_wcount, g_wfail_at;
static atomic_int g_wfull;

void fr_fault_write_set(long fail_at) {
    atomic_store(&g_wcount, 0);
    atomic_store(&g_wfull, 0);
    atomic_store(&g_wfail_at, fail_at);
}
long fr_fault_write_count(void) { return atomic_load(&g_wcount); }
int fr_fault_write_hit(void) { return atomic_load(&g_wfull); }

static bool on_disk(int fd) {
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* 0: write normally; 1: this write is the short one; 2: the disk is full (errno ENOSPC). */
static int write_fault(int fd) {
    if (!on_disk(fd)) return 0;
    long c = atomic_fetch_add(&g_wcount, 1) + 1;
    if (atomic_load(&g_wfull)) {
        errno = ENOSPC;
        return 2;
    }
    long at = atomic_load(&g_wfail_at);
    if (at <= 0 || c != at) return 0;
    atomic_store(&g_wfull, 1);
    return 1;
}

/* The stream's own error indicator, as a failed flush sets it (glibc's FILE, the hook build only). */
static void stream_failed(FILE *f) {
    __fpurge(f);
    f->_flags |= _IO_ERR_SEEN;
    errno = ENOSPC;
}

size_t fr_hook_fwrite(const void *p, size_t size, size_t n, FILE *f) {
    int w = size && n ? write_fault(fileno(f)) : 0;
    if (w == 0) return fwrite(p, size, n, f);
    size_t done = w == 1 ? fwrite(p, size, n / 2, f) : 0;
    if (w == 1) fflush(f);
    stream_failed(f);
    return done;
}
int fr_hook_fputs(const char *s, FILE *f) {
    if (!*s || !write_fault(fileno(f))) return fputs(s, f);
    stream_failed(f);
    return EOF;
}
int fr_hook_fputc(int c, FILE *f) {
    if (!write_fault(fileno(f))) return fputc(c, f);
    stream_failed(f);
    return EOF;
}
int fr_hook_fprintf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r;
    if (!write_fault(fileno(f))) {
        r = vfprintf(f, fmt, ap);
    } else {
        stream_failed(f);
        r = -1;
    }
    va_end(ap);
    return r;
}
ssize_t fr_hook_write(int fd, const void *p, size_t n) {
    int w = n ? write_fault(fd) : 0;
    if (w == 0) return write(fd, p, n);
    if (w == 1 && n / 2) return write(fd, p, n / 2);
    errno = ENOSPC;
    return -1;
}
ssize_t fr_hook_pwrite(int fd, const void *p, size_t n, off_t off) {
    int w = n ? write_fault(fd) : 0;
    if (w == 0) return pwrite(fd, p, n, off);
    if (w == 1 && n / 2) return pwrite(fd, p, n / 2, off);
    errno = ENOSPC;
    return -1;
}
/* A stream with bytes still buffered on a full disk: its flush fails. */
static bool flush_fails(FILE *f) {
    return f && atomic_load(&g_wfull) && __fwritable(f) && __fpending(f) > 0 && on_disk(fileno(f));
}
int fr_hook_fflush(FILE *f) {
    if (!flush_fails(f)) return fflush(f);
    stream_failed(f);
    return EOF;
}
int fr_hook_fclose(FILE *f) {
    if (!flush_fails(f)) return fclose(f);
    stream_failed(f);
    fclose(f);
    errno = ENOSPC;
    return EOF;
}
int fr_hook_fsync(int fd) {
    if (on_disk(fd) && atomic_load(&g_wfull)) {
        errno = ENOSPC;
        return -1;
    }
    return fsync(fd);
}

/* cJSON allocates through its own process-wide hooks; point them here once, when the library is loaded. */
__attribute__((constructor)) static void route_cjson(void) {
    cJSON_Hooks h = {fr_hook_malloc, fr_hook_free};
    cJSON_InitHooks(&h);
}
#else
typedef int fr_alloc_hook_unused; /* ISO C forbids an empty translation unit */
#endif
