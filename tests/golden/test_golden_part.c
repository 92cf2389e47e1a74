/* The golden backward split into parts (golden_part.h) reads only the rows fr_golden_bwd_need names: each part of
 * R = 2, 3 is run on inputs whose other rows of q, q_rope, dy, attention_in and softmax max/sum are NaN (what src/dist
 * leaves unread: zeros there, NaN here so that a use shows), and the rows it owns (dq, dq_rope of its pass A blocks,
 * dk, dv, dk_rope of its pass B blocks, dsink on part 0) must be bit-identical to the whole backward's. Guards the
 * reader and the pre-pass disagreeing with the passes on which rows a part needs (GQA groups, batch edges, a sink). */
#include "common/check.h"
#include "core/problem.h"
#include "golden/golden_part.h"
#include "golden/gt_case.h"


/* A contiguous copy of t, every element NaN (fp32 / fp64 tensors). */
static fr_tensor nan_clone(const fr_tensor *t) {
    fr_tensor n = fr_tensor_make(t->dtype, NULL, t->ndim, t->shape);
    int64_t k = fr_tensor_numel(t);
    size_t es = fr_dtype_size(t->dtype);
    n.data = malloc((size_t)(k > 0 ? k : 1) * es);
    for (int64_t e = 0; e < k; e++) {
        if (t->dtype == FR_F32) ((float *)n.data)[e] = NAN;
        else ((double *)n.data)[e] = NAN;
    }
    return n;
}

typedef struct copier {
    const fr_problem *pb;
    fr_softmax_layout sl;
    const fr_tensor *src[4];
    fr_tensor *dst[4];
    int64_t D[4]; /* row width; 0: softmax (8 values) */
    int n;
} copier;

/* One query-grid task: its rows copied from the real inputs into the NaN clones. */
static int copy_rows(void *ud, const fr_golden_rows *g) {
    copier *cp = ud;
    for (int k = 0; k < cp->n; k++) {
        size_t es = fr_dtype_size(cp->src[k]->dtype);
        for (int64_t i = g->i0; i < g->i0 + g->n; i++) {
            int64_t o = cp->D[k] ? fr_layout_offset(cp->src[k], cp->pb->layout, cp->D[k], g->row0, g->b, g->head, i, 0)
                                 : fr_softmax_offset(cp->src[k], cp->pb->layout, cp->sl, g->row0, g->b, g->head, i, 0);
            int64_t w = cp->D[k] ? cp->D[k] : 8;
            memcpy((char *)cp->dst[k]->data + o * (int64_t)es, (const char *)cp->src[k]->data + o * (int64_t)es,
                   (size_t)w * es);
        }
    }
    return 0;
}

typedef struct cmp_rows {
    const fr_problem *pb;
    const fr_tensor *got[3], *want[3];
    int64_t D[3];
    int n;
    int64_t bad;
} cmp_rows;

static int compare_rows(void *ud, const fr_golden_rows *g) {
    cmp_rows *cr = ud;
    for (int k = 0; k < cr->n; k++)
        for (int64_t i = g->i0; i < g->i0 + g->n; i++) {
            int64_t o = fr_layout_offset(cr->want[k], cr->pb->layout, cr->D[k], g->row0, g->b, g->head, i, 0);
            cr->bad += memcmp((const double *)cr->got[k]->data + o, (const double *)cr->want[k]->data + o,
                              (size_t)cr->D[k] * sizeof(double)) != 0;
        }
    return 0;
}

static void check_parts(gt_case *c, const char *name) {
    fr_error err;
    fr_status st = gt_run_fwd(c, 1, &err);
    if (st == FR_OK) st = gt_run_bwd(c, 1, &err);
    CHECK(st == FR_OK, "%s: whole backward: %s: %s", name, fr_status_name(st), err.msg);
    if (st != FR_OK) return;
    fr_bwd_inputs bi;
    memset(&bi, 0, sizeof bi);
    bi.fwd = c->in, bi.dy = c->dy, bi.attention_in = c->ain, bi.softmax_max = c->smax, bi.softmax_sum = c->ssum;
    fr_problem pb;
    st = fr_problem_from_bwd(&c->p, &bi, &pb, &err);
    CHECK(st == FR_OK, "%s: problem: %s", name, err.msg);
    if (st != FR_OK) return;
    const fr_tensor *want[6] = {&c->dq, &c->dqr, &c->dk, &c->dv, &c->dkr, &c->dsink};
    int64_t checked = 0;
    for (int R = 2; R <= 3; R++)
        for (int rank = 0; rank < R; rank++) {
            fr_golden_part part = {rank, R};
            int64_t nn;
            int rc;
            unsigned char *need = fr_golden_bwd_need(&pb, &part, &nn, &rc);
            CHECK(need != NULL, "%s: need: %d", name, rc);
            if (!need) continue;
            /* The inputs as this part would hold them: q-side rows it does not need are NaN. */
            fr_bwd_inputs pi = bi;
            copier q = {&pb, c->p.softmax_layout, {0}, {0}, {0}, 0}, d = q;
            fr_tensor clone[6];
            fr_tensor *slot[6] = {&pi.fwd.query, &pi.fwd.query_rope, &pi.dy, &pi.attention_in, &pi.softmax_max,
                                  &pi.softmax_sum};
            const fr_tensor *orig[6] = {&bi.fwd.query, &bi.fwd.query_rope, &bi.dy, &bi.attention_in, &bi.softmax_max,
                                        &bi.softmax_sum};
            const int64_t width[6] = {pb.Dk, pb.Drope, pb.Dv, pb.Dv, 0, 0};
            int nc = 0;
            for (int k = 0; k < 6; k++) {
                if (!fr_tensor_present(slot[k])) continue;
                copier *cp = k < 2 ? &q : &d;
                clone[nc] = nan_clone(slot[k]);
                cp->src[cp->n] = orig[k], cp->dst[cp->n] = &clone[nc], cp->D[cp->n] = width[k], cp->n++;
                *slot[k] = clone[nc++];
            }
            fr_golden_need_rows(&pb, need, FR_GOLDEN_NEED_Q, copy_rows, &q);
            fr_golden_need_rows(&pb, need, FR_GOLDEN_NEED_D, copy_rows, &d);
            fr_tensor got[6];
            fr_bwd_outputs bo;
            memset(&bo, 0, sizeof bo);
            for (int k = 0; k < 6; k++) got[k] = fr_tensor_present(want[k]) ? nan_clone(want[k]) : *want[k];
            bo.dq = got[0], bo.dq_rope = got[1], bo.dk = got[2], bo.dv = got[3], bo.dk_rope = got[4];
            bo.dsink = got[5];
            fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
            e.num_threads = 2;
            st = fr_golden_bwd_part(&pb, &c->p, &pi, &bo, &e, &part, &err);
            CHECK(st == FR_OK, "%s: part %d of %d: %s: %s", name, rank, R, fr_status_name(st), err.msg);
            cmp_rows qa = {&pb, {&got[0], &got[1]}, {want[0], want[1]}, {pb.Dk, pb.Drope}, pb.Drope ? 2 : 1, 0};
            cmp_rows kb = {&pb, {&got[2], &got[3], &got[4]}, {want[2], want[3], want[4]}, {pb.Dk, pb.Dv, pb.Drope},
                           pb.Drope ? 3 : 2, 0};
            fr_golden_part_rows(&pb, FR_GOLDEN_GRID_Q, &part, compare_rows, &qa);
            fr_golden_part_rows(&pb, FR_GOLDEN_GRID_KV, &part, compare_rows, &kb);
            CHECK(qa.bad == 0 && kb.bad == 0, "%s: part %d of %d: %lld dq rows, %lld dk/dv rows differ from the "
                  "whole backward (a row outside the part's need was used)", name, rank, R, (long long)qa.bad,
                  (long long)kb.bad);
            if (rank == 0 && fr_tensor_present(want[5]))
                CHECK(memcmp(got[5].data, want[5]->data, (size_t)fr_tensor_numel(want[5]) * sizeof(double)) == 0,
                      "%s: part 0 of %d: dsink differs from the whole backward", name, R);
            checked += qa.bad == 0 && kb.bad == 0;
            for (int k = 0; k < nc; k++) free(clone[k].data);
            for (int k = 0; k < 6; k++)
                if (fr_tensor_present(want[k])) free(got[k].data);
            free(need);
        }
    printf("%s: %lld of 5 parts (R = 2, 3) on NaN outside their need: owned rows bit-identical to the whole "
           "backward\n", name, (long long)checked);
}

int main(int argc, char **argv) {
    uint64_t r = fr_test_seed(argc, argv, "test_golden_part");
    for (int v = 0; v < 2; v++) {
        gt_case c;
        gt_opts o;
        memset(&o, 0, sizeof o);
        if (v == 0) { /* GQA, rope, sink, causal: pass B spans the group's heads of a batch */
            gt_base_case(&c, FR_BSND, 2, 4, 2, 300, 200, 16, 16);
            c.Dr = 4;
            c.p.sparse_mode = FR_SPARSE_RIGHT_DOWN_CAUSAL;
            o.mask = 1, o.rope = 1, o.sink = 1;
        } else { /* TND with an empty batch and batches that end inside a block, no sink */
            gt_base_case(&c, FR_TND, 3, 3, 1, 0, 0, 8, 8);
            c.lq[0] = 130, c.lkv[0] = 70, c.lq[1] = 0, c.lkv[1] = 5, c.lq[2] = 260, c.lkv[2] = 140;
        }
        o.amp = 1.0;
        gt_make_inputs(&c, &o, &r);
        gt_make_outputs(&c, 1, &r);
        check_parts(&c, v == 0 ? "BSND GQA rope sink causal" : "TND empty batch");
        gt_case_free(&c);
    }
    return fr_test_exit("test_golden_part");
}
