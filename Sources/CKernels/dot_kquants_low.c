// Dot products of the 2- and 3-bit K-quants (Q2_K, Q3_K) with Q8_K activations, arranged as
// dot_kquants.c's: integer sums per super-block weighted by the group scales, then one float
// multiply-add by d = d_a * fp16(d_w) per super-block (Q2_K's mins against the Q8_K group sums).
// The portable kernels are the scalar references; the AVX2 ones are tested against them.
#include <string.h>

#include "internal.h"

// MARK: - Portable (the scalar references)

static float dot_q2_k_portable(int k, const ck_block_q2_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int sumi = 0, summ = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int half = e / 128, sh = (e % 128) / 32, l = e % 32;
                s += ((w[i].qs[half * 32 + l] >> (2 * sh)) & 3) * a[i].qs[e];
            }
            sumi += (w[i].scales[g] & 0x0f) * s;
            summ += (w[i].scales[g] >> 4) * a[i].bsums[g];
        }
        const float d = a[i].d * ck_fp16_to_fp32(w[i].d), dmin = a[i].d * ck_fp16_to_fp32(w[i].dmin);
        sum += d * (float)sumi - dmin * (float)summ;
    }
    return sum;
}

static float dot_q3_k_portable(int k, const ck_block_q3_K *w, const ck_block_q8_K *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK_K; i++) {
        int8_t sc[16];
        ck_q3_k_scales(w[i].scales, sc);
        int sumi = 0;
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                const int half = e / 128, sh = (e % 128) / 32, l = e % 32;
                const int low = (w[i].qs[half * 32 + l] >> (2 * sh)) & 3;
                const int high = (w[i].hmask[l] >> (4 * half + sh)) & 1;
                s += (low - (high ? 0 : 4)) * a[i].qs[e];
            }
            sumi += sc[g] * s;
        }
        sum += a[i].d * ck_fp16_to_fp32(w[i].d) * (float)sumi;
    }
    return sum;
}

// MARK: - AVX2

#if CK_X86
// Two adjacent groups of 16 (one 32-value maddubs result) weighted by their int16 scales.
CK_FAST static inline __m256i scale_pair_epi16(int s0, int s1) {
    return _mm256_setr_m128i(_mm_set1_epi16((short)s0), _mm_set1_epi16((short)s1));
}

// ggml's AVX2 order (its vec_dot, which llama.cpp takes for micro-batches under 8 rows): per
// super-block, the mins' eight int32 lanes (pairs of groups against their Q8_K sums) in one FMA
// by -d_a * fp16(dmin) into the eight float lanes, then the scaled products' lanes in one FMA
// by d_a * fp16(d); the lanes summed at the end.
CK_FAST static float dot_q2_k_fast(int k, const ck_block_q2_K *w, const ck_block_q8_K *a) {
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = a[i].d * _cvtsh_ss(w[i].d), dmin = -a[i].d * _cvtsh_ss(w[i].dmin);
        const __m128i packed = _mm_loadu_si128((const __m128i *)w[i].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
        const __m256i mp = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)a[i].bsums));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(mp), acc);
        uint8_t sc[16];
        for (int g = 0; g < 16; g++) sc[g] = w[i].scales[g] & 0x0f;
        __m256i sumi = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a[i].qs + 128 * n + 32 * sh));
                const int g = 8 * n + 2 * sh;
                const __m256i p = _mm256_madd_epi16(scale_pair_epi16(sc[g], sc[g + 1]), _mm256_maddubs_epi16(q, av));
                sumi = _mm256_add_epi32(sumi, p);
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ck_hsum8(acc);
}

CK_FAST static float dot_q3_k_fast(int k, const ck_block_q3_K *w, const ck_block_q8_K *a) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i four = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < k / CK_QK_K; i++) {
        const float d = a[i].d * _cvtsh_ss(w[i].d);
        int8_t sc[16];
        ck_q3_k_scales(w[i].scales, sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
        for (int n = 0; n < 2; n++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * n));
            for (int sh = 0; sh < 4; sh++) {
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * sh), m3);
                // 4 where the high bit is clear: q = low - that, as low * a - that * a.
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * n + sh)));
                const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a[i].qs + 128 * n + 32 * sh));
                const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(low, av),
                                                     _mm256_maddubs_epi16(_mm256_and_si256(clear, four), av));
                const int g = 8 * n + 2 * sh;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair_epi16(sc[g], sc[g + 1]), p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return ck_hsum8(acc);
}
#endif

ck_dot_fn ck_pick_dot_kquants_low(int type, int fast) {
#if CK_X86
    if (fast && type == CK_TYPE_Q2_K) return (ck_dot_fn)dot_q2_k_fast;
    if (fast && type == CK_TYPE_Q3_K) return (ck_dot_fn)dot_q3_k_fast;
#endif
    (void)fast;
    switch (type) {
    case CK_TYPE_Q2_K: return (ck_dot_fn)dot_q2_k_portable;
    case CK_TYPE_Q3_K: return (ck_dot_fn)dot_q3_k_portable;
    default: return 0;
    }
}
