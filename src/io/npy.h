/* .npy files (format versions 1.0 and 2.0; little-endian, C order only), read from a file or a memory buffer and
 * written from any strided fr_tensor (contiguously, C order).
 *
 * dtype mapping (docs/case-format.md "Tensor files"):
 *   <f8 fp64, <f4 fp32, <f2 fp16, <i4 int32, <i8 int64, |u1 (or <u1) uint8, |b1 bool: numpy types stored as themselves.
 *   bf16 is stored as its bit patterns in <u2; e4m3fn / e5m2 / hif8 as their bit patterns in |u1 (|i1 accepted).
 * A reader is told which fr_dtype it wants (`want`); the file's descr must be that dtype's storage, or, with
 * want = FR_DT_NONE, any numpy-native type above (then <u2 reads as FR_BF16 and |i1 is rejected).
 * Every malformed input is FR_E_FORMAT (FR_E_IO when the file cannot be opened / read), with a message naming `what`
 * (usually the file name) and the field: bad magic, version, header length, header dict, descr, fortran_order, shape,
 * data size vs file size. Sizes are checked against the bytes actually present before anything is allocated. */
#ifndef FR_IO_NPY_H
#define FR_IO_NPY_H

#include "flashref.h"

/* The parsed header of a .npy file. */
typedef struct fr_npy_header {
    int version;                 /* 1 or 2 (major version) */
    char descr[8];               /* as in the file, e.g. "<f4" */
    int ndim;                    /* 0..FR_MAX_DIMS */
    int64_t shape[FR_MAX_DIMS];
    int64_t data_offset;         /* bytes from the start of the file to the first element */
    int64_t data_bytes;          /* numel * element size (checked) */
} fr_npy_header;

/* Parses the header at the start of buf[0..len). Does not require the data to be present (data_offset, data_bytes
 * say where it is). */
fr_status fr_npy_parse_header(const void *buf, size_t len, fr_npy_header *h, const char *what, fr_error *err);

/* The fr_dtype a descr holds natively (FR_DT_NONE for unknown descrs and for "<u2"/"|i1", which are bit-pattern
 * storage only). */
fr_dtype fr_npy_native_dtype(const char *descr);
/* True when a file with this descr may be read as `want` (see the mapping above). */
bool fr_npy_descr_fits(const char *descr, fr_dtype want);
/* The descr this library writes for a dtype ("<u2" for bf16, "|u1" for fp8/hif8/uint8); NULL for FR_DT_NONE. */
const char *fr_npy_descr_for(fr_dtype t);

/* Reads a whole .npy from memory / from a file into a new contiguous tensor. out->data is malloc'd (free() it; it
 * may be NULL for an empty tensor) and out->dtype is `want` (or the native dtype when want is FR_DT_NONE). On
 * failure *out is zeroed and nothing is allocated. */
fr_status fr_npy_read_mem(const void *buf, size_t len, fr_dtype want, fr_tensor *out, const char *what,
                          fr_error *err);
fr_status fr_npy_read_file(const char *path, fr_dtype want, fr_tensor *out, fr_error *err);
/* Reads only the header of a file (and checks the file is long enough for the data it declares). */
fr_status fr_npy_read_file_header(const char *path, fr_npy_header *h, fr_error *err);

/* Reads and parses the header of an open regular file with pread (the file offset is not used) and checks that
 * the file holds exactly header + data (fstat), before anything is allocated from the header. For files another
 * process wrote: open them O_NOFOLLOW | O_NONBLOCK and check S_ISREG first. */
fr_status fr_npy_read_fd_header(int fd, fr_npy_header *h, const char *what, fr_error *err);
/* The fr_dtype a header's data is read as for `want` (FR_E_FORMAT naming the mismatch, as the readers say it). */
fr_status fr_npy_header_dtype(const fr_npy_header *h, fr_dtype want, fr_dtype *dt, const char *what, fr_error *err);

/* Room for any header this library writes (make_header's dict of at most FR_MAX_DIMS dimensions, padded). */
#define FR_NPY_HEADER_MAX 640
/* The header bytes fr_npy_write_file writes for t (same version rule) into buf[FR_NPY_HEADER_MAX]: *len bytes, and
 * the data size in *data_bytes (may be NULL). For writers that lay out a file first and fill its data later
 * (src/dist: each rank pwrite()s its rows), so their files are byte-identical to fr_npy_write_file's. */
fr_status fr_npy_header_bytes(const fr_tensor *t, int version, char *buf, size_t *len, int64_t *data_bytes,
                             const char *what, fr_error *err);

/* Writes t (any strides, any dtype but FR_DT_NONE) as a contiguous C-order .npy. `version` is 1 or 2 (0 = 1,
 * the smallest that fits; numpy's choice). write_mem returns a malloc'd buffer in *buf (free() it). */
fr_status fr_npy_write_file(const char *path, const fr_tensor *t, int version, fr_error *err);
fr_status fr_npy_write_mem(const fr_tensor *t, int version, void **buf, size_t *len, fr_error *err);

#endif
