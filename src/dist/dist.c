/* The distributed layer: MPI set-up and the split of one golden problem across ranks (dist.h). */
#include "dist/dist.h"

#include "core/core.h"
#include "core/problem.h"
#include "engine/engine.h"
#include "golden/golden_part.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

void fr_dist_init(int *argc, char ***argv, fr_dist *d) {
    d->rank = 0, d->size = 1, d->active = 0;
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE")) return;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(argc, argv) != MPI_SUCCESS) return;
    /* Errors come back as return codes (the library never aborts), not through MPI's default abort. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    d->active = !inited;
}

void fr_dist_finalize(fr_dist *d) {
    if (d->active) MPI_Finalize();
    d->active = 0;
}

int fr_dist_any(const fr_dist *d, int flag) {
    if (d->size <= 1) return flag != 0;
    int in = flag != 0, outv = 0;
    MPI_Allreduce(&in, &outv, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return outv;
}

int64_t fr_dist_sum(const fr_dist *d, int64_t v) {
    if (d->size <= 1) return v;
    long long in = v, outv = 0;
    MPI_Allreduce(&in, &outv, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return outv;
}

int64_t fr_dist_max(const fr_dist *d, int64_t v) {
    if (d->size <= 1) return v;
    long long in = v, outv = 0;
    MPI_Allreduce(&in, &outv, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return outv;
}

void fr_dist_barrier(const fr_dist *d) {
    if (d->size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

int fr_dist_merge_bytes(const fr_dist *d, void *buf, const void *base, size_t n) {
    if (d->size <= 1 || n == 0) return 0;
    unsigned char *b = buf;
    const unsigned char *o = base;
    for (size_t k = 0; k < n; k++) b[k] ^= o[k];
    const size_t chunk = (size_t)1 << 30; /* MPI counts are int */
    for (size_t off = 0; off < n; off += chunk) {
        int cnt = (int)(n - off < chunk ? n - off : chunk);
        int rc = d->rank == 0 ? MPI_Reduce(MPI_IN_PLACE, b + off, cnt, MPI_BYTE, MPI_BXOR, 0, MPI_COMM_WORLD)
                              : MPI_Reduce(b + off, NULL, cnt, MPI_BYTE, MPI_BXOR, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return -1;
    }
    if (d->rank == 0)
        for (size_t k = 0; k < n; k++) b[k] ^= o[k];
    return 0;
}

/* Bytes from a tensor's data pointer to one past its last element (0 when absent or empty). */
static size_t span_bytes(const fr_tensor *t) {
    if (!fr_tensor_present(t) || fr_tensor_numel(t) == 0) return 0;
    int64_t last = 0;
    for (int k = 0; k < t->ndim; k++) last += (t->shape[k] - 1) * t->strides[k];
    return (size_t)(last + 1) * fr_dtype_size(t->dtype);
}

#define MAXT 8
typedef struct saved {
    const fr_tensor *t[MAXT];
    void *base[MAXT];
    size_t n[MAXT];
    int count;
} saved;

static fr_status save(saved *s, const fr_tensor *const *ts, int nt, fr_error *err) {
    s->count = 0;
    for (int k = 0; k < nt; k++) {
        size_t n = span_bytes(ts[k]);
        if (!n) continue;
        void *b = malloc(n);
        if (!b) return fr_fail(err, FR_E_NOMEM, "dist: cannot save %zu bytes of output", n);
        memcpy(b, ts[k]->data, n);
        s->t[s->count] = ts[k], s->base[s->count] = b, s->n[s->count] = n, s->count++;
    }
    return FR_OK;
}

static void release(saved *s) {
    for (int k = 0; k < s->count; k++) free(s->base[k]);
    s->count = 0;
}

/* Every rank's saved outputs made rank 0's bytes (collective): the merge applies each rank's changes to rank 0's
 * bytes, which gives a rank's values only where its outputs started as rank 0's did (a second call on the same
 * outputs, whose other ranks hold their part and the merge's leftovers, gave garbage rows on rank 0). */
static fr_status from_rank0(const fr_dist *d, saved *s, fr_error *err) {
    const size_t chunk = (size_t)1 << 30; /* MPI counts are int */
    for (int k = 0; k < s->count; k++) {
        unsigned char *b = s->t[k]->data;
        for (size_t off = 0; off < s->n[k]; off += chunk) {
            int cnt = (int)(s->n[k] - off < chunk ? s->n[k] - off : chunk);
            if (MPI_Bcast(b + off, cnt, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
                return fr_fail(err, FR_E_IO, "dist: MPI_Bcast failed while sharing rank 0's outputs");
        }
        if (d->rank != 0) memcpy(s->base[k], b, s->n[k]);
    }
    return FR_OK;
}

fr_status fr_dist_agree(const fr_dist *d, fr_status st, fr_error *err) {
    if (d->size <= 1) return st;
    int mine = st != FR_OK ? d->rank : d->size, first = 0;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == d->size) return FR_OK;
    int code = (int)st;
    MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
    if (first != d->rank) {
        fr_fail(err, (fr_status)code, "dist: rank %d of %d failed", first, d->size);
        return (fr_status)code;
    }
    return st;
}

static fr_status merge(const fr_dist *d, saved *s, fr_error *err) {
    int bad = 0;
    for (int k = 0; k < s->count; k++) bad |= fr_dist_merge_bytes(d, s->t[k]->data, s->base[k], s->n[k]) != 0;
    release(s);
    return bad ? fr_fail(err, FR_E_IO, "dist: MPI_Reduce failed while merging the outputs") : FR_OK;
}

/* Alike dist.c:fr_dist_bwd: kept apart because only the shape is alike: each checks and saves its own output struct
 * (3 forward outputs, 6 gradients) before running its own part entry. */
fr_status fr_dist_fwd(const fr_dist *d, const fr_params *p, const fr_fwd_inputs *in, const fr_fwd_outputs *out,
                      const fr_engine *e, fr_error *err) {
    if (d->size <= 1) return fr_fwd(p, in, out, e, err);
    fr_error_clear(err);
    fr_status st = FR_OK;
    if (!e || e->kind != FR_ENGINE_GOLDEN) { /* only the golden has a part grid: the others run whole on rank 0 */
        if (d->rank == 0) st = fr_fwd(p, in, out, e, err);
        return fr_dist_agree(d, st, err);
    }
    fr_problem pb;
    saved s = {0};
    st = fr_engine_ready(out != NULL, e, err); /* as fr_fwd checks */
    if (st == FR_OK) st = fr_problem_from_fwd(p, in, &pb, err);
    if (st == FR_OK) st = fr_check_fwd_outputs(&pb, p, out, err);
    const fr_tensor *ts[3] = {0};
    if (st == FR_OK) {
        ts[0] = &out->attention_out, ts[1] = &out->softmax_max, ts[2] = &out->softmax_sum;
        st = save(&s, ts, 3, err);
    }
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) {
        release(&s);
        return st;
    }
    st = from_rank0(d, &s, err);
    fr_golden_part part = {d->rank, d->size};
    if (st == FR_OK) st = fr_golden_fwd_part(&pb, p, in, out, e, &part, err);
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) {
        release(&s);
        return st;
    }
    return merge(d, &s, err);
}

/* Alike dist.c:fr_dist_fwd: kept apart because only the shape is alike (see there). */
fr_status fr_dist_bwd(const fr_dist *d, const fr_params *p, const fr_bwd_inputs *in, const fr_bwd_outputs *out,
                      const fr_engine *e, fr_error *err) {
    if (d->size <= 1) return fr_bwd(p, in, out, e, err);
    fr_error_clear(err);
    fr_status st = FR_OK;
    if (!e || e->kind != FR_ENGINE_GOLDEN) {
        if (d->rank == 0) st = fr_bwd(p, in, out, e, err);
        return fr_dist_agree(d, st, err);
    }
    fr_problem pb;
    saved s = {0};
    st = fr_engine_ready(out != NULL, e, err); /* as fr_bwd checks */
    if (st == FR_OK) st = fr_problem_from_bwd(p, in, &pb, err);
    if (st == FR_OK) st = fr_check_bwd_outputs(&pb, p, out, err);
    if (st == FR_OK) {
        const fr_tensor *ts[6] = {&out->dq, &out->dk, &out->dv, &out->dq_rope, &out->dk_rope, &out->dsink};
        st = save(&s, ts, 6, err);
    }
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) {
        release(&s);
        return st;
    }
    st = from_rank0(d, &s, err);
    fr_golden_part part = {d->rank, d->size};
    if (st == FR_OK) st = fr_golden_bwd_part(&pb, p, in, out, e, &part, err);
    if ((st = fr_dist_agree(d, st, err)) != FR_OK) {
        release(&s);
        return st;
    }
    return merge(d, &s, err);
}
