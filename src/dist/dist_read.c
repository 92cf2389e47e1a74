/* A case loaded by one rank of many (fr_dist_case_load, dist.h): for a golden split across ranks, the query-side
 * rows that this rank's tasks read are the only ones read from disk, at their offsets (pread): a forward's query
 * (and query_rope) rows of its tasks; a backward's q / q_rope, dy, attention_in and softmax max/sum rows of the
 * query-grid tasks fr_golden_bwd_need names (its pass A blocks, the group's heads of the batches of its pass B
 * tasks). K, V and the other inputs are read whole (replicated). Every other case, and every case whose problem
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
    bool softmax;           /* softmax_max / _sum: rows of 8 values at fr_softmax_offset */
    fr_softmax_layout sl;
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
    for (int64_t i = g->i0; i < g->i0 + g->n; i++) {
        if (r->softmax) add_run(r, fr_softmax_offset(r->t, r->L, r->sl, g->row0, g->b, g->head, i, 0), 8);
        else add_run(r, fr_layout_offset(r->t, r->L, r->D, g->row0, g->b, g->head, i, 0), r->D);
    }
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

/* Which rows of an input a rank reads: all of it when pb is NULL; else a forward's Q-grid tasks of part (need
 * NULL), or a backward's query-grid tasks whose need has a bit of mask. */
typedef struct rows_of {
    const fr_problem *pb;
    const fr_golden_part *part;
    const unsigned char *need;
    unsigned mask;
} rows_of;

/* Fills input t from its file: the rows `ro` names (D columns; softmax: 8 values), or all of it. The header is read
 * again and must still be the one the load checked. */
static fr_status fill(const fr_case *c, fr_case_input k, fr_tensor *t, const rows_of *ro, int64_t D, int64_t *read,
                      fr_error *err) {
    const fr_problem *pb = ro->pb;
    size_t es = fr_dtype_size(t->dtype);
    int64_t n = fr_tensor_numel(t);
    char *path = fr_io_join(c->dir, c->files[k]);
    if (!path) return fr_fail(err, FR_E_NOMEM, "case: out of memory");
    reader r;
    memset(&r, 0, sizeof r);
    r.t = t, r.path = path, r.es = es, r.D = D, r.L = pb ? pb->layout : FR_LAYOUT_NONE, r.err = err;
    r.softmax = k == FR_CI_SOFTMAX_MAX || k == FR_CI_SOFTMAX_SUM, r.sl = c->params.softmax_layout;
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
        int rc = ro->need ? fr_golden_need_rows(pb, ro->need, ro->mask, on_rows, &r)
                          : fr_golden_part_rows(pb, FR_GOLDEN_GRID_Q, ro->part, on_rows, &r);
        if (rc > 0 && r.st == FR_OK) r.st = fr_fail(err, (fr_status)rc, "dist: cannot walk the task grid");
    }
    flush(&r);
    if (r.fd >= 0) close(r.fd);
    free(path);
    *read += r.bytes;
    return r.st;
}

/* The inputs read per row, the row width of each (0: softmax), and whether they count as "query bytes". */
static const struct {
    fr_case_input k;
    unsigned need; /* the backward's need bit (fr_golden_bwd_need) */
    bool query;
} per_row[] = {
    {FR_CI_QUERY, FR_GOLDEN_NEED_Q, true},       {FR_CI_QUERY_ROPE, FR_GOLDEN_NEED_Q, true},
    {FR_CI_DY, FR_GOLDEN_NEED_D, false},         {FR_CI_ATTENTION_IN, FR_GOLDEN_NEED_D, false},
    {FR_CI_SOFTMAX_MAX, FR_GOLDEN_NEED_D, false}, {FR_CI_SOFTMAX_SUM, FR_GOLDEN_NEED_D, false},
};
#define N_PER_ROW (sizeof per_row / sizeof per_row[0])

fr_status fr_dist_case_load(const fr_dist *d, const char *dir, const fr_engine *e, fr_case *c, int64_t *read,
                            int64_t *total, fr_error *err) {
    int64_t rd = 0, tot = 0;
    if (read) *read = 0;
    if (total) *total = 0;
    if (!d || !e) return fr_fail(err, FR_E_NULL, "dist: NULL argument");
    unsigned skip = 0;
    for (size_t j = 0; j < N_PER_ROW; j++) skip |= 1u << per_row[j].k;
    fr_status st = fr_case_load_except(dir, c, skip, err);
    if (st != FR_OK) return st;
    fr_problem pb;
    fr_error ve;
    const bool fwd = c->op == FR_CASE_FWD;
    bool mine = d->size > 1 && e->kind == FR_ENGINE_GOLDEN;
    fr_golden_part part = {d->rank, d->size};
    for (size_t j = 0; j < N_PER_ROW && st == FR_OK; j++) {
        fr_tensor *t = fr_case_input_slot(&c->in, per_row[j].k);
        int64_t nb = 0;
        if (fr_tensor_present(t) && (st = alloc_zero(per_row[j].k, t, &nb, err)) == FR_OK && per_row[j].query)
            tot += nb;
    }
    /* Validation reads no data (it needs it allocated): a problem that does not validate is read whole, so that
     * the engine reports its error as a single process does. */
    if (st == FR_OK && mine) {
        fr_status vs = fwd ? fr_problem_from_fwd(&c->params, &c->in.fwd, &pb, &ve)
                           : fr_problem_from_bwd(&c->params, &c->in, &pb, &ve);
        if (vs != FR_OK) mine = false;
    }
    unsigned char *need = NULL;
    if (st == FR_OK && mine && !fwd) {
        int64_t nn;
        int rc;
        if (!(need = fr_golden_bwd_need(&pb, &part, &nn, &rc)))
            st = fr_fail(err, (fr_status)rc, "dist: cannot build the backward's row need");
    }
    for (size_t j = 0; j < N_PER_ROW && st == FR_OK; j++) {
        fr_case_input k = per_row[j].k;
        fr_tensor *t = fr_case_input_slot(&c->in, k);
        if (!fr_tensor_present(t)) continue;
        rows_of ro = {mine ? &pb : NULL, &part, need, per_row[j].need};
        int64_t D = !mine ? 0 : k == FR_CI_QUERY ? pb.Dk : k == FR_CI_QUERY_ROPE ? pb.Drope : pb.Dv;
        int64_t got = 0;
        st = fill(c, k, t, &ro, D, &got, err);
        if (per_row[j].query) rd += got;
    }
    free(need);
    if (st != FR_OK) {
        fr_case_free(c);
        return st;
    }
    if (read) *read = rd;
    if (total) *total = tot;
    return FR_OK;
}
