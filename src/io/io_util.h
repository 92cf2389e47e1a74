/* Small file helpers shared by the io layer (not part of its API). */
#ifndef FR_IO_IO_UTIL_H
#define FR_IO_IO_UTIL_H

#include "flashref.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Opens a regular file for reading and returns its size (FR_E_IO naming path and the reason otherwise). */
fr_status fr_io_open_read(const char *path, FILE **f, int64_t *size, fr_error *err);
/* Reads a whole regular file (at most max_bytes, else FR_E_FORMAT) into a malloc'd, NUL-terminated buffer. */
fr_status fr_io_read_all(const char *path, int64_t max_bytes, char **buf, size_t *len, fr_error *err);
/* Creates directory path and its missing parents unless it exists. */
fr_status fr_io_mkdir(const char *path, fr_error *err);
/* A folder a whole case (or a set of cases) is written into, never merged with what was there: path missing ->
 * created (with parents); a symbolic link -> FR_E_IO (never written through); anything but a directory -> FR_E_IO;
 * an empty directory -> used; a non-empty one -> FR_E_IO naming an entry, unless force, which first removes
 * everything under it (entries unlinked, never followed; FR_E_IO past 64 levels). */
fr_status fr_io_new_dir(const char *path, bool force, fr_error *err);

/* Writing an output file without ever writing through what stands at its path (a symbolic link to another file, a
 * hard link's other names): fr_io_out_open refuses a symbolic link or a non-regular file at path (FR_E_IO) and
 * opens a fresh temporary file beside it (O_EXCL | O_NOFOLLOW); fr_io_out_close(o, ok) closes it and, when ok and
 * every write succeeded, renames it over path, else removes it (the old file stays). */
typedef struct fr_io_out {
    FILE *f;
    char *tmp;
    const char *path;
} fr_io_out;
fr_status fr_io_out_open(fr_io_out *o, const char *path, fr_error *err);
/* fr_io_out_open's refusal alone, to ask before a long computation whether its output can be written. */
fr_status fr_io_out_check(const char *path, fr_error *err);
fr_status fr_io_out_close(fr_io_out *o, bool ok, fr_error *err);
/* The same as a raw descriptor for pwrite users (src/dist): fd instead of f; fr_io_out_close handles either. */
fr_status fr_io_out_open_fd(fr_io_out *o, int *fd, const char *path, fr_error *err);
fr_status fr_io_out_close_fd(fr_io_out *o, int fd, bool ok, fr_error *err);
/* "dir/name" in a malloc'd string (NULL when out of memory). */
char *fr_io_join(const char *dir, const char *name);
/* Description of errno (thread-safe). */
const char *fr_io_strerror_r(int e, char *buf, size_t n);
#define fr_io_strerror() fr_io_strerror_r(errno, (char[128]){0}, 128)
/* cJSON_ParseWithOpts(text, end, require_null_terminated = 1) under a lock (cJSON records parse errors in a
 * process-global variable, so concurrent parses would race on it), and strict: text cJSON takes but RFC 8259 refuses
 * (a \u escape without four hex digits, which cJSON reads as U+0000 and so cuts a string short; 01; 1.) gives NULL
 * too, with *end NULL. *nomem (NULL: not wanted): true when the NULL is cJSON out of memory on well-formed text. */
struct cJSON *fr_io_json_parse(const char *text, const char **end, bool *nomem);
/* "null", "a boolean", "a number", "a string", "an array", "an object" (else "invalid"): what a strict reader says it
 * got where it expected another type. */
const char *fr_io_json_type(const struct cJSON *j);
/* Whether text is well-formed JSON, checked without allocating: after fr_io_json_parse failed, true means it failed
 * for want of memory (FR_E_NOMEM), not because the text is malformed (FR_E_FORMAT). */
bool fr_io_json_syntax_ok(const char *text);
/* Copies the elements of t (any strides; numel(t) checked by the caller) contiguously, C order, into dst. */
void fr_io_gather(const fr_tensor *t, void *dst);
/* pread / pwrite of exactly n bytes at off, retried on EINTR and short transfers; false on an error or end of file
 * (errno tells which, 0 at end of file). */
bool fr_io_pread_full(int fd, void *buf, size_t n, off_t off);
bool fr_io_pwrite_full(int fd, const void *buf, size_t n, off_t off);
/* Writes the elements of t contiguously to f; false on a write error. */
bool fr_io_write_tensor(FILE *f, const fr_tensor *t);

#endif
