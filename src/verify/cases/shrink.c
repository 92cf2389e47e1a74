/* Shrinking a configuration (shrink.h): reduced one step at a time, features first (each switched off), then
 * batches, heads, head dims and lengths (halved, once keeping the length's residue mod 64 and once not); a step is
 * kept only while the caller's question still answers yes. Each candidate is validated (fr_gen_check) before it is
 * asked about, so a step never makes an invalid case. */
#include "verify/cases/shrink.h"

#include <stdio.h>
#include <string.h>

typedef bool (*reduce_fn)(fr_gen_spec *s);

static bool to_fwd(fr_gen_spec *s) { return s->bwd ? (s->bwd = false, true) : false; }
static bool no_dropout(fr_gen_spec *s) {
    return s->keep_prob > 0 && s->keep_prob < 1 ? (s->keep_prob = 0, true) : false;
}
static bool no_sink(fr_gen_spec *s) { return s->sink ? (s->sink = false, true) : false; }
static bool no_topk(fr_gen_spec *s) {
    if (!s->topk_w) return false;
    s->topk_w = 0, s->topk_per_kv_head = false;
    return true;
}
static bool no_pse(fr_gen_spec *s) {
    if (s->pse == FR_GEN_PSE_NONE) return false;
    s->pse = FR_GEN_PSE_NONE, s->pse_type = FR_PSE_OUTER_MUL_ADD, s->q_start_idx = s->kv_start_idx = 0;
    return true;
}
static bool no_mask(fr_gen_spec *s) {
    if (s->mask == FR_GEN_MASK_NONE) return false;
    s->mask = FR_GEN_MASK_NONE, s->sparse_mode = FR_SPARSE_DEFAULT_MASK, s->set_band = false, s->prefix = false;
    s->pre_tokens = s->next_tokens = 0;
    return true;
}
static bool no_band(fr_gen_spec *s) {
    if (!s->set_band) return false;
    s->set_band = false, s->pre_tokens = s->next_tokens = 0;
    return true;
}
static bool no_prefix(fr_gen_spec *s) { return s->prefix ? (s->prefix = false, true) : false; }
static bool no_rope(fr_gen_spec *s) { return s->Drope ? (s->Drope = 0, true) : false; }
static bool dv_eq_dk(fr_gen_spec *s) { return s->Dv && s->Dv != s->D ? (s->Dv = 0, true) : false; }
static bool no_peak(fr_gen_spec *s) { return s->beta != 0 ? (s->beta = 0, true) : false; }
static bool softmax_default(fr_gen_spec *s) {
    return s->softmax_layout ? (s->softmax_layout = FR_SOFTMAX_DEFAULT, true) : false;
}
static bool out_unset(fr_gen_spec *s) { return s->out_dtype ? (s->out_dtype = FR_DT_NONE, true) : false; }

static bool fewer_batches(fr_gen_spec *s) {
    if (s->B <= 1) return false;
    if (s->layout == FR_TND)
        s->B--; /* drops the last sequence */
    else
        s->B /= 2;
    return true;
}
static bool drop_first_batch(fr_gen_spec *s) {
    if (s->layout != FR_TND || s->B <= 1) return false;
    memmove(s->seq_q, s->seq_q + 1, sizeof(int64_t) * (size_t)(s->B - 1));
    memmove(s->seq_kv, s->seq_kv + 1, sizeof(int64_t) * (size_t)(s->B - 1));
    s->B--;
    return true;
}
static bool fewer_groups(fr_gen_spec *s) { /* G = N1 / N2 smaller (at least 2 kept apart from 1 by the next step) */
    int64_t n2 = s->N2 ? s->N2 : s->N1;
    if (s->N1 / n2 <= 2) return false;
    s->N1 -= n2;
    return true;
}
static bool fewer_kv_heads(fr_gen_spec *s) {
    int64_t n2 = s->N2 ? s->N2 : s->N1, g = s->N1 / n2;
    if (n2 <= 1) return false;
    n2 /= 2;
    s->N2 = n2, s->N1 = n2 * g;
    return true;
}
static bool no_gqa(fr_gen_spec *s) {
    int64_t n2 = s->N2 ? s->N2 : s->N1;
    if (n2 == s->N1) return false;
    s->N1 = n2, s->N2 = 0;
    return true;
}
static int64_t half_keep(int64_t v) { return (v / 2) / 64 * 64 + v % 64; } /* halved, same residue mod 64 */
static bool smaller_d(fr_gen_spec *s) {
    int64_t d = s->D / 2 / 16 * 16 + s->D % 16;
    if (d >= s->D || d < 1) return false;
    s->D = d;
    if (s->Dv > d) s->Dv = 0;
    return true;
}
static bool len_op(fr_gen_spec *s, bool keys, bool keep) {
    bool any = false;
    if (s->layout == FR_TND) {
        for (int64_t b = 0; b < s->B; b++) {
            int64_t *v = keys ? &s->seq_kv[b] : &s->seq_q[b], nv = keep ? half_keep(*v) : *v / 2;
            if (nv < *v && (nv > 0 || *v == 0)) *v = nv, any = true;
        }
        return any;
    }
    int64_t *v = keys ? &s->S2 : &s->S1, nv = keep ? half_keep(*v) : *v / 2;
    if (nv >= *v || nv < 1) return false;
    *v = nv;
    return true;
}
static bool keys_keep(fr_gen_spec *s) { return len_op(s, true, true); }
static bool keys_half(fr_gen_spec *s) { return len_op(s, true, false); }
static bool queries_keep(fr_gen_spec *s) { return len_op(s, false, true); }
static bool queries_half(fr_gen_spec *s) { return len_op(s, false, false); }
static bool one_query(fr_gen_spec *s) { return s->layout != FR_TND && s->S1 > 1 ? (s->S1 = 1, true) : false; }
static bool topk_half(fr_gen_spec *s) { return s->topk_w > 1 ? (s->topk_w /= 2, true) : false; }

static const reduce_fn kSteps[] = {to_fwd,    no_dropout,      no_sink,        no_topk,       no_pse,
                                   no_mask,   no_band,         no_prefix,      no_rope,       dv_eq_dk,
                                   no_peak,   softmax_default, out_unset,      fewer_batches, drop_first_batch,
                                   no_gqa,    fewer_groups,    fewer_kv_heads, smaller_d,     keys_keep,
                                   keys_half, queries_keep,    queries_half,   one_query,     topk_half};

fr_status fr_shrink(const fr_gen_spec *spec, int max_runs, fr_shrink_fails_fn fails, void *ud, fr_draw *smallest,
                    int *runs, fr_error *err) {
    memset(smallest, 0, sizeof *smallest);
    snprintf(smallest->name, sizeof smallest->name, "%s", spec->name ? spec->name : "case");
    smallest->spec = *spec;
    smallest->spec.name = smallest->name; /* the same name: the same input streams (fr_gen_case_seed) */
    *runs = 0;
    bool changed = true;
    while (changed && *runs < max_runs) {
        changed = false;
        for (size_t k = 0; k < sizeof kSteps / sizeof kSteps[0] && *runs < max_runs; k++) {
            fr_draw cand;
            fr_draw_copy(&cand, smallest);
            if (!kSteps[k](&cand.spec)) continue;
            fr_error ve;
            if (fr_gen_check(&cand.spec, &ve) != FR_OK) continue;
            bool same = false;
            fr_status st = fails(ud, &cand.spec, &same, err);
            (*runs)++;
            if (st != FR_OK) return st;
            if (same) {
                fr_draw_copy(smallest, &cand);
                changed = true;
            }
        }
    }
    return FR_OK;
}
