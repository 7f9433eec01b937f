// MXFP4 weights (gpt-oss's experts): blocks of 32 four-bit E2M1 codes sharing one E8M0 scale
// byte, against Q8_0 activations (ggml's vec_dot_type for MXFP4). A code indexes ggml's table of
// doubled E2M1 values (kvalues_mxfp4: 0, ±1, ±2, ±3, ±4, ±6, ±8, ±12), so the block's scale is
// taken halved (ggml_e8m0_to_fp32_half). The products follow ggml_vec_dot_mxfp4_q8_0: per block
// an exact integer dot, then fp16(d_a) · half(e) (one rounding) times it; on AVX2 the blocks go
// in pairs into two 8-lane accumulators (even blocks, odd blocks) added at the end, an odd last
// block in the scalar tail.
#include <string.h>

#include "internal.h"

static const int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as ggml builds it: the subnormal halves for e < 2 (not NaN for 255).
float ck_e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void ck_dequantize_row_mxfp4(const ck_block_mxfp4 *x, float *y, int k) {
    for (int i = 0; i < k / CK_QK; i++) {
        const float d = ck_e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[i * CK_QK + j] = (float)kvalues_mxfp4[x[i].qs[j] & 0x0f] * d;
            y[i * CK_QK + j + 16] = (float)kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}

// One block's product as ggml's scalar loop takes it: d · (its integer dot).
static inline float block_dot(const ck_block_mxfp4 *w, const ck_block_q8_0 *a) {
    const float d = ck_fp16_to_fp32(a->d) * ck_e8m0_to_fp32_half(w->e);
    int s1 = 0, s2 = 0;
    for (int j = 0; j < 16; j++) {
        s1 += a->qs[j] * kvalues_mxfp4[w->qs[j] & 0x0f];
        s2 += a->qs[j + 16] * kvalues_mxfp4[w->qs[j] >> 4];
    }
    return d * (float)(s1 + s2);
}

// The scalar reference: ggml's generic loop (one float sum, block by block).
static float dot_mxfp4_portable(int k, const ck_block_mxfp4 *w, const ck_block_q8_0 *a) {
    float sum = 0.0f;
    for (int i = 0; i < k / CK_QK; i++) sum += block_dot(&w[i], &a[i]);
    return sum;
}

#if CK_X86

// ggml's tail: the blocks from `i` on (at most one) in the scalar loop, added to `sum`.
static inline float tail(int i, int nb, const ck_block_mxfp4 *w, const ck_block_q8_0 *a, float sum) {
    for (; i < nb; i++) sum += block_dot(&w[i], &a[i]);
    return sum;
}

// The block's 32 values as int8, element order (low nibbles, then high): one vpshufb each half.
CK_FAST static inline __m256i values32(const uint8_t *qs) {
    const __m128i table = _mm_loadu_si128((const __m128i *)kvalues_mxfp4);
    const __m128i raw = _mm_loadu_si128((const __m128i *)qs);
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(raw, mask));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(raw, 4), mask));
    return _mm256_set_m128i(hi, lo);
}

// Lane l: the exact sum of elements 4l..4l+3 of x · y (|x| <= 12, so vpmaddubsw cannot saturate).
CK_FAST static inline __m256 lane_sums(__m256i x, __m256i y) {
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

CK_FAST static inline float scale(const ck_block_mxfp4 *w, const ck_block_q8_0 *a) {
    return _cvtsh_ss(a->d) * ck_e8m0_to_fp32_half(w->e);
}

CK_FAST static float dot_mxfp4_avx2(int k, const ck_block_mxfp4 *w, const ck_block_q8_0 *a) {
    const int nb = k / CK_QK;
    __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256 p1 = lane_sums(values32(w[i].qs), _mm256_loadu_si256((const __m256i *)a[i].qs));
        const __m256 p2 = lane_sums(values32(w[i + 1].qs), _mm256_loadu_si256((const __m256i *)a[i + 1].qs));
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(scale(&w[i], &a[i])), p1, acc1);
        acc2 = _mm256_fmadd_ps(_mm256_set1_ps(scale(&w[i + 1], &a[i + 1])), p2, acc2);
    }
    return tail(i, nb, w, a, ck_hsum8(_mm256_add_ps(acc1, acc2)));
}

#define CK_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// AVX-512 VNNI: a pair of blocks per 512-bit vector (the even block in lanes 0-7, the odd one in
// 8-15), vpshufb on the table in every 128-bit lane and one vpdpbusd; the two halves of the
// accumulator are the AVX2 kernel's two accumulators, lane for lane, so the bits are the same.
CK_VNNI512 static float dot_mxfp4_vnni(int k, const ck_block_mxfp4 *w, const ck_block_q8_0 *a) {
    const int nb = k / CK_QK;
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)kvalues_mxfp4));
    const __m512i mask = _mm512_set1_epi8(0x0f);
    __m512 acc = _mm512_setzero_ps();
    int i = 0;
    for (; i + 1 < nb; i += 2) {
        // nibble bytes: [w_i.qs, w_i.qs >> 4, w_i+1.qs, w_i+1.qs >> 4] in the four 128-bit lanes
        const __m128i q0 = _mm_loadu_si128((const __m128i *)w[i].qs);
        const __m128i q1 = _mm_loadu_si128((const __m128i *)w[i + 1].qs);
        __m512i raw = _mm512_castsi128_si512(q0);
        raw = _mm512_inserti32x4(raw, _mm_srli_epi16(q0, 4), 1);
        raw = _mm512_inserti32x4(raw, q1, 2);
        raw = _mm512_inserti32x4(raw, _mm_srli_epi16(q1, 4), 3);
        const __m512i x = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, mask));
        __m512i y = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a[i].qs));
        y = _mm512_inserti64x4(y, _mm256_loadu_si256((const __m256i *)a[i + 1].qs), 1);
        // |x| · (y with x's sign): vpdpbusd's unsigned × signed products are x · y.
        const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
        const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy));
        const __m256 s0 = _mm256_set1_ps(scale(&w[i], &a[i]));
        const __m256 s1 = _mm256_set1_ps(scale(&w[i + 1], &a[i + 1]));
        const __m512 d = _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(s0)), _mm256_castps_pd(s1), 1));
        acc = _mm512_fmadd_ps(d, p, acc);
    }
    const __m256 acc1 = _mm512_castps512_ps256(acc);
    const __m256 acc2 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
    return tail(i, nb, w, a, ck_hsum8(_mm256_add_ps(acc1, acc2)));
}

#endif

ck_dot_fn ck_pick_dot_mxfp4(int type, int fast) {
    if (type != CK_TYPE_MXFP4) return 0;
#if CK_X86
    // VNNI as the thread's switch has it (ck_set_vnni), and AVX-512 BW for the byte shuffles.
    if (fast) return ck_cpu_avx512bw && ck_cpu_has_vnni() ? (ck_dot_fn)dot_mxfp4_vnni : (ck_dot_fn)dot_mxfp4_avx2;
#endif
    (void)fast;
    return (ck_dot_fn)dot_mxfp4_portable;
}
