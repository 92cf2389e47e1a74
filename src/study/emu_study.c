/* Numerics experiments on the emulator: the FA4 sparse-MLA order invariance and error vs sequence length. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "study/emu_study.h"

#include "core/core.h"
#include "core/rng.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ST_KV = 1, ST_KR, ST_Q, ST_QR, ST_DY, ST_TOPK, ST_ARR, ST_SEQ };

static uint16_t bf16_of(double v) { return fr_f32_to_bf16((float)v, FR_ROUND_NEAREST_EVEN, FR_SAT); }

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static fr_tensor tensor3(fr_dtype dt, void *data, int64_t a, int64_t b, int64_t c) {
    int64_t sh[3] = {a, b, c};
    return fr_tensor_make(dt, data, 3, sh);
}

static double sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void fr_mla_case_free(fr_mla_case *mc) {
    free(mc->in.query.data);
    free(mc->in.query_rope.data);
    free(mc->kbuf);
    free(mc->in.key_rope.data);
    free(mc->in.topk_indices.data);
    free(mc->dy.data);
    free(mc->keys);
    free(mc->nvalid);
    memset(mc, 0, sizeof *mc);
}

fr_status fr_mla_case_make(fr_mla_case *mc, int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr,
                           int64_t nkeys, double beta, uint64_t seed, fr_error *err) {
    memset(mc, 0, sizeof *mc);
    if (T < 1 || W < 1 || H < 1 || Dl < 1 || Dr < 0 || nkeys < 1 || nkeys > W)
        return fr_fail(err, FR_E_INVALID_ARG, "mla case: T %lld W %lld H %lld Dl %lld Dr %lld nkeys %lld",
                       (long long)T, (long long)W, (long long)H, (long long)Dl, (long long)Dr, (long long)nkeys);
    /* The top-k indices are int32; the largest buffers (fp64 copies of [T, H, Dl | Dr | 8]) must have a byte count. */
    if (T > INT32_MAX || W > INT32_MAX)
        return fr_fail(err, FR_E_INVALID_ARG, "mla case: T %lld W %lld beyond int32 key indices", (long long)T,
                       (long long)W);
    int64_t big = Dl > Dr ? Dl : Dr, bytes;
    if (!fr_mul_ok(T, H, &bytes) || !fr_mul_ok(bytes, big > 8 ? big : 8, &bytes) || !fr_mul_ok(bytes, 8, &bytes) ||
        !fr_mul_ok(T, W, &bytes) || !fr_mul_ok(bytes, 4, &bytes))
        return fr_fail(err, FR_E_OVERFLOW, "mla case: T %lld W %lld H %lld D %lld: sizes overflow", (long long)T,
                       (long long)W, (long long)H, (long long)big);
    mc->T = T, mc->W = W, mc->H = H, mc->Dl = Dl, mc->Dr = Dr, mc->nkeys = nkeys;
    uint16_t *q = malloc(sizeof(uint16_t) * (size_t)(T * H * Dl));
    uint16_t *qr = malloc(sizeof(uint16_t) * (size_t)(T * H * (Dr ? Dr : 1)));
    uint16_t *kv = malloc(sizeof(uint16_t) * (size_t)(T * Dl));
    uint16_t *kr = malloc(sizeof(uint16_t) * (size_t)(T * (Dr ? Dr : 1)));
    uint16_t *dy = malloc(sizeof(uint16_t) * (size_t)(T * H * Dl));
    int32_t *tk = malloc(sizeof(int32_t) * (size_t)(T * W));
    mc->keys = malloc(sizeof(int32_t) * (size_t)(T * nkeys));
    mc->nvalid = malloc(sizeof(int64_t) * (size_t)T);
    uint8_t *used = calloc((size_t)T, 1);
    mc->kbuf = kv;
    mc->in.query.data = q, mc->in.query_rope.data = qr, mc->in.key_rope.data = kr, mc->in.topk_indices.data = tk;
    mc->dy.data = dy;
    if (!q || !qr || !kv || !kr || !dy || !tk || !mc->keys || !mc->nvalid || !used) {
        free(used);
        fr_mla_case_free(mc);
        return fr_fail(err, FR_E_NOMEM, "mla case: inputs for T %lld H %lld", (long long)T, (long long)H);
    }
    /* Inputs: N(0,1) in bf16; peaked rows: q_t += beta k_t (rope), qv_t += beta v_t (latent). */
    for (int64_t t = 0; t < T; t++) {
        for (int64_t d = 0; d < Dl; d++) kv[t * Dl + d] = bf16_of(fr_rng_normal01(seed, ST_KV, (uint64_t)(t * Dl + d)));
        for (int64_t d = 0; d < Dr; d++) kr[t * Dr + d] = bf16_of(fr_rng_normal01(seed, ST_KR, (uint64_t)(t * Dr + d)));
        for (int64_t h = 0; h < H; h++) {
            for (int64_t d = 0; d < Dl; d++) {
                int64_t n = (t * H + h) * Dl + d;
                double v = fr_rng_normal01(seed, ST_Q, (uint64_t)n) + beta * fr_bf16_to_f32(kv[t * Dl + d]);
                q[n] = bf16_of(v);
                dy[n] = bf16_of(fr_rng_normal01(seed, ST_DY, (uint64_t)n));
            }
            for (int64_t d = 0; d < Dr; d++) {
                int64_t n = (t * H + h) * Dr + d;
                qr[n] = bf16_of(fr_rng_normal01(seed, ST_QR, (uint64_t)n) + beta * fr_bf16_to_f32(kr[t * Dr + d]));
            }
        }
    }
    /* Causal key sets: self plus min(nkeys, t + 1) - 1 distinct earlier keys (Floyd's sampling), ascending. */
    uint64_t draw = 0;
    for (int64_t t = 0; t < T; t++) {
        int32_t *ks = mc->keys + t * nkeys;
        int64_t nk = nkeys < t + 1 ? nkeys : t + 1, m = nk - 1, c = 0;
        for (int64_t j = t - m; j < t; j++) {
            int64_t r = (int64_t)(fr_rng_uniform01(seed, ST_TOPK, draw++) * (double)(j + 1));
            if (r > j) r = j;
            int64_t pick = used[r] ? j : r;
            used[pick] = 1;
            ks[1 + c++] = (int32_t)pick;
        }
        for (int64_t k = 1; k <= c; k++) used[ks[k]] = 0;
        qsort(ks + 1, (size_t)c, sizeof(int32_t), cmp_i32);
        ks[0] = (int32_t)t;
        for (int64_t k = nk; k < nkeys; k++) ks[k] = -1;
        mc->nvalid[t] = nk;
    }
    free(used);
    mc->cu[0] = T;
    mc->p = fr_params_default();
    mc->p.head_num = H;
    mc->p.input_layout = FR_TND;
    mc->p.scale_value = 1.0 / sqrt((double)(Dl + Dr));
    mc->p.actual_seq_qlen = mc->cu;
    mc->p.actual_seq_kvlen = mc->cu;
    mc->p.actual_seq_len = 1;
    mc->in.query = tensor3(FR_BF16, q, T, H, Dl);
    mc->in.key = tensor3(FR_BF16, kv, T, 1, Dl);
    mc->in.value = tensor3(FR_BF16, kv, T, 1, Dl); /* key == value latent */
    if (Dr) {
        mc->in.query_rope = tensor3(FR_BF16, qr, T, H, Dr);
        mc->in.key_rope = tensor3(FR_BF16, kr, T, 1, Dr);
    } else {
        mc->in.query_rope.data = NULL, mc->in.key_rope.data = NULL;
        free(qr), free(kr);
    }
    int64_t sh2[2] = {T, W};
    mc->in.topk_indices = fr_tensor_make(FR_I32, tk, 2, sh2);
    mc->dy = tensor3(FR_BF16, dy, T, H, Dl);
    fr_mla_case_arrange(mc, FR_MLA_SELF_SLOT0, 0);
    return FR_OK;
}

void fr_mla_case_invalidate_rows(fr_mla_case *mc, int64_t every) {
    if (every <= 0) return;
    for (int64_t t = 0; t < mc->T; t++)
        if (t % every == every - 1) {
            mc->nvalid[t] = 0;
            for (int64_t k = 0; k < mc->nkeys; k++) mc->keys[t * mc->nkeys + k] = -1;
        }
}

void fr_mla_case_arrange(fr_mla_case *mc, fr_mla_order order, uint64_t arg) {
    int32_t *tk = mc->in.topk_indices.data;
    const int64_t W = mc->W;
    uint64_t draw = 0;
    for (int64_t t = 0; t < mc->T; t++) {
        const int32_t *ks = mc->keys + t * mc->nkeys;
        int32_t *s = tk + t * W;
        int64_t nv = mc->nvalid[t];
        for (int64_t k = 0; k < W; k++) s[k] = -1;
        if (nv == 0) continue;
        switch (order) {
        case FR_MLA_SELF_SLOT0:
            for (int64_t k = 0; k < nv; k++) s[k] = ks[k];
            break;
        case FR_MLA_SELF_LAST:
            for (int64_t k = 1; k < nv; k++) s[k - 1] = ks[k];
            s[nv - 1] = ks[0];
            break;
        case FR_MLA_SELF_AT: {
            int64_t at = (int64_t)arg < nv - 1 ? (int64_t)arg : nv - 1, o = 1;
            for (int64_t k = 0; k < nv; k++) s[k] = k == at ? ks[0] : ks[o++];
            break;
        }
        case FR_MLA_RANDOM:
        case FR_MLA_SCATTER: {
            for (int64_t k = 0; k < nv; k++) s[k] = ks[k];
            for (int64_t k = nv - 1; k > 0; k--) { /* Fisher-Yates */
                int64_t r = (int64_t)(fr_rng_uniform01(arg, ST_ARR, draw++) * (double)(k + 1));
                if (r > k) r = k;
                int32_t tmp = s[k];
                s[k] = s[r];
                s[r] = tmp;
            }
            if (order == FR_MLA_SCATTER && nv < W) { /* move the keys to random slots, keeping their order */
                int64_t left = nv;
                for (int64_t k = W - 1; k >= 0; k--) {
                    /* slot k holds a key with probability left / (k + 1): a uniform choice of nv slots */
                    double u = fr_rng_uniform01(arg, ST_ARR, draw++);
                    if (left > 0 && u * (double)(k + 1) < (double)left) {
                        s[k] = s[left - 1];
                        left--;
                    } else {
                        s[k] = -1;
                    }
                    if (left == k + 1) break; /* the rest stay where they are */
                }
            }
            break;
        }
        }
    }
}

fr_mla_order fr_mla_order_for(const fr_numerics *nc, bool first) {
    bool reverse = nc && nc->order == FR_EMU_ORDER_REVERSE;
    return first != reverse ? FR_MLA_SELF_SLOT0 : FR_MLA_SELF_LAST;
}

void fr_mla_run_free(fr_mla_run *r) {
    free(r->t_out.data), free(r->t_olo.data), free(r->t_m.data), free(r->t_l.data);
    free(r->out), free(r->olo), free(r->m), free(r->l);
    free(r->dq), free(r->dqr), free(r->dk), free(r->dv), free(r->dkr);
    memset(r, 0, sizeof *r);
}

/* fp64 copy of a contiguous tensor. */
static double *to_f64(const fr_tensor *t, int64_t n) {
    double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (d)
        for (int64_t k = 0; k < n; k++) d[k] = fr_load_f64(t, k);
    return d;
}

fr_status fr_mla_fwd(const fr_mla_case *mc, const fr_numerics *nc, int threads, fr_mla_run *r, fr_error *err) {
    memset(r, 0, sizeof *r);
    r->nc = nc;
    const int64_t T = mc->T, H = mc->H, Dl = mc->Dl, n = T * H * Dl;
    fr_dtype odt = nc ? FR_BF16 : FR_F64, sdt = nc ? FR_F32 : FR_F64;
    r->t_out = tensor3(odt, malloc(fr_dtype_size(odt) * (size_t)n), T, H, Dl);
    r->t_olo = tensor3(FR_F32, malloc(sizeof(float) * (size_t)n), T, H, Dl);
    r->t_m = tensor3(sdt, malloc(fr_dtype_size(sdt) * (size_t)(H * T * 8)), H, T, 8);
    r->t_l = tensor3(sdt, malloc(fr_dtype_size(sdt) * (size_t)(H * T * 8)), H, T, 8);
    if (!r->t_out.data || !r->t_olo.data || !r->t_m.data || !r->t_l.data) {
        fr_mla_run_free(r);
        return fr_fail(err, FR_E_NOMEM, "mla run: outputs");
    }
    fr_fwd_outputs o = {r->t_out, r->t_m, r->t_l};
    fr_status st;
    if (nc) {
        st = fr_emulate_fwd_ex(&mc->p, &mc->in, &o, nc, &r->t_olo, threads, err);
    } else {
        fr_engine e = fr_engine_default(FR_ENGINE_GOLDEN);
        e.num_threads = threads;
        st = fr_fwd(&mc->p, &mc->in, &o, &e, err);
        memset(r->t_olo.data, 0, sizeof(float) * (size_t)n);
    }
    if (st != FR_OK) {
        fr_mla_run_free(r);
        return st;
    }
    r->out = to_f64(&r->t_out, n);
    r->olo = to_f64(&r->t_olo, n);
    r->m = malloc(sizeof(double) * (size_t)(T * H));
    r->l = malloc(sizeof(double) * (size_t)(T * H));
    if (!r->out || !r->olo || !r->m || !r->l) {
        fr_mla_run_free(r);
        return fr_fail(err, FR_E_NOMEM, "mla run: fp64 copies");
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) {
            r->m[t * H + h] = fr_load_f64(&r->t_m, (h * T + t) * 8);
            r->l[t * H + h] = fr_load_f64(&r->t_l, (h * T + t) * 8);
        }
    return FR_OK;
}

fr_status fr_mla_bwd(const fr_mla_case *mc, fr_emu_dpsum dpsum, int threads, fr_mla_run *r, fr_error *err) {
    const int64_t T = mc->T, H = mc->H, Dl = mc->Dl, Dr = mc->Dr;
    fr_numerics nc;
    fr_tensor ain = r->t_out, extra = {0}, tmp = {0};
    if (r->nc) {
        nc = *r->nc;
        nc.dpsum = dpsum;
        if (dpsum == FR_EMU_DPSUM_OUT_LO) extra = r->t_olo;
        if (dpsum == FR_EMU_DPSUM_F32) { /* fp32 O = bf16 O + o_lo, exactly */
            tmp = tensor3(FR_F32, malloc(sizeof(float) * (size_t)(T * H * Dl)), T, H, Dl);
            if (!tmp.data) return fr_fail(err, FR_E_NOMEM, "mla bwd: fp32 O");
            for (int64_t k = 0; k < T * H * Dl; k++) ((float *)tmp.data)[k] = (float)(r->out[k] + r->olo[k]);
            extra = tmp;
        }
    } else { /* the fp64 reference: D from the fp64 output; attention_in must be in the operator dtype */
        fr_numerics_preset("exact", &nc, NULL);
        nc.dpsum = FR_EMU_DPSUM_F32;
        extra = r->t_out;
        tmp = tensor3(FR_BF16, malloc(sizeof(uint16_t) * (size_t)(T * H * Dl)), T, H, Dl);
        if (!tmp.data) return fr_fail(err, FR_E_NOMEM, "mla bwd: bf16 O");
        for (int64_t k = 0; k < T * H * Dl; k++) ((uint16_t *)tmp.data)[k] = bf16_of(r->out[k]);
        ain = tmp;
    }
    fr_dtype gdt = r->nc ? FR_BF16 : FR_F64;
    size_t es = fr_dtype_size(gdt);
    fr_bwd_outputs bo;
    memset(&bo, 0, sizeof bo);
    bo.dq = tensor3(gdt, malloc(es * (size_t)(T * H * Dl)), T, H, Dl);
    bo.dk = tensor3(gdt, malloc(es * (size_t)(T * Dl)), T, 1, Dl);
    bo.dv = tensor3(gdt, malloc(es * (size_t)(T * Dl)), T, 1, Dl);
    if (Dr) {
        bo.dq_rope = tensor3(gdt, malloc(es * (size_t)(T * H * Dr)), T, H, Dr);
        bo.dk_rope = tensor3(gdt, malloc(es * (size_t)(T * Dr)), T, 1, Dr);
    }
    fr_status st = FR_OK;
    if (!bo.dq.data || !bo.dk.data || !bo.dv.data || (Dr && (!bo.dq_rope.data || !bo.dk_rope.data)))
        st = fr_fail(err, FR_E_NOMEM, "mla bwd: gradients");
    if (st == FR_OK) {
        fr_bwd_inputs bi;
        memset(&bi, 0, sizeof bi);
        bi.fwd = mc->in;
        bi.dy = mc->dy;
        bi.attention_in = ain;
        bi.softmax_max = r->t_m;
        bi.softmax_sum = r->t_l;
        st = fr_emulate_bwd_ex(&mc->p, &bi, &bo, &nc, &extra, threads, err);
    }
    if (st == FR_OK) {
        free(r->dq), free(r->dqr), free(r->dk), free(r->dv), free(r->dkr);
        r->dq = to_f64(&bo.dq, T * H * Dl);
        r->dk = to_f64(&bo.dk, T * Dl);
        r->dv = to_f64(&bo.dv, T * Dl);
        r->dqr = Dr ? to_f64(&bo.dq_rope, T * H * Dr) : NULL;
        r->dkr = Dr ? to_f64(&bo.dk_rope, T * Dr) : NULL;
        if (!r->dq || !r->dk || !r->dv || (Dr && (!r->dqr || !r->dkr)))
            st = fr_fail(err, FR_E_NOMEM, "mla bwd: fp64 copies");
    }
    free(bo.dq.data), free(bo.dk.data), free(bo.dv.data), free(bo.dq_rope.data), free(bo.dk_rope.data);
    free(tmp.data);
    return st;
}

static double rel_l2(const double *a, const double *r, int64_t rows, int64_t len) {
    fr_metrics m;
    if (fr_metrics_compute(a, r, rows, len, NULL, &m, NULL) != FR_OK) return NAN;
    return m.rel_l2;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

fr_status fr_study_order_invariance(int64_t T, int64_t W, int64_t H, int64_t Dl, int64_t Dr, double beta,
                                    uint64_t seed, double lazy_threshold, bool bwd, int threads, fr_oi_result *res,
                                    fr_error *err) {
    memset(res, 0, sizeof *res);
    double t0 = sec();
    res->T = T, res->W = W, res->H = H, res->Dl = Dl, res->Dr = Dr, res->beta = beta;
    fr_mla_case mc;
    fr_status st = fr_mla_case_make(&mc, T, W, H, Dl, Dr, W, beta, seed, err);
    if (st != FR_OK) return st;
    fr_mla_run ref, run;
    memset(&run, 0, sizeof run);
    if ((st = fr_mla_fwd(&mc, NULL, threads, &ref, err)) != FR_OK) {
        fr_mla_case_free(&mc);
        return st;
    }
    if (bwd && (st = fr_mla_bwd(&mc, FR_EMU_DPSUM_F32, threads, &ref, err)) != FR_OK) goto done;
    const int64_t rows = T * H, n = rows * Dl;
    double *tmp = malloc(sizeof(double) * (size_t)(n > rows ? n : rows));
    double *outs[2] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    if (!tmp || !outs[0] || !outs[1]) {
        free(tmp), free(outs[0]), free(outs[1]);
        st = fr_fail(err, FR_E_NOMEM, "order invariance: scratch");
        goto done;
    }
    /* The bf16 output floor and the dominant key's weight. */
    fr_metrics m;
    for (int64_t k = 0; k < n; k++) tmp[k] = fr_bf16_to_f32(bf16_of(ref.out[k]));
    fr_metrics_compute(tmp, ref.out, rows, Dl, NULL, &m, NULL);
    res->bf16_floor_rel_l2 = m.rel_l2;
    res->bf16_floor_gain = m.gain_rms;
    {
        const double sc = (double)(float)mc.p.scale_value;
        const uint16_t *q = mc.in.query.data, *qr = mc.in.query_rope.data, *kv = mc.kbuf,
                       *kr = mc.in.key_rope.data;
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < H; h++) {
                double s = 0;
                for (int64_t d = 0; d < Dl; d++)
                    s += (double)fr_bf16_to_f32(q[(t * H + h) * Dl + d]) * fr_bf16_to_f32(kv[t * Dl + d]);
                for (int64_t d = 0; d < Dr; d++)
                    s += (double)fr_bf16_to_f32(qr[(t * H + h) * Dr + d]) * fr_bf16_to_f32(kr[t * Dr + d]);
                tmp[t * H + h] = exp(s * sc - ref.m[t * H + h]) / ref.l[t * H + h];
            }
        qsort(tmp, (size_t)rows, sizeof(double), cmp_d);
        res->self_weight_p50 = tmp[rows / 2];
        res->self_weight_p90 = tmp[(rows * 9) / 10];
    }
    for (int cfg = 0; cfg < 3; cfg++) {
        fr_numerics nc;
        fr_numerics_preset("fa4-sm100-fwd-inference", &nc, NULL);
        fr_oi_row *row = &res->rows[cfg];
        if (cfg == 0) {
            nc.rescale_threshold = lazy_threshold;
            snprintf(row->label, sizeof row->label, "lazy-%g", lazy_threshold);
        } else if (cfg == 1) {
            nc.rescale_threshold = 0.0;
            snprintf(row->label, sizeof row->label, "exact-0");
        } else {
            nc.rescale_threshold = lazy_threshold;
            nc.rowsum = FR_EMU_ROWSUM_ROUNDED;
            snprintf(row->label, sizeof row->label, "rowsum-rounded-%g", lazy_threshold);
        }
        for (int first = 1; first >= 0; first--) {
            int o = first ? 0 : 1;
            fr_mla_case_arrange(&mc, fr_mla_order_for(&nc, first), 0);
            if ((st = fr_mla_fwd(&mc, &nc, threads, &run, err)) != FR_OK) goto done2;
            fr_metrics_compute(run.out, ref.out, rows, Dl, NULL, &m, NULL);
            row->out_rel_l2[o] = m.rel_l2;
            row->gain_rms[o] = m.gain_rms;
            memcpy(outs[o], run.out, sizeof(double) * (size_t)n);
            if (bwd)
                for (int fix = 0; fix < 2; fix++) {
                    st = fr_mla_bwd(&mc, fix ? FR_EMU_DPSUM_OUT_LO : FR_EMU_DPSUM_OUT, threads, &run, err);
                    if (st != FR_OK) goto done2;
                    row->dq[o][fix] = rel_l2(run.dq, ref.dq, rows, Dl);
                    row->dk[o][fix] = rel_l2(run.dk, ref.dk, T, Dl);
                    row->dv[o][fix] = rel_l2(run.dv, ref.dv, T, Dl);
                }
            fr_mla_run_free(&run);
        }
        fr_metrics_compute(outs[1], outs[0], rows, Dl, NULL, &m, NULL);
        row->diff_rel_l2 = m.rel_l2;
        row->diff_gain_rms = m.gain_rms;
        row->diff_noise_floor = m.noise_floor;
        row->diff_gain_over_floor = m.gain_over_floor;
    }
done2:
    fr_mla_run_free(&run);
    free(tmp), free(outs[0]), free(outs[1]);
done:
    fr_mla_run_free(&ref);
    fr_mla_case_free(&mc);
    res->seconds = sec() - t0;
    return st;
}

/* ------------------------------------------------------------------------------------------------------------ */

fr_status fr_study_seqlen(const int64_t *lens, int nlens, int64_t S1, int64_t D, uint64_t seed, int threads,
                          fr_seqlen_result *res, fr_error *err) {
    memset(res, 0, sizeof *res);
    double t0 = sec();
    if (!lens || nlens < 1 || nlens > FR_SEQLEN_MAX_LENS || S1 < 1 || D < 1)
        return fr_fail(err, FR_E_INVALID_ARG, "seqlen study: %d lengths, S1 %lld, D %lld", nlens, (long long)S1,
                       (long long)D);
    for (int li = 0; li < nlens; li++) { /* a length < 1 has no keys to study; the buffers' byte counts must exist */
        int64_t bytes, rows = lens[li] > S1 ? lens[li] : S1;
        if (lens[li] < 1)
            return fr_fail(err, FR_E_INVALID_ARG, "seqlen study: length %d is %lld (expected >= 1)", li,
                           (long long)lens[li]);
        if (!fr_mul_ok(rows, D > 8 ? D : 8, &bytes) || !fr_mul_ok(bytes, 8, &bytes))
            return fr_fail(err, FR_E_OVERFLOW, "seqlen study: S1 %lld, S2 %lld, D %lld: sizes overflow",
                           (long long)S1, (long long)lens[li], (long long)D);
    }
    /* pipelines: name, input dtype, preset base, threshold, acc_l */
    static const struct {
        const char *name;
        fr_dtype dt;
        double thr;
        fr_dtype acc_l;
    } pipes[] = {
        {"fp32 exact-max", FR_F32, 0, FR_F32},      {"fp32 lazy-8", FR_F32, 8, FR_F32},
        {"bf16 exact-max", FR_BF16, 0, FR_F32},     {"bf16 lazy-8", FR_BF16, 8, FR_F32},
        {"bf16 exact-max l:fp16", FR_BF16, 0, FR_F16}, {"fp16 exact-max", FR_F16, 0, FR_F32},
        {"fp16 lazy-8", FR_F16, 8, FR_F32},         {"fp16 exact-max l:fp16", FR_F16, 0, FR_F16},
        {"fp16 lazy-8 l:fp16", FR_F16, 8, FR_F16},
    };
    const int np = (int)(sizeof pipes / sizeof pipes[0]);
    res->npipes = np;
    res->nlens = nlens;
    for (int k = 0; k < np; k++) snprintf(res->pipe[k], sizeof res->pipe[k], "%s", pipes[k].name);
    fr_status st = FR_OK;
    for (int li = 0; li < nlens && st == FR_OK; li++) {
        const int64_t S2 = lens[li];
        res->len[li] = S2;
        /* fp64 master inputs N(0,1); each pipeline gets them rounded to its dtype; the reference (golden) takes
         * the same rounded values, so only the pipeline's arithmetic differs. */
        int64_t shq[4] = {1, 1, S1, D}, shk[4] = {1, 1, S2, D}, shs[4] = {1, 1, S1, 8};
        size_t nq = (size_t)(S1 * D), nk = (size_t)(S2 * D);
        float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
        void *qb = malloc(nq * 4), *kb = malloc(nk * 4), *vb = malloc(nk * 4), *ob = malloc(nq * 4);
        double *o64 = malloc(nq * 8), *m64 = malloc((size_t)S1 * 64), *l64 = malloc((size_t)S1 * 64);
        double *oe = malloc(nq * 8);
        float *me = malloc((size_t)S1 * 32), *le = malloc((size_t)S1 * 32);
        if (!q || !k || !v || !qb || !kb || !vb || !ob || !o64 || !m64 || !l64 || !oe || !me || !le) {
            st = fr_fail(err, FR_E_NOMEM, "seqlen study: buffers for S2 = %lld", (long long)S2);
        } else {
            fr_rng_normal_f32(q, (int64_t)nq, seed, ST_SEQ, 0, 0.0, 1.0);
            fr_rng_normal_f32(k, (int64_t)nk, seed, ST_SEQ + 1, 0, 0.0, 1.0);
            fr_rng_normal_f32(v, (int64_t)nk, seed, ST_SEQ + 2, 0, 0.0, 1.0);
        }
        fr_dtype cur = FR_DT_NONE;
        for (int pi = 0; pi < np && st == FR_OK; pi++) {
            fr_dtype dt = pipes[pi].dt;
            fr_params p = fr_params_default();
            p.head_num = 1;
            p.input_layout = FR_BNSD;
            p.scale_value = 1.0 / sqrt((double)D);
            fr_fwd_inputs in;
            memset(&in, 0, sizeof in);
            in.query = fr_tensor_make(dt, qb, 4, shq);
            in.key = fr_tensor_make(dt, kb, 4, shk);
            in.value = fr_tensor_make(dt, vb, 4, shk);
            if (dt != cur) { /* inputs in this dtype, and the fp64 reference on exactly those values */
                fr_convert_array(dt, qb, FR_F32, q, nq, FR_ROUND_NEAREST_EVEN, FR_SAT);
                fr_convert_array(dt, kb, FR_F32, k, nk, FR_ROUND_NEAREST_EVEN, FR_SAT);
                fr_convert_array(dt, vb, FR_F32, v, nk, FR_ROUND_NEAREST_EVEN, FR_SAT);
                fr_fwd_outputs ro = {fr_tensor_make(FR_F64, o64, 4, (int64_t[]){1, 1, S1, D}),
                                     fr_tensor_make(FR_F64, m64, 4, shs), fr_tensor_make(FR_F64, l64, 4, shs)};
                fr_engine ge = fr_engine_default(FR_ENGINE_GOLDEN);
                ge.num_threads = threads;
                if ((st = fr_fwd(&p, &in, &ro, &ge, err)) != FR_OK) break;
                cur = dt;
            }
            fr_numerics nc = fr_numerics_ideal(dt);
            nc.rescale_threshold = pipes[pi].thr;
            nc.exp_base = pipes[pi].thr > 0 ? FR_EMU_EXP_2 : FR_EMU_EXP_E;
            nc.acc_l = pipes[pi].acc_l;
            fr_fwd_outputs eo = {fr_tensor_make(dt, ob, 4, (int64_t[]){1, 1, S1, D}),
                                 fr_tensor_make(FR_F32, me, 4, shs), fr_tensor_make(FR_F32, le, 4, shs)};
            if ((st = fr_emulate_fwd_ex(&p, &in, &eo, &nc, NULL, threads, err)) != FR_OK) break;
            for (size_t e = 0; e < nq; e++) oe[e] = fr_load_f64(&eo.attention_out, (int64_t)e);
            fr_metrics m;
            fr_metrics_compute(oe, o64, S1, D, NULL, &m, NULL);
            res->rel_l2[pi][li] = m.rel_l2;
            res->gain_rms[pi][li] = m.gain_rms;
            res->nonfinite[pi][li] = m.n_anomaly_mismatch;
            double se = 0;
            for (int64_t i = 0; i < S1; i++) {
                /* compare l relative to the same reference max: l_emul * exp(m_emul - m_ref) vs l_ref */
                double lr = (double)le[i * 8] * exp((double)me[i * 8] - m64[i * 8]);
                double e = fabs(lr - l64[i * 8]) / l64[i * 8];
                if (!(e <= se)) se = e;
            }
            res->sum_rel[pi][li] = se;
        }
        free(q), free(k), free(v), free(qb), free(kb), free(vb), free(ob), free(o64), free(m64), free(l64);
        free(oe), free(me), free(le);
    }
    res->seconds = sec() - t0;
    return st;
}
