/* msprobe dump directories (msprobe.h): dump.json into typed values, the dump directories below a path, and each
 * dumped tensor's file opened inside the dump and checked against what dump.json declares. */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC with glibc */
#include "io/msprobe.h"

#include "core/core.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MP_MAX_DEPTH 8     /* nested lists in one argument */
#define MP_MAX_ITEMS 65536 /* elements of one list */
#define MP_MAX_NAME 255

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void value_free(fr_mp_value *v) {
    if (!v) return;
    free(v->s);
    free(v->data_name);
    for (int k = 0; k < v->n; k++) value_free(&v->items[k]);
    free(v->items);
    memset(v, 0, sizeof *v);
}

static void entry_free(fr_mp_entry *e) {
    free(e->name);
    for (int k = 0; k < e->nargs; k++) value_free(&e->args[k]);
    free(e->args);
    for (int k = 0; k < e->nkwargs; k++) {
        value_free(&e->kwargs[k]);
        free(e->kwnames[k]);
    }
    free(e->kwargs);
    free(e->kwnames);
    for (int k = 0; k < e->nout; k++) value_free(&e->out[k]);
    free(e->out);
    memset(e, 0, sizeof *e);
}

void fr_mp_free(fr_mp_dump *d) {
    if (!d) return;
    for (int k = 0; k < d->n; k++) entry_free(&d->e[k]);
    free(d->e);
    if (d->dirfd >= 0) close(d->dirfd);
    if (d->datafd >= 0) close(d->datafd);
    memset(d, 0, sizeof *d);
    d->dirfd = d->datafd = -1;
}

/* ---- dump.json ---- */

/* A copy of the text with Python's non-standard NaN / Infinity / -Infinity (outside strings) replaced by JSON cJSON
 * reads: null, 1e999 (+inf), -1e999. Those appear in the statistics of tensors holding non-finite values. */
static char *sanitize(const char *s, size_t n, size_t *out_len) {
    char *o = malloc(n + n / 2 + 16);
    if (!o) return NULL;
    size_t w = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (in_str) {
            o[w++] = c;
            i++;
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') in_str = true;
        static const struct {
            const char *tok, *rep;
        } reps[] = {{"NaN", "null"}, {"-Infinity", "-1e999"}, {"Infinity", "1e999"}};
        bool done = false;
        for (size_t r = 0; r < 3 && !done; r++) {
            size_t tl = strlen(reps[r].tok);
            if (n - i >= tl && !memcmp(s + i, reps[r].tok, tl)) {
                size_t rl = strlen(reps[r].rep);
                memcpy(o + w, reps[r].rep, rl);
                w += rl;
                i += tl;
                done = true;
            }
        }
        if (!done) o[w++] = s[i++];
    }
    o[w] = '\0';
    *out_len = w;
    return o;
}

static const char *jtype(const cJSON *j) {
    return cJSON_IsNull(j) ? "null" : cJSON_IsBool(j) ? "a bool" : cJSON_IsNumber(j) ? "a number" :
           cJSON_IsString(j) ? "a string" : cJSON_IsArray(j) ? "an array" : "an object";
}

static bool json_int(const cJSON *j, int64_t *v) {
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d)) return false;
    *v = (int64_t)d;
    return true;
}

/* One recorded value (an argument, a list element, an output). */
static fr_status parse_value(const cJSON *j, fr_mp_value *v, int depth, const char *what, const char *field,
                             fr_error *err) {
    memset(v, 0, sizeof *v);
    if (!j || cJSON_IsNull(j)) return FR_OK;
    if (cJSON_IsArray(j)) {
        if (depth >= MP_MAX_DEPTH)
            return fr_fail(err, FR_E_FORMAT, "%s: %s: lists nested deeper than %d", what, field, MP_MAX_DEPTH);
        int n = cJSON_GetArraySize(j);
        if (n > MP_MAX_ITEMS) return fr_fail(err, FR_E_FORMAT, "%s: %s: a list of %d items", what, field, n);
        v->kind = FR_MP_LIST;
        if (n && !(v->items = calloc((size_t)n, sizeof *v->items)))
            return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
        int k = 0;
        for (const cJSON *c = j->child; c; c = c->next, k++) {
            fr_status st = parse_value(c, &v->items[k], depth + 1, what, field, err);
            v->n = k + 1;
            if (st != FR_OK) return st;
        }
        return FR_OK;
    }
    if (!cJSON_IsObject(j)) return fr_fail(err, FR_E_FORMAT, "%s: %s: %s where a recorded value belongs", what, field,
                                           jtype(j));
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(type)) {
        /* msprobe records dicts (e.g. a P2POp) as objects without "type": nothing fusion attention takes */
        v->kind = FR_MP_OTHER;
        v->s = dup_str("dict");
        return v->s ? FR_OK : fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    }
    const char *t = type->valuestring;
    if (!strcmp(t, "torch.Tensor") || !strcmp(t, "torch.nn.parameter.Parameter") || !strcmp(t, "numpy.ndarray")) {
        v->kind = FR_MP_TENSOR;
        v->npy = !strcmp(t, "numpy.ndarray");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
        const cJSON *dn = cJSON_GetObjectItemCaseSensitive(j, "data_name");
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh))
            return fr_fail(err, FR_E_FORMAT, "%s: %s: a tensor without a string \"dtype\" and a \"shape\" list", what,
                           field);
        snprintf(v->dtype_name, sizeof v->dtype_name, "%s", dt->valuestring);
        if (v->npy) {
            char tn[40];
            snprintf(tn, sizeof tn, "torch.%.32s", dt->valuestring); /* numpy's names are torch's without "torch." */
            v->dtype = fr_pt_dtype_from_torch_name(tn);
        } else {
            v->dtype = fr_pt_dtype_from_torch_name(dt->valuestring);
        }
        for (const cJSON *d = sh->child; d; d = d->next) {
            int64_t x;
            if (v->ndim >= FR_MAX_DIMS || !json_int(d, &x) || x < 0)
                return fr_fail(err, FR_E_FORMAT, "%s: %s: shape is not a list of at most %d sizes >= 0", what, field,
                               FR_MAX_DIMS);
            v->shape[v->ndim++] = x;
        }
        if (dn && !cJSON_IsNull(dn)) {
            if (!cJSON_IsString(dn))
                return fr_fail(err, FR_E_FORMAT, "%s: %s: data_name is %s, not a file name", what, field, jtype(dn));
            if (!(v->data_name = dup_str(dn->valuestring))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
        }
        return FR_OK;
    }
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(j, "value");
    if (!strcmp(t, "int")) {
        if (!json_int(val, &v->i)) return fr_fail(err, FR_E_FORMAT, "%s: %s: an int whose value is %s", what, field,
                                                  val ? jtype(val) : "missing");
        v->kind = FR_MP_INT;
        v->f = (double)v->i;
    } else if (!strcmp(t, "float")) {
        if (!cJSON_IsNumber(val)) return fr_fail(err, FR_E_FORMAT, "%s: %s: a float whose value is %s", what, field,
                                                 val ? jtype(val) : "missing");
        v->kind = FR_MP_FLOAT;
        v->f = val->valuedouble;
    } else if (!strcmp(t, "bool")) {
        if (!cJSON_IsBool(val)) return fr_fail(err, FR_E_FORMAT, "%s: %s: a bool whose value is %s", what, field,
                                               val ? jtype(val) : "missing");
        v->kind = FR_MP_BOOL;
        v->i = cJSON_IsTrue(val);
    } else if (!strcmp(t, "str")) {
        if (!cJSON_IsString(val)) return fr_fail(err, FR_E_FORMAT, "%s: %s: a str whose value is %s", what, field,
                                                 val ? jtype(val) : "missing");
        v->kind = FR_MP_STR;
        if (!(v->s = dup_str(val->valuestring))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    } else {
        v->kind = FR_MP_OTHER;
        if (!(v->s = dup_str(t))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    }
    return FR_OK;
}

static fr_status parse_list(const cJSON *j, fr_mp_value **out, int *n, const char *what, const char *name,
                            const char *key, fr_error *err) {
    char field[400];
    if (!cJSON_IsArray(j)) return fr_fail(err, FR_E_FORMAT, "%s: %s.%s: %s, expected a list", what, name, key,
                                          jtype(j));
    int m = cJSON_GetArraySize(j);
    if (m > MP_MAX_ITEMS) return fr_fail(err, FR_E_FORMAT, "%s: %s.%s: %d items", what, name, key, m);
    if (m && !(*out = calloc((size_t)m, sizeof **out))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    int k = 0;
    for (const cJSON *c = j->child; c; c = c->next, k++) {
        snprintf(field, sizeof field, "%.300s.%s[%d]", name, key, k);
        fr_status st = parse_value(c, &(*out)[k], 0, what, field, err);
        *n = k + 1;
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

/* PREFIX.API.COUNT.forward|backward, split from the end (the prefix may hold dots). */
static bool split_name(const char *name, fr_mp_entry *e) {
    size_t n = strlen(name);
    if (n == 0 || n > MP_MAX_NAME) return false;
    /* msprobe's names are identifiers, dots and digits; anything else (a '/', "..") never names a call */
    for (size_t k = 0; k < n; k++)
        if (!((name[k] >= 'a' && name[k] <= 'z') || (name[k] >= 'A' && name[k] <= 'Z') ||
              (name[k] >= '0' && name[k] <= '9') || name[k] == '_' || name[k] == '.' || name[k] == '-'))
            return false;
    if (name[0] == '.' || strstr(name, "..")) return false;
    const char *dir = strrchr(name, '.');
    if (!dir || (strcmp(dir, ".forward") && strcmp(dir, ".backward"))) return false;
    e->backward = !strcmp(dir, ".backward");
    const char *c = dir - 1;
    while (c > name && *c >= '0' && *c <= '9') c--;
    if (c == dir - 1 || *c != '.' || dir - c > 12) return false;
    e->count = strtoll(c + 1, NULL, 10);
    const char *a = c - 1;
    while (a > name && *a != '.') a--;
    if (*a != '.' || c - a - 1 <= 0 || (size_t)(c - a - 1) >= sizeof e->api || (size_t)(a - name) >= sizeof e->prefix ||
        a == name)
        return false;
    memcpy(e->api, a + 1, (size_t)(c - a - 1));
    e->api[c - a - 1] = '\0';
    memcpy(e->prefix, name, (size_t)(a - name));
    e->prefix[a - name] = '\0';
    return true;
}

static fr_status parse_entry(const cJSON *j, fr_mp_entry *e, const char *what, fr_error *err) {
    const char *name = j->string;
    if (!(e->name = dup_str(name))) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    if (!cJSON_IsObject(j)) return fr_fail(err, FR_E_FORMAT, "%s: data.%s: %s, expected an object", what, name,
                                           jtype(j));
    for (const cJSON *k = j->child; k; k = k->next) {
        fr_status st = FR_OK;
        if (!strcmp(k->string, "input_args") || (!strcmp(k->string, "input") && e->backward)) {
            if (e->has_input && e->nargs) return fr_fail(err, FR_E_FORMAT, "%s: data.%s: two input lists", what, name);
            st = parse_list(k, &e->args, &e->nargs, what, name, k->string, err);
            e->has_input = true;
        } else if (!strcmp(k->string, "input_kwargs")) {
            if (!cJSON_IsObject(k))
                return fr_fail(err, FR_E_FORMAT, "%s: data.%s.input_kwargs: %s, expected an object", what, name,
                               jtype(k));
            int m = cJSON_GetArraySize(k);
            if (m > MP_MAX_ITEMS || e->kwargs)
                return fr_fail(err, FR_E_FORMAT, "%s: data.%s.input_kwargs: repeated or too large", what, name);
            if (m && (!(e->kwargs = calloc((size_t)m, sizeof *e->kwargs)) ||
                      !(e->kwnames = calloc((size_t)m, sizeof *e->kwnames))))
                return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
            for (const cJSON *c = k->child; c && st == FR_OK; c = c->next) {
                for (int q = 0; q < e->nkwargs; q++)
                    if (!strcmp(e->kwnames[q], c->string))
                        return fr_fail(err, FR_E_FORMAT, "%s: data.%s.input_kwargs: \"%s\" given twice", what, name,
                                       c->string);
                char field[400];
                snprintf(field, sizeof field, "%.200s.input_kwargs.%.100s", name, c->string);
                if (!(e->kwnames[e->nkwargs] = dup_str(c->string)))
                    return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
                st = parse_value(c, &e->kwargs[e->nkwargs], 0, what, field, err);
                e->nkwargs++;
            }
            e->has_input = true;
        } else if (!strcmp(k->string, "output")) {
            if (e->has_output) return fr_fail(err, FR_E_FORMAT, "%s: data.%s: two output lists", what, name);
            st = parse_list(k, &e->out, &e->nout, what, name, "output", err);
            e->has_output = true;
        }
        /* other keys (parameters, grad, ...) are not the call's arguments */
        if (st != FR_OK) return st;
    }
    return FR_OK;
}

fr_status fr_mp_parse_json(const char *json, size_t len, fr_mp_want_fn want, fr_mp_dump *d, const char *what,
                           fr_error *err) {
    if (!d || (!json && len)) return fr_fail(err, FR_E_NULL, "msprobe: NULL text or dump");
    memset(d, 0, sizeof *d);
    d->dirfd = d->datafd = -1;
    what = what ? what : "dump.json";
    size_t sl;
    char *text = sanitize(json ? json : "", len, &sl);
    if (!text) return fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    const char *end = NULL;
    bool nomem;
    cJSON *root = fr_io_json_parse(text, &end, &nomem); /* strict JSON only (RFC 8259) */
    fr_status st = FR_OK;
    if (nomem) {
        st = fr_fail(err, FR_E_NOMEM, "%s: out of memory parsing the JSON", what); /* well-formed: cJSON ran out */
    } else if (!root && !end) {
        st = fr_fail(err, FR_E_FORMAT, "%s: not valid JSON (RFC 8259: a bad \\u escape, a leading zero, ...)", what);
    } else if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        st = fr_fail(err, FR_E_FORMAT, "%s: not valid JSON (near byte %zu of %zu)", what, at, sl);
    } else if (!cJSON_IsObject(root)) {
        st = fr_fail(err, FR_E_FORMAT, "%s: %s, expected an object with \"data\"", what, jtype(root));
    }
    free(text);
    if (st != FR_OK) {
        cJSON_Delete(root);
        return st;
    }
    static const char *const keys[] = {"task", "level", "framework"};
    char *dst[] = {d->task, d->level, d->framework};
    size_t cap[] = {sizeof d->task, sizeof d->level, sizeof d->framework};
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, keys[k]);
        if (cJSON_IsString(v)) snprintf(dst[k], cap[k], "%s", v->valuestring);
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (!cJSON_IsObject(data)) {
        cJSON_Delete(root);
        return fr_fail(err, FR_E_FORMAT, "%s: \"data\" is %s, expected an object of dumped calls", what,
                       data ? jtype(data) : "missing");
    }
    int m = 0;
    for (const cJSON *c = data->child; c; c = c->next) {
        fr_mp_entry probe;
        memset(&probe, 0, sizeof probe);
        if (split_name(c->string, &probe) && (!want || want(probe.prefix, probe.api))) m++;
        else d->others++;
    }
    if (m && !(d->e = calloc((size_t)m, sizeof *d->e))) st = fr_fail(err, FR_E_NOMEM, "%s: out of memory", what);
    for (const cJSON *c = data->child; c && st == FR_OK; c = c->next) {
        fr_mp_entry e;
        memset(&e, 0, sizeof e);
        if (!split_name(c->string, &e) || (want && !want(e.prefix, e.api))) continue;
        for (int q = 0; q < d->n; q++)
            if (!strcmp(d->e[q].name, c->string)) st = fr_fail(err, FR_E_FORMAT, "%s: \"%s\" listed twice", what,
                                                               c->string);
        if (st == FR_OK) st = parse_entry(c, &e, what, err);
        d->e[d->n++] = e;
    }
    cJSON_Delete(root);
    if (st != FR_OK) fr_mp_free(d);
    return st;
}

/* ---- the directory ---- */

/* Opens name inside dirfd without following a link, never blocking on a FIFO; a message naming what is wrong. */
static fr_status open_inside(int dirfd, const char *dir, const char *name, int flags, int *fd, fr_error *err) {
    *fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) {
        int e = errno;
        struct stat lb;
        if (e == ENOTDIR && fstatat(dirfd, name, &lb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lb.st_mode)) e = ELOOP;
        if (e == ELOOP || e == EMLINK)
            return fr_fail(err, FR_E_FORMAT, "%s/%s is a symbolic link: not followed (a dump holds plain files)", dir,
                           name);
        if (e == ENOTDIR && (flags & O_DIRECTORY))
            return fr_fail(err, FR_E_FORMAT, "%s/%s is not a directory", dir, name);
        char why[128];
        return fr_fail(err, FR_E_IO, "%s/%s: %s", dir, name,
                       e == ENOENT ? "missing" : fr_io_strerror_r(e, why, sizeof why));
    }
    struct stat sb;
    if (fstat(*fd, &sb) != 0 || ((flags & O_DIRECTORY) ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))) {
        close(*fd);
        *fd = -1;
        return fr_fail(err, FR_E_IO, "%s/%s is not a %s", dir, name, (flags & O_DIRECTORY) ? "directory" :
                       "regular file (a FIFO, device or directory is refused)");
    }
    return FR_OK;
}

fr_status fr_mp_open(const char *dir, fr_mp_want_fn want, fr_mp_dump *d, fr_error *err) {
    if (!dir || !d) return fr_fail(err, FR_E_NULL, "msprobe: NULL directory or dump");
    memset(d, 0, sizeof *d);
    d->dirfd = d->datafd = -1;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return fr_fail(err, FR_E_IO, "%s: %s", dir, fr_io_strerror());
    int jfd;
    fr_status st = open_inside(dfd, dir, "dump.json", O_RDONLY, &jfd, err);
    char *text = NULL;
    struct stat sb;
    if (st == FR_OK) {
        if (fstat(jfd, &sb) != 0) st = fr_fail(err, FR_E_IO, "%s/dump.json: %s", dir, fr_io_strerror());
        else if (sb.st_size > FR_MP_JSON_MAX)
            st = fr_fail(err, FR_E_FORMAT, "%s/dump.json: %lld bytes (at most %lld read): dump a narrower scope "
                         "(msprobe's \"list\": [\"npu_fusion_attention\"])", dir, (long long)sb.st_size,
                         (long long)FR_MP_JSON_MAX);
        else if (!(text = malloc((size_t)sb.st_size + 1)))
            st = fr_fail(err, FR_E_NOMEM, "%s/dump.json: out of memory", dir);
        else if (!fr_io_pread_full(jfd, text, (size_t)sb.st_size, 0))
            st = fr_fail(err, FR_E_IO, "%s/dump.json: cannot read: %s", dir, errno ? fr_io_strerror() : "short read");
        close(jfd);
    }
    if (st == FR_OK) {
        char what[4200];
        snprintf(what, sizeof what, "%.4000s/dump.json", dir);
        st = fr_mp_parse_json(text, (size_t)sb.st_size, want, d, what, err);
    }
    free(text);
    /* No dump_tensor_data at all: a statistics dump (its calls are reported as holding no data). */
    if (st == FR_OK && !(fstatat(dfd, "dump_tensor_data", &sb, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT))
        st = open_inside(dfd, dir, "dump_tensor_data", O_RDONLY | O_DIRECTORY, &d->datafd, err);
    if (st != FR_OK) {
        fr_mp_free(d);
        close(dfd);
        return st;
    }
    d->dirfd = dfd;
    return FR_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_link(int dirfd, const char *name) {
    struct stat sb;
    return fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode);
}

bool fr_mp_found_link(const char *root, const char *dir) {
    struct stat sb;
    return strcmp(root, dir) && lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode);
}

/* Any entry named dump.json (fr_mp_open then says what is wrong with one that is not a regular file). */
static bool has_dump_json(int dirfd, const char *name) {
    struct stat sb;
    char p[600];
    snprintf(p, sizeof p, "%s/dump.json", name);
    return fstatat(dirfd, p, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Subdirectories of dirfd and symbolic links (listed for the caller to refuse by name, never followed; no hidden
 * names), sorted. */
static int subdirs(int dirfd, char ***out) {
    *out = NULL;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dp) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(dp))) {
        struct stat sb;
        if (de->d_name[0] == '.' || strlen(de->d_name) > 255 ||
            fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISDIR(sb.st_mode) || S_ISLNK(sb.st_mode)))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, sizeof *v * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        if (!(v[n] = dup_str(de->d_name))) break;
        n++;
        if (n >= 100000) break;
    }
    closedir(dp);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

fr_status fr_mp_find(const char *root, char ***dirs, int *n, fr_error *err) {
    if (!root || !dirs || !n) return fr_fail(err, FR_E_NULL, "msprobe: NULL");
    *dirs = NULL;
    *n = 0;
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) return fr_fail(err, FR_E_IO, "%s: %s", root, fr_io_strerror());
    fr_status st = FR_OK;
    char **out = NULL;
    int m = 0, cap = 0;
#define ADD(path)                                                                                                      \
    do {                                                                                                               \
        char *p_ = (path);                                                                                             \
        if (m == cap) {                                                                                                \
            cap = cap ? 2 * cap : 8;                                                                                   \
            char **nv_ = realloc(out, sizeof *out * (size_t)cap);                                                      \
            if (!nv_) {                                                                                                \
                free(p_);                                                                                              \
                st = fr_fail(err, FR_E_NOMEM, "msprobe: out of memory");                                               \
                break;                                                                                                 \
            }                                                                                                          \
            out = nv_;                                                                                                 \
        }                                                                                                              \
        if (!p_) st = fr_fail(err, FR_E_NOMEM, "msprobe: out of memory");                                             \
        else out[m++] = p_;                                                                                            \
    } while (0)
    if (has_dump_json(rfd, ".")) {
        ADD(dup_str(root));
    } else {
        char **l1;
        int n1 = subdirs(rfd, &l1);
        if (n1 < 0) st = fr_fail(err, FR_E_IO, "%s: %s", root, fr_io_strerror());
        for (int a = 0; a < n1; a++) {
            if (st == FR_OK && (is_link(rfd, l1[a]) || has_dump_json(rfd, l1[a]))) {
                char *p = fr_io_join(root, l1[a]);
                ADD(p);
            } else if (st == FR_OK) {
                int sfd = openat(rfd, l1[a], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                char **l2 = NULL;
                int n2 = sfd >= 0 ? subdirs(sfd, &l2) : -1;
                for (int b = 0; b < n2; b++) {
                    if (st == FR_OK && (is_link(sfd, l2[b]) || has_dump_json(sfd, l2[b]))) {
                        char *mid = fr_io_join(root, l1[a]);
                        char *p = mid ? fr_io_join(mid, l2[b]) : NULL;
                        free(mid);
                        ADD(p);
                    }
                    free(l2[b]);
                }
                free(l2);
                if (sfd >= 0) close(sfd);
            }
            free(l1[a]);
        }
        free(l1);
    }
#undef ADD
    close(rfd);
    if (st == FR_OK && !m)
        st = fr_fail(err, FR_E_FORMAT, "%s: no dump.json here or in the step*/rank* directories below (an msprobe dump "
                     "directory holds dump.json and dump_tensor_data/)", root);
    if (st != FR_OK) {
        for (int k = 0; k < m; k++) free(out[k]);
        free(out);
        return st;
    }
    *dirs = out;
    *n = m;
    return FR_OK;
}

/* ---- tensors ---- */

static bool plain_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > MP_MAX_NAME || !strcmp(s, ".") || !strcmp(s, "..")) return false;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
    }
    return true;
}

static void shape_str(char *b, size_t n, int ndim, const int64_t *shape) {
    snprintf(b, n, "[");
    for (int d = 0; d < ndim; d++) snprintf(b + strlen(b), n - strlen(b), "%s%lld", d ? ", " : "", (long long)shape[d]);
    snprintf(b + strlen(b), n - strlen(b), "]");
}

fr_status fr_mp_tensor_open(const fr_mp_dump *d, const fr_mp_value *v, const char *label, int *fd, fr_pt_info *info,
                            fr_error *err) {
    *fd = -1;
    memset(info, 0, sizeof *info);
    if (!v || v->kind != FR_MP_TENSOR) return fr_fail(err, FR_E_FORMAT, "%s: not a tensor in dump.json", label);
    if (!v->data_name)
        return fr_fail(err, FR_E_FORMAT, "%s: dump.json records no data for it (was the dump made with task "
                       "\"tensor\"?)", label);
    if (!plain_name(v->data_name))
        return fr_fail(err, FR_E_FORMAT, "%s: data_name \"%.200s\" is not a plain file name (a path, \"..\" or a "
                       "control character): not opened", label, v->data_name);
    if (d->datafd < 0) return fr_fail(err, FR_E_IO, "%s: the dump has no dump_tensor_data directory", label);
    char dir[300];
    snprintf(dir, sizeof dir, "%.200s: dump_tensor_data", label);
    fr_status st = open_inside(d->datafd, dir, v->data_name, O_RDONLY, fd, err);
    if (st != FR_OK) return st;
    char what[600];
    snprintf(what, sizeof what, "%.200s: dump_tensor_data/%.255s", label, v->data_name);
    size_t nl = strlen(v->data_name);
    if (nl > 4 && !strcmp(v->data_name + nl - 4, ".npy")) {
        fr_npy_header h;
        fr_dtype dt;
        if ((st = fr_npy_read_fd_header(*fd, &h, what, err)) == FR_OK &&
            (st = fr_npy_header_dtype(&h, FR_DT_NONE, &dt, what, err)) == FR_OK) {
            info->dtype = dt;
            info->ndim = h.ndim;
            memcpy(info->shape, h.shape, sizeof info->shape);
            info->data_offset = info->record_offset = h.data_offset;
            info->data_bytes = info->record_bytes = h.data_bytes;
            snprintf(info->location, sizeof info->location, "npy");
        }
    } else {
        st = fr_pt_info_fd(*fd, info, what, err);
    }
    if (st == FR_OK) {
        bool same = info->ndim == v->ndim && !memcmp(info->shape, v->shape, sizeof(int64_t) * (size_t)v->ndim);
        if (!same || (v->dtype != FR_DT_NONE && info->dtype != v->dtype)) {
            char a[200], b[200];
            shape_str(a, sizeof a, info->ndim, info->shape);
            shape_str(b, sizeof b, v->ndim, v->shape);
            st = fr_fail(err, FR_E_FORMAT, "%s: the file holds %s %s, dump.json says %s %s", what,
                         fr_dtype_name(info->dtype), a, v->dtype_name, b);
        }
    }
    if (st != FR_OK) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

fr_status fr_mp_tensor_read(int fd, const fr_pt_info *info, fr_tensor *out, const char *label, fr_error *err) {
    return fr_pt_data_fd(fd, info, out, label, err);
}
