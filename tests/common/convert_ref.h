/* Independent slow reference for the number formats (tests only; shares no code with src/core/convert*.c).
 *
 * Decoders: straight from the format definitions (spec 9.1, 10) in double with ldexp; hif8 by matching the prefix
 * table row by row. Encoders: the format's finite non-negative values, sorted by value, plus a virtual "overflow"
 * value one step past the largest (65536 fp16, 2^128 bf16, 480 e4m3fn, 65536 e5m2, 49152 hif8); the result is the
 * nearest candidate, a tie going to the larger one (half away) or to the one whose code is even (nearest even; the
 * overflow value's parity is that of the code that would follow max). Sign, NaN and Inf handled on top.
 */
#ifndef FR_TESTS_CONVERT_REF_H
#define FR_TESTS_CONVERT_REF_H

#include "flashref.h"

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { REF_F16, REF_BF16, REF_E4M3FN, REF_E5M2, REF_HIF8, REF_NFMT };

static const char *const ref_fmt_name[REF_NFMT] = {"fp16", "bf16", "e4m3fn", "e5m2", "hif8"};
static const fr_dtype ref_fmt_dtype[REF_NFMT] = {FR_F16, FR_BF16, FR_E4M3FN, FR_E5M2, FR_HIF8};
static const int ref_fmt_bits[REF_NFMT] = {16, 16, 8, 8, 8};

/* IEEE-like decode: ebits exponent bits, mbits mantissa bits, bias; e4m3fn has no Inf and only S.1111.111 as NaN. */
static double ref_decode_ieee(uint32_t code, int ebits, int mbits, int bias, int fn) {
    uint32_t sign = (code >> (ebits + mbits)) & 1u;
    uint32_t ex = (code >> mbits) & ((1u << ebits) - 1u);
    uint32_t man = code & ((1u << mbits) - 1u);
    double v;
    if (ex == (1u << ebits) - 1u && !fn) v = man ? NAN : INFINITY;
    else if (fn && ex == (1u << ebits) - 1u && man == (1u << mbits) - 1u) v = NAN;
    else if (ex == 0) v = ldexp((double)man, 1 - bias - mbits);
    else v = ldexp((double)((1u << mbits) + man), (int)ex - bias - mbits);
    return sign ? -v : v;
}

/* hif8 by the prefix table of spec 9.1: prefix, its length, exponent field width (sign + k bits), mantissa width. */
static double ref_decode_hif8(uint32_t code) {
    static const struct { uint32_t prefix; int plen, ew, mw; } rows[] = {
        {0x3, 2, 4, 1}, {0x2, 2, 3, 2}, {0x1, 2, 2, 3}, {0x1, 3, 1, 3}, {0x1, 4, 0, 3}, {0x0, 4, -1, 3},
    };
    int neg = (code & 0x80u) != 0;
    uint32_t b = code & 0x7Fu;
    if (b == 0) return neg ? NAN : 0.0;
    if (b == 0x6F) return neg ? -INFINITY : INFINITY;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if ((b >> (7 - rows[r].plen)) != rows[r].prefix) continue;
        int rest = 7 - rows[r].plen; /* bits after the prefix */
        uint32_t fields = b & ((1u << rest) - 1u);
        double v;
        if (rows[r].ew < 0) { /* denormal: 2^(M - 23) */
            v = ldexp(1.0, (int)fields - 23);
        } else {
            uint32_t m = fields & ((1u << rows[r].mw) - 1u);
            int e = 0;
            if (rows[r].ew > 0) {
                int k = rows[r].ew - 1;
                uint32_t es = (fields >> (rows[r].mw + k)) & 1u;         /* exponent sign */
                uint32_t low = (fields >> rows[r].mw) & ((1u << k) - 1u); /* k low bits */
                int mag = (1 << k) + (int)low;                           /* implicit top bit 2^k */
                e = es ? -mag : mag;
            }
            v = ldexp(1.0 + (double)m / (double)(1u << rows[r].mw), e);
        }
        return neg ? -v : v;
    }
    return NAN; /* unreachable: the prefixes cover all 7-bit patterns */
}

static double ref_decode(int f, uint32_t code) {
    switch (f) {
    case REF_F16: return ref_decode_ieee(code, 5, 10, 15, 0);
    case REF_BF16: return ref_decode_ieee(code, 8, 7, 127, 0);
    case REF_E4M3FN: return ref_decode_ieee(code, 4, 3, 7, 1);
    case REF_E5M2: return ref_decode_ieee(code, 5, 2, 15, 0);
    default: return ref_decode_hif8(code);
    }
}

typedef struct ref_fmt {
    int f;
    size_t n;          /* finite non-negative values; index n is the virtual overflow value */
    double *val;       /* n + 1 values, increasing */
    uint32_t *code;    /* n codes; code[n] unused */
    uint8_t *odd;      /* n + 1 parities of the code (overflow: the code after max) */
    uint32_t signbit, maxcode, nan_code, inf_code; /* inf_code: what non-saturated overflow gives (NaN for e4m3fn) */
} ref_fmt;

typedef struct { double v; uint32_t c; } ref_pair_;

static int ref_cmp_(const void *a, const void *b) {
    double x = ((const ref_pair_ *)a)->v, y = ((const ref_pair_ *)b)->v;
    return (x > y) - (x < y);
}

/* Returns 0 on success, -1 when the value set is inconsistent (duplicates) or allocation fails. */
static int ref_fmt_init(ref_fmt *t, int f) {
    memset(t, 0, sizeof *t);
    t->f = f;
    uint32_t ncodes = 1u << ref_fmt_bits[f];
    t->signbit = ncodes >> 1;
    ref_pair_ *p = malloc(sizeof *p * t->signbit);
    if (!p) return -1;
    size_t n = 0;
    for (uint32_t c = 0; c < t->signbit; c++) {
        double v = ref_decode(f, c);
        if (isfinite(v)) p[n++] = (ref_pair_){v, c};
    }
    qsort(p, n, sizeof *p, ref_cmp_);
    t->n = n;
    t->val = malloc(sizeof(double) * (n + 1));
    t->code = malloc(sizeof(uint32_t) * (n + 1));
    t->odd = malloc(n + 1);
    if (!t->val || !t->code || !t->odd) {
        free(p);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        t->val[i] = p[i].v;
        t->code[i] = p[i].c;
        t->odd[i] = (uint8_t)(p[i].c & 1u);
        if (i > 0 && !(p[i].v > p[i - 1].v)) {
            free(p);
            return -1;
        }
    }
    free(p);
    t->maxcode = t->code[n - 1];
    static const double ovf[REF_NFMT] = {65536.0, 0x1p128, 480.0, 65536.0, 49152.0};
    static const uint8_t ovf_odd[REF_NFMT] = {0, 0, 1, 0, 1};
    t->val[n] = ovf[f];
    t->code[n] = 0;
    t->odd[n] = ovf_odd[f];
    static const uint32_t nanc[REF_NFMT] = {0x7E00, 0 /* per input */, 0x7F, 0x7E, 0x80};
    static const uint32_t infc[REF_NFMT] = {0x7C00, 0x7F80, 0x7F, 0x7C, 0x6F};
    t->nan_code = nanc[f];
    t->inf_code = infc[f];
    return 0;
}

static void ref_fmt_free(ref_fmt *t) {
    free(t->val);
    free(t->code);
    free(t->odd);
}

/* Index of the candidate nearest to a >= 0 (finite): n means overflow. *k is a hint: SIZE_MAX (unknown) or a
 * position at or below the answer's bracket; it moves forward, so walking increasing inputs costs O(1) amortized. */
static size_t ref_nearest(const ref_fmt *t, double a, int half_away, size_t *k) {
    size_t i = *k;
    if (i > t->n || t->val[i] > a) { /* binary search: largest i with val[i] <= a */
        size_t lo = 0, hi = t->n + 1;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (t->val[mid] <= a) lo = mid;
            else hi = mid;
        }
        i = lo;
    }
    while (i < t->n && t->val[i + 1] <= a) i++;
    *k = i;
    if (i == t->n) return t->n; /* at or past the overflow value */
    double lo = t->val[i], hi = t->val[i + 1];
    double mid = lo + (hi - lo) / 2; /* exact: both have few significant bits */
    if (a < mid) return i;
    if (a > mid) return i + 1;
    if (half_away) return i + 1;
    return t->odd[i] ? i + 1 : i;
}

/* The full expected code for fp32 bits u, given idx = ref_nearest(|x|) (ignored for NaN and Inf). */
static uint32_t ref_finish(const ref_fmt *t, uint32_t u, size_t idx, int sat) {
    uint32_t neg = u >> 31;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t sgn = neg ? t->signbit : 0;
    if (a > 0x7F800000u) { /* hif8's one NaN 0x80 already carries the sign bit */
        if (t->f == REF_BF16) return (u >> 16) | 0x40u;
        return sgn | t->nan_code;
    }
    if (a == 0x7F800000u || idx == t->n) return sgn | (sat ? t->maxcode : t->inf_code);
    uint32_t c = t->code[idx];
    if (t->f == REF_HIF8 && c == 0) return 0;
    return sgn | c;
}

/* Not part of the reference: the library's scalar encoder of format f, the code both conversion tests judge. */
static inline uint32_t ref_lib_encode(int f, float x, fr_round r, fr_sat s) {
    switch (f) {
    case REF_F16: return fr_f32_to_f16(x, r, s);
    case REF_BF16: return fr_f32_to_bf16(x, r, s);
    case REF_E4M3FN: return fr_f32_to_e4m3fn(x, r, s);
    case REF_E5M2: return fr_f32_to_e5m2(x, r, s);
    default: return fr_f32_to_hif8(x, r, s);
    }
}

static inline double ref_f32_value(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return fabs((double)x);
}

#endif
