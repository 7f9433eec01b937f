// Dot products of the K-quants (256-value super-blocks; Q2_K and Q3_K in dot_kquants_low.c) with Q8_K activations. Per super-block
// the products sum as integers (weighted by the 4-8 bit group scales), then the float
// multiply-adds by d = d_a * fp16(d_w) (and the mins by d_a * fp16(dmin) against the Q8_K group
// sums) in super-block order, as ggml's AVX2 kernels arrange them, so results stay close to
// llama.cpp's. The portable kernels are the scalar references; the fast ones are tested
// against them.
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

static float dot_q4_k_portable(int k, const ck_block_q4_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) sum += dot_q45_k_portable(w[i].scales, w[i].qs, 0, w[i].d, w[i].dmin, &a[i]);
    return sum;
}

static float dot_q5_k_portable(int k, const ck_block_q5_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        sum += dot_q45_k_portable(w[i].scales, w[i].qs, w[i].qh, w[i].d, w[i].dmin, &a[i]);
    }
    return sum;
}

static float dot_q6_k_portable(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int sumi = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) s += ck_q6_k_value(&w[i], e) * a[i].qs[e];
            sumi += w[i].scales[g] * s;
        }
        sum += a[i].d * ck_fp16_to_fp32(w[i].d) * (float)sumi;
    }
    return sum;
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

CK_FAST static float dot_q4_k_fast(int k, const ck_block_q4_K *w, const ck_block_q8_K *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = a[i].d * _cvtsh_ss(w[i].d);
        const float dmin = -a[i].d * _cvtsh_ss(w[i].dmin);
        uint8_t sc[8], m[8];
        unpack_scales_mins(w[i].scales, sc, m);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins_products(m, a[i].bsums)), acc_m);
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
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    return ck_hsum8(acc) + _mm_cvtss_f32(acc_m);
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

// dot_q4_k_fast for four activation rows: the same per-row arithmetic, the weights unpacked once.
CK_FAST static void dot1x4_q4_k_fast(int k, const ck_block_q4_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 acc_m[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int i = 0; i < k / CK_QK_K; i++) {
        uint8_t sc[8], m[8];
        unpack_scales_mins(w[i].scales, sc, m);
        const float wd = _cvtsh_ss(w[i].d), wdmin = _cvtsh_ss(w[i].dmin);
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256()};
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
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(pl, ph));
            }
        }
        for (int t = 0; t < 4; t++) {
            const float d = a[t][i].d * wd, dmin = -a[t][i].d * wdmin;
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins_products(m, a[t][i].bsums)), acc_m[t]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < 4; t++) {
        __m128 s = _mm_add_ps(acc_m[t], _mm_movehl_ps(acc_m[t], acc_m[t]));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        out[t] = ck_hsum8(acc[t]) + _mm_cvtss_f32(s);
    }
}

// Scales s and s + 1 as 16 int16 lanes: lanes 0-7 take s, lanes 8-15 take s + 1 (two groups of 16
// values in one 32-value maddubs result).
CK_FAST static inline __m256i pair_scales(const int8_t *scales, int s) {
    return _mm256_setr_m128i(_mm_set1_epi16(scales[s]), _mm_set1_epi16(scales[s + 1]));
}

CK_FAST static float dot_q6_k_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *a) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i m32s = _mm256_set1_epi8(32);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = a[i].d * _cvtsh_ss(w[i].d);
        const uint8_t *ql = w[i].ql;
        const uint8_t *qh = w[i].qh;
        const int8_t *q8 = a[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 2; j++) {
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(qh + 32 * j));
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4);
            const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4);
            const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4);
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * j));
            const __m256i l2 = _mm256_loadu_si256((const __m256i *)(ql + 64 * j + 32));
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(l1, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l2, m4), h1);
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), h2);
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l2, 4), m4), h3);
            const __m256i a0 = _mm256_loadu_si256((const __m256i *)(q8 + 128 * j));
            const __m256i a1 = _mm256_loadu_si256((const __m256i *)(q8 + 128 * j + 32));
            const __m256i a2 = _mm256_loadu_si256((const __m256i *)(q8 + 128 * j + 64));
            const __m256i a3 = _mm256_loadu_si256((const __m256i *)(q8 + 128 * j + 96));
            // (q - 32) * a as q * a - 32 * a, both in int16 pairs.
            __m256i p0 = _mm256_sub_epi16(_mm256_maddubs_epi16(q0, a0), _mm256_maddubs_epi16(m32s, a0));
            __m256i p1 = _mm256_sub_epi16(_mm256_maddubs_epi16(q1, a1), _mm256_maddubs_epi16(m32s, a1));
            __m256i p2 = _mm256_sub_epi16(_mm256_maddubs_epi16(q2, a2), _mm256_maddubs_epi16(m32s, a2));
            __m256i p3 = _mm256_sub_epi16(_mm256_maddubs_epi16(q3, a3), _mm256_maddubs_epi16(m32s, a3));
            const int8_t *sc = w[i].scales + 8 * j;
            p0 = _mm256_madd_epi16(pair_scales(sc, 0), p0);
            p1 = _mm256_madd_epi16(pair_scales(sc, 2), p1);
            p2 = _mm256_madd_epi16(pair_scales(sc, 4), p2);
            p3 = _mm256_madd_epi16(pair_scales(sc, 6), p3);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p2, p3));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ck_hsum8(acc);
}
#endif

// dot_q6_k_fast for four activation rows: the same per-row arithmetic, the weights unpacked once.
#if CK_X86
CK_FAST static void dot1x4_q6_k_fast(int k, const ck_block_q6_K *w, const ck_block_q8_K *const *a, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i m32s = _mm256_set1_epi8(32);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float wd = _cvtsh_ss(w[i].d);
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256()};
        for (int j = 0; j < 2; j++) {
            const __m256i hb = _mm256_loadu_si256((const __m256i *)(w[i].qh + 32 * j));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * j));
            const __m256i l2 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * j + 32));
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l2, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l2, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
            const int8_t *sc = w[i].scales + 8 * j;
            const __m256i scales[4] = {pair_scales(sc, 0), pair_scales(sc, 2), pair_scales(sc, 4), pair_scales(sc, 6)};
            for (int t = 0; t < 4; t++) {
                const int8_t *q8 = a[t][i].qs + 128 * j;
                __m256i p[4];
                for (int u = 0; u < 4; u++) {
                    const __m256i av = _mm256_loadu_si256((const __m256i *)(q8 + 32 * u));
                    p[u] = _mm256_sub_epi16(_mm256_maddubs_epi16(q[u], av), _mm256_maddubs_epi16(m32s, av));
                    p[u] = _mm256_madd_epi16(scales[u], p[u]);
                }
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[0], p[1]));
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p[2], p[3]));
            }
        }
        for (int t = 0; t < 4; t++) {
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t][i].d * wd), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < 4; t++) out[t] = ck_hsum8(acc[t]);
}
#endif

ck_dot1x4_fn ck_pick_dot1x4_kquants(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q4_K) return (ck_dot1x4_fn)dot1x4_q4_k_fast;
    if (fast && type == CK_TYPE_Q6_K) return (ck_dot1x4_fn)dot1x4_q6_k_fast;
#endif
    (void)type;
    (void)fast;
    return 0;
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
