/* What an interrupted run must not leave behind (docs/reliability.md, "Interrupted runs"): the library registers
 * each temporary directory and file it creates and each supervisor process it starts, and unregisters it when done;
 * a program's SIGINT/SIGTERM handler calls fr_cleanup_run() before it dies, as git's tempfile list does. Everything
 * here is async-signal-safe and allocates nothing: a fixed table of slots claimed with atomics, so any thread may
 * register while a handler runs. */
#ifndef FR_CORE_CLEANUP_H
#define FR_CORE_CLEANUP_H

#include "flashref.h"

#include <sys/types.h>

/* Registers a temporary directory (removed with its contents), a temporary file, or a supervisor process (sent
 * SIGTERM, which makes it kill its runner's process tree, and waited for) for fr_cleanup_run. Returns the slot for
 * fr_cleanup_drop, or -1 when the table is full (the item is then not cleaned on a signal; nothing else changes).
 * The path is copied (at most 4095 bytes; a longer one is not registered). */
int fr_cleanup_add_dir(const char *path);
int fr_cleanup_add_file(const char *path);
int fr_cleanup_add_pid(pid_t pid);
/* The item is gone or no longer temporary: forget it (-1: nothing). */
void fr_cleanup_drop(int slot);

/* Kills and waits for every registered supervisor (at most about 2 s in all), then removes every registered file and
 * directory. Async-signal-safe; for a signal handler about to end the process. */
FR_API void fr_cleanup_run(void);

/* Empties the directory dfd refers to, never following a symbolic link (every step relative to a descriptor opened
 * O_NOFOLLOW, listed with getdents64 into a buffer on the stack). Depth is bounded at 512 levels. Async-signal-safe. */
void fr_clear_dir_fd(int dfd, int depth);

#endif
