/* fr_engine.progress (flashref.h; issue 28 row 14: `flashref run` at S = 200000 was silent for 16 minutes): every
 * engine (golden, fast, emulate), forward and backward, on 3 threads, reports done = 0 first, never goes back,
 * ends at done = total > 0, calls only on the calling thread, and gives the same outputs as without a callback
 * (bitwise). A NULL callback (the default) is never called. */
#include "common/check.h"
#include "kt_harness.h"

#include <pthread.h>

typedef struct rec {
    pthread_t caller;
    int calls, wrong_thread, backwards;
    int64_t first, last, total;
} rec;

static void on_progress(void *ud, int64_t done, int64_t total) {
    rec *r = ud;
    if (!pthread_equal(pthread_self(), r->caller)) r->wrong_thread++;
    if (r->calls == 0) r->first = done;
    else if (done < r->last || total != r->total) r->backwards++;
    r->last = done, r->total = total, r->calls++;
}

static bool same(const fr_tensor *a, const fr_tensor *b) {
    if (!fr_tensor_present(a)) return !fr_tensor_present(b);
    return memcmp(a->data, b->data, (size_t)kt_numel(a) * fr_dtype_size(a->dtype)) == 0;
}

int main(void) {
    kt_case cs[2];
    int n = 0;
    KT_ADD(cs, n, k_->name = "causal fp32", k_->S1 = 300, k_->S2 = 260, k_->mask = true, k_->sparse_mode = 3,
           k_->sink = true);
    KT_ADD(cs, n, k_->name = "bf16 GQA", k_->dt = FR_BF16, k_->N1 = 4, k_->N2 = 2, k_->S1 = 130, k_->S2 = 400);
    for (int ci = 0; ci < n; ci++) {
        kt_prob P;
        kt_build(&P, &cs[ci], 20261203u + (uint64_t)ci);
        for (int kind = 0; kind < 3; kind++) {
            fr_engine e = fr_engine_default((fr_engine_kind)kind);
            e.num_threads = 3;
            fr_error err;
            fr_fwd_outputs plain = kt_outputs(&P, cs[ci].dt), with = kt_outputs(&P, cs[ci].dt);
            CHECK(fr_fwd(&P.p, &P.in, &plain, &e, &err) == FR_OK, "%s", err.msg);
            rec r = {pthread_self(), 0, 0, 0, -1, -1, -1};
            e.progress = on_progress, e.progress_ud = &r;
            CHECK(fr_fwd(&P.p, &P.in, &with, &e, &err) == FR_OK, "%s", err.msg);
            CHECK(r.calls >= 2 && r.first == 0 && r.last == r.total && r.total > 0 && !r.backwards && !r.wrong_thread,
                  "[%s %s fwd] calls %d first %lld last %lld total %lld backwards %d other threads %d", cs[ci].name,
                  fr_engine_name(e.kind), r.calls, (long long)r.first, (long long)r.last, (long long)r.total,
                  r.backwards, r.wrong_thread);
            CHECK(same(&plain.attention_out, &with.attention_out) && same(&plain.softmax_sum, &with.softmax_sum),
                  "[%s %s fwd] the outputs changed with a progress callback", cs[ci].name, fr_engine_name(e.kind));
            printf("  %-12s %-8s fwd: %d reports, %lld units\n", cs[ci].name, fr_engine_name(e.kind), r.calls,
                   (long long)r.total);
            /* backward from the forward's outputs */
            fr_bwd_inputs bi = kt_bwd_inputs(&P, &plain, 7);
            fr_bwd_outputs g0 = kt_grads(&P, cs[ci].dt), g1 = kt_grads(&P, cs[ci].dt);
            e.progress = NULL;
            CHECK(fr_bwd(&P.p, &bi, &g0, &e, &err) == FR_OK, "%s", err.msg);
            rec rb = {pthread_self(), 0, 0, 0, -1, -1, -1};
            e.progress = on_progress, e.progress_ud = &rb;
            CHECK(fr_bwd(&P.p, &bi, &g1, &e, &err) == FR_OK, "%s", err.msg);
            CHECK(rb.calls >= 2 && rb.first == 0 && rb.last == rb.total && rb.total > 0 && !rb.backwards &&
                      !rb.wrong_thread,
                  "[%s %s bwd] calls %d first %lld last %lld total %lld backwards %d other threads %d", cs[ci].name,
                  fr_engine_name(e.kind), rb.calls, (long long)rb.first, (long long)rb.last, (long long)rb.total,
                  rb.backwards, rb.wrong_thread);
            CHECK(same(&g0.dq, &g1.dq) && same(&g0.dk, &g1.dk) && same(&g0.dv, &g1.dv),
                  "[%s %s bwd] the gradients changed with a progress callback", cs[ci].name, fr_engine_name(e.kind));
            printf("  %-12s %-8s bwd: %d reports, %lld units\n", cs[ci].name, fr_engine_name(e.kind), rb.calls,
                   (long long)rb.total);
            kt_free_grads(&g0), kt_free_grads(&g1);
            free(bi.dy.data);
            kt_free_outputs(&plain), kt_free_outputs(&with);
        }
        kt_free_prob(&P);
    }
    return fr_test_exit("test_progress");
}
