/* torch.save files holding one plain tensor, as msprobe writes every dumped tensor (docs/ascend.md): a zip archive
 * (records stored, not compressed; zip64 records accepted) with <archive>/data.pkl, a pickle, and
 * <archive>/data/<key>, the tensor's storage bytes (plus .format_version, byteorder, version ... which are checked
 * where they matter and otherwise ignored).
 *
 * The pickle is never executed. It is read by a small interpreter that knows the one shape torch.save gives a tensor,
 * torch._utils._rebuild_tensor_v2((storage persistent id), offset, size, stride, requires_grad, OrderedDict()
 * [, metadata]), where the persistent id is ('storage', torch.<T>Storage, key, location, numel), or _v3 with a
 * torch.<dtype> argument after the hooks and ('storage', torch.storage.UntypedStorage, key, location, nbytes) (float8
 * tensors): the opcodes of that shape (protocols 2-5: PROTO, FRAME, GLOBAL / STACK_GLOBAL, MARK, the tuple and
 * integer opcodes, BINUNICODE, BINPERSID, the memo, REDUCE, booleans, NONE, EMPTY_DICT + SETITEM(S), STOP) and the
 * globals of that shape (torch._utils._rebuild_tensor_v2 / _v3, collections.OrderedDict, torch.<T>Storage,
 * torch.storage.UntypedStorage, torch.<dtype>). Any other opcode or global is FR_E_FORMAT naming it; nothing the file
 * says is ever called.
 *
 * Storages: Float (fp32), Half (fp16), BFloat16, Double (fp64), Int (int32), Long (int64), Byte (uint8), Bool,
 * Float8_e4m3fn, Float8_e5m2. The tensor must be a C-contiguous view (msprobe saves contiguous clones) lying inside
 * its storage, the storage record exactly numel x element size bytes, the byte order little-endian. Metadata (the 7th
 * argument, a {str: bool} dict torch_npu may add) is accepted when every value is false: a true value marks an NPU
 * private format whose bytes are not in the tensor's logical order (msprobe does not save those either).
 *
 * Every size is bounded before anything is allocated from it (at most 4096 zip entries, a 4 MiB central directory, a
 * 1 MiB pickle, storage records inside the file), every offset is checked against the file, and CRC-32s of the
 * pickle and of a storage record read whole are verified. Errors are FR_E_FORMAT with a message naming `what` and the
 * field, FR_E_IO when the file cannot be read. */
#ifndef FR_IO_TORCHPT_H
#define FR_IO_TORCHPT_H

#include "flashref.h"

/* What a .pt file holds, before its data is read. */
typedef struct fr_pt_info {
    fr_dtype dtype;
    int ndim;
    int64_t shape[FR_MAX_DIMS];
    int64_t data_offset;  /* file offset of the tensor's first element */
    int64_t data_bytes;   /* numel x element size */
    int64_t record_offset, record_bytes; /* the whole storage record */
    uint32_t record_crc;  /* its CRC-32 from the central directory */
    bool has_crc;         /* false: no CRC to check (a description made from another format, .npy) */
    char location[32];    /* where the tensor lived when saved: "cpu", "npu:0", ... */
} fr_pt_info;

/* Parses the archive and the pickle of a file in memory / an open regular file (pread; the file offset is unused) up
 * to the description of its tensor; no tensor data is read. */
fr_status fr_pt_info_mem(const void *buf, size_t len, fr_pt_info *info, const char *what, fr_error *err);
fr_status fr_pt_info_fd(int fd, fr_pt_info *info, const char *what, fr_error *err);
/* Reads the tensor described by info into a new contiguous tensor (out->data malloc'd; NULL when it has no elements;
 * free() it). On failure *out is zeroed. */
fr_status fr_pt_data_mem(const void *buf, size_t len, const fr_pt_info *info, fr_tensor *out, const char *what,
                         fr_error *err);
fr_status fr_pt_data_fd(int fd, const fr_pt_info *info, fr_tensor *out, const char *what, fr_error *err);
/* Both steps on a buffer in memory (the fuzzer's entry). */
fr_status fr_pt_read_mem(const void *buf, size_t len, fr_tensor *out, const char *what, fr_error *err);

/* The Python dtype names torch and msprobe print ("torch.float32", "torch.bfloat16", ...) -> fr_dtype (FR_DT_NONE
 * when flashref has no such dtype). */
fr_dtype fr_pt_dtype_from_torch_name(const char *name);

#endif
