// Dot products of the 32-value block types beyond Q4_1/Q8_0 (Q4_0 and Q5_0 against Q8_0
// activations, Q5_1 against Q8_1) and the portable one of BF16 weights (the fast ones are in
// dot_float16.c and dot_bf16_pairs.c). Numerics follow
// ggml's AVX2 kernels: per block an integer dot, then one accumulator of fp16(d_w) * fp16(d_a) *
// isum in block order (8 float lanes on AVX2, reduced as ck_hsum8); Q4_0 follows ggml's repacked
// products instead (one scalar accumulator, see dot_q4_0_portable).
#include <string.h>

#include "internal.h"

static uint32_t qh_bits(const uint8_t *qh) {
    uint32_t v;
    memcpy(&v, qh, 4);
    return v;
}

// MARK: - Portable (the scalar references)

// Q4_0 in the order of ggml's repacked Q4_0 products, which llama.cpp runs for every Q4_0 matrix
// of a multiple of 8 rows on AVX2 machines (interleave_q4_0.c): per block the exact integer sum
// times fp16(d_w) * fp16(d_a), added in one FMA. Every Q4_0 kernel here keeps it, so a matrix
// gives the same bits in the file's layout and in the interleaved form, on every path.
static float dot_q4_0_portable(int k, const ck_block_q4_0 *w, const ck_block_q8_0 *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            isum += ((w[i].qs[j] & 0x0f) - 8) * a[i].qs[j];
            isum += ((w[i].qs[j] >> 4) - 8) * a[i].qs[j + 16];
        }
        sum = fmaf((float)isum, ck_fp16_to_fp32(w[i].d) * ck_fp16_to_fp32(a[i].d), sum);
    }
    return sum;
}

static float dot_q5_0_portable(int k, const ck_block_q5_0 *w, const ck_block_q8_0 *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) {
        const uint32_t qh = qh_bits(w[i].qh);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            const int x0 = ((w[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4)) - 16;
            const int x1 = ((w[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
            isum += x0 * a[i].qs[j] + x1 * a[i].qs[j + 16];
        }
        sum += ck_fp16_to_fp32(w[i].d) * ck_fp16_to_fp32(a[i].d) * (float)isum;
    }
    return sum;
}

static float dot_q5_1_portable(int k, const ck_block_q5_1 *w, const ck_block_q8_1 *a) {
    float sum = 0.0f, summs = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) {
        const uint32_t qh = qh_bits(w[i].qh);
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            const int x0 = (w[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
            const int x1 = (w[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            isum += x0 * a[i].qs[j] + x1 * a[i].qs[j + 16];
        }
        sum += ck_fp16_to_fp32(w[i].d) * ck_fp16_to_fp32(a[i].d) * (float)isum;
        summs += ck_fp16_to_fp32(w[i].m) * ck_fp16_to_fp32(a[i].s);
    }
    return sum + summs;
}

static float bf16(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// Activations rounded to bf16 first, as every BF16 product takes them (dot_float16.c).
static float dot_bf16_f32_portable(int k, const uint16_t *w, const float *a) {
    float s = 0.0f;
    for (int i = 0; i < k; i++) {
        float r;
        ck_round_row_bf16(&a[i], &r, 1);
        s += bf16(w[i]) * r;
    }
    return s;
}

// MARK: - AVX2

#if CK_X86

CK_FAST static inline __m256i nibbles32(const uint8_t *qs) {
    const __m128i raw = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0f));
}

// The 32 bits of qh as 32 bytes, 0xff where the bit is set (element order of the block).
CK_FAST static inline __m256i bits32(const uint8_t *qh) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh_bits(qh)), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x7fbfdfeff7fbfdfeULL);
    return _mm256_cmpeq_epi8(_mm256_or_si256(bytes, bit), _mm256_set1_epi64x(-1));
}

CK_FAST static inline __m256 sum_u8_s8(__m256i u, __m256i s) {
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

CK_FAST static inline __m256 sum_s8_s8(__m256i x, __m256i y) {
    return sum_u8_s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

CK_FAST static inline __m256 scale_product(uint16_t dw, uint16_t da) {
    const __m128 w = _mm_cvtph_ps(_mm_cvtsi32_si128(dw));
    const __m128 a = _mm_cvtph_ps(_mm_cvtsi32_si128(da));
    return _mm256_broadcastss_ps(_mm_mul_ss(w, a));
}

// dot_q4_0_portable's order: the block's integer sum in SIMD, then one scalar FMA per block.
CK_FAST static float dot_q4_0_fast(int k, const ck_block_q4_0 *w, const ck_block_q8_0 *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) {
        const __m256i q = nibbles32(w[i].qs);  // unsigned 0..15; the -8 below, exact
        const __m256i y = _mm256_loadu_si256((const __m256i *)a[i].qs);
        const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y),
                                               _mm256_maddubs_epi16(_mm256_set1_epi8(8), y));
        const __m256i lanes = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
        acc = fmaf((float)_mm_cvtsi128_si32(s), _mm_cvtss_f32(_mm256_castps256_ps128(scale_product(w[i].d, a[i].d))), acc);
    }
    return acc;
}

CK_FAST static float dot_q5_0_fast(int k, const ck_block_q5_0 *w, const ck_block_q8_0 *a) {
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK; i++) {
        // q - 16 as int8: the nibble, with 0xf0 or'd in where the fifth bit is clear.
        const __m256i hi = _mm256_andnot_si256(bits32(w[i].qh), _mm256_set1_epi8((char)0xf0));
        const __m256i q = _mm256_or_si256(nibbles32(w[i].qs), hi);
        const __m256 p = sum_s8_s8(q, _mm256_loadu_si256((const __m256i *)a[i].qs));
        acc = _mm256_fmadd_ps(scale_product(w[i].d, a[i].d), p, acc);
    }
    return ck_hsum8(acc);
}

// dot_q5_0_fast for four activation rows: the same per-row arithmetic, the weights unpacked once.
CK_FAST static void dot1x4_q5_0_fast(int k, const ck_block_q5_0 *w, const ck_block_q8_0 *const *a, float *out) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < k / CK_QK; i++) {
        const __m256i hi = _mm256_andnot_si256(bits32(w[i].qh), _mm256_set1_epi8((char)0xf0));
        const __m256i q = _mm256_or_si256(nibbles32(w[i].qs), hi);
        const __m256i aq = _mm256_sign_epi8(q, q);
        for (int t = 0; t < 4; t++) {
            const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)a[t][i].qs), q);
            acc[t] = _mm256_fmadd_ps(scale_product(w[i].d, a[t][i].d), sum_u8_s8(aq, sy), acc[t]);
        }
    }
    for (int t = 0; t < 4; t++) out[t] = ck_hsum8(acc[t]);
}

// AVX-512 (BW, VL, VNNI) variants of the Q5_0 kernels: the fifth bits become a byte mask
// directly and one vpdpbusd does the u8 x s8 sums. The integer sums are the AVX2 kernels' (no
// int16 saturation either way: |q - 16| <= 16), so results are bit for bit the same.
#define CK_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

CK_VNNI static inline __m256i q5_0_values_vnni(const ck_block_q5_0 *b) {
    const __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
    const __m256i lo = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0f));
    // 0xf0 where the fifth bit is clear: the nibble minus 16 as int8.
    return _mm256_mask_blend_epi8((__mmask32)qh_bits(b->qh), _mm256_or_si256(lo, _mm256_set1_epi8((char)0xf0)), lo);
}

CK_VNNI static inline __m256 sum_s8_s8_vnni(__m256i x, __m256i y) {
    return _mm256_cvtepi32_ps(
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)));
}

CK_VNNI static inline __m256 scale_product_vnni(uint16_t dw, uint16_t da) {
    const __m128 w = _mm_cvtph_ps(_mm_cvtsi32_si128(dw));
    const __m128 a = _mm_cvtph_ps(_mm_cvtsi32_si128(da));
    return _mm256_broadcastss_ps(_mm_mul_ss(w, a));
}

CK_VNNI static float dot_q5_0_vnni(int k, const ck_block_q5_0 *w, const ck_block_q8_0 *a) {
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK; i++) {
        const __m256 p = sum_s8_s8_vnni(q5_0_values_vnni(&w[i]), _mm256_loadu_si256((const __m256i *)a[i].qs));
        acc = _mm256_fmadd_ps(scale_product_vnni(w[i].d, a[i].d), p, acc);
    }
    return ck_hsum8(acc);
}

CK_VNNI static void dot1x4_q5_0_vnni(int k, const ck_block_q5_0 *w, const ck_block_q8_0 *const *a, float *out) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < k / CK_QK; i++) {
        const __m256i q = q5_0_values_vnni(&w[i]);
        const __m256i aq = _mm256_sign_epi8(q, q);
        // The four activation scales in one conversion; times the weight scale, lane t is token t's
        // fp16(d_w) * fp16(d_a) (the same single rounding as scale_product_vnni).
        __m128i da = _mm_cvtsi32_si128(a[0][i].d);
        da = _mm_insert_epi16(da, a[1][i].d, 1);
        da = _mm_insert_epi16(da, a[2][i].d, 2);
        da = _mm_insert_epi16(da, a[3][i].d, 3);
        const __m128 d = _mm_mul_ps(_mm_cvtph_ps(da), _mm_set1_ps(_cvtsh_ss(w[i].d)));
        float ds[4];
        _mm_storeu_ps(ds, d);
        for (int t = 0; t < 4; t++) {
            const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)a[t][i].qs), q);
            const __m256 p = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), aq, sy));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(ds[t]), p, acc[t]);
        }
    }
    for (int t = 0; t < 4; t++) out[t] = ck_hsum8(acc[t]);
}

// Four Q5_0 rows against one activation row (decode): the activations and their scale loaded
// and converted once for the four; each row keeps dot_q5_0_vnni's arithmetic.
CK_VNNI static void dot4_q5_0_vnni(int k, const ck_block_q5_0 *w, size_t w_row_blocks, const ck_block_q8_0 *a,
                                   float *out) {
    const ck_block_q5_0 *rows[4] = {w, w + w_row_blocks, w + 2 * w_row_blocks, w + 3 * w_row_blocks};
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < k / CK_QK; i++) {
        const __m256i av = _mm256_loadu_si256((const __m256i *)a[i].qs);
        __m128i dw = _mm_cvtsi32_si128(rows[0][i].d);
        dw = _mm_insert_epi16(dw, rows[1][i].d, 1);
        dw = _mm_insert_epi16(dw, rows[2][i].d, 2);
        dw = _mm_insert_epi16(dw, rows[3][i].d, 3);
        const __m128 d = _mm_mul_ps(_mm_cvtph_ps(dw), _mm_set1_ps(_cvtsh_ss(a[i].d)));
        float ds[4];
        _mm_storeu_ps(ds, d);
        for (int r = 0; r < 4; r++) {
            const __m256 p = sum_s8_s8_vnni(q5_0_values_vnni(&rows[r][i]), av);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(ds[r]), p, acc[r]);
        }
    }
    for (int r = 0; r < 4; r++) out[r] = ck_hsum8(acc[r]);
}

static int has_avx512_vnni_bw(void) { return ck_cpu_avx512bw && ck_cpu_has_vnni(); }

CK_FAST static float dot_q5_1_fast(int k, const ck_block_q5_1 *w, const ck_block_q8_1 *a) {
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) {
        // F16C's conversion inline (exact, as ck_fp16_to_fp32): a call per block kept the
        // accumulator on the stack and the kernel at 12 % of the memory probe.
        summs = fmaf(_cvtsh_ss(w[i].m), _cvtsh_ss(a[i].s), summs);
        const __m256i hi = _mm256_and_si256(bits32(w[i].qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(nibbles32(w[i].qs), hi);
        const __m256 p = sum_u8_s8(q, _mm256_loadu_si256((const __m256i *)a[i].qs));
        acc = _mm256_fmadd_ps(scale_product(w[i].d, a[i].d), p, acc);
    }
    return ck_hsum8(acc) + summs;
}

#endif

ck_dot4_fn ck_pick_dot4_legacy(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q5_0 && has_avx512_vnni_bw()) return (ck_dot4_fn)dot4_q5_0_vnni;
#endif
    (void)type;
    (void)fast;
    return 0;
}

ck_dot1x4_fn ck_pick_dot1x4_legacy(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q5_0) {
        return has_avx512_vnni_bw() ? (ck_dot1x4_fn)dot1x4_q5_0_vnni : (ck_dot1x4_fn)dot1x4_q5_0_fast;
    }
#endif
    (void)type;
    (void)fast;
    return 0;
}

ck_dot_fn ck_pick_dot_legacy(int type, int fast) {
#if CK_X86
    if (fast) {
        switch (type) {
        case CK_TYPE_Q4_0: return (ck_dot_fn)dot_q4_0_fast;
        case CK_TYPE_Q5_0: return has_avx512_vnni_bw() ? (ck_dot_fn)dot_q5_0_vnni : (ck_dot_fn)dot_q5_0_fast;
        case CK_TYPE_Q5_1: return (ck_dot_fn)dot_q5_1_fast;
        default: break;
        }
    }
#endif
    (void)fast;
    switch (type) {
    case CK_TYPE_Q4_0: return (ck_dot_fn)dot_q4_0_portable;
    case CK_TYPE_Q5_0: return (ck_dot_fn)dot_q5_0_portable;
    case CK_TYPE_Q5_1: return (ck_dot_fn)dot_q5_1_portable;
    case CK_TYPE_BF16: return (ck_dot_fn)dot_bf16_f32_portable;
    default: return 0;
    }
}
