/* The file helpers' edges (io_util.h) that test_io_out and test_io_json_syntax leave: a whole-file read past its
 * limit, of a FIFO or a missing file; folders made with missing parents given with trailing slashes, relative to the
 * working folder, below a removed working folder or where the system refuses them; fr_io_new_dir and fr_io_out_check
 * below a regular file, on a FIFO, naming one entry or several; an output file opened by a relative name, in a
 * missing folder, closed twice or not open, closed after a failed write (the old file stays) and replaced by a folder
 * before its rename; fr_io_join's separator; pread / pwrite past the end or on a descriptor that refuses them; the
 * gather of a strided view with unit dimensions. Each refusal with its status and message. */
#define _XOPEN_SOURCE 700
#include "io/io_util.h"

#include "io_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[256];

static void path(char *p, size_t n, const char *name) { snprintf(p, n, "%s/%s", base, name); }

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void test_read_all(void) {
    char p[512], want[700];
    fr_error err = {0};
    char *buf = NULL;
    size_t len = 7;
    path(p, sizeof p, "ten.txt");
    write_whole(p, "0123456789", 10);
    fr_status st = fr_io_read_all(p, 4, &buf, &len, &err);
    snprintf(want, sizeof want, "%s: 10 bytes, larger than the limit 4", p);
    CHECK(st == FR_E_FORMAT && !strcmp(err.msg, want) && !buf && len == 0, "%s", err.msg);
    CHECK(fr_io_read_all(p, 10, &buf, &len, &err) == FR_OK && len == 10 && buf && !strcmp(buf, "0123456789"));
    free(buf);
    path(p, sizeof p, "fifo");
    CHECK(mkfifo(p, 0666) == 0);
    snprintf(want, sizeof want, "%s: not a regular file", p);
    CHECK(fr_io_read_all(p, 10, &buf, &len, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    path(p, sizeof p, "missing.txt");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", p);
    CHECK(fr_io_read_all(p, 10, &buf, &len, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
}

static void test_mkdir(void) {
    char p[512], q[512], want[700];
    fr_error err = {0};
    /* missing parents, the path ending in slashes */
    path(p, sizeof p, "m1/m2/m3//");
    CHECK(fr_io_mkdir(p, &err) == FR_OK, "%s", err.msg);
    path(q, sizeof q, "m1/m2/m3");
    CHECK(is_dir(q), "%s was not made", q);
    /* relative to the working folder, a missing parent too */
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(base) == 0);
    CHECK(fr_io_mkdir("r1/r2", &err) == FR_OK, "%s", err.msg);
    CHECK(is_dir("r1/r2"));
    /* the working folder removed: a relative name has no parent to make */
    CHECK(mkdir("gone", 0777) == 0 && chdir("gone") == 0 && rmdir("../gone") == 0);
    CHECK(fr_io_mkdir("x", &err) == FR_E_IO &&
              !strcmp(err.msg, "x: cannot create directory: No such file or directory"),
          "%s", err.msg);
    CHECK(chdir(cwd) == 0);
    /* a parent the system refuses to make: its refusal comes back */
    fr_status st = fr_io_mkdir("/proc/self/flashref-no-such/leaf", &err);
    snprintf(want, sizeof want, "/proc/self/flashref-no-such: cannot create directory: ");
    CHECK(st == FR_E_IO && !strncmp(err.msg, want, strlen(want)), "%s", err.msg);
}

static void test_new_dir_and_check(void) {
    char p[512], want[700];
    fr_error err = {0};
    CHECK(fr_io_new_dir("", false, &err) == FR_E_NULL && !strcmp(err.msg, "output folder: empty path"));
    CHECK(fr_io_new_dir(NULL, true, &err) == FR_E_NULL && !strcmp(err.msg, "output folder: empty path"));
    path(p, sizeof p, "ten.txt/sub");
    snprintf(want, sizeof want, "%s: cannot stat: Not a directory", p);
    CHECK(fr_io_new_dir(p, false, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    CHECK(fr_io_out_check(p, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    path(p, sizeof p, "fifo");
    snprintf(want, sizeof want, "%s: exists and is not a regular file", p);
    CHECK(fr_io_out_check(p, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    path(p, sizeof p, "missing.txt");
    CHECK(fr_io_out_check(p, &err) == FR_OK, "a missing file may be written: %s", err.msg);
    /* one entry, then two: the count and an entry named */
    path(p, sizeof p, "one");
    CHECK(mkdir(p, 0777) == 0);
    char f[600];
    snprintf(f, sizeof f, "%s/only", p);
    write_whole(f, "x", 1);
    snprintf(want, sizeof want,
             "%s: not empty (1 entry, e.g. 'only'): refusing to merge into it; choose a new folder or pass --force to "
             "replace its contents",
             p);
    CHECK(fr_io_new_dir(p, false, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    snprintf(f, sizeof f, "%s/second", p);
    write_whole(f, "y", 1);
    snprintf(want, sizeof want, "%s: not empty (2 entries, e.g. '", p);
    CHECK(fr_io_new_dir(p, false, &err) == FR_E_IO && !strncmp(err.msg, want, strlen(want)), "%s", err.msg);
}

static void test_out(void) {
    char p[512], want[700];
    fr_error err = {0};
    fr_io_out o;
    int fd = 5;
    CHECK(fr_io_out_open_fd(&o, &fd, "", &err) == FR_E_NULL && !strcmp(err.msg, "output file: empty path") && fd == -1);
    CHECK(fr_io_out_open(&o, NULL, &err) == FR_E_NULL && !strcmp(err.msg, "output file: empty path"));
    /* a relative name (no folder part): the temporary file beside it in the working folder */
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(base) == 0);
    CHECK(fr_io_out_open_fd(&o, &fd, "rel.bin", &err) == FR_OK && fd >= 0, "%s", err.msg);
    CHECK(o.tmp && !strncmp(o.tmp, ".rel.bin.tmp-", 13), "temporary name %s", o.tmp); /* hidden, beside it */
    CHECK(write(fd, "abc", 3) == 3);
    CHECK(fr_io_out_close_fd(&o, fd, true, &err) == FR_OK, "%s", err.msg);
    size_t len;
    char *b = read_whole("rel.bin", &len);
    CHECK(b && len == 3 && !memcmp(b, "abc", 3));
    free(b);
    /* closed twice: not open */
    CHECK(fr_io_out_close_fd(&o, -1, true, &err) == FR_E_IO && !strcmp(err.msg, "output file: not open"));
    CHECK(fr_io_out_close(&o, true, &err) == FR_E_IO && !strcmp(err.msg, "output file: not open"));
    /* a failed write: the temporary file goes, the old file stays */
    CHECK(fr_io_out_open_fd(&o, &fd, "rel.bin", &err) == FR_OK, "%s", err.msg);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s", o.tmp ? o.tmp : "");
    CHECK(fr_io_out_close_fd(&o, fd, false, &err) == FR_E_IO && !strcmp(err.msg, "rel.bin: write error"), "%s",
          err.msg);
    CHECK(access(tmp, F_OK) != 0, "%s was left", tmp);
    b = read_whole("rel.bin", &len);
    CHECK(b && len == 3 && !memcmp(b, "abc", 3), "the old file changed");
    free(b);
    /* a descriptor that will not close (closed already): a write error, the temporary file goes */
    CHECK(fr_io_out_open_fd(&o, &fd, "rel.bin", &err) == FR_OK, "%s", err.msg);
    snprintf(tmp, sizeof tmp, "%s", o.tmp ? o.tmp : "");
    close(fd);
    CHECK(fr_io_out_close_fd(&o, fd, true, &err) == FR_E_IO && !strcmp(err.msg, "rel.bin: write error"), "%s",
          err.msg);
    CHECK(access(tmp, F_OK) != 0, "%s was left", tmp);
    /* opened as a descriptor, closed as a stream: not open (the descriptor's close still finishes it) */
    CHECK(fr_io_out_open_fd(&o, &fd, "rel.bin", &err) == FR_OK, "%s", err.msg);
    CHECK(fr_io_out_close(&o, true, &err) == FR_E_IO && !strcmp(err.msg, "output file: not open"), "%s", err.msg);
    CHECK(fr_io_out_close_fd(&o, fd, false, &err) == FR_E_IO && !strcmp(err.msg, "rel.bin: write error"));
    CHECK(chdir(cwd) == 0);
    /* a missing folder */
    path(p, sizeof p, "nowhere/x.bin");
    snprintf(want, sizeof want, "%s: cannot create: No such file or directory", p);
    CHECK(fr_io_out_open(&o, p, &err) == FR_E_IO && !strcmp(err.msg, want), "%s", err.msg);
    /* the path turned into a non-empty folder before the rename: cannot replace it, the temporary file goes */
    path(p, sizeof p, "swapped.bin");
    CHECK(fr_io_out_open(&o, p, &err) == FR_OK, "%s", err.msg);
    snprintf(tmp, sizeof tmp, "%s", o.tmp ? o.tmp : "");
    char inner[600];
    snprintf(inner, sizeof inner, "%s/inner", p);
    CHECK(mkdir(p, 0777) == 0);
    write_whole(inner, "z", 1);
    fputs("data", o.f);
    fr_status st = fr_io_out_close(&o, true, &err);
    snprintf(want, sizeof want, "%s: cannot replace: ", p);
    CHECK(st == FR_E_IO && !strncmp(err.msg, want, strlen(want)), "%s", err.msg);
    CHECK(access(tmp, F_OK) != 0 && is_dir(p), "%s was left, or the folder replaced", tmp);
}

static void test_join_and_fds(void) {
    char *s = fr_io_join("dir/", "x");
    CHECK(s && !strcmp(s, "dir/x"), "%s", s ? s : "NULL");
    free(s);
    s = fr_io_join("", "x");
    CHECK(s && !strcmp(s, "x"), "%s", s ? s : "NULL");
    free(s);
    s = fr_io_join("dir", "x");
    CHECK(s && !strcmp(s, "dir/x"), "%s", s ? s : "NULL");
    free(s);
    char p[512], buf[16];
    path(p, sizeof p, "ten.txt");
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    errno = EINVAL;
    CHECK(!fr_io_pread_full(fd, buf, 4, 8) && errno == 0, "past the end: errno %d", errno); /* 2 bytes, then EOF */
    CHECK(fr_io_pread_full(fd, buf, 4, 6) && !memcmp(buf, "6789", 4));
    CHECK(!fr_io_pwrite_full(fd, "ab", 2, 0) && errno == EBADF, "a read-only descriptor: errno %d", errno);
    close(fd);
}

/* A view [2, 1, 3] of a [2, 1, 4] buffer (rows padded by one): the unit dimension is skipped over. */
static void test_gather(void) {
    float src[8] = {0, 1, 2, -1, 3, 4, 5, -1}, dst[6] = {0};
    int64_t sh[3] = {2, 1, 3};
    fr_tensor t = fr_tensor_make(FR_F32, src, 3, sh);
    t.strides[0] = 4, t.strides[1] = 99, t.strides[2] = 1;
    fr_io_gather(&t, dst);
    bool ok = true;
    for (int k = 0; k < 6; k++) ok &= dst[k] == (float)k;
    CHECK(ok, "gather: %g %g %g %g %g %g", dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]);
    /* [3, 2, 1] of every other element, a unit last dimension of any stride: runs of one element */
    float src2[6] = {0, -1, 1, -1, 2, -1};
    int64_t sh2[3] = {3, 1, 1};
    fr_tensor v = fr_tensor_make(FR_F32, src2, 3, sh2);
    v.strides[0] = 2, v.strides[1] = 5, v.strides[2] = 7;
    memset(dst, 0, sizeof dst);
    fr_io_gather(&v, dst);
    CHECK(dst[0] == 0 && dst[1] == 1 && dst[2] == 2, "gather of unit dimensions: %g %g %g", dst[0], dst[1], dst[2]);
}

int main(void) {
    snprintf(base, sizeof base, "%s/flashref-io-edges-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base)) return 2;
    test_read_all();
    test_mkdir();
    test_new_dir_and_check();
    test_out();
    test_join_and_fds();
    test_gather();
    remove_tree(base);
    return fr_test_exit("test_io_util_edges");
}
