// Dot products of one weight row (or four) with quantized activations, per weight type, and the
// choice of kernels for a matrix product. Numerics follow ggml's AVX2 paths: dot = sum over
// blocks of fp16(d_w) * fp16(d_a) * integer dot.
#include <math.h>
#include <string.h>

#include "internal.h"

// MARK: - Dot products, portable

static float dot_q4_1_q8_1_portable(int k, const ck_block_q4_1 *w, const ck_block_q8_1 *a) {
    const int nb = k / CK_QK;
    float sum = 0.0f, summs = 0.0f;
    for (int i = 0; i < nb; i++) {
        int isum = 0;
        for (int j = 0; j < 16; j++) {
            isum += (w[i].qs[j] & 0x0f) * a[i].qs[j];
            isum += (w[i].qs[j] >> 4) * a[i].qs[j + 16];
        }
        sum += ck_fp16_to_fp32(w[i].d) * ck_fp16_to_fp32(a[i].d) * (float)isum;
        summs += ck_fp16_to_fp32(w[i].m) * ck_fp16_to_fp32(a[i].s);
    }
    return sum + summs;
}

static float dot_q8_0_q8_0_portable(int k, const ck_block_q8_0 *w, const ck_block_q8_0 *a) {
    const int nb = k / CK_QK;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int isum = 0;
        for (int j = 0; j < CK_QK; j++) isum += w[i].qs[j] * a[i].qs[j];
        sum += ck_fp16_to_fp32(w[i].d) * ck_fp16_to_fp32(a[i].d) * (float)isum;
    }
    return sum;
}

static float dot_f32_portable(int k, const float *w, const float *a) {
    float s = 0.0f;
    for (int i = 0; i < k; i++) s += w[i] * a[i];
    return s;
}

// Activations rounded to f16 first, as every F16 product takes them (dot_float16.c).
static float dot_f16_f32_portable(int k, const uint16_t *w, const float *a) {
    float s = 0.0f;
    for (int i = 0; i < k; i++) s += ck_fp16_to_fp32(w[i]) * ck_fp16_to_fp32(ck_fp32_to_fp16(a[i]));
    return s;
}

// MARK: - Dot products, AVX2

#if CK_X86

// 32 nibbles -> 32 bytes in 0...15, element order of the Q4_1 layout.
CK_FAST static inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i raw = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Sum of u8 * s8 products in 8 int32 lanes, as float.
CK_FAST static inline __m256 dot_u8_s8(__m256i u, __m256i s) {
    const __m256i p16 = _mm256_maddubs_epi16(u, s);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

CK_FAST static inline __m256 dot_s8_s8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return dot_u8_s8(ax, sy);
}

// Two fp16 values stored side by side (a block's d and m, or d and s) as floats in lanes 0 and 1.
// vmovd zero-extends, so no false dependency on an older register (scalar _cvtsh_ss had one).
CK_FAST static inline __m128 load_2xfp16(const void *p) {
    int32_t bits;
    memcpy(&bits, p, 4);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
}

// One accumulator, blocks in order, as ggml's AVX2 kernel (and summs as an FMA chain, as GCC
// contracts it): the float rounding then matches llama.cpp.
CK_FAST static float dot_q4_1_q8_1_fast(int k, const ck_block_q4_1 *w, const ck_block_q8_1 *a) {
    const int nb = k / CK_QK;
    __m256 acc = _mm256_setzero_ps();
    __m128 summs = _mm_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m128 wdm = load_2xfp16(&w[i]);
        const __m128 ads = load_2xfp16(&a[i]);
        const __m256 d = _mm256_broadcastss_ps(_mm_mul_ss(wdm, ads));
        summs = _mm_fmadd_ss(_mm_movehdup_ps(wdm), _mm_movehdup_ps(ads), summs);
        const __m256 p = dot_u8_s8(unpack_nibbles(w[i].qs), _mm256_loadu_si256((const __m256i *)a[i].qs));
        acc = _mm256_fmadd_ps(d, p, acc);
    }
    return ck_hsum8(acc) + _mm_cvtss_f32(summs);
}

CK_FAST static float dot_q8_0_q8_0_fast(int k, const ck_block_q8_0 *w, const ck_block_q8_0 *a) {
    const int nb = k / CK_QK;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m128 wd = _mm_cvtph_ps(_mm_cvtsi32_si128(w[i].d));
        const __m128 ad = _mm_cvtph_ps(_mm_cvtsi32_si128(a[i].d));
        const __m256 d = _mm256_broadcastss_ps(_mm_mul_ss(wd, ad));
        const __m256 p = dot_s8_s8(_mm256_loadu_si256((const __m256i *)w[i].qs), _mm256_loadu_si256((const __m256i *)a[i].qs));
        acc = _mm256_fmadd_ps(d, p, acc);
    }
    return ck_hsum8(acc);
}

// The four-row decode kernels prefetch the same block CK_ROWS_AHEAD rows further down (the row
// group after next). -D CK_ROWS_AHEAD=0 leaves the prefetches out (scripts/matmul_bench.c).
#ifndef CK_ROWS_AHEAD
#define CK_ROWS_AHEAD 8
#endif

// Four weight rows against one or two activation rows: the same per-row arithmetic as the
// single-row kernels (each output keeps its own accumulator and block order), with activation
// loads and scale conversions shared, and four to eight independent dependency chains. The scale
// products of the four rows come from one conversion: lanes [d0 m0 d1 m1 d2 m2 d3 m3] times
// [da sa da sa ...]; even lanes are d_r * d_a, odd lanes feed the summs chains (lane-wise FMA, so
// each chain is the scalar FMA chain of the single-row kernel).
#define CK_Q41_KERNELS(SUFFIX, TARGET, DOT)                                                                          \
    TARGET static inline __m256 q41_scales_##SUFFIX(const ck_block_q4_1 *w0, const ck_block_q4_1 *w1,                \
                                                    const ck_block_q4_1 *w2, const ck_block_q4_1 *w3) {               \
        int32_t b0, b1, b2, b3;                                                                                      \
        memcpy(&b0, w0, 4);                                                                                          \
        memcpy(&b1, w1, 4);                                                                                          \
        memcpy(&b2, w2, 4);                                                                                          \
        memcpy(&b3, w3, 4);                                                                                          \
        __m128i dm = _mm_cvtsi32_si128(b0);                                                                          \
        dm = _mm_insert_epi32(dm, b1, 1);                                                                            \
        dm = _mm_insert_epi32(dm, b2, 2);                                                                            \
        dm = _mm_insert_epi32(dm, b3, 3);                                                                            \
        return _mm256_cvtph_ps(dm);                                                                                  \
    }                                                                                                                \
    TARGET static inline __m256 q81_scales_##SUFFIX(const ck_block_q8_1 *a) {                                        \
        int32_t b;                                                                                                   \
        memcpy(&b, a, 4);                                                                                            \
        const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(b));                                                        \
        return _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(ds)));                                           \
    }                                                                                                                \
    TARGET static void dot4_q4_1_##SUFFIX(int k, const ck_block_q4_1 *w, size_t wrb, const ck_block_q8_1 *a,          \
                                          float *out) {                                                              \
        const int nb = k / CK_QK;                                                                                    \
        const ck_block_q4_1 *w0 = w, *w1 = w + wrb, *w2 = w + 2 * wrb, *w3 = w + 3 * wrb;                            \
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                              \
        __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();                                              \
        __m256 summs = _mm256_setzero_ps();                                                                          \
        const __m256i mask = _mm256_set1_epi8(0x0f);                                                                 \
        const __m256i shifts = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);                                            \
        const size_t ahead = CK_ROWS_AHEAD * wrb * sizeof(ck_block_q4_1);                                            \
        for (int i = 0; i < nb; i++) {                                                                               \
            if ((i & 1) == 0) {                                                                                      \
                _mm_prefetch((const char *)&w0[i] + ahead, _MM_HINT_T0);                                             \
                _mm_prefetch((const char *)&w1[i] + ahead, _MM_HINT_T0);                                             \
                _mm_prefetch((const char *)&w2[i] + ahead, _MM_HINT_T0);                                             \
                _mm_prefetch((const char *)&w3[i] + ahead, _MM_HINT_T0);                                             \
            }                                                                                                        \
            const __m256 dm = q41_scales_##SUFFIX(&w0[i], &w1[i], &w2[i], &w3[i]);                                   \
            const __m256 as = q81_scales_##SUFFIX(&a[i]);                                                            \
            const __m256 prod = _mm256_mul_ps(dm, as);                                                               \
            summs = _mm256_fmadd_ps(dm, as, summs);                                                                  \
            const __m256i aq = _mm256_loadu_si256((const __m256i *)a[i].qs);                                         \
            CK_Q41_STEP(DOT, w0, acc0, prod, 0, aq);                                                                 \
            CK_Q41_STEP(DOT, w1, acc1, prod, 2, aq);                                                                 \
            CK_Q41_STEP(DOT, w2, acc2, prod, 4, aq);                                                                 \
            CK_Q41_STEP(DOT, w3, acc3, prod, 6, aq);                                                                 \
        }                                                                                                            \
        float sm[8];                                                                                                 \
        _mm256_storeu_ps(sm, summs);                                                                                 \
        out[0] = ck_hsum8(acc0) + sm[1];                                                                                \
        out[1] = ck_hsum8(acc1) + sm[3];                                                                                \
        out[2] = ck_hsum8(acc2) + sm[5];                                                                                \
        out[3] = ck_hsum8(acc3) + sm[7];                                                                                \
    }                                                                                                                \
    /* Four rows x two tokens: the unpacked weights and their scales serve both tokens. */                          \
    TARGET static void dot4x2_q4_1_##SUFFIX(int k, const ck_block_q4_1 *w, size_t wrb, const ck_block_q8_1 *a,        \
                                            const ck_block_q8_1 *b, float *out_a, float *out_b) {                    \
        const int nb = k / CK_QK;                                                                                    \
        const ck_block_q4_1 *w0 = w, *w1 = w + wrb, *w2 = w + 2 * wrb, *w3 = w + 3 * wrb;                            \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps(); \
        __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps(); \
        __m256 summs_a = _mm256_setzero_ps(), summs_b = _mm256_setzero_ps();                                         \
        const __m256i mask = _mm256_set1_epi8(0x0f);                                                                 \
        const __m256i shifts = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);                                            \
        for (int i = 0; i < nb; i++) {                                                                               \
            const __m256 dm = q41_scales_##SUFFIX(&w0[i], &w1[i], &w2[i], &w3[i]);                                   \
            const __m256 as = q81_scales_##SUFFIX(&a[i]);                                                            \
            const __m256 bs = q81_scales_##SUFFIX(&b[i]);                                                            \
            const __m256 pa = _mm256_mul_ps(dm, as);                                                                 \
            const __m256 pb = _mm256_mul_ps(dm, bs);                                                                 \
            summs_a = _mm256_fmadd_ps(dm, as, summs_a);                                                              \
            summs_b = _mm256_fmadd_ps(dm, bs, summs_b);                                                              \
            const __m256i aq = _mm256_loadu_si256((const __m256i *)a[i].qs);                                         \
            const __m256i bq = _mm256_loadu_si256((const __m256i *)b[i].qs);                                         \
            CK_Q41_STEP2(DOT, w0, a0, b0, 0);                                                                        \
            CK_Q41_STEP2(DOT, w1, a1, b1, 2);                                                                        \
            CK_Q41_STEP2(DOT, w2, a2, b2, 4);                                                                        \
            CK_Q41_STEP2(DOT, w3, a3, b3, 6);                                                                        \
        }                                                                                                            \
        float sa[8], sb[8];                                                                                          \
        _mm256_storeu_ps(sa, summs_a);                                                                               \
        _mm256_storeu_ps(sb, summs_b);                                                                               \
        out_a[0] = ck_hsum8(a0) + sa[1];                                                                                \
        out_a[1] = ck_hsum8(a1) + sa[3];                                                                                \
        out_a[2] = ck_hsum8(a2) + sa[5];                                                                                \
        out_a[3] = ck_hsum8(a3) + sa[7];                                                                                \
        out_b[0] = ck_hsum8(b0) + sb[1];                                                                                \
        out_b[1] = ck_hsum8(b1) + sb[3];                                                                                \
        out_b[2] = ck_hsum8(b2) + sb[5];                                                                                \
        out_b[3] = ck_hsum8(b3) + sb[7];                                                                                \
    }

#define CK_Q41_STEP(DOT, W, ACC, PROD, LANE, AQ)                                                                   \
    do {                                                                                                           \
        const __m256 d = _mm256_permutevar8x32_ps(PROD, _mm256_set1_epi32(LANE));                                  \
        const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)W[i].qs));               \
        const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(raw, shifts), mask);                                  \
        ACC = _mm256_fmadd_ps(d, DOT(q, AQ), ACC);                                                                 \
    } while (0)

#define CK_Q41_STEP2(DOT, W, ACCA, ACCB, LANE)                                                                     \
    do {                                                                                                           \
        const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)W[i].qs));               \
        const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(raw, shifts), mask);                                  \
        ACCA = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(pa, _mm256_set1_epi32(LANE)), DOT(q, aq), ACCA);          \
        ACCB = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(pb, _mm256_set1_epi32(LANE)), DOT(q, bq), ACCB);          \
    } while (0)

#define CK_DOT_MADD(u, s) dot_u8_s8(u, s)
CK_Q41_KERNELS(avx2, CK_FAST, CK_DOT_MADD)

#define CK_FAST_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
CK_FAST_VNNI static inline __m256 dot_u8_s8_vnni(__m256i u, __m256i s) {
    return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s));
}
#define CK_DOT_VNNI(u, s) dot_u8_s8_vnni(u, s)
CK_Q41_KERNELS(vnni, CK_FAST_VNNI, CK_DOT_VNNI)

// Four rows x four tokens (VNNI build only: it has 32 vector registers for the 16 accumulators).
CK_FAST_VNNI static void dot4x4_q4_1_vnni(int k, const ck_block_q4_1 *w, size_t wrb, const ck_block_q8_1 *const *x,
                                          float *const *out) {
    const int nb = k / CK_QK;
    const ck_block_q4_1 *w0 = w, *w1 = w + wrb, *w2 = w + 2 * wrb, *w3 = w + 3 * wrb;
    const ck_block_q8_1 *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
    __m256 acc[4][4];
    __m256 summs[4];
    for (int t = 0; t < 4; t++) {
        summs[t] = _mm256_setzero_ps();
        for (int r = 0; r < 4; r++) acc[t][r] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i shifts = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
    for (int i = 0; i < nb; i++) {
        const __m256 dm = q41_scales_vnni(&w0[i], &w1[i], &w2[i], &w3[i]);
        __m256i q[4];
        const ck_block_q4_1 *wr[4] = {&w0[i], &w1[i], &w2[i], &w3[i]};
        for (int r = 0; r < 4; r++) {
            const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)wr[r]->qs));
            q[r] = _mm256_and_si256(_mm256_srlv_epi32(raw, shifts), mask);
        }
        const ck_block_q8_1 *xb[4] = {&x0[i], &x1[i], &x2[i], &x3[i]};
        for (int t = 0; t < 4; t++) {
            const __m256 as = q81_scales_vnni(xb[t]);
            const __m256 prod = _mm256_mul_ps(dm, as);
            summs[t] = _mm256_fmadd_ps(dm, as, summs[t]);
            const __m256i aq = _mm256_loadu_si256((const __m256i *)xb[t]->qs);
            for (int r = 0; r < 4; r++) {
                const __m256 d = _mm256_permutevar8x32_ps(prod, _mm256_set1_epi32(2 * r));
                acc[t][r] = _mm256_fmadd_ps(d, dot_u8_s8_vnni(q[r], aq), acc[t][r]);
            }
        }
    }
    for (int t = 0; t < 4; t++) {
        float sm[8];
        _mm256_storeu_ps(sm, summs[t]);
        for (int r = 0; r < 4; r++) out[t][r] = ck_hsum8(acc[t][r]) + sm[2 * r + 1];
    }
}

static _Thread_local int ck_vnni_override = -1;

int ck_cpu_has_vnni(void) { return ck_vnni_override >= 0 ? ck_vnni_override : ck_cpu_vnni512; }

void ck_set_vnni(int enabled) { ck_vnni_override = enabled ? ck_cpu_vnni512 : 0; }

// Every form has AVX2 kernels besides its VNNI ones (interleave_avx2.c, interleave_q4_0.c,
// interleave_q*_k*.c, interleave_q5_1*.c, interleave_mxfp4.c), so every CPU with AVX2 gets them;
// Q5_0 goes through the Q8_0 form there (interleave.c), and its own and Q5_1's VNNI kernels need
// AVX-512 BW too (the AVX2 ones run where it is missing).
int ck_interleaving_pays(int type) {
    switch (type) {
    case CK_TYPE_Q4_0: case CK_TYPE_Q4_1: case CK_TYPE_Q5_0: case CK_TYPE_Q5_1: case CK_TYPE_Q8_0:
    case CK_TYPE_Q2_K: case CK_TYPE_Q3_K: case CK_TYPE_Q4_K: case CK_TYPE_Q5_K: case CK_TYPE_Q6_K:
    case CK_TYPE_MXFP4: return ck_cpu_vnni512 || ck_cpu_has_avx2_fma();
    default: return 0;
    }
}

CK_FAST static void dot4_q8_0_q8_0_fast(int k, const ck_block_q8_0 *w, size_t w_row_blocks, const ck_block_q8_0 *a,
                                        float *out) {
    const int nb = k / CK_QK;
    const ck_block_q8_0 *w0 = w, *w1 = w + w_row_blocks, *w2 = w + 2 * w_row_blocks, *w3 = w + 3 * w_row_blocks;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
#define CK_Q80_ROW(W, ACC, LANE)                                                                    \
    do {                                                                                          \
        const __m256 d = _mm256_permutevar8x32_ps(prod, _mm256_set1_epi32(LANE));                 \
        const __m256i wq = _mm256_loadu_si256((const __m256i *)W[i].qs);                          \
        ACC = _mm256_fmadd_ps(d, dot_u8_s8(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(aq, wq)), ACC); \
    } while (0)
    const size_t ahead = CK_ROWS_AHEAD * w_row_blocks * sizeof(ck_block_q8_0);
    for (int i = 0; i < nb; i++) {
        _mm_prefetch((const char *)&w0[i] + ahead, _MM_HINT_T0);
        _mm_prefetch((const char *)&w1[i] + ahead, _MM_HINT_T0);
        _mm_prefetch((const char *)&w2[i] + ahead, _MM_HINT_T0);
        _mm_prefetch((const char *)&w3[i] + ahead, _MM_HINT_T0);
        __m128i dw = _mm_cvtsi32_si128(w0[i].d);
        dw = _mm_insert_epi16(dw, w1[i].d, 1);
        dw = _mm_insert_epi16(dw, w2[i].d, 2);
        dw = _mm_insert_epi16(dw, w3[i].d, 3);
        const __m256 ad = _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(a[i].d)));
        const __m256 prod = _mm256_mul_ps(_mm256_cvtph_ps(dw), ad);
        const __m256i aq = _mm256_loadu_si256((const __m256i *)a[i].qs);
        CK_Q80_ROW(w0, acc0, 0);
        CK_Q80_ROW(w1, acc1, 1);
        CK_Q80_ROW(w2, acc2, 2);
        CK_Q80_ROW(w3, acc3, 3);
    }
#undef CK_Q80_ROW
    out[0] = ck_hsum8(acc0);
    out[1] = ck_hsum8(acc1);
    out[2] = ck_hsum8(acc2);
    out[3] = ck_hsum8(acc3);
}

CK_FAST static float dot_f32_fast(int k, const float *w, const float *a) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= k; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(a + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(a + i + 8), acc1);
    }
    for (; i + 8 <= k; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(a + i), acc0);
    float s = ck_hsum8(_mm256_add_ps(acc0, acc1));
    for (; i < k; i++) s += w[i] * a[i];
    return s;
}

#endif

float ck_dot_q4_1_q8_1(int k, const ck_block_q4_1 *w, const ck_block_q8_1 *a) {
#if CK_X86
    if (ck_fast_paths_enabled()) return dot_q4_1_q8_1_fast(k, w, a);
#endif
    return dot_q4_1_q8_1_portable(k, w, a);
}

float ck_dot_q8_0_q8_0(int k, const ck_block_q8_0 *w, const ck_block_q8_0 *a) {
#if CK_X86
    if (ck_fast_paths_enabled()) return dot_q8_0_q8_0_fast(k, w, a);
#endif
    return dot_q8_0_q8_0_portable(k, w, a);
}

float ck_dot_f32(int k, const float *w, const float *a) {
#if CK_X86
    if (ck_fast_paths_enabled()) return dot_f32_fast(k, w, a);
#endif
    return dot_f32_portable(k, w, a);
}

float ck_dot_f16_f32(int k, const uint16_t *w, const float *a) {
    const ck_float16_kernels f16 = ck_pick_float16(CK_TYPE_F16, ck_fast_paths_enabled());
    return f16.dot ? f16.dot(k, w, a) : dot_f16_f32_portable(k, w, a);
}

// MARK: - Kernel choice

static ck_dot_fn pick_dot(int type, int fast) {
    switch (type) {
#if CK_X86
    case CK_TYPE_Q4_1: return fast ? (ck_dot_fn)dot_q4_1_q8_1_fast : (ck_dot_fn)dot_q4_1_q8_1_portable;
    case CK_TYPE_Q8_0: return fast ? (ck_dot_fn)dot_q8_0_q8_0_fast : (ck_dot_fn)dot_q8_0_q8_0_portable;
    case CK_TYPE_F32: return fast ? (ck_dot_fn)dot_f32_fast : (ck_dot_fn)dot_f32_portable;
    case CK_TYPE_F16: return fast ? ck_pick_float16(type, fast).dot : (ck_dot_fn)dot_f16_f32_portable;
#else
    case CK_TYPE_Q4_1: return (ck_dot_fn)dot_q4_1_q8_1_portable;
    case CK_TYPE_Q8_0: return (ck_dot_fn)dot_q8_0_q8_0_portable;
    case CK_TYPE_F32: return (ck_dot_fn)dot_f32_portable;
    case CK_TYPE_F16: return (ck_dot_fn)dot_f16_f32_portable;
#endif
    default: break;
    }
    if (type == CK_TYPE_MXFP4) return ck_pick_dot_mxfp4(type, fast);
    const ck_dot_fn pairs = ck_pick_dot_bf16_pairs(type, fast);
    if (pairs) return pairs;
    const ck_dot_fn float16 = ck_pick_float16(type, fast).dot;
    if (float16) return float16;
    const ck_dot_fn legacy = ck_pick_dot_legacy(type, fast);
    return legacy ? legacy : ck_pick_dot_kquants(type, fast);
}

ck_kernels ck_pick_kernels(int type, int fast) {
    ck_kernels k = {pick_dot(type, fast), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    k.dot_tiled = ck_pick_dot_tiled_kquants(type, fast);
    k.dot1x4_tiled = ck_pick_dot1x4_tiled_kquants(type, fast);
    k.dot_pairs = ck_pick_dot_pairs_kquants(type, fast);
    k.dot1x4 = ck_pick_dot1x4_legacy(type, fast);
    if (!k.dot1x4) k.dot1x4 = ck_pick_dot1x4_kquants(type, fast);
    k.dot4 = ck_pick_dot4_legacy(type, fast);
    // F16 and BF16: a row alone in ggml_vec_dot's order, a micro-batch's rows in tinyBLAS's
    // where llama.cpp takes it; with AVX512-BF16 in vdpbf16ps pairs (dot_bf16_pairs.c), otherwise
    // in f32 lanes of the fast kernels' width (dot_float16.c).
    k.dot_gemm = ck_pick_gemm_bf16_pairs(type, fast);
    if (k.dot_gemm) {
        k.dot_rows = ck_pick_rows_bf16_pairs(type, fast);
        k.gemm_k = 32;
    } else {
        const ck_float16_kernels f = ck_pick_float16(type, fast);
        k.dot_rows = f.rows;
        k.dot_gemm = f.gemm;
        k.gemm_k = f.gemm_k;
    }
    if (type == CK_TYPE_Q4_0_X8 || type == CK_TYPE_Q4_1_X8 || type == CK_TYPE_Q5_0_X8 || type == CK_TYPE_Q8_0_X8 ||
        type == CK_TYPE_Q5_1_X8 || type == CK_TYPE_Q4_K_X8 || type == CK_TYPE_Q5_K_X8 || type == CK_TYPE_Q6_K_X8 ||
        type == CK_TYPE_Q3_K_X8 || type == CK_TYPE_Q2_K_X8 || type == CK_TYPE_MXFP4_X8) {
        k.interleaved = 1;
        k.interleaved_fast = !fast                ? CK_INTERLEAVED_PORTABLE
                             : ck_cpu_has_vnni() ? CK_INTERLEAVED_VNNI
                                                 : CK_INTERLEAVED_AVX2;
        return k;
    }
#if CK_X86
    if (fast && type == CK_TYPE_Q4_1) {
        const int vnni = ck_cpu_has_vnni();
        k.dot4 = vnni ? (ck_dot4_fn)dot4_q4_1_vnni : (ck_dot4_fn)dot4_q4_1_avx2;
        k.dot4x2 = vnni ? (ck_dot4x2_fn)dot4x2_q4_1_vnni : (ck_dot4x2_fn)dot4x2_q4_1_avx2;
        if (vnni) k.dot4x4 = (ck_dot4x4_fn)dot4x4_q4_1_vnni;
    }
    if (fast && type == CK_TYPE_Q8_0) k.dot4 = (ck_dot4_fn)dot4_q8_0_q8_0_fast;
#endif
    return k;
}

float ck_dot(int type, int k, const void *w, const void *x) {
    const ck_dot_fn dot = pick_dot(type, ck_fast_paths_enabled());
    return dot ? dot(k, w, x) : 0.0f;
}

static float dot_ordered(int type, int k, const void *w, const void *x, int order, int fast) {
    const ck_kernels kern = ck_pick_kernels(type, fast);
    if ((order & CK_ORDER_TILED) && kern.dot_tiled) return kern.dot_tiled(k, w, x);
    if ((order & CK_ORDER_GROUP4) && kern.dot_pairs) return kern.dot_pairs(k, w, x);
    return kern.dot ? kern.dot(k, w, x) : 0.0f;
}

float ck_dot_ordered(int type, int k, const void *w, const void *x, int order) {
    return dot_ordered(type, k, w, x, order, ck_fast_paths_enabled());
}

float ck_dot_ordered_portable(int type, int k, const void *w, const void *x, int order) {
    return dot_ordered(type, k, w, x, order, 0);
}

float ck_dot_portable(int type, int k, const void *w, const void *x) {
    const ck_dot_fn dot = pick_dot(type, 0);
    return dot ? dot(k, w, x) : 0.0f;
}
