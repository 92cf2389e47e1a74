/* msprobe dumps (Ascend's accuracy tool, PyPI mindstudio-probe; docs/ascend.md): one dump directory per rank and
 * step, as msprobe's PyTorch dumper writes it with task "tensor":
 *
 *   DIR/dump.json            {"task", "level", "framework", "dump_data_dir", "data": {NAME: ENTRY, ...}}
 *   DIR/dump_tensor_data/    one torch.save file per dumped tensor (.pt; numpy arrays as .npy)
 *   DIR/stack.json, construct.json (not read)
 *
 * NAME is PREFIX.API.COUNT.forward|backward ("NPU.npu_fusion_attention.0.forward"). A forward ENTRY holds
 * "input_args" (a list) and "input_kwargs" (an object), a backward one "input" (the gradients of the outputs); both
 * hold "output". Each argument is null (None, or an element msprobe was told to ignore), a tensor {"type":
 * "torch.Tensor", "dtype": "torch.float32", "shape": [...], "Max"..., "requires_grad", "data_name": FILE} (no
 * data_name: no data was saved), a builtin {"type": "int"|"float"|"bool"|"str", "value": V}, or a list of those.
 * dump_data_dir (the path msprobe wrote to) is not used: tensor files are looked up in DIR/dump_tensor_data only.
 *
 * A dump is untrusted input, contained as case directories are (docs/exec-protocol.md): file names are plain names
 * (no '/', no "..", no control characters) opened relative to the directory with O_NOFOLLOW | O_NONBLOCK, so a
 * symbolic link, FIFO or device is refused without blocking; every tensor file's own dtype and shape must be what
 * dump.json declares; nothing outside the directory is opened. Errors name the entry and the file. */
#ifndef FR_IO_MSPROBE_H
#define FR_IO_MSPROBE_H

#include "flashref.h"
#include "io/torchpt.h"

#define FR_MP_JSON_MAX (INT64_C(1) << 30) /* dump.json larger than 1 GiB: dump a narrower scope */

typedef enum fr_mp_kind {
    FR_MP_NULL = 0, /* None (or not recorded) */
    FR_MP_INT,
    FR_MP_FLOAT,
    FR_MP_BOOL,
    FR_MP_STR,
    FR_MP_TENSOR,
    FR_MP_LIST,
    FR_MP_OTHER /* any other recorded type (slice, torch.Size, ...): s holds its "type" */
} fr_mp_kind;

typedef struct fr_mp_value {
    fr_mp_kind kind;
    int64_t i;       /* int, bool */
    double f;        /* float (an int's value too) */
    char *s;         /* str value; FR_MP_OTHER: its type name (owned) */
    /* tensor */
    fr_dtype dtype;  /* FR_DT_NONE: a dtype flashref does not read (dtype_name says which) */
    char dtype_name[32];
    int ndim;
    int64_t shape[FR_MAX_DIMS];
    char *data_name; /* owned; NULL: no data saved */
    bool npy;        /* a numpy array (.npy) */
    /* list */
    struct fr_mp_value *items;
    int n;
} fr_mp_value;

typedef struct fr_mp_entry {
    char *name;      /* the dump name, owned */
    char prefix[32]; /* "NPU", "MindSpeed", ... */
    char api[64];    /* "npu_fusion_attention" */
    int64_t count;   /* the call's number among calls of this API */
    bool backward;
    fr_mp_value *args;   /* forward: input_args; backward: input */
    int nargs;
    char **kwnames;      /* forward: input_kwargs */
    fr_mp_value *kwargs;
    int nkwargs;
    fr_mp_value *out;    /* output */
    int nout;
    bool has_input, has_output; /* the keys were present (msprobe's data_mode may leave them out) */
} fr_mp_entry;

typedef struct fr_mp_dump {
    char task[32], level[16], framework[32];
    fr_mp_entry *e; /* the entries `want` accepted, in dump.json order */
    int n;
    int others;     /* entries of other APIs, not read */
    int dirfd, datafd; /* the dump directory and its dump_tensor_data (-1: absent) */
} fr_mp_dump;

/* Which APIs to read: want(prefix, api) true keeps the entry (NULL: every entry). */
typedef bool (*fr_mp_want_fn)(const char *prefix, const char *api);

/* Parses dump.json text (len bytes). NaN / Infinity / -Infinity, which Python's json writes for non-finite
 * statistics, are read as null / +inf / -inf. `what` names the source in messages. On failure d is empty. */
fr_status fr_mp_parse_json(const char *json, size_t len, fr_mp_want_fn want, fr_mp_dump *d, const char *what,
                           fr_error *err);
/* Opens a dump directory (a directory holding dump.json): parses it and opens dump_tensor_data. */
fr_status fr_mp_open(const char *dir, fr_mp_want_fn want, fr_mp_dump *d, fr_error *err);
void fr_mp_free(fr_mp_dump *d);

/* The dump directories at or below root: root itself when it holds dump.json, else its subdirectories (msprobe's
 * step*, then rank* / proc*: two levels at most) that do, sorted. A symbolic link at those levels is listed, never
 * followed: the caller refuses it by name (fr_mp_found_link), so that a linked rank is not skipped in silence.
 * *dirs: malloc'd paths (free each and the array). FR_E_IO when root cannot be read, FR_E_FORMAT when no dump.json
 * (nor link) is found. */
fr_status fr_mp_find(const char *root, char ***dirs, int *n, fr_error *err);
/* Whether dir, a path fr_mp_find listed below root (not root itself, which the user named), is a symbolic link. */
bool fr_mp_found_link(const char *root, const char *dir);

/* A dumped tensor's file, opened and described: its own dtype and shape checked against dump.json's (label names
 * the argument in messages). *fd is open on success (close it). */
fr_status fr_mp_tensor_open(const fr_mp_dump *d, const fr_mp_value *v, const char *label, int *fd, fr_pt_info *info,
                            fr_error *err);
/* Reads the tensor described by fr_mp_tensor_open (out->data malloc'd). */
fr_status fr_mp_tensor_read(int fd, const fr_pt_info *info, fr_tensor *out, const char *label, fr_error *err);

#endif
