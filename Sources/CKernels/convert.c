// fp16 conversion, activation quantization (Q8_1 / Q8_0) and dequantization. Numerics follow
// ggml's AVX2 paths: q = round-to-nearest-even(x * 127 / amax), block scale d = amax / 127
// stored as fp16.
#include <math.h>
#include <string.h>

#include "internal.h"

// MARK: - fp16

float ck_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24
        float v = (float)mant * 5.9604644775390625e-8f;
        memcpy(&bits, &v, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ck_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) {  // inf / nan
        return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
    }
    if (a >= 0x477ff000u) {  // rounds to 65536 or more
        return (uint16_t)(sign | 0x7c00);
    }
    if (a < 0x38800000u) {  // below 2^-14: subnormal half; let the FPU round at 2^-24 steps
        float af;
        memcpy(&af, &a, 4);
        af += 0.5f;
        uint32_t r;
        memcpy(&r, &af, 4);
        return (uint16_t)(sign | (r - 0x3f000000u));
    }
    uint32_t odd = (a >> 13) & 1;
    a += 0xc8000fffu + odd;  // rebias exponent by -112 and round to nearest even
    return (uint16_t)(sign | (a >> 13));
}

#if CK_X86
CK_FAST static void fp16_to_fp32_row_fast(const uint16_t *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    }
    for (; i < n; i++) y[i] = _cvtsh_ss(x[i]);
}
CK_FAST static void fp32_to_fp16_row_fast(const float *x, uint16_t *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}
#endif

void ck_fp16_to_fp32_row(const uint16_t *x, float *y, size_t n) {
#if CK_X86
    if (ck_fast_paths_enabled()) {
        fp16_to_fp32_row_fast(x, y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = ck_fp16_to_fp32(x[i]);
}

void ck_fp32_to_fp16_row(const float *x, uint16_t *y, size_t n) {
#if CK_X86
    if (ck_fast_paths_enabled()) {
        fp32_to_fp16_row_fast(x, y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) y[i] = ck_fp32_to_fp16(x[i]);
}

// MARK: - Quantization

// Portable: one block, returns the integer sum.
static int quantize_block_portable(const float *x, int8_t *q, float *d_out) {
    float amax = 0.0f;
    for (int j = 0; j < CK_QK; j++) {
        float v = fabsf(x[j]);
        if (v > amax) amax = v;
    }
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < CK_QK; j++) {
        int v = (int)nearbyintf(x[j] * id);
        q[j] = (int8_t)v;
        sum += v;
    }
    *d_out = d;
    return sum;
}

#if CK_X86
// One block: returns the integer sum; writes q and d.
CK_FAST static inline int quantize_block_fast(const float *x, int8_t *q, float *d_out) {
    const __m256 signbit = _mm256_set1_ps(-0.0f);
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    __m256 m = _mm256_max_ps(_mm256_andnot_ps(signbit, v0), _mm256_andnot_ps(signbit, v1));
    m = _mm256_max_ps(m, _mm256_andnot_ps(signbit, v2));
    m = _mm256_max_ps(m, _mm256_andnot_ps(signbit, v3));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    *d_out = amax / 127.0f;
    const __m256 mul = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i s4 = _mm_add_epi32(_mm256_extracti128_si256(s, 1), _mm256_castsi256_si128(s));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    // pack to int8 keeping element order: packs works per 128-bit lane, fix with a permute.
    __m256i p01 = _mm256_packs_epi32(i0, i1);
    __m256i p23 = _mm256_packs_epi32(i2, i3);
    __m256i p = _mm256_packs_epi16(p01, p23);
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, p);
    return _mm_cvtsi128_si32(s4);
}

CK_FAST static void quantize_q8_1_fast(const float *x, ck_block_q8_1 *y, int nb) {
    for (int i = 0; i < nb; i++) {
        float d;
        int sum = quantize_block_fast(x + i * CK_QK, y[i].qs, &d);
        y[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        y[i].s = _cvtss_sh(d * (float)sum, _MM_FROUND_TO_NEAREST_INT);
    }
}
CK_FAST static void quantize_q8_0_fast(const float *x, ck_block_q8_0 *y, int nb) {
    for (int i = 0; i < nb; i++) {
        float d;
        (void)quantize_block_fast(x + i * CK_QK, y[i].qs, &d);
        y[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    }
}
#endif

void ck_quantize_row_q8_1(const float *x, ck_block_q8_1 *y, int k) {
    const int nb = k / CK_QK;
#if CK_X86
    if (ck_fast_paths_enabled()) {
        quantize_q8_1_fast(x, y, nb);
        return;
    }
#endif
    for (int i = 0; i < nb; i++) {
        float d;
        int sum = quantize_block_portable(x + i * CK_QK, y[i].qs, &d);
        y[i].d = ck_fp32_to_fp16(d);
        y[i].s = ck_fp32_to_fp16(d * (float)sum);
    }
}

void ck_quantize_row_q8_0(const float *x, ck_block_q8_0 *y, int k) {
    const int nb = k / CK_QK;
#if CK_X86
    if (ck_fast_paths_enabled()) {
        quantize_q8_0_fast(x, y, nb);
        return;
    }
#endif
    for (int i = 0; i < nb; i++) {
        float d;
        (void)quantize_block_portable(x + i * CK_QK, y[i].qs, &d);
        y[i].d = ck_fp32_to_fp16(d);
    }
}

void ck_dequantize_row(int type, const void *src, float *dst, int k) {
    switch (type) {
    case CK_TYPE_F32:
        for (int i = 0; i < k; i++) dst[i] = ((const float *)src)[i];
        break;
    case CK_TYPE_F16:
        ck_fp16_to_fp32_row((const uint16_t *)src, dst, (size_t)k);
        break;
    case CK_TYPE_Q4_1: {
        const ck_block_q4_1 *b = (const ck_block_q4_1 *)src;
        for (int i = 0; i < k / CK_QK; i++) {
            const float d = ck_fp16_to_fp32(b[i].d), m = ck_fp16_to_fp32(b[i].m);
            for (int j = 0; j < 16; j++) {
                dst[i * CK_QK + j] = d * (float)(b[i].qs[j] & 0x0f) + m;
                dst[i * CK_QK + j + 16] = d * (float)(b[i].qs[j] >> 4) + m;
            }
        }
        break;
    }
    case CK_TYPE_Q8_0: {
        const ck_block_q8_0 *b = (const ck_block_q8_0 *)src;
        for (int i = 0; i < k / CK_QK; i++) {
            const float d = ck_fp16_to_fp32(b[i].d);
            for (int j = 0; j < CK_QK; j++) dst[i * CK_QK + j] = d * (float)b[i].qs[j];
        }
        break;
    }
    default:
        if (!ck_dequantize_row_more(type, src, dst, k)) {
            for (int i = 0; i < k; i++) dst[i] = 0.0f;
        }
    }
}
