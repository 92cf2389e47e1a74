/* Allocation-failure injection (docs/reliability.md), built only with -DFR_ALLOC_HOOK=ON. That build compiles every
 * library source with malloc, calloc, realloc, free, aligned_alloc, posix_memalign, strdup, strndup, getline,
 * getdelim, realpath, fopen, fdopen, opendir and fdopendir renamed to the fr_hook_* functions of alloc_hook.c, and
 * routes cJSON's allocations there too (cJSON_InitHooks), so one counter sees every allocation the library makes and
 * can make the k-th fail. Without the option these functions do not exist and nothing is renamed. */
#ifndef FR_CORE_ALLOC_HOOK_H
#define FR_CORE_ALLOC_HOOK_H

#include "flashref.h"

/* Which kind of call an injected failure hit. */
typedef enum fr_alloc_kind {
    FR_ALLOC_NONE = 0, /* nothing failed */
    FR_ALLOC_MEM,      /* malloc, calloc, realloc, aligned_alloc, posix_memalign, strdup, strndup, getline, realpath,
                          cJSON's allocations: the library must answer FR_E_NOMEM */
    FR_ALLOC_STREAM    /* fopen, fdopen, opendir, fdopendir (errno ENOMEM): FR_E_NOMEM or FR_E_IO */
} fr_alloc_kind;

/* Starts counting from zero and makes allocation number fail_at (1-based) fail once; 0: none fails. Also clears the
 * live-allocation balance. Thread-safe (atomic), but the k-th is only reproducible with one thread. */
FR_API void fr_alloc_hook_set(long fail_at);
/* Allocating calls since fr_alloc_hook_set, failed or not. */
FR_API long fr_alloc_hook_count(void);
/* The kind of the call that failed since fr_alloc_hook_set (FR_ALLOC_NONE: none did). */
FR_API int fr_alloc_hook_failed(void);
/* The bytes the failed call asked for, when it was a malloc or calloc (0: another call, or none failed). */
FR_API size_t fr_alloc_hook_failed_bytes(void);
/* Memory blocks allocated through the hook since fr_alloc_hook_set minus those freed through it: 0 after a call that
 * frees what it allocated (blocks it hands back to the caller count until freed). */
FR_API long fr_alloc_hook_live(void);
/* Calls fn(k) at the k-th allocating call since fr_alloc_hook_set, before anything else: a true answer makes that call
 * fail (the test's fork mode: fork there, fail in the child, go on in the parent). NULL: none. */
FR_API void fr_alloc_hook_observe(int (*fn)(long k));
/* A disk that fills (the same build renames fwrite, fputs, fputc, fprintf, write, pwrite, fflush, fclose and fsync):
 * counting from zero, the fail_at-th write to a regular file writes half its bytes and every later write, flush of
 * buffered bytes and fsync fails with ENOSPC, until the next call (0: none fails). Pipes, terminals and devices are
 * not disks: writes to them neither count nor fail. */
FR_API void fr_fault_write_set(long fail_at);
/* Writes to regular files since fr_fault_write_set. */
FR_API long fr_fault_write_count(void);
/* 1 once the disk has filled since fr_fault_write_set. */
FR_API int fr_fault_write_hit(void);
/* 1 in a build with the hook (the Python tests ask through ctypes). */
FR_API int fr_alloc_hook_enabled(void);

#endif
