/* The emulator's preset "fast-ip1" reproduces the fast engine's inner_precise = 1 pipeline (semantics-decisions.md
 * D17): on inputs where every sum is exact in fp32 (small integers, scale 1/4, every key row of a head the same, so a
 * row's scores are equal and p = exp(0) = 1 or 0: neither the exp nor the order of a sum can tell two pipelines
 * apart), what is left are the pipeline's roundings: 1 / l, P cast half away (forward), O / l, the output cast, and
 * in the backward P = invl, dS = P (dP o Z - D) in fp32, P o Z and dS cast nearest even to the input dtype, the
 * gradients' cast. There the fast engine (every variant this CPU runs) and the emulator with the preset must agree to
 * the bit in every output, forward and backward (bf16 and fp16, two-pass and fused backward, masks, dropout, GQA,
 * top-k). Controls, on the same inputs: the emulator without the dS/P cast (ds_dtype fp32) and the fast engine with
 * inner_precise 0 both differ from it (the test sees the rounding). On random inputs, where exp and summation order
 * differ, the fast engine and the preset agree to rel-L2 <= 2e-5 in fp32 gradient outputs (their roundings agree;
 * the unrounded pipeline is ~1e-3 away). */
#include "common/check.h"
#include "flashref_emulate.h"
#include "kt_harness.h"

static uint32_t mix(uint64_t e, uint32_t salt) {
    uint64_t z = e * 0x9e3779b97f4a7c15ull + salt;
    z ^= z >> 29, z *= 0xbf58476d1ce4e5b9ull, z ^= z >> 32;
    return (uint32_t)z;
}

/* Exact inputs (see the header): BNSD tensors filled by flat index. */
static void design(kt_prob *P) {
    const kt_case *c = &P->c;
    fr_tensor *q = &P->in.query, *k = &P->in.key, *v = &P->in.value;
    for (int64_t e = 0; e < kt_numel(q); e++) kt_put(q, e, (double)((int)(mix((uint64_t)e, 1) % 5) - 2));
    for (int64_t e = 0; e < kt_numel(k); e++) {
        int64_t d = e % c->Dk, h = (e / (c->Dk * P->pb.S2)) % c->N2;
        kt_put(k, e, (double)((d * 3 + h) % 5 - 2));
    }
    for (int64_t e = 0; e < kt_numel(v); e++) kt_put(v, e, (double)((int)(mix((uint64_t)e, 2) % 7) - 3));
}

static bool same(const fr_tensor *a, const fr_tensor *b) {
    if (!fr_tensor_present(a)) return true;
    return memcmp(a->data, b->data, (size_t)kt_numel(a) * fr_dtype_size(a->dtype)) == 0;
}

static bool grads_same(const fr_bwd_outputs *a, const fr_bwd_outputs *b) {
    return same(&a->dq, &b->dq) && same(&a->dk, &b->dk) && same(&a->dv, &b->dv);
}

static double rel(const fr_tensor *a, const fr_tensor *r) {
    double e2 = 0, r2 = 0;
    for (int64_t e = 0; e < kt_numel(a); e++) {
        double x = kt_get(a, e), y = kt_get(r, e);
        e2 += (x - y) * (x - y), r2 += y * y;
    }
    return r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
}

static double grads_rel(const fr_bwd_outputs *a, const fr_bwd_outputs *r) {
    return fmax(rel(&a->dq, &r->dq), fmax(rel(&a->dk, &r->dk), rel(&a->dv, &r->dv)));
}

static void run_case(const kt_case *c, uint64_t seed, bool designed) {
    kt_prob P;
    kt_build(&P, c, seed);
    if (designed) design(&P);
    P.p.inner_precise = 1;
    fr_numerics nc, nc_nods;
    fr_error err;
    if (!CHECKED(fr_numerics_preset("fast-ip1", &nc, &err) == FR_OK, "preset: %s", err.msg)) return;
    nc_nods = nc;
    nc_nods.ds_dtype = FR_F32;
    fr_fwd_outputs eo = kt_outputs(&P, c->dt);
    if (!CHECKED(fr_emulate_fwd_ex(&P.p, &P.in, &eo, &nc, NULL, 2, &err) == FR_OK, "[%s] emulator fwd: %s", c->name,
                 err.msg))
        return;
    /* the backward's inputs: the emulator's forward (the same bits as the fast one's where designed) and dy */
    fr_bwd_inputs bi = kt_bwd_inputs(&P, &eo, seed);
    if (designed)
        for (int64_t e = 0; e < kt_numel(&bi.dy); e++) kt_put(&bi.dy, e, (double)((int)(mix((uint64_t)e, 3) % 5) - 2));
    fr_dtype gdt = designed ? c->dt : FR_F32;
    fr_bwd_outputs eg = kt_grads(&P, gdt), en = kt_grads(&P, gdt);
    bool ok = CHECKED(fr_emulate_bwd_ex(&P.p, &bi, &eg, &nc, NULL, 2, &err) == FR_OK, "[%s] emulator bwd: %s",
                      c->name, err.msg) &&
              CHECKED(fr_emulate_bwd_ex(&P.p, &bi, &en, &nc_nods, NULL, 2, &err) == FR_OK, "[%s] emulator bwd: %s",
                      c->name, err.msg);
/* Alike test_kernels_bwd.c:check_inner_precise, test_kernels_bwd.c:run_case and test_kernels_fwd.c:run_case (their
 * variant loops): kept apart because each body checks something else (the fast engine against the emulator's preset
 * here); only the skip-a-missing-variant prologue is alike. */
#define FR_VARIANT(vname, visa, ...)                                                                                   \
    do {                                                                                                               \
        const fr_kops *ops = fr_kops_get(visa);                                                                        \
        if (!ops) {                                                                                                    \
            printf("  %-30s %-10s SKIPPED: this CPU lacks it\n", c->name, #vname);                                     \
            break;                                                                                                     \
        }                                                                                                              \
        fr_fwd_outputs fo = kt_outputs(&P, c->dt);                                                                     \
        fr_bwd_outputs fg = kt_grads(&P, gdt), f0 = kt_grads(&P, gdt);                                                 \
        fr_params p0 = P.p;                                                                                            \
        p0.inner_precise = 0;                                                                                          \
        bool run = ok && fr_k_fwd(ops, 2, &P.pb, &P.p, &P.in, &fo, &err) == FR_OK &&                                   \
                   fr_k_bwd(ops, 2, &P.pb, &P.p, &bi, &fg, &err) == FR_OK &&                                           \
                   fr_k_bwd(ops, 2, &P.pb, &p0, &bi, &f0, &err) == FR_OK;                                              \
        CHECK(run, "[%s %s] %s", c->name, #vname, err.msg);                                                            \
        if (run && designed) {                                                                                         \
            bool fs = same(&fo.attention_out, &eo.attention_out) && same(&fo.softmax_max, &eo.softmax_max) &&          \
                      same(&fo.softmax_sum, &eo.softmax_sum);                                                          \
            bool bs = grads_same(&fg, &eg), cn = !grads_same(&en, &eg), c0 = !grads_same(&f0, &eg);                   \
            printf("  %-30s %-10s fwd %s, bwd %s; controls: no dS cast %s, fast ip0 %s\n", c->name, #vname,            \
                   fs ? "bit-identical" : "DIFFERS", bs ? "bit-identical" : "DIFFERS", cn ? "differs" : "SAME",        \
                   c0 ? "differs" : "SAME");                                                                           \
            CHECK(fs && bs && cn && c0, "[%s %s] fast-ip1 preset vs fast engine", c->name, #vname);                    \
        } else if (run) {                                                                                              \
            double e1 = grads_rel(&fg, &eg), e0 = grads_rel(&fg, &en);                                                 \
            printf("  %-30s %-10s random: fp32 grads rel-L2 vs preset %.3g, vs preset without the cast %.3g\n",       \
                   c->name, #vname, e1, e0);                                                                           \
            CHECK(e1 <= 2e-5 && e0 >= 20 * e1, "[%s %s] fast-ip1 preset vs fast engine", c->name, #vname);            \
        }                                                                                                              \
        kt_free_outputs(&fo), kt_free_grads(&fg), kt_free_grads(&f0);                                                  \
    } while (0);
#include "core/variants.inc"
#undef FR_VARIANT
    kt_free_grads(&eg), kt_free_grads(&en), free(bi.dy.data);
    kt_free_outputs(&eo);
    kt_free_prob(&P);
}

int main(int argc, char **argv) {
    uint64_t seed = fr_test_seed(argc, argv, "test_kernels_emu_ip1");
    kt_case cs[12];
    int n = 0;
#define ADD(...) KT_ADD(cs, n, __VA_ARGS__)
    ADD(k_->name = "bf16 dense GQA two-pass", k_->dt = FR_BF16, k_->N1 = 2, k_->N2 = 1, k_->S1 = 70, k_->S2 = 150,
        k_->Dk = 16, k_->Dv = 16, k_->scale = 0.25);
    ADD(k_->name = "bf16 causal drop fused", k_->dt = FR_BF16, k_->B = 2, k_->N1 = 4, k_->N2 = 2, k_->S1 = 130,
        k_->S2 = 130, k_->Dk = 16, k_->Dv = 8, k_->mask = true, k_->sparse_mode = 2, k_->keep_prob = 0.5,
        k_->scale = 0.25);
    ADD(k_->name = "fp16 mode3 band", k_->dt = FR_F16, k_->S1 = 70, k_->S2 = 150, k_->Dk = 16, k_->Dv = 16,
        k_->mask = true, k_->sparse_mode = 3, k_->scale = 0.25);
    ADD(k_->name = "bf16 top-k W=40", k_->dt = FR_BF16, k_->S1 = 70, k_->S2 = 130, k_->Dk = 16, k_->Dv = 16, k_->W = 40,
        k_->scale = 0.25);
    int nd = n;
    ADD(k_->name = "random bf16 causal drop", k_->dt = FR_BF16, k_->B = 2, k_->N1 = 4, k_->N2 = 2, k_->S1 = 130,
        k_->S2 = 130, k_->Dk = 32, k_->Dv = 32, k_->mask = true, k_->sparse_mode = 2, k_->keep_prob = 0.8);
    ADD(k_->name = "random fp16 dense", k_->dt = FR_F16, k_->S1 = 70, k_->S2 = 150, k_->Dk = 32, k_->Dv = 32);
    for (int k = 0; k < n; k++) run_case(&cs[k], seed + (uint64_t)k, k < nd);
    return fr_test_exit("test_kernels_emu_ip1");
}
