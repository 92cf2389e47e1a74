/* One case across the ranks, its outputs written in parallel (fr_dist_run_to_dir, dist.h): rank 0 lays out each
 * .npy (the header, then the data area at its full size), and every rank pwrite()s the rows its part of the
 * golden's task grid owns, at their offsets. No rank sends its outputs to another and none writes a byte it did not
 * compute, so what each rank moves is its share of the output (docs/scale.md, T_out), not the whole tensors. */
#define _POSIX_C_SOURCE 200809L
#include "dist/dist.h"

#include "core/cleanup.h"
#include "core/core.h"
#include "core/problem.h"
#include "engine/engine.h"
#include "golden/golden_part.h"
#include "io/casedir.h"
#include "io/io_util.h"
#include "io/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How an output's owned elements are found: rows of a q-like / kv-like tensor (head dim D), softmax rows (8
 * values), or the whole tensor (dsink: rank 0). */
typedef enum { ROWS_Q, SOFTMAX_Q, ROWS_KV, WHOLE } out_kind;

typedef struct out_file {
    const fr_tensor *t;
    out_kind kind;
    int64_t D;                /* row width of ROWS_* (elements) */
    char *path;
    int fd;
    bool made;                /* created by this rank (rank 0): removed again when the run fails */
    int slot;                 /* core/cleanup.h: removed if a signal ends the run before every rank agreed */
    char hdr[FR_NPY_HEADER_MAX];
    size_t hl;                /* header bytes = file offset of element 0 */
    int64_t data_bytes;
    size_t es;                /* element size */
    int64_t run_off, run_len; /* elements waiting to be written: adjacent rows coalesce into one pwrite */
} out_file;

typedef struct writer {
    out_file f[FR_CASE_NUM_OUTPUTS];
    int nf;
    const fr_problem *pb;
    fr_softmax_layout sl;
    fr_golden_grid grid; /* the grid being walked */
    int64_t bytes;       /* written by this rank */
    fr_status st;
    fr_error *err;
} writer;

static void flush(writer *w, out_file *f) {
    if (!f->run_len || w->st != FR_OK) return;
    size_t n = (size_t)f->run_len * f->es;
    int64_t at = f->run_off * (int64_t)f->es;
    if (!fr_io_pwrite_full(f->fd, (const char *)f->t->data + at, n, (off_t)(f->hl + (size_t)at)))
        w->st = fr_fail(w->err, FR_E_IO, "%s: write error: %s", f->path, fr_io_strerror());
    else
        w->bytes += (int64_t)n;
    f->run_len = 0;
}

/* Elements [off, off + len) (the tensor is contiguous: its element index is its place in the file). */
static void add_run(writer *w, out_file *f, int64_t off, int64_t len) {
    if (len <= 0) return;
    if (f->run_len && off == f->run_off + f->run_len) {
        f->run_len += len;
        return;
    }
    flush(w, f);
    f->run_off = off, f->run_len = len;
}

/* One task of the grid being walked: its rows of every output that grid owns. */
static int on_rows(void *ud, const fr_golden_rows *r) {
    writer *w = ud;
    const fr_layout L = w->pb->layout;
    for (int k = 0; k < w->nf; k++) {
        out_file *f = &w->f[k];
        bool mine = w->grid == FR_GOLDEN_GRID_Q ? f->kind == ROWS_Q || f->kind == SOFTMAX_Q : f->kind == ROWS_KV;
        if (!mine) continue;
        for (int64_t i = r->i0; i < r->i0 + r->n; i++) {
            if (f->kind == SOFTMAX_Q)
                add_run(w, f, fr_softmax_offset(f->t, L, w->sl, r->row0, r->b, r->head, i, 0), 8);
            else
                add_run(w, f, fr_layout_offset(f->t, L, f->D, r->row0, r->b, r->head, i, 0), f->D);
        }
    }
    return w->st == FR_OK ? 0 : -1;
}

static void add_file(writer *w, const fr_tensor *t, out_kind kind, int64_t D) {
    if (!fr_tensor_present(t)) return; /* an empty one still gets its file: the header alone */
    out_file *f = &w->f[w->nf++];
    memset(f, 0, sizeof *f);
    f->t = t, f->kind = kind, f->D = D, f->fd = -1, f->slot = -1;
}

/* The outputs of the case and which grid owns each, with their paths and expected headers. The outputs must be
 * contiguous (fr_case_alloc_outputs makes them so): then an element's index is its offset in the file. */
static fr_status plan(writer *w, const fr_case *c, const fr_case_outputs *o, const char *dir, fr_error *err) {
    const fr_problem *pb = w->pb;
    if (c->op == FR_CASE_FWD) {
        add_file(w, &o->fwd.attention_out, ROWS_Q, pb->Dv);
        add_file(w, &o->fwd.softmax_max, SOFTMAX_Q, 8);
        add_file(w, &o->fwd.softmax_sum, SOFTMAX_Q, 8);
    } else {
        add_file(w, &o->bwd.dq, ROWS_Q, pb->Dk);
        add_file(w, &o->bwd.dq_rope, ROWS_Q, pb->Drope);
        add_file(w, &o->bwd.dk, ROWS_KV, pb->Dk);
        add_file(w, &o->bwd.dv, ROWS_KV, pb->Dv);
        add_file(w, &o->bwd.dk_rope, ROWS_KV, pb->Drope);
        add_file(w, &o->bwd.dsink, WHOLE, 0);
    }
    for (int k = 0; k < w->nf; k++) {
        out_file *f = &w->f[k];
        const char *name = NULL;
        for (int j = 0; j < FR_CASE_NUM_OUTPUTS; j++)
            if (fr_case_output_cslot(o, (fr_case_output)j) == f->t) name = fr_case_output_name((fr_case_output)j);
        char fn[64];
        snprintf(fn, sizeof fn, "%s.npy", name ? name : "invalid");
        if (!(f->path = fr_io_join(dir, fn))) return fr_fail(err, FR_E_NOMEM, "dist: out of memory");
        if (!fr_tensor_is_contiguous(f->t))
            return fr_fail(err, FR_E_INVALID_ARG, "dist: %s: the output tensor is not contiguous", f->path);
        fr_status st = fr_npy_header_bytes(f->t, 0, f->hdr, &f->hl, &f->data_bytes, f->path, err);
        if (st != FR_OK) return st;
        f->es = fr_dtype_size(f->t->dtype);
    }
    return FR_OK;
}

static void close_all(writer *w) {
    for (int k = 0; k < w->nf; k++)
        if (w->f[k].fd >= 0) {
            if (close(w->f[k].fd) != 0 && w->st == FR_OK)
                w->st = fr_fail(w->err, FR_E_IO, "%s: close: %s", w->f[k].path, fr_io_strerror());
            w->f[k].fd = -1;
        }
}

/* Rank 0: each file created as a fresh file renamed into place (io_util.h: a symbolic link, FIFO or device in its
 * place is refused, a hard link's other names keep their content), its header written and its data area extended
 * to the full size (zeros until the ranks write; a row no rank owns would stay zero, which the bit-identity test
 * catches). */
static void create_files(writer *w) {
    for (int k = 0; k < w->nf && w->st == FR_OK; k++) {
        out_file *f = &w->f[k];
        fr_io_out o;
        int fd;
        if ((w->st = fr_io_out_open_fd(&o, &fd, f->path, w->err)) != FR_OK) break;
        bool ok = fr_io_pwrite_full(fd, f->hdr, f->hl, 0) && ftruncate(fd, (off_t)(f->hl + (size_t)f->data_bytes)) == 0;
        if ((w->st = fr_io_out_close_fd(&o, fd, ok, w->err)) != FR_OK) break;
        f->made = true; /* only a file of ours is removed on failure, never what stood there */
        /* A rank killed mid-run makes mpirun end the others with SIGTERM: the file goes with them. */
        f->slot = fr_cleanup_add_file(f->path);
        w->bytes += (int64_t)f->hl;
    }
}

/* Every rank: each file opened without creating it (read and write: its header is read back) and checked to be
 * the regular file of exactly the header and size this rank expects, so a rank never writes into a file that is
 * not the output rank 0 laid out (another file system under the same path, a replaced file). */
static void open_files(writer *w) {
    for (int k = 0; k < w->nf && w->st == FR_OK; k++) {
        out_file *f = &w->f[k];
        f->fd = open(f->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat sb;
        char got[FR_NPY_HEADER_MAX];
        if (f->fd < 0) {
            w->st = fr_fail(w->err, FR_E_IO, "%s: cannot open: %s (the output directory must be shared by the ranks)",
                            f->path, fr_io_strerror());
        } else if (fstat(f->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            w->st = fr_fail(w->err, FR_E_IO, "%s: not a regular file", f->path);
        } else if ((int64_t)sb.st_size != (int64_t)f->hl + f->data_bytes) {
            w->st = fr_fail(w->err, FR_E_IO, "%s: %lld bytes, expected %lld (not the file rank 0 laid out)", f->path,
                            (long long)sb.st_size, (long long)((int64_t)f->hl + f->data_bytes));
        } else if (!fr_io_pread_full(f->fd, got, f->hl, 0) || memcmp(got, f->hdr, f->hl) != 0) {
            w->st = fr_fail(w->err, FR_E_IO, "%s: header is not the one expected (not the file rank 0 laid out)",
                            f->path);
        } else if (f->slot < 0) {
            f->slot = fr_cleanup_add_file(f->path); /* the file rank 0 laid out: half-written until all agree */
        }
    }
}

/* This rank's rows of every output: the Q grid's part (forward; backward pass A), the KV grid's part (pass B),
 * and the WHOLE tensors on rank 0. */
static void write_part(writer *w, int rank, int size) {
    fr_golden_part part = {rank, size};
    for (int g = 0; g < 2 && w->st == FR_OK; g++) {
        w->grid = g ? FR_GOLDEN_GRID_KV : FR_GOLDEN_GRID_Q;
        int rc = fr_golden_part_rows(w->pb, w->grid, &part, on_rows, w);
        if (rc > 0 && w->st == FR_OK) w->st = fr_fail(w->err, (fr_status)rc, "dist: cannot walk the task grid");
    }
    for (int k = 0; k < w->nf; k++) {
        if (w->f[k].kind == WHOLE && rank == 0) add_run(w, &w->f[k], 0, fr_tensor_numel(w->f[k].t));
        flush(w, &w->f[k]);
    }
}

static int64_t file_bytes(const fr_case_outputs *o) {
    int64_t n = 0;
    for (int k = 0; k < FR_CASE_NUM_OUTPUTS; k++) {
        const fr_tensor *t = fr_case_output_cslot(o, (fr_case_output)k);
        char hb[FR_NPY_HEADER_MAX];
        size_t hl;
        int64_t db;
        if (fr_tensor_present(t) && fr_npy_header_bytes(t, 0, hb, &hl, &db, "npy", NULL) == FR_OK)
            n += (int64_t)hl + db;
    }
    return n;
}

/* The whole computation on rank 0 (one process, or an engine without a part grid), which writes every file. */
static fr_status run_on_rank0(const fr_dist *d, const fr_case *c, fr_case_outputs *o, const fr_engine *e,
                              const char *dir, int64_t *written, fr_error *err) {
    fr_status st = FR_OK;
    if (d->rank == 0) {
        st = c->op == FR_CASE_FWD ? fr_fwd(&c->params, &c->in.fwd, &o->fwd, e, err)
                                  : fr_bwd(&c->params, &c->in, &o->bwd, e, err);
        if (st == FR_OK) st = fr_case_write_outputs(dir, o, err);
        if (st == FR_OK && written) *written = file_bytes(o);
    }
    return fr_dist_agree(d, st, err);
}

fr_status fr_dist_run_to_dir(const fr_dist *d, const fr_case *c, fr_case_outputs *o, const fr_engine *e,
                             const char *dir, int64_t *written, fr_error *err) {
    if (written) *written = 0;
    fr_error_clear(err);
    fr_status st = FR_OK;
    if (!d || !c || !o || !e || !dir) st = fr_fail(err, FR_E_NULL, "dist: NULL argument");
    else if (o->op != c->op) st = fr_fail(err, FR_E_INVALID_ARG, "dist: the outputs are not the case's operation");
    if (!d) return st;
    if (d->size <= 1) return st != FR_OK ? st : run_on_rank0(d, c, o, e, dir, written, err);
    if (st == FR_OK && e->kind != FR_ENGINE_GOLDEN) return run_on_rank0(d, c, o, e, dir, written, err);

    /* Each rank computes its part of the grid into its own full-size outputs (fr_dist_fwd without the merge). */
    fr_problem pb;
    fr_golden_part part = {d->rank, d->size};
    if (st == FR_OK) st = fr_engine_ready(true, e, err); /* as fr_fwd / fr_bwd (one process) check */
    if (st == FR_OK) {
        if (c->op == FR_CASE_FWD) {
            if ((st = fr_problem_from_fwd(&c->params, &c->in.fwd, &pb, err)) == FR_OK &&
                (st = fr_check_fwd_outputs(&pb, &c->params, &o->fwd, err)) == FR_OK)
                st = fr_golden_fwd_part(&pb, &c->params, &c->in.fwd, &o->fwd, e, &part, err);
        } else {
            if ((st = fr_problem_from_bwd(&c->params, &c->in, &pb, err)) == FR_OK &&
                (st = fr_check_bwd_outputs(&pb, &c->params, &o->bwd, err)) == FR_OK)
                st = fr_golden_bwd_part(&pb, &c->params, &c->in, &o->bwd, e, &part, err);
        }
    }
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) return st;

    writer w;
    memset(&w, 0, sizeof w);
    w.pb = &pb, w.sl = c->params.softmax_layout, w.err = err;
    w.st = plan(&w, c, o, dir, err);
    if (w.st == FR_OK && d->rank == 0 && (w.st = fr_io_mkdir(dir, err)) == FR_OK) create_files(&w);
    /* The barrier between laying out and writing: nobody opens a file before rank 0 has made it. */
    w.st = fr_dist_agree(d, w.st, err);
    /* Agreed already (the same on every rank): agreeing again on it would name rank 0 as the one that failed,
     * on every rank but 0, the failing one too. */
    const bool agreed = w.st != FR_OK;
    if (w.st == FR_OK) open_files(&w);
    if (w.st == FR_OK) write_part(&w, d->rank, d->size);
    close_all(&w);
    st = agreed ? w.st : fr_dist_agree(d, w.st, err);
    for (int k = 0; k < w.nf; k++) {
        if (st != FR_OK && w.f[k].made) unlink(w.f[k].path);
        fr_cleanup_drop(w.f[k].slot);
        free(w.f[k].path);
    }
    if (written) *written = w.bytes;
    return st;
}
