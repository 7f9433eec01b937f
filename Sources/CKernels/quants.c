// Dequantization of the weight types beyond F32/F16/Q4_1/Q8_0 (ggml block layouts and element
// orders) and Q8_K activation quantization with ggml's rounding. Plain scalar code: it runs for
// embedding rows and norm vectors, and is the reference the dot-product kernels are tested
// against (with the Swift dequantizers and PyPI gguf's numpy ones). Q8_K quantization, which
// runs on every activation row before a K-quant product, also has an AVX2 path.
#include <string.h>

#include "internal.h"

static float bf16_to_fp32(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// Q4_K / Q5_K: scale and min of group j (0..<8) from the 12 packed bytes.
void ck_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Q3_K: the 16 signed 6-bit scales (already minus 32) from the 12 packed bytes.
static void dequantize_q4_0(const ck_block_q4_0 *b, float *y, int nb) {
    for (int i = 0; i < nb; i++, y += CK_QK) {
        const float d = ck_fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((b[i].qs[j] & 0x0f) - 8);
            y[j + 16] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

static uint32_t load_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void dequantize_q5_0(const ck_block_q5_0 *b, float *y, int nb) {
    for (int i = 0; i < nb; i++, y += CK_QK) {
        const float d = ck_fp16_to_fp32(b[i].d);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int x0 = (b[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
            const int x1 = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            y[j] = d * (float)(x0 - 16);
            y[j + 16] = d * (float)(x1 - 16);
        }
    }
}

static void dequantize_q5_1(const ck_block_q5_1 *b, float *y, int nb) {
    for (int i = 0; i < nb; i++, y += CK_QK) {
        const float d = ck_fp16_to_fp32(b[i].d), m = ck_fp16_to_fp32(b[i].m);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int x0 = (b[i].qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
            const int x1 = (b[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            y[j] = d * (float)x0 + m;
            y[j + 16] = d * (float)x1 + m;
        }
    }
}

// Element e of a 2-bit super-block (Q2_K, Q3_K): 128-element halves use 32 bytes of qs; within a
// half, element 32 * s + l (s = shift step 0..<4, l < 32) is bits 2s of qs[half * 32 + l].
static void dequantize_q2_k(const ck_block_q2_K *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = ck_fp16_to_fp32(b[i].d), dmin = ck_fp16_to_fp32(b[i].dmin);
        for (int e = 0; e < CK_QK_K; e++) {
            const int half = e / 128, s = (e % 128) / 32, l = e % 32, g = e / 16;
            const int q = (b[i].qs[half * 32 + l] >> (2 * s)) & 3;
            const uint8_t sc = b[i].scales[g];
            y[e] = d * (float)(sc & 0x0f) * (float)q - dmin * (float)(sc >> 4);
        }
        y += CK_QK_K;
    }
}

static void dequantize_q3_k(const ck_block_q3_K *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = ck_fp16_to_fp32(b[i].d);
        int8_t sc[16];
        ck_q3_k_scales(b[i].scales, sc);
        for (int e = 0; e < CK_QK_K; e++) {
            const int half = e / 128, s = (e % 128) / 32, l = e % 32, g = e / 16;
            const int low = (b[i].qs[half * 32 + l] >> (2 * s)) & 3;
            const int high = (b[i].hmask[l] >> (4 * half + s)) & 1;
            y[e] = d * (float)sc[g] * (float)(low - (high ? 0 : 4));
        }
        y += CK_QK_K;
    }
}

static void dequantize_q4_k(const ck_block_q4_K *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = ck_fp16_to_fp32(b[i].d), dmin = ck_fp16_to_fp32(b[i].dmin);
        for (int g = 0; g < 8; g++) {
            uint8_t sc, m;
            ck_scale_min_k4(g, b[i].scales, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + (g / 2) * 32;
            for (int l = 0; l < 32; l++) y[g * 32 + l] = dl * (float)(g % 2 ? q[l] >> 4 : q[l] & 0x0f) - ml;
        }
        y += CK_QK_K;
    }
}

static void dequantize_q5_k(const ck_block_q5_K *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = ck_fp16_to_fp32(b[i].d), dmin = ck_fp16_to_fp32(b[i].dmin);
        for (int g = 0; g < 8; g++) {
            uint8_t sc, m;
            ck_scale_min_k4(g, b[i].scales, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = b[i].qs + (g / 2) * 32;
            for (int l = 0; l < 32; l++) {
                const int low = g % 2 ? q[l] >> 4 : q[l] & 0x0f;
                const int high = (b[i].qh[l] >> g) & 1;
                y[g * 32 + l] = dl * (float)(low + 16 * high) - ml;
            }
        }
        y += CK_QK_K;
    }
}

// Q6_K element e: half h = e / 128, quarter s = (e % 128) / 32, l = e % 32; low nibble from
// ql[64h + l + 32 (s & 1)] (high nibble when s >= 2), two high bits from qh[32h + l] >> 2s.
int ck_q6_k_value(const ck_block_q6_K *b, int e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    const uint8_t lo = b->ql[64 * h + l + 32 * (s & 1)];
    const int low = s >= 2 ? lo >> 4 : lo & 0x0f;
    const int high = (b->qh[32 * h + l] >> (2 * s)) & 3;
    return (low | (high << 4)) - 32;
}

static void dequantize_q6_k(const ck_block_q6_K *b, float *y, int nb) {
    for (int i = 0; i < nb; i++) {
        const float d = ck_fp16_to_fp32(b[i].d);
        for (int e = 0; e < CK_QK_K; e++) y[e] = d * (float)b[i].scales[e / 16] * (float)ck_q6_k_value(&b[i], e);
        y += CK_QK_K;
    }
}

int ck_dequantize_row_more(int type, const void *src, float *dst, int k) {
    switch (type) {
    case CK_TYPE_BF16:
        for (int i = 0; i < k; i++) dst[i] = bf16_to_fp32(((const uint16_t *)src)[i]);
        return 1;
    case CK_TYPE_Q4_0: dequantize_q4_0(src, dst, k / CK_QK); return 1;
    case CK_TYPE_Q5_0: dequantize_q5_0(src, dst, k / CK_QK); return 1;
    case CK_TYPE_Q5_1: dequantize_q5_1(src, dst, k / CK_QK); return 1;
    case CK_TYPE_Q2_K: dequantize_q2_k(src, dst, k / CK_QK_K); return 1;
    case CK_TYPE_Q3_K: dequantize_q3_k(src, dst, k / CK_QK_K); return 1;
    case CK_TYPE_Q4_K: dequantize_q4_k(src, dst, k / CK_QK_K); return 1;
    case CK_TYPE_Q5_K: dequantize_q5_k(src, dst, k / CK_QK_K); return 1;
    case CK_TYPE_Q6_K: dequantize_q6_k(src, dst, k / CK_QK_K); return 1;
    case CK_TYPE_MXFP4: ck_dequantize_row_mxfp4(src, dst, k); return 1;
    default: return 0;
    }
}

// MARK: - Q8_K

// ggml rounds with nearbyint semantics (its magic-number trick rounds half to even).
static void quantize_row_q8_K_portable(const float *x, ck_block_q8_K *y, int k) {
    const int nb = k / CK_QK_K;
    for (int i = 0; i < nb; i++, x += CK_QK_K) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < CK_QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < CK_QK_K; j++) {
            const int v = (int)nearbyintf(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

#if CK_X86
// The same values as the portable code: the largest magnitude by vector max (NaNs ignored, as
// the scalar comparison ignores them), its first occurrence found by a scan, the same product
// iscale * x rounded half to even by vroundps (nearbyintf in the default rounding mode).
CK_FAST static void quantize_row_q8_K_fast(const float *x, ck_block_q8_K *y, int k) {
    const int nb = k / CK_QK_K;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int i = 0; i < nb; i++, x += CK_QK_K) {
        __m256 vmax = _mm256_setzero_ps();
        for (int j = 0; j < CK_QK_K; j += 8) vmax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), vmax);
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(vmax, 1), _mm256_castps256_ps128(vmax));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        float max = amax;
        for (int j = 0; j < CK_QK_K; j++) {
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256 top = _mm256_set1_ps(127.0f);
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (int j = 0; j < CK_QK_K; j += 32) {
            __m256i v[4];
            for (int u = 0; u < 4; u++) {
                const __m256 r = _mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * u)),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                v[u] = _mm256_cvtps_epi32(_mm256_min_ps(r, top));
            }
            // Packing interleaves 128-bit lanes; the permutation puts the 32 bytes back in order.
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), _mm256_permutevar8x32_epi32(p, order));
        }
        for (int g = 0; g < 16; g++) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(y[i].qs + 16 * g));
            const __m128i s16 = _mm_add_epi16(_mm_cvtepi8_epi16(q), _mm_cvtepi8_epi16(_mm_srli_si128(q, 8)));
            const __m128i s32 = _mm_madd_epi16(s16, _mm_set1_epi16(1));
            const __m128i s2 = _mm_add_epi32(s32, _mm_shuffle_epi32(s32, 0x4e));
            const __m128i s1 = _mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xb1));
            y[i].bsums[g] = (int16_t)_mm_cvtsi128_si32(s1);
        }
        y[i].d = 1.0f / iscale;
    }
}
#endif

void ck_quantize_row_q8_K(const float *x, ck_block_q8_K *y, int k) {
#if CK_X86
    if (ck_fast_paths_enabled()) {
        quantize_row_q8_K_fast(x, y, k);
        return;
    }
#endif
    quantize_row_q8_K_portable(x, y, k);
}
