/* File helpers of the io layer. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_util.h"

#include "core/core.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

const char *fr_io_strerror_r(int e, char *buf, size_t n) {
    if (strerror_r(e, buf, n) != 0) snprintf(buf, n, "error %d", e);
    return buf;
}

fr_status fr_io_open_read(const char *path, FILE **fp, int64_t *size, fr_error *err) {
    *fp = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the regular-file check comes before any read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fr_fail(err, FR_E_IO, "%s: cannot open: %s", path, fr_io_strerror());
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return fr_fail(err, FR_E_IO, "%s: cannot stat: %s", path, fr_io_strerror_r(e, (char[128]){0}, 128));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return fr_fail(err, FR_E_IO, "%s: not a regular file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        /* No memory for the stream: the machine's failure, not the file's (the suite stops on it, never a verdict). */
        return fr_fail(err, e == ENOMEM ? FR_E_NOMEM : FR_E_IO, "%s: cannot open: %s", path,
                       fr_io_strerror_r(e, (char[128]){0}, 128));
    }
    *fp = f;
    *size = (int64_t)sb.st_size;
    return FR_OK;
}

fr_status fr_io_read_all(const char *path, int64_t max_bytes, char **buf, size_t *len, fr_error *err) {
    *buf = NULL;
    *len = 0;
    FILE *f;
    int64_t size;
    fr_status st = fr_io_open_read(path, &f, &size, err);
    if (st != FR_OK) return st;
    if (size > max_bytes) {
        fclose(f);
        return fr_fail(err, FR_E_FORMAT, "%s: %lld bytes, larger than the limit %lld", path, (long long)size,
                       (long long)max_bytes);
    }
    char *b = malloc((size_t)size + 1);
    if (!b) {
        fclose(f);
        return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", path, (long long)size);
    }
    if (fread(b, 1, (size_t)size, f) != (size_t)size) {
        free(b);
        fclose(f);
        return fr_fail(err, FR_E_IO, "%s: read error", path);
    }
    fclose(f);
    b[size] = 0;
    *buf = b;
    *len = (size_t)size;
    return FR_OK;
}

fr_status fr_io_mkdir(const char *path, fr_error *err) {
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return FR_OK;
        return fr_fail(err, FR_E_IO, "%s: exists and is not a directory", path);
    }
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return FR_OK;
    if (errno == ENOENT) {
        /* Missing parents are created too (mkdir -p), so `--out a/b` works like `golden --out a/b`. */
        size_t n = strlen(path);
        char *parent = malloc(n + 1);
        if (!parent) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", path);
        memcpy(parent, path, n + 1);
        while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0'; /* trailing slashes */
        char *slash = strrchr(parent, '/');
        fr_status st = FR_OK;
        if (slash && slash != parent) {
            *slash = '\0';
            st = fr_io_mkdir(parent, err);
        }
        free(parent);
        if (st != FR_OK) return st;
        if (mkdir(path, 0777) == 0 || errno == EEXIST) return FR_OK;
    }
    return fr_fail(err, FR_E_IO, "%s: cannot create directory: %s", path, fr_io_strerror());
}

/* Removes everything inside the directory open at fd (closed here): entries are unlinked where they stand (a symbolic
 * link is removed, never followed; a subdirectory is opened with O_NOFOLLOW and emptied first). */
static fr_status empty_dir_fd(int fd, const char *path, int depth, fr_error *err) {
    if (depth > 64) {
        close(fd);
        return fr_fail(err, FR_E_IO, "%s: more than 64 levels of folders: not removed", path);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return fr_fail(err, FR_E_IO, "%s: cannot list: %s", path, fr_io_strerror());
    }
    fr_status st = FR_OK;
    struct dirent *e;
    while (st == FR_OK && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            st = fr_fail(err, FR_E_IO, "%s/%s: cannot stat: %s", path, e->d_name, fr_io_strerror());
        } else if (S_ISDIR(sb.st_mode)) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                st = fr_fail(err, FR_E_IO, "%s/%s: cannot open: %s", path, e->d_name, fr_io_strerror());
            } else {
                char *sp = fr_io_join(path, e->d_name);
                st = sp ? empty_dir_fd(sub, sp, depth + 1, err) : (close(sub), fr_fail(err, FR_E_NOMEM, "out of memory"));
                free(sp);
                if (st == FR_OK && unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
                    st = fr_fail(err, FR_E_IO, "%s/%s: cannot remove: %s", path, e->d_name, fr_io_strerror());
            }
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0) {
            st = fr_fail(err, FR_E_IO, "%s/%s: cannot remove: %s", path, e->d_name, fr_io_strerror());
        }
    }
    closedir(d);
    return st;
}

fr_status fr_io_new_dir(const char *path, bool force, fr_error *err) {
    if (!path || !*path) return fr_fail(err, FR_E_NULL, "output folder: empty path");
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno != ENOENT) return fr_fail(err, FR_E_IO, "%s: cannot stat: %s", path, fr_io_strerror());
        return fr_io_mkdir(path, err);
    }
    if (S_ISLNK(sb.st_mode))
        return fr_fail(err, FR_E_IO, "%s: is a symbolic link: refusing to write a case through it", path);
    if (!S_ISDIR(sb.st_mode)) return fr_fail(err, FR_E_IO, "%s: exists and is not a directory", path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return fr_fail(err, FR_E_IO, "%s: cannot open: %s", path, fr_io_strerror());
    if (force) return empty_dir_fd(fd, path, 0, err);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return fr_fail(err, FR_E_IO, "%s: cannot list: %s", path, fr_io_strerror());
    }
    struct dirent *e;
    char first[256] = "";
    long n = 0;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n++ == 0) snprintf(first, sizeof first, "%s", e->d_name);
    closedir(d);
    if (n == 0) return FR_OK;
    return fr_fail(err, FR_E_IO,
                   "%s: not empty (%ld entr%s, e.g. '%s'): refusing to merge into it; choose a new folder or pass "
                   "--force to replace its contents",
                   path, n, n == 1 ? "y" : "ies", first);
}

/* Refuses what must never be written through or over: a symbolic link, or anything but a regular file. */
fr_status fr_io_out_check(const char *path, fr_error *err) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? FR_OK : fr_fail(err, FR_E_IO, "%s: cannot stat: %s", path, fr_io_strerror());
    if (S_ISLNK(sb.st_mode)) return fr_fail(err, FR_E_IO, "%s: is a symbolic link: refusing to write through it", path);
    if (!S_ISREG(sb.st_mode)) return fr_fail(err, FR_E_IO, "%s: exists and is not a regular file", path);
    return FR_OK;
}

fr_status fr_io_out_open_fd(fr_io_out *o, int *fdp, const char *path, fr_error *err) {
    memset(o, 0, sizeof *o);
    *fdp = -1;
    if (!path || !*path) return fr_fail(err, FR_E_NULL, "output file: empty path");
    fr_status st = fr_io_out_check(path, err);
    if (st != FR_OK) return st;
    size_t n = strlen(path), cap = n + 80;
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path + 1) : 0;
    char *tmp = malloc(cap);
    if (!tmp) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", path);
    /* A name of our own beside path: the process id, a per-call stack address (threads differ) and a retry count;
     * O_EXCL | O_NOFOLLOW: never an existing file, never through a link. */
    unsigned long tag = (unsigned long)(uintptr_t)&tag;
    for (int k = 0; k < 100; k++) {
        snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%lx-%d", dl, path, path + dl, (long)getpid(), tag, k);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            o->tmp = tmp;
            o->path = path;
            *fdp = fd;
            return FR_OK;
        }
        if (errno != EEXIST) break;
    }
    st = fr_fail(err, FR_E_IO, "%s: cannot create: %s", path, fr_io_strerror());
    free(tmp);
    return st;
}

/* The temporary file is closed: renamed over the path when ok, else removed. */
static fr_status out_finish(fr_io_out *o, bool ok, fr_error *err) {
    fr_status st = FR_OK;
    if (!ok) {
        st = fr_fail(err, FR_E_IO, "%s: write error", o->path);
        unlink(o->tmp);
    } else if (rename(o->tmp, o->path) != 0) { /* replaces the entry itself: a link there is never followed */
        st = fr_fail(err, FR_E_IO, "%s: cannot replace: %s", o->path, fr_io_strerror());
        unlink(o->tmp);
    }
    free(o->tmp);
    o->tmp = NULL;
    return st;
}

fr_status fr_io_out_close_fd(fr_io_out *o, int fd, bool ok, fr_error *err) {
    if (!o->tmp) return fr_fail(err, FR_E_IO, "output file: not open");
    ok = close(fd) == 0 && ok;
    return out_finish(o, ok, err);
}

fr_status fr_io_out_open(fr_io_out *o, const char *path, fr_error *err) {
    int fd;
    fr_status st = fr_io_out_open_fd(o, &fd, path, err);
    if (st != FR_OK) return st;
    if (!(o->f = fdopen(fd, "wb"))) {
        st = fr_fail(err, FR_E_IO, "%s: cannot open: %s", path, fr_io_strerror());
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    return st;
}

fr_status fr_io_out_close(fr_io_out *o, bool ok, fr_error *err) {
    if (!o->f || !o->tmp) return fr_fail(err, FR_E_IO, "output file: not open");
    ok = fclose(o->f) == 0 && ok; /* fclose flushes: a full disk shows here */
    o->f = NULL;
    return out_finish(o, ok, err);
}

char *fr_io_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *s = malloc(a + b + 2);
    if (!s) return NULL;
    memcpy(s, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') s[k++] = '/';
    memcpy(s + k, name, b + 1);
    return s;
}

/* Calls fn(ctx, src, bytes) for each maximal contiguous run of t's elements in C order. */
static bool for_each_run(const fr_tensor *t, bool (*fn)(void *, const void *, size_t), void *ctx) {
    size_t es = fr_dtype_size(t->dtype);
    int64_t n = fr_tensor_numel(t);
    if (n <= 0) return true;
    if (fr_tensor_is_contiguous(t)) return fn(ctx, t->data, (size_t)n * es);
    /* Innermost contiguous dimension runs; odometer over the others. */
    int64_t inner = 1;
    int k0 = t->ndim;
    while (k0 > 0 && (t->shape[k0 - 1] == 1 || t->strides[k0 - 1] == inner)) {
        inner *= t->shape[k0 - 1];
        k0--;
    }
    int64_t idx[FR_MAX_DIMS] = {0};
    const char *base = t->data;
    for (;;) {
        int64_t off = 0;
        for (int k = 0; k < k0; k++) off += idx[k] * t->strides[k];
        if (!fn(ctx, base + off * (int64_t)es, (size_t)inner * es)) return false;
        int k = k0 - 1;
        while (k >= 0 && ++idx[k] == t->shape[k]) idx[k--] = 0;
        if (k < 0) return true;
    }
}

static bool copy_run(void *ctx, const void *src, size_t bytes) {
    char **p = ctx;
    memcpy(*p, src, bytes);
    *p += bytes;
    return true;
}

void fr_io_gather(const fr_tensor *t, void *dst) {
    char *p = dst;
    for_each_run(t, copy_run, &p);
}

static bool write_run(void *ctx, const void *src, size_t bytes) { return fwrite(src, 1, bytes, ctx) == bytes; }

bool fr_io_write_tensor(FILE *f, const fr_tensor *t) { return for_each_run(t, write_run, f); }

/* ---- a JSON syntax check that allocates nothing (fr_io_json_parse tells a malformed text from no memory) ---- */

static const char *js_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static const char *js_value(const char *p, int depth);

/* The 4 hex digits at p as a code unit, or -1. */
static long js_hex4(const char *p) {
    long v = 0;
    for (int k = 0; k < 4; k++) {
        if (!isxdigit((unsigned char)p[k])) return -1;
        v = v * 16 + (isdigit((unsigned char)p[k]) ? p[k] - '0' : (tolower((unsigned char)p[k]) - 'a' + 10));
    }
    return v;
}

/* Strict (RFC 8259): what this accepts, cJSON accepts too, so a failed parse of it can only be memory. So no lone
 * UTF-16 surrogate either (cJSON refuses one; RFC 8259 allows it): a high one must be followed by an escaped low. */
static const char *js_string(const char *p) {
    for (p++; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) return NULL;
        if (*p != '\\') continue;
        p++;
        if (*p == 'u') {
            long u = js_hex4(p + 1);
            if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF)) return NULL;
            p += 4;
            if (u >= 0xD800 && u <= 0xDBFF) {
                long lo = p[1] == '\\' && p[2] == 'u' ? js_hex4(p + 3) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return NULL;
                p += 6;
            }
        } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
            return NULL;
        }
    }
    return *p == '"' ? p + 1 : NULL;
}

static const char *js_digits(const char *p) {
    if (!isdigit((unsigned char)*p)) return NULL;
    while (isdigit((unsigned char)*p)) p++;
    return p;
}

static const char *js_number(const char *p) {
    p += *p == '-';
    if (*p == '0') p++;
    else if (!(p = js_digits(p))) return NULL;
    if (*p == '.' && !(p = js_digits(p + 1))) return NULL;
    if (*p == 'e' || *p == 'E') {
        p++;
        p += *p == '+' || *p == '-';
        if (!(p = js_digits(p))) return NULL;
    }
    return p;
}

static const char *js_items(const char *p, char close, bool keys, int depth) {
    p = js_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (keys) {
            if (*p != '"' || !(p = js_string(p))) return NULL;
            p = js_ws(p);
            if (*p++ != ':') return NULL;
        }
        if (!(p = js_value(p, depth + 1))) return NULL;
        p = js_ws(p);
        if (*p == close) return p + 1;
        if (*p++ != ',') return NULL;
        p = js_ws(p);
    }
}

/* depth: the containers around p. cJSON refuses an array or object inside CJSON_NESTING_LIMIT others. */
static const char *js_value(const char *p, int depth) {
    p = js_ws(p);
    switch (*p) {
    case '{': return depth >= CJSON_NESTING_LIMIT ? NULL : js_items(p, '}', true, depth);
    case '[': return depth >= CJSON_NESTING_LIMIT ? NULL : js_items(p, ']', false, depth);
    case '"': return js_string(p);
    case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
    case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
    case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
    default: return js_number(p);
    }
}

bool fr_io_json_syntax_ok(const char *text) {
    const char *p = js_value(text, 0);
    return p && !*js_ws(p);
}

const char *fr_io_json_type(const cJSON *j) {
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsObject(j)) return "an object";
    return "invalid";
}

cJSON *fr_io_json_parse(const char *text, const char **end, bool *nomem) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    cJSON *r = cJSON_ParseWithOpts(text, end, 1);
    pthread_mutex_unlock(&lock);
    bool strict = fr_io_json_syntax_ok(text);
    if (r && !strict) {
        cJSON_Delete(r);
        r = NULL;
        if (end) *end = NULL;
    }
    if (nomem) *nomem = !r && strict;
    return r;
}

/* Alike io_util.c:fr_io_pwrite_full: kept apart (see there). */
bool fr_io_pread_full(int fd, void *buf, size_t n, off_t off) {
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0;
        if (r <= 0) return false;
        p += r, n -= (size_t)r, off += r;
    }
    return true;
}

/* Alike io_util.c:fr_io_pread_full: kept apart because one reads into a buffer and one writes from a const one;
 * a shared loop would need a cast away from const or a call through a pointer for a six-line retry. */
bool fr_io_pwrite_full(int fd, const void *buf, size_t n, off_t off) {
    const char *p = buf;
    while (n) {
        ssize_t r = pwrite(fd, p, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0;
        if (r <= 0) return false;
        p += r, n -= (size_t)r, off += r;
    }
    return true;
}
