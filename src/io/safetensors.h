/* safetensors files: 8-byte little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
 * then the data (offsets relative to the end of the header). dtypes: F64 F32 F16 BF16 I32 I64 U8 BOOL F8_E4M3
 * (-> FR_E4M3FN) F8_E5M2 (-> FR_E5M2). Other dtypes, overlapping / out-of-range / size-mismatched data_offsets,
 * unknown keys in a tensor entry, non-string metadata values and duplicate names are FR_E_FORMAT. */
#ifndef FR_IO_SAFETENSORS_H
#define FR_IO_SAFETENSORS_H

#include "flashref.h"

typedef struct fr_st_entry {
    char *name;      /* owned */
    fr_tensor t;     /* contiguous; t.data owned (malloc'd, own buffer so it is aligned), NULL when empty */
} fr_st_entry;

typedef struct fr_st_meta {
    char *key, *value; /* owned */
} fr_st_meta;

typedef struct fr_safetensors {
    int count;
    fr_st_entry *entries; /* in file order of data_offsets */
    int meta_count;
    fr_st_meta *meta;     /* __metadata__ string pairs */
} fr_safetensors;

/* Parse from memory / read a file. On failure *out is empty (nothing to free, fr_st_free is still safe). */
fr_status fr_st_parse(const void *buf, size_t len, fr_safetensors *out, const char *what, fr_error *err);
fr_status fr_st_read_file(const char *path, fr_safetensors *out, fr_error *err);
void fr_st_free(fr_safetensors *s);
/* The tensor named `name`, or NULL. */
const fr_tensor *fr_st_find(const fr_safetensors *s, const char *name);
/* The metadata value for `key`, or NULL. */
const char *fr_st_meta_get(const fr_safetensors *s, const char *key);

/* Writes n tensors (any strides; written contiguously, 8-byte aligned header as the format recommends) and
 * meta_count metadata pairs (meta may be NULL when meta_count is 0). hif8 has no safetensors dtype: FR_E_DTYPE. */
fr_status fr_st_write_file(const char *path, int n, const char *const *names, const fr_tensor *tensors,
                           int meta_count, const fr_st_meta *meta, fr_error *err);
fr_status fr_st_write_mem(int n, const char *const *names, const fr_tensor *tensors, int meta_count,
                          const fr_st_meta *meta, void **buf, size_t *len, fr_error *err);

/* "F32" etc. for a dtype (NULL when the format has none), and back (FR_DT_NONE when unknown). */
const char *fr_st_dtype_name(fr_dtype t);
fr_dtype fr_st_dtype_from_name(const char *name);

#endif
