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
#undef _POSIX_C_SOURCE
#define _GNU_SOURCE

#include "core/alloc_hook.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

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

/* Test-only state: the one place the library keeps process-global mutable state, in this build only. */
static atomic_long g_count, g_fail_at, g_live;
static atomic_int g_failed;
static int (*_Atomic g_observer)(long k);

void fr_alloc_hook_observe(int (*fn)(long k)) { atomic_store(&g_observer, fn); }

void fr_alloc_hook_set(long fail_at) {
    atomic_store(&g_count, 0);
    atomic_store(&g_live, 0);
    atomic_store(&g_failed, FR_ALLOC_NONE);
    atomic_store(&g_fail_at, fail_at);
}
long fr_alloc_hook_count(void) { return atomic_load(&g_count); }
int fr_alloc_hook_failed(void) { return atomic_load(&g_failed); }
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

void *fr_hook_malloc(size_t n) { return inject(FR_ALLOC_MEM) ? NULL : counted(malloc(n)); }
void *fr_hook_calloc(size_t n, size_t s) { return inject(FR_ALLOC_MEM) ? NULL : counted(calloc(n, s)); }
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

/* cJSON allocates through its own process-wide hooks; point them here once, when the library is loaded. */
__attribute__((constructor)) static void route_cjson(void) {
    cJSON_Hooks h = {fr_hook_malloc, fr_hook_free};
    cJSON_InitHooks(&h);
}
#else
typedef int fr_alloc_hook_unused; /* ISO C forbids an empty translation unit */
#endif
