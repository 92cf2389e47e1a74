/* libFuzzer: loading a case directory as a whole (fr_case_load, then the outputs beside it and a stored golden/),
 * through real files. An input is a list of records [1 byte: which file][2 bytes little-endian: length][bytes]:
 * file 0 is case.json, the others the input, output and golden/ .npy names below. Each record's bytes are written
 * to a fresh directory (under /dev/shm when it exists: the fuzzer writes many thousands a second), then the
 * directory is loaded. What loads must validate or fail validation with a status, and its outputs load or fail with
 * a status; nothing may crash, leak or read outside the directory. */
#define _GNU_SOURCE
#include "io/casedir.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kNames[] = {
    "case.json",         "query.npy",        "key.npy",        "value.npy",         "atten_mask.npy",
    "real_shift.npy",    "drop_mask.npy",    "dy.npy",         "attention_in.npy",  "softmax_max.npy",
    "softmax_sum.npy",   "query_rope.npy",   "key_rope.npy",   "sink.npy",          "topk_indices.npy",
    "attention_out.npy", "dq.npy",           "dk.npy",         "dv.npy",            "golden/attention_out.npy",
    "golden/softmax_max.npy", "golden/softmax_sum.npy", "golden/dq.npy", "d_scale_q.npy",
};
#define NNAMES (sizeof kNames / sizeof kNames[0])

static char g_dir[256];
static bool g_written[NNAMES]; /* files the last input wrote: only those are removed */

static void clear(void) {
    char p[512];
    for (size_t k = 0; k < NNAMES; k++) {
        if (!g_written[k]) continue;
        snprintf(p, sizeof p, "%s/%s", g_dir, kNames[k]);
        unlink(p);
        g_written[k] = false;
    }
}

static void init(void) {
    if (g_dir[0]) return;
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/fuzz-case-dir-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_dir)) abort();
    char p[300];
    snprintf(p, sizeof p, "%s/golden", g_dir);
    if (mkdir(p, 0700) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    init();
    clear();
    size_t i = 0;
    while (i + 3 <= size) {
        size_t which = data[i] % NNAMES, len = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
        i += 3;
        if (len > size - i) len = size - i;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, kNames[which]);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (len && write(fd, data + i, len) < 0) {
            }
            close(fd);
            g_written[which] = true;
        }
        i += len;
    }
    fr_case c;
    fr_error err;
    if (fr_case_load(g_dir, &c, &err) == FR_OK) {
        fr_case_outputs o, a;
        if (fr_case_load_outputs(&c, g_dir, &o, &err) == FR_OK) fr_case_outputs_free(&o);
        char gd[300];
        snprintf(gd, sizeof gd, "%s/golden", g_dir);
        if (fr_case_load_outputs(&c, gd, &o, &err) == FR_OK) fr_case_outputs_free(&o);
        /* Allocation follows validation: a loaded case either validates or says why. */
        if (fr_case_alloc_outputs(&c, false, &a, &err) == FR_OK) fr_case_outputs_free(&a);
        else if (err.status == FR_OK) abort();
        fr_case_free(&c);
    }
    return 0;
}
