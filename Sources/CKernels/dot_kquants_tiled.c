// Q2_K, Q3_K and Q5_K against Q8_K in the order of llama.cpp's tiled K-quant product
// (ggml-cpu/tiled, commit 0c1e57098), which its CPU backend takes for every K-quant matrix
// product of 8 or more activation rows when the weights are not repacked (CK_ORDER_TILED).
// Its microtile (the AVX-512 VNNI one on this project's machines) keeps, per weight row,
// activation row and 256-value super-block, two exact integer sums:
//   s1 = Σ_groups scale_g * Σ (q * a)       (Q3_K: q - 4, the code's bias taken out exactly)
//   s2 = Σ_groups min_g * Σ a               (Q2_K, Q5_K: the Q8_K group sums)
// and then rounds in this order, the row's accumulator starting at 0:
//   r = float(s1) * fp16(d_w);  r = fma(-fp16(dmin_w), float(s2), r);  acc = fma(r, d_a, acc)
// (its epilogue is _mm512_mul_ps, _mm512_fnmadd_ps, then mul + add of the accumulator, which
// GCC contracts to one vfmadd). The per-row vec_dot kernels (dot_kquants*.c: d_a * fp16(d_w)
// first, then one FMA of the lanes per super-block) round differently, by a few ulps, and the
// small model amplifies that (issue #34: echoed log-probabilities differed by up to 0.6).
// Q6_K's tiled order (no mins) is in dot_kquants.c. The portable kernels are the scalar
// references; the AVX2 ones only compute the same exact integer sums faster, so the float
// steps, shared below, are the same on every path. The four-row kernels (dot1x4_*_tiled_*: one
// weight row unpacked once for four activation rows, the float steps in four vector lanes) give
// each row the one-row kernels' bits; matrix products take them for the tiled rows (matmul.c).
#include <string.h>

#include "internal.h"

// The tiled float steps of one super-block.
static inline float tiled_step(float acc, int s1, int s2, uint16_t dw, uint16_t dminw, float da) {
    float r = (float)s1 * ck_fp16_to_fp32(dw);
    r = fmaf(-ck_fp16_to_fp32(dminw), (float)s2, r);
    return fmaf(r, da, acc);
}

static inline float tiled_step_nomin(float acc, int s1, uint16_t dw, float da) {
    const float r = (float)s1 * ck_fp16_to_fp32(dw);
    return fmaf(r, da, acc);
}

// MARK: - Portable (the scalar references)

static float dot_q2_k_tiled_portable(int k, const ck_block_q2_K *w, const ck_block_q8_K *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int s1 = 0, s2 = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int half = e / 128, sh = (e % 128) / 32, l = e % 32;
                s += ((w[i].qs[half * 32 + l] >> (2 * sh)) & 3) * a[i].qs[e];
            }
            s1 += (w[i].scales[g] & 0x0f) * s;
            s2 += (w[i].scales[g] >> 4) * a[i].bsums[g];
        }
        acc = tiled_step(acc, s1, s2, w[i].d, w[i].dmin, a[i].d);
    }
    return acc;
}

static float dot_q3_k_tiled_portable(int k, const ck_block_q3_K *w, const ck_block_q8_K *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int8_t sc[16];
        ck_q3_k_scales(w[i].scales, sc);
        int s1 = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int half = e / 128, sh = (e % 128) / 32, l = e % 32;
                const int low = (w[i].qs[half * 32 + l] >> (2 * sh)) & 3;
                const int high = (w[i].hmask[l] >> (4 * half + sh)) & 1;
                s += (low - (high ? 0 : 4)) * a[i].qs[e];
            }
            s1 += sc[g] * s;
        }
        acc = tiled_step_nomin(acc, s1, w[i].d, a[i].d);
    }
    return acc;
}

static float dot_q5_k_tiled_portable(int k, const ck_block_q5_K *w, const ck_block_q8_K *a) {
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int s1 = 0, s2 = 0;
        for (int g = 0; g < 8; g++) {
            uint8_t sc, m;
            ck_scale_min_k4(g, w[i].scales, &sc, &m);
            const uint8_t *q = w[i].qs + (g / 2) * 32;
            int s = 0;
            for (int l = 0; l < 32; l++) {
                const int v = (g % 2 ? q[l] >> 4 : q[l] & 0x0f) + 16 * ((w[i].qh[l] >> g) & 1);
                s += v * a[i].qs[32 * g + l];
            }
            s1 += sc * s;
            s2 += m * (a[i].bsums[2 * g] + a[i].bsums[2 * g + 1]);
        }
        acc = tiled_step(acc, s1, s2, w[i].d, w[i].dmin, a[i].d);
    }
    return acc;
}

// MARK: - AVX2 (the same integer sums in SIMD lanes, added up exactly)

#if CK_X86
CK_FAST static inline int tiled_hsum_epi32_8(__m256i v) {
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

// Two adjacent groups of 16 (one 32-value maddubs result) weighted by their int16 scales.
CK_FAST static inline __m256i tiled_scale_pair(int s0, int s1) {
    return _mm256_setr_m128i(_mm_set1_epi16((short)s0), _mm_set1_epi16((short)s1));
}

CK_FAST static float dot_q2_k_tiled_fast(int k, const ck_block_q2_K *w, const ck_block_q8_K *a) {
    const __m256i m3 = _mm256_set1_epi8(3);
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        const __m128i packed = _mm_loadu_si128((const __m128i *)w[i].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
        const int s2 = tiled_hsum_epi32_8(_mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)a[i].bsums)));
        uint8_t sc[16];
        for (int g = 0; g < 16; g++) sc[g] = w[i].scales[g] & 0x0f;
        __m256i sumi = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a[i].qs + 128 * n + 32 * sh));
                const int g = 8 * n + 2 * sh;
                sumi = _mm256_add_epi32(sumi,
                                        _mm256_madd_epi16(tiled_scale_pair(sc[g], sc[g + 1]), _mm256_maddubs_epi16(q, av)));
            }
        }
        acc = tiled_step(acc, tiled_hsum_epi32_8(sumi), s2, w[i].d, w[i].dmin, a[i].d);
    }
    return acc;
}

CK_FAST static float dot_q3_k_tiled_fast(int k, const ck_block_q3_K *w, const ck_block_q8_K *a) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i four = _mm256_set1_epi8(4);
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int8_t sc[16];
        ck_q3_k_scales(w[i].scales, sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * n + sh)));
                const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a[i].qs + 128 * n + 32 * sh));
                const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(low, av),
                                                     _mm256_maddubs_epi16(_mm256_and_si256(clear, four), av));
                const int g = 8 * n + 2 * sh;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(tiled_scale_pair(sc[g], sc[g + 1]), p16));
            }
        }
        acc = tiled_step_nomin(acc, tiled_hsum_epi32_8(sumi), w[i].d, a[i].d);
    }
    return acc;
}

CK_FAST static float dot_q5_k_tiled_fast(int k, const ck_block_q5_K *w, const ck_block_q8_K *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    float acc = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        uint8_t sc[8];
        int s2 = 0;
        for (int g = 0; g < 8; g++) {
            uint8_t m;
            ck_scale_min_k4(g, w[i].scales, &sc[g], &m);
            s2 += m * (a[i].bsums[2 * g] + a[i].bsums[2 * g + 1]);
        }
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
        acc = tiled_step(acc, tiled_hsum_epi32_8(sumi), s2, w[i].d, w[i].dmin, a[i].d);
    }
    return acc;
}

// The 8 scales and 8 mins of a Q5_K super-block from their 12 bytes, four groups per 32-bit
// word operation (the bit layout of ck_scale_min_k4, as dot_kquants.c unpacks them).
static inline void tiled_scales_mins(const uint8_t *packed, uint8_t *sc, uint8_t *m) {
    uint32_t u[3], o[4];
    memcpy(u, packed, 12);
    o[0] = u[0] & 0x3f3f3f3fu;
    o[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    o[2] = u[1] & 0x3f3f3f3fu;
    o[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    memcpy(sc, o, 8);
    memcpy(m, o + 2, 8);
}

// Lane t of the result: the sum of the 8 int32 lanes of v[t] (exact, so any order).
CK_FAST static inline __m128i tiled_hsum4_epi32(const __m256i *v) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The float steps of one super-block for four activation rows at once (lane t: row t), the
// same IEEE operations as tiled_step: fnmadd(dmin, s2, r) rounds as fmaf(-dmin, s2, r).
CK_FAST static inline __m128 tiled_step4(__m128 acc, __m128i s1, __m128i s2, uint16_t dw, uint16_t dminw, __m128 da) {
    __m128 r = _mm_mul_ps(_mm_cvtepi32_ps(s1), _mm_set1_ps(_cvtsh_ss(dw)));
    r = _mm_fnmadd_ps(_mm_set1_ps(_cvtsh_ss(dminw)), _mm_cvtepi32_ps(s2), r);
    return _mm_fmadd_ps(r, da, acc);
}

// One Q5_K weight row against four activation rows (a[t], 256 values per super-block), each
// in dot_q5_k_tiled_portable's order bit for bit: the weights' 5-bit values and scales are
// unpacked once per super-block for the four rows (the one-row kernel spent most of its time
// there), the integer sums are exact, and the float steps run in the four lanes of one vector.
// Its portable reference is dot_q5_k_tiled_portable, once per row.
CK_FAST static void dot1x4_q5_k_tiled_fast(int k, const ck_block_q5_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    __m128 acc = _mm_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        uint8_t sc[8], m[8];
        tiled_scales_mins(w[i].scales, sc, m);
        // Each group's min twice: one per Q8_K group sum of 16.
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)m);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        __m256i sumi[4], summ[4];
        for (int t = 0; t < 4; t++) {
            sumi[t] = _mm256_setzero_si256();
            summ[t] = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)a[t][i].bsums));
        }
        const __m256i hbits = _mm256_loadu_si256((const __m256i *)w[i].qh);
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * j));
            // Fifth bits 2j and 2j + 1 of each qh byte, moved to bit 4.
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j), 4), bit4);
            const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j + 1), 4), bit4);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
            const __m256i s0 = _mm256_set1_epi16(sc[2 * j]), s1 = _mm256_set1_epi16(sc[2 * j + 1]);
            for (int t = 0; t < 4; t++) {
                const int8_t *q8 = a[t][i].qs + 64 * j;
                const __m256i p0 = _mm256_madd_epi16(s0, _mm256_maddubs_epi16(q0, _mm256_loadu_si256((const __m256i *)q8)));
                const __m256i p1 =
                    _mm256_madd_epi16(s1, _mm256_maddubs_epi16(q1, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p0, p1));
            }
        }
        const __m128 da = _mm_setr_ps(a[0][i].d, a[1][i].d, a[2][i].d, a[3][i].d);
        acc = tiled_step4(acc, tiled_hsum4_epi32(sumi), tiled_hsum4_epi32(summ), w[i].d, w[i].dmin, da);
    }
    _mm_storeu_ps(out, acc);
}

// Q2_K: one weight row against four activation rows, each in dot_q2_k_tiled_portable's order
// bit for bit (its portable reference, once per row); the 2-bit values and scales unpacked once.
CK_FAST static void dot1x4_q2_k_tiled_fast(int k, const ck_block_q2_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m3 = _mm256_set1_epi8(3);
    __m128 acc = _mm_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const __m128i packed = _mm_loadu_si128((const __m128i *)w[i].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
        __m256i sumi[4], summ[4];
        for (int t = 0; t < 4; t++) {
            sumi[t] = _mm256_setzero_si256();
            summ[t] = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)a[t][i].bsums));
        }
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                const int g = 8 * n + 2 * sh;
                const __m256i pair = tiled_scale_pair(w[i].scales[g] & 0x0f, w[i].scales[g + 1] & 0x0f);
                for (int t = 0; t < 4; t++) {
                    const __m256i av = _mm256_loadu_si256((const __m256i *)(a[t][i].qs + 128 * n + 32 * sh));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(pair, _mm256_maddubs_epi16(q, av)));
                }
            }
        }
        const __m128 da = _mm_setr_ps(a[0][i].d, a[1][i].d, a[2][i].d, a[3][i].d);
        acc = tiled_step4(acc, tiled_hsum4_epi32(sumi), tiled_hsum4_epi32(summ), w[i].d, w[i].dmin, da);
    }
    _mm_storeu_ps(out, acc);
}

// Q3_K: one weight row against four activation rows, each in dot_q3_k_tiled_portable's order
// bit for bit (its portable reference, once per row). The 3-bit values are unpacked once, as
// q + 4 in 0..7 (one maddubs per 32 values and row); the bias comes off exactly through the
// Q8_K group sums: Σ_g sc_g Σ (q * a) = Σ_g sc_g Σ ((q + 4) * a) - 4 Σ_g sc_g * bsums_g.
CK_FAST static void dot1x4_q3_k_tiled_fast(int k, const ck_block_q3_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i four = _mm256_set1_epi8(4);
    __m128 acc = _mm_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        int8_t sc[16];
        ck_q3_k_scales(w[i].scales, sc);
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w[i].hmask);
        __m256i sumi[4];
        for (int t = 0; t < 4; t++) {
            const __m256i bias = _mm256_madd_epi16(scales, _mm256_loadu_si256((const __m256i *)a[t][i].bsums));
            sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(bias, 2));
        }
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * n + sh)));
                const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
                const __m256i q = _mm256_or_si256(low, _mm256_and_si256(set, four));
                const int g = 8 * n + 2 * sh;
                const __m256i pair = tiled_scale_pair(sc[g], sc[g + 1]);
                for (int t = 0; t < 4; t++) {
                    const __m256i av = _mm256_loadu_si256((const __m256i *)(a[t][i].qs + 128 * n + 32 * sh));
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(pair, _mm256_maddubs_epi16(q, av)));
                }
            }
        }
        const __m128 r = _mm_mul_ps(_mm_cvtepi32_ps(tiled_hsum4_epi32(sumi)), _mm_set1_ps(_cvtsh_ss(w[i].d)));
        acc = _mm_fmadd_ps(r, _mm_setr_ps(a[0][i].d, a[1][i].d, a[2][i].d, a[3][i].d), acc);
    }
    _mm_storeu_ps(out, acc);
}

#define CK_TILED_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// dot1x4_q5_k_tiled_fast with AVX-512: 64 values (two groups) per step, the group scales
// applied by vpdpwssd to maddubs's pair sums (one instruction each for 64 values and row where
// AVX2 takes three per 32). The same exact integer sums, the same float steps.
CK_TILED_VNNI static void dot1x4_q5_k_tiled_vnni(int k, const ck_block_q5_K *w, const ck_block_q8_K *const *a,
                                                 float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    __m128 acc = _mm_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        uint8_t sc[8], m[8];
        tiled_scales_mins(w[i].scales, sc, m);
        const __m128i m8 = _mm_loadl_epi64((const __m128i *)m);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const __m256i hbits = _mm256_loadu_si256((const __m256i *)w[i].qh);
        // q[j]: the 5-bit values of groups 2j and 2j + 1 (activation bytes 64j..<64j + 64);
        // s[j]: their scales as int16 lanes, 16 each.
        __m512i q[4], s[4];
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * j));
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j), 4), bit4);
            const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j + 1), 4), bit4);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
            q[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
            s[j] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(sc[2 * j])),
                                      _mm256_set1_epi16(sc[2 * j + 1]), 1);
        }
        __m256i sumi[4], summ[4];
        for (int t = 0; t < 4; t++) {
            const int8_t *q8 = a[t][i].qs;
            __m512i sum = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) {
                const __m512i p = _mm512_maddubs_epi16(q[j], _mm512_loadu_si512((const void *)(q8 + 64 * j)));
                sum = _mm512_dpwssd_epi32(sum, p, s[j]);
            }
            sumi[t] = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
            summ[t] = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)a[t][i].bsums));
        }
        const __m128 da = _mm_setr_ps(a[0][i].d, a[1][i].d, a[2][i].d, a[3][i].d);
        acc = tiled_step4(acc, tiled_hsum4_epi32(sumi), tiled_hsum4_epi32(summ), w[i].d, w[i].dmin, da);
    }
    _mm_storeu_ps(out, acc);
}
#endif

ck_dot_fn ck_pick_dot_tiled_kquants_more(int type, int fast) {
#if CK_X86
    if (fast) {
        switch (type) {
        case CK_TYPE_Q2_K: return (ck_dot_fn)dot_q2_k_tiled_fast;
        case CK_TYPE_Q3_K: return (ck_dot_fn)dot_q3_k_tiled_fast;
        case CK_TYPE_Q5_K: return (ck_dot_fn)dot_q5_k_tiled_fast;
        default: break;
        }
    }
#endif
    (void)fast;
    switch (type) {
    case CK_TYPE_Q2_K: return (ck_dot_fn)dot_q2_k_tiled_portable;
    case CK_TYPE_Q3_K: return (ck_dot_fn)dot_q3_k_tiled_portable;
    case CK_TYPE_Q5_K: return (ck_dot_fn)dot_q5_k_tiled_portable;
    default: return 0;
    }
}


// The four-row tiled kernels (NULL where the rows go one at a time through the kernels above).
ck_dot1x4_fn ck_pick_dot1x4_tiled_kquants_more(int type, int fast) {
#if CK_X86
    if (fast) {
        switch (type) {
        case CK_TYPE_Q2_K: return (ck_dot1x4_fn)dot1x4_q2_k_tiled_fast;
        case CK_TYPE_Q3_K: return (ck_dot1x4_fn)dot1x4_q3_k_tiled_fast;
        case CK_TYPE_Q5_K:
            return ck_cpu_has_vnni() ? (ck_dot1x4_fn)dot1x4_q5_k_tiled_vnni : (ck_dot1x4_fn)dot1x4_q5_k_tiled_fast;
        default: break;
        }
    }
#endif
    (void)type;
    (void)fast;
    return 0;
}
