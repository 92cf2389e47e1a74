/* Forced into every library source of the -DFR_ALLOC_HOOK=ON build (cmake/flashref_helpers.cmake): write and pwrite
 * renamed to the disk-full injection of alloc_hook.c (alloc_hook.h, fr_fault_write_set). Function-like, unlike the
 * other renames: `#pragma omp atomic write` names the clause `write`, which an object-like macro would rewrite. */
#ifndef FR_CORE_ALLOC_HOOK_IO_H
#define FR_CORE_ALLOC_HOOK_IO_H
#define write(...) fr_hook_write(__VA_ARGS__)
#define pwrite(...) fr_hook_pwrite(__VA_ARGS__)
#endif
