// Dot products of the K-quants (256-value super-blocks; Q2_K and Q3_K in dot_kquants_low.c) with Q8_K activations. Per super-block
// the products sum as integers (weighted by the 4-8 bit group scales), then the float
// multiply-adds by d = d_a * fp16(d_w) (and the mins by d_a * fp16(dmin) against the Q8_K group
// sums) in super-block order, as ggml's kernels arrange them. Q4_K and Q6_K follow the
// current llama.cpp to the bit, including the orders its batched products use (its repacked
// Q4_K GEMM for rows in whole groups of four, its tiled Q6_K product for micro-batches of 8+
// rows: ck_matmul_args.orders picks them per row). The portable kernels are the scalar
// references; the fast ones are tested against them.
#include <string.h>

#include "internal.h"

// MARK: - Portable (the scalar references)

// Q4_K and Q5_K share everything but the fifth bit (qh NULL for Q4_K).
static float dot_q45_k_portable(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t dw,
                                uint16_t dminw, const ck_block_q8_K *a) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 8; g++) {
        uint8_t sc, m;
        ck_scale_min_k4(g, scales, &sc, &m);
        const uint8_t *q = qs + (g / 2) * 32;
        int s = 0;
        for (int l = 0; l < 32; l++) {
            int v = g % 2 ? q[l] >> 4 : q[l] & 0x0f;
            if (qh) v += 16 * ((qh[l] >> g) & 1);
            s += v * a->qs[32 * g + l];
        }
        sumi += sc * s;
        summ += m * (a->bsums[2 * g] + a->bsums[2 * g + 1]);
    }
    const float d = a->d * ck_fp16_to_fp32(dw), dmin = a->d * ck_fp16_to_fp32(dminw);
    return d * (float)sumi - dmin * (float)summ;
}

// Q4_K in the orders of ggml's repacked Q4_K products (its CPU backend repacks every Q4_K
// matrix of a multiple of 8 rows on AVX2 machines), which the reference answers depend on:
// per super-block, the exact integer sum of the scaled group products and the exact integer
// sum of the mins times the group sums, each times fp16(d) * d_a (fp16(dmin) * d_a) in one FMA
// into its own accumulator; the mins' accumulator subtracted at the end. That is its
// one-token product (GEMV). Its four-token product (GEMM) does the same per 64 values (two
// groups) instead of per super-block: ck_dot_q4_k_pairs_portable.
static float dot_q4_k_ordered(int k, const ck_block_q4_K *w, const ck_block_q8_K *a, int groups_per_step) {
    float acc = 0.0f, acc_m = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = ck_fp16_to_fp32(w[i].d) * a[i].d, dmin = ck_fp16_to_fp32(w[i].dmin) * a[i].d;
        int sumi = 0, summ = 0;
        for (int g = 0; g < 8; g++) {
            uint8_t sc, m;
            ck_scale_min_k4(g, w[i].scales, &sc, &m);
            const uint8_t *q = w[i].qs + (g / 2) * 32;
            int s = 0;
            for (int l = 0; l < 32; l++) s += (g % 2 ? q[l] >> 4 : q[l] & 0x0f) * a[i].qs[32 * g + l];
            sumi += sc * s;
            summ += m * (a[i].bsums[2 * g] + a[i].bsums[2 * g + 1]);
            if ((g + 1) % groups_per_step == 0) {
                acc = fmaf((float)sumi, d, acc);
                acc_m = fmaf((float)summ, dmin, acc_m);
                sumi = summ = 0;
            }
        }
    }
    return acc - acc_m;
}

static float dot_q4_k_portable(int k, const ck_block_q4_K *w, const ck_block_q8_K *a) {
    return dot_q4_k_ordered(k, w, a, 8);
}

float ck_dot_q4_k_pairs_portable(int k, const ck_block_q4_K *w, const ck_block_q8_K *a) {
    return dot_q4_k_ordered(k, w, a, 2);
}

static void dot1x4_q4_k_portable(int k, const ck_block_q4_K *w, const ck_block_q8_K *const *a, float *out) {
    for (int t = 0; t < 4; t++) out[t] = dot_q4_k_ordered(k, w, a[t], 2);
}

static float dot_q5_k_portable(int k, const ck_block_q5_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        sum += dot_q45_k_portable(w[i].scales, w[i].qs, w[i].qh, w[i].d, w[i].dmin, &a[i]);
    }
    return sum;
}

// One super-block's exact integer sum of scale * (q - 32) * a.
static int q6_k_superblock_sum(const ck_block_q6_K *w, const ck_block_q8_K *a) {
    int sumi = 0;
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int e = 16 * g; e < 16 * g + 16; e++) s += ck_q6_k_value(w, e) * a->qs[e];
        sumi += w->scales[g] * s;
    }
    return sumi;
}

static float dot_q6_k_portable(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        sum += a[i].d * ck_fp16_to_fp32(w[i].d) * (float)q6_k_superblock_sum(&w[i], &a[i]);
    }
    return sum;
}

// Q6_K in llama.cpp's tiled K-quant order (ggml-cpu/tiled, micro-batches of 8+ rows): per
// super-block the exact integer sum of scale * (q - 32) * a, times fp16(d_w) (one rounding),
// then one FMA with d_a into the row's single accumulator (GCC contracts its add of the product).
static float dot_q6_k_tiled_portable(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float r = (float)q6_k_superblock_sum(&w[i], &a[i]) * ck_fp16_to_fp32(w[i].d);
        acc = fmaf(r, a[i].d, acc);
    }
    return acc;
}

// MARK: - AVX2

#if CK_X86

// The 8 scales and 8 mins of a Q4_K/Q5_K super-block, unpacked from their 12 bytes with 32-bit
// word operations (the bit layout of ck_scale_min_k4, four groups at a time).
static inline void unpack_scales_mins(const uint8_t *packed, uint8_t *sc, uint8_t *m) {
    uint32_t u[3], out[4];
    memcpy(u, packed, 12);
    out[0] = u[0] & 0x3f3f3f3fu;
    out[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    out[2] = u[1] & 0x3f3f3f3fu;
    out[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    memcpy(sc, out, 8);
    memcpy(m, out + 2, 8);
}

// Σ_g mins[g] * (bsums[2g] + bsums[2g+1]) as four int32 lanes (pairs of groups), as ggml's
// _mm_madd_epi16 of the mins and the horizontally added group sums.
CK_FAST static inline __m128i mins_products(const uint8_t *m, const int16_t *bsums) {
    const __m128i q8sums0 = _mm_loadu_si128((const __m128i *)bsums);
    const __m128i q8sums1 = _mm_loadu_si128((const __m128i *)(bsums + 8));
    const __m128i q8s = _mm_hadd_epi16(q8sums0, q8sums1);
    uint64_t mb;
    memcpy(&mb, m, 8);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mb));
    return _mm_madd_epi16(mins, q8s);
}

CK_FAST static inline int hsum_epi32_8(__m256i v) {
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

CK_FAST static inline int hsum_epi32_4(__m128i x) {
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

// dot_q4_k_portable's order (ggml's repacked one-token product): the integer sums in SIMD
// lanes, added up exactly, then two scalar FMAs per super-block.
CK_FAST static float dot_q4_k_fast(int k, const ck_block_q4_K *w, const ck_block_q8_K *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    float acc = 0.0f, acc_m = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = _cvtsh_ss(w[i].d) * a[i].d, dmin = _cvtsh_ss(w[i].dmin) * a[i].d;
        uint8_t sc[8], m[8];
        unpack_scales_mins(w[i].scales, sc, m);
        const uint8_t *q4 = w[i].qs;
        const int8_t *q8 = a[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(q4 + 32 * j));
            const __m256i lo = _mm256_and_si256(bits, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            __m256i pl = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j)));
            __m256i ph = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j + 32)));
            pl = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j]), pl);
            ph = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j + 1]), ph);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        }
        acc = fmaf((float)hsum_epi32_8(sumi), d, acc);
        acc_m = fmaf((float)hsum_epi32_4(mins_products(m, a[i].bsums)), dmin, acc_m);
    }
    return acc - acc_m;
}

CK_FAST static float dot_q5_k_fast(int k, const ck_block_q5_K *w, const ck_block_q8_K *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = a[i].d * _cvtsh_ss(w[i].d);
        const float dmin = -a[i].d * _cvtsh_ss(w[i].dmin);
        uint8_t sc[8], m[8];
        unpack_scales_mins(w[i].scales, sc, m);
        __m128i prod = mins_products(m, a[i].bsums);
        prod = _mm_hadd_epi32(_mm_hadd_epi32(prod, _mm_setzero_si128()), _mm_setzero_si128());
        summs = fmaf(dmin, (float)_mm_cvtsi128_si32(prod), summs);
        const __m256i hbits = _mm256_loadu_si256((const __m256i *)w[i].qh);
        const uint8_t *q5 = w[i].qs;
        const int8_t *q8 = a[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(q5 + 32 * j));
            // Fifth bits 2j and 2j + 1 of each qh byte, moved to bit 4.
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j), 4), _mm256_set1_epi8(0x10));
            const __m256i h1 =
                _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j + 1), 4), _mm256_set1_epi8(0x10));
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
            __m256i p0 = _mm256_maddubs_epi16(q0, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j)));
            __m256i p1 = _mm256_maddubs_epi16(q1, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j + 32)));
            p0 = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j]), p0);
            p1 = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * j + 1]), p1);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ck_hsum8(acc) + summs;
}

// Four activation rows in ck_dot_q4_k_pairs_portable's order (ggml's repacked four-token
// product): per 64 values, the exact integer sums of both groups and of their mins times group
// sums, each in one scalar FMA; the weights unpacked once for the four rows.
CK_FAST static void dot1x4_q4_k_fast(int k, const ck_block_q4_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    float acc[4] = {0}, acc_m[4] = {0};
    for (int i = 0; i < k / CK_QK_K; i++) {
        uint8_t sc[8], m[8];
        unpack_scales_mins(w[i].scales, sc, m);
        const float wd = _cvtsh_ss(w[i].d), wdmin = _cvtsh_ss(w[i].dmin);
        // Per token, the 64-value steps' integer sums as lanes: part[t][j] (8 int32 lanes).
        __m256i part[4][4];
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * j));
            const __m256i lo = _mm256_and_si256(bits, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            const __m256i sl = _mm256_set1_epi16(sc[2 * j]), sh = _mm256_set1_epi16(sc[2 * j + 1]);
            for (int t = 0; t < 4; t++) {
                const int8_t *q8 = a[t][i].qs;
                const __m256i pl = _mm256_madd_epi16(sl, _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j))));
                const __m256i ph =
                    _mm256_madd_epi16(sh, _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 64 * j + 32))));
                part[t][j] = _mm256_add_epi32(pl, ph);
            }
        }
        for (int t = 0; t < 4; t++) {
            const ck_block_q8_K *at = &a[t][i];
            // The four steps' exact sums at once: lanes j of one vector.
            const __m256i h01 = _mm256_hadd_epi32(part[t][0], part[t][1]);
            const __m256i h23 = _mm256_hadd_epi32(part[t][2], part[t][3]);
            const __m256i h = _mm256_hadd_epi32(h01, h23);
            const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            // Lane j of mins_products: the mins of groups 2j, 2j + 1 times their Q8_K sums.
            float step[4], mins[4];
            _mm_storeu_ps(step, _mm_cvtepi32_ps(sums));
            _mm_storeu_ps(mins, _mm_cvtepi32_ps(mins_products(m, at->bsums)));
            const float d = wd * at->d, dmin = wdmin * at->d;
            for (int j = 0; j < 4; j++) {
                acc[t] = fmaf(step[j], d, acc[t]);
                acc_m[t] = fmaf(mins[j], dmin, acc_m[t]);
            }
        }
    }
    for (int t = 0; t < 4; t++) out[t] = acc[t] - acc_m[t];
}

// Scales s and s + 1 as 16 int16 lanes: lanes 0-7 take s, lanes 8-15 take s + 1 (two groups of 16
// values in one 32-value maddubs result).
CK_FAST static inline __m256i pair_scales(const int8_t *scales, int s) {
    return _mm256_setr_m128i(_mm_set1_epi16(scales[s]), _mm_set1_epi16(scales[s + 1]));
}

// Q6_K's -32 offset of all 256 values taken group-wise, as ggml now does (not per product):
// lane L is 32 * (bsums[2L] * scale[2L] + bsums[2L+1] * scale[2L+1]).
CK_FAST static inline __m256i q6_k_offsets(const ck_block_q6_K *w, const ck_block_q8_K *a) {
    const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w->scales));
    return _mm256_slli_epi32(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), scales), 5);
}

// The integer part of ggml's AVX2 Q6_K order for one super-block: the products q * a with q
// unsigned (0..63), each 32-value quarter's pairs scaled by its two group scales, in eight
// int32 lanes (lane L: bytes 4L..4L+3 of each quarter), less q6_k_offsets. Up to four
// activation rows share the weights' unpacking.
CK_FAST static inline void q6_k_lanes(const ck_block_q6_K *w, const ck_block_q8_K *const *a, int rows,
                                      __m256i *sumi) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    for (int t = 0; t < rows; t++) sumi[t] = _mm256_setzero_si256();
    for (int j = 0; j < 2; j++) {
        const __m256i hb = _mm256_loadu_si256((const __m256i *)(w->qh + 32 * j));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * j));
        const __m256i l2 = _mm256_loadu_si256((const __m256i *)(w->ql + 64 * j + 32));
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(l2, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l2, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
        const int8_t *sc = w->scales + 8 * j;
        const __m256i scales[4] = {pair_scales(sc, 0), pair_scales(sc, 2), pair_scales(sc, 4), pair_scales(sc, 6)};
        for (int t = 0; t < rows; t++) {
            const int8_t *q8 = a[t]->qs + 128 * j;
            __m256i p[4];
            for (int u = 0; u < 4; u++) {
                const __m256i av = _mm256_loadu_si256((const __m256i *)(q8 + 32 * u));
                p[u] = _mm256_madd_epi16(scales[u], _mm256_maddubs_epi16(q[u], av));
            }
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[0], p[1]));
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[2], p[3]));
        }
    }
    for (int t = 0; t < rows; t++) sumi[t] = _mm256_sub_epi32(sumi[t], q6_k_offsets(w, a[t]));
}

// ggml's current AVX2 order (the reference answers depend on it): q6_k_lanes, then one FMA per
// super-block and lane, the lanes summed at the end.
CK_FAST static float dot_q6_k_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const ck_block_q8_K *ai = &a[i];
        __m256i sumi;
        q6_k_lanes(&w[i], &ai, 1, &sumi);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(a[i].d * _cvtsh_ss(w[i].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ck_hsum8(acc);
}

// dot_q6_k_tiled_portable's order: q6_k_lanes added up exactly, times fp16(d_w), one FMA.
CK_FAST static float dot_q6_k_tiled_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const ck_block_q8_K *ai = &a[i];
        __m256i sumi;
        q6_k_lanes(&w[i], &ai, 1, &sumi);
        const float r = (float)hsum_epi32_8(sumi) * _cvtsh_ss(w[i].d);
        acc = fmaf(r, a[i].d, acc);
    }
    return acc;
}

// Both orders for four activation rows, the weights unpacked once: `tiled` (a constant after
// inlining) picks dot_q6_k_tiled_fast's order, else dot_q6_k_fast's.
static inline __attribute__((always_inline)) CK_FAST void dot1x4_q6_k_in_order(int k, const ck_block_q6_K *w,
                                                                                const ck_block_q8_K *const *a,
                                                                                float *out, const int tiled) {
    float acc[4] = {0};
    __m256 lanes[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < k / CK_QK_K; i++) {
        const ck_block_q8_K *ai[4] = {&a[0][i], &a[1][i], &a[2][i], &a[3][i]};
        __m256i sumi[4];
        q6_k_lanes(&w[i], ai, 4, sumi);
        const float wd = _cvtsh_ss(w[i].d);
        for (int t = 0; t < 4; t++) {
            if (tiled) {
                const float r = (float)hsum_epi32_8(sumi[t]) * wd;
                acc[t] = fmaf(r, ai[t]->d, acc[t]);
            } else {
                lanes[t] = _mm256_fmadd_ps(_mm256_set1_ps(ai[t]->d * wd), _mm256_cvtepi32_ps(sumi[t]), lanes[t]);
            }
        }
    }
    for (int t = 0; t < 4; t++) out[t] = tiled ? acc[t] : ck_hsum8(lanes[t]);
}

CK_FAST static void dot1x4_q6_k_tiled_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *const *a, float *out) {
    dot1x4_q6_k_in_order(k, w, a, out, 1);
}

CK_FAST static void dot1x4_q6_k_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *const *a, float *out) {
    dot1x4_q6_k_in_order(k, w, a, out, 0);
}
#endif

ck_dot1x4_fn ck_pick_dot1x4_kquants(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q4_K) return (ck_dot1x4_fn)dot1x4_q4_k_fast;
    if (fast && type == CK_TYPE_Q6_K) return (ck_dot1x4_fn)dot1x4_q6_k_fast;
#endif
    // Q4_K's four-token order differs from its one-token order (as ggml's): every path keeps it.
    if (type == CK_TYPE_Q4_K) return (ck_dot1x4_fn)dot1x4_q4_k_portable;
    (void)fast;
    return 0;
}

ck_dot_fn ck_pick_dot_tiled_kquants(int type, int fast) {
    if (type != CK_TYPE_Q6_K) return ck_pick_dot_tiled_kquants_more(type, fast);
#if CK_X86
    if (fast) return (ck_dot_fn)dot_q6_k_tiled_fast;
#endif
    (void)fast;
    return (ck_dot_fn)dot_q6_k_tiled_portable;
}

ck_dot1x4_fn ck_pick_dot1x4_tiled_kquants(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q6_K) return (ck_dot1x4_fn)dot1x4_q6_k_tiled_fast;
#endif
    return ck_pick_dot1x4_tiled_kquants_more(type, fast);
}

ck_dot_fn ck_pick_dot_pairs_kquants(int type, int fast) {
    (void)fast;
    return type == CK_TYPE_Q4_K ? (ck_dot_fn)ck_dot_q4_k_pairs_portable : 0;
}

ck_dot_fn ck_pick_dot_kquants(int type, int fast) {
#if CK_X86
    if (fast) {
        switch (type) {
        case CK_TYPE_Q4_K: return (ck_dot_fn)dot_q4_k_fast;
        case CK_TYPE_Q5_K: return (ck_dot_fn)dot_q5_k_fast;
        case CK_TYPE_Q6_K: return (ck_dot_fn)dot_q6_k_fast;
        default: break;
        }
    }
#endif
    (void)fast;
    switch (type) {
    case CK_TYPE_Q4_K: return (ck_dot_fn)dot_q4_k_portable;
    case CK_TYPE_Q5_K: return (ck_dot_fn)dot_q5_k_portable;
    case CK_TYPE_Q6_K: return (ck_dot_fn)dot_q6_k_portable;
    default: return ck_pick_dot_kquants_low(type, fast);
    }
}
