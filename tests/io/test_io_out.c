/* Writing without writing through (io_util.h, issue 28 row 2: `ln -s /victim CASE/attention_out.npy; flashref run
 * CASE` overwrote /victim): fr_npy_write_file / fr_case_write_outputs refuse a symbolic link at the path and leave
 * its target alone, replace a hard link by a new file (the other name keeps its content), keep the old file when a
 * write fails, leave no temporary file behind; fr_io_new_dir creates, accepts an empty folder, refuses a non-empty
 * one (naming an entry) or a link, and with force empties it without following a link inside. */
#define _POSIX_C_SOURCE 200809L
#include "common/check.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[256];

static void put(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, name);
    FILE *f = fopen(p, "w");
    if (f) fputs(text, f), fclose(f);
}

static bool content_is(const char *name, const char *text) {
    char p[512], got[256] = "";
    snprintf(p, sizeof p, "%s/%s", base, name);
    FILE *f = fopen(p, "r");
    if (!f) return false;
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    fclose(f);
    return strcmp(got, text) == 0;
}

static int entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

static void rm_rf(const char *p) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", p);
}

int main(void) {
    snprintf(base, sizeof base, "%s/fr-io-out-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base)) return 1;
    char p[512], q[512];
    float data[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    fr_tensor t = fr_tensor_make(FR_F32, data, 1, shape);
    fr_error err;

    /* a symbolic link at the output path: refused, its target untouched, the link still there */
    snprintf(p, sizeof p, "%s/out", base);
    mkdir(p, 0777);
    put("victim", "precious");
    snprintf(p, sizeof p, "%s/out/attention_out.npy", base);
    snprintf(q, sizeof q, "%s/victim", base);
    CHECK(symlink(q, p) == 0);
    fr_status st = fr_npy_write_file(p, &t, 0, &err);
    CHECK(st == FR_E_IO && strstr(err.msg, "is a symbolic link"), "symlink: %s %s", fr_status_name(st), err.msg);
    CHECK(fr_io_out_check(p, &err) == FR_E_IO);
    CHECK(content_is("victim", "precious"), "the link's target was written");
    struct stat sb;
    CHECK(lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode), "the link was removed");
    char od[512];
    snprintf(od, sizeof od, "%s/out", base);
    CHECK(entries(base) == 2 && entries(od) == 1, "stray files"); /* out/ and victim; in out/ the link alone */
    unlink(p);

    /* a hard link: replaced by a new file, the other name keeps its content */
    snprintf(p, sizeof p, "%s/out/softmax_max.npy", base);
    CHECK(link(q, p) == 0);
    st = fr_npy_write_file(p, &t, 0, &err);
    CHECK(st == FR_OK, "hard link: %s", err.msg);
    CHECK(content_is("victim", "precious"), "a hard link's other name was written");
    CHECK(stat(q, &sb) == 0 && sb.st_nlink == 1);
    fr_tensor back;
    CHECK(fr_npy_read_file(p, FR_F32, &back, &err) == FR_OK && back.shape[0] == 4 && ((float *)back.data)[3] == 4);
    free(back.data);

    /* a failing write (a tensor the writer refuses) keeps the old file, leaves no temporary file */
    snprintf(q, sizeof q, "%s/out", base);
    int before = entries(q);
    fr_tensor bad = fr_tensor_make(FR_F32, NULL, 1, shape);
    st = fr_npy_write_file(p, &bad, 0, &err);
    CHECK(st != FR_OK && entries(q) == before, "failed write: %s, %d entries (was %d)", fr_status_name(st), entries(q),
          before);
    CHECK(fr_npy_read_file(p, FR_F32, &back, &err) == FR_OK && back.shape[0] == 4, "the old file is gone");
    free(back.data);
    /* a directory at the path: refused */
    snprintf(p, sizeof p, "%s/out/dq.npy", base);
    mkdir(p, 0777);
    CHECK(fr_npy_write_file(p, &t, 0, &err) == FR_E_IO && strstr(err.msg, "not a regular file"), "%s", err.msg);

    /* fr_io_new_dir */
    snprintf(p, sizeof p, "%s/new/a/b", base);
    CHECK(fr_io_new_dir(p, false, &err) == FR_OK && entries(p) == 0, "missing: %s", err.msg);
    CHECK(fr_io_new_dir(p, false, &err) == FR_OK, "empty: %s", err.msg);
    snprintf(p, sizeof p, "%s/out", base);
    st = fr_io_new_dir(p, false, &err);
    CHECK(st == FR_E_IO && strstr(err.msg, "not empty") && strstr(err.msg, "--force"), "non-empty: %s", err.msg);
    snprintf(q, sizeof q, "%s/victim", base);
    snprintf(p, sizeof p, "%s/out/sub", base);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/out/sub/link", base);
    CHECK(symlink(q, p) == 0);
    snprintf(p, sizeof p, "%s/keep", base);
    mkdir(p, 0777);
    put("keep/k.txt", "kept");
    snprintf(q, sizeof q, "%s/out/dirlink", base);
    CHECK(symlink(p, q) == 0);
    snprintf(p, sizeof p, "%s/out", base);
    st = fr_io_new_dir(p, true, &err);
    CHECK(st == FR_OK && entries(p) == 0, "force: %s, %d entries left", err.msg, entries(p));
    CHECK(content_is("victim", "precious") && content_is("keep/k.txt", "kept"), "force followed a link");
    snprintf(q, sizeof q, "%s/dirlink2", base);
    snprintf(p, sizeof p, "%s/keep", base);
    CHECK(symlink(p, q) == 0);
    st = fr_io_new_dir(q, true, &err);
    CHECK(st == FR_E_IO && strstr(err.msg, "symbolic link"), "a link as the folder: %s", err.msg);
    CHECK(content_is("keep/k.txt", "kept"));
    snprintf(p, sizeof p, "%s/victim", base);
    CHECK(fr_io_new_dir(p, true, &err) == FR_E_IO && strstr(err.msg, "not a directory"), "%s", err.msg);

    rm_rf(base);
    return fr_test_exit("test_io_out");
}
