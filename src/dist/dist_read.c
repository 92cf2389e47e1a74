/* A case loaded by one rank of many (fr_dist_case_load, dist.h): for a golden forward split across ranks, the
 * query (and query_rope) rows that this rank's tasks read are the only ones read from disk, at their offsets
 * (pread); K, V and the other inputs are read whole (replicated). Every other case, and every case whose problem
 * does not validate (its error must be the single process's), is read whole. */
#define _POSIX_C_SOURCE 200809L
#include "dist/dist.h"

#include "core/core.h"
#include "core/problem.h"
#include "golden/golden_part.h"
#include "io/casedir.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct reader {
    fr_tensor *t;
    const char *path;
    int fd;
    int64_t data_off; /* file offset of element 0 */
    int64_t D;        /* row width (elements) */
    fr_layout L;
    size_t es;
    int64_t run_off, run_len; /* elements waiting to be read: adjacent rows coalesce into one pread */
    int64_t bytes;
    fr_status st;
    fr_error *err;
} reader;

static void flush(reader *r) {
    if (!r->run_len || r->st != FR_OK) return;
    int64_t at = r->run_off * (int64_t)r->es;
    size_t n = (size_t)r->run_len * r->es;
    if (!fr_io_pread_full(r->fd, (char *)r->t->data + at, n, (off_t)(r->data_off + at)))
        r->st = fr_fail(r->err, FR_E_IO, "%s: read error in the data", r->path);
    else
        r->bytes += (int64_t)n;
    r->run_len = 0;
}

static void add_run(reader *r, int64_t off, int64_t len) {
    if (len <= 0) return;
    if (r->run_len && off == r->run_off + r->run_len) {
        r->run_len += len;
        return;
    }
    flush(r);
    r->run_off = off, r->run_len = len;
}

static int on_rows(void *ud, const fr_golden_rows *g) {
    reader *r = ud;
    for (int64_t i = g->i0; i < g->i0 + g->n; i++)
        add_run(r, fr_layout_offset(r->t, r->L, r->D, g->row0, g->b, g->head, i, 0), r->D);
    return r->st == FR_OK ? 0 : -1;
}

/* Zero-filled storage for input t (described by the load, data not read). Zero pages: the rows no task of this
 * rank reads are never touched, so on Linux they cost no memory either. */
static fr_status alloc_zero(fr_case_input k, fr_tensor *t, int64_t *bytes, fr_error *err) {
    int64_t n = fr_tensor_numel(t);
    if (n < 0 || !fr_mul_ok(n, (int64_t)fr_dtype_size(t->dtype), bytes))
        return fr_fail(err, FR_E_OVERFLOW, "%s: size overflows", fr_case_input_name(k));
    if (!(t->data = calloc(*bytes ? (size_t)*bytes : 1, 1)))
        return fr_fail(err, FR_E_NOMEM, "%s: cannot allocate %lld bytes", fr_case_input_name(k), (long long)*bytes);
    return FR_OK;
}

/* Fills input t from its file: the rows of part's Q-grid tasks when pb is given, else all of it. The header is
 * read again and must still be the one the load checked. */
static fr_status fill(const fr_case *c, fr_case_input k, fr_tensor *t, const fr_problem *pb,
                      const fr_golden_part *part, int64_t D, int64_t *read, fr_error *err) {
    size_t es = fr_dtype_size(t->dtype);
    int64_t n = fr_tensor_numel(t);
    char *path = fr_io_join(c->dir, c->files[k]);
    if (!path) return fr_fail(err, FR_E_NOMEM, "case: out of memory");
    reader r;
    memset(&r, 0, sizeof r);
    r.t = t, r.path = path, r.es = es, r.D = D, r.L = pb ? pb->layout : FR_LAYOUT_NONE, r.err = err;
    r.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    fr_npy_header h;
    if (r.fd < 0) {
        r.st = fr_fail(err, FR_E_IO, "%s: cannot open: %s", path, fr_io_strerror());
    } else if ((r.st = fr_npy_read_fd_header(r.fd, &h, path, err)) == FR_OK) {
        bool same = fr_npy_descr_fits(h.descr, t->dtype) && h.ndim == t->ndim;
        for (int j = 0; same && j < h.ndim; j++) same = h.shape[j] == t->shape[j];
        if (!same) r.st = fr_fail(err, FR_E_FORMAT, "%s: changed since the case was loaded", path);
        r.data_off = h.data_offset;
    }
    if (r.st == FR_OK && !pb) {
        add_run(&r, 0, n);
    } else if (r.st == FR_OK) {
        int rc = fr_golden_part_rows(pb, FR_GOLDEN_GRID_Q, part, on_rows, &r);
        if (rc > 0 && r.st == FR_OK) r.st = fr_fail(err, (fr_status)rc, "dist: cannot walk the task grid");
    }
    flush(&r);
    if (r.fd >= 0) close(r.fd);
    free(path);
    *read += r.bytes;
    return r.st;
}

fr_status fr_dist_case_load(const fr_dist *d, const char *dir, const fr_engine *e, fr_case *c, int64_t *read,
                            int64_t *total, fr_error *err) {
    int64_t rd = 0, tot = 0;
    if (read) *read = 0;
    if (total) *total = 0;
    if (!d || !e) return fr_fail(err, FR_E_NULL, "dist: NULL argument");
    const unsigned skip = 1u << FR_CI_QUERY | 1u << FR_CI_QUERY_ROPE;
    fr_status st = fr_case_load_except(dir, c, skip, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    fr_error ve;
    bool mine = d->size > 1 && e->kind == FR_ENGINE_GOLDEN && c->op == FR_CASE_FWD;
    fr_golden_part part = {d->rank, d->size};
    fr_tensor *q = &c->in.fwd.query, *qr = &c->in.fwd.query_rope;
    int64_t nb = 0;
    if (fr_tensor_present(q) && (st = alloc_zero(FR_CI_QUERY, q, &nb, err)) == FR_OK) tot += nb;
    if (st == FR_OK && fr_tensor_present(qr) && (st = alloc_zero(FR_CI_QUERY_ROPE, qr, &nb, err)) == FR_OK) tot += nb;
    /* Validation reads no data (it needs it allocated): a problem that does not validate is read whole, so that
     * the engine reports its error as a single process does. */
    if (st == FR_OK && mine && fr_problem_from_fwd(&c->params, &c->in.fwd, &pb, &ve) != FR_OK) mine = false;
    if (st == FR_OK && fr_tensor_present(q))
        st = fill(c, FR_CI_QUERY, q, mine ? &pb : NULL, &part, mine ? pb.Dk : 0, &rd, err);
    if (st == FR_OK && fr_tensor_present(qr))
        st = fill(c, FR_CI_QUERY_ROPE, qr, mine ? &pb : NULL, &part, mine ? pb.Drope : 0, &rd, err);
    if (st != FR_OK) {
        fr_case_free(c);
        return st;
    }
    if (read) *read = rd;
    if (total) *total = tot;
    return FR_OK;
}
