// SIMD pieces shared by the per-head and the grouped attention kernels. Static inline: each
// kernel file gets its own copy, inlined where it is used.
#ifndef INFERD_CKERNELS_ATTENTION_SIMD_H
#define INFERD_CKERNELS_ATTENTION_SIMD_H
#include "internal.h"

#if CK_X86

// The summation orders below reproduce llama.cpp's CPU kernels (ggml built for AVX-512) so the
// float rounding matches: a 16-lane sum is reduced as lanes (i, i+8), then (i, i+4), then
// (0+2, 1+3), then the last pair; ggml_vec_dot_f16 keeps 4 such 16-lane sums over steps of 64
// elements, folds them (0+2, 1+3, then 0+1), and adds the leftover products in double.

// Q.K for one key: q already f16-rounded, n elements.
CK_FAST static inline float dot_f16_ggml(const __m256 *q, const uint16_t *k, int n) {
    const int np = n & ~63;
    __m256 a[8];
    for (int m = 0; m < 8; m++) a[m] = _mm256_setzero_ps();
    for (int i = 0; i < np; i += 64) {
        for (int m = 0; m < 8; m++) {
            a[m] = _mm256_fmadd_ps(q[(i >> 3) + m], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8 * m))), a[m]);
        }
    }
    // 16-lane sums j = 0..3 are (a[2j], a[2j+1]); fold 0+2, 1+3, then 0+1.
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
    double sum = (double)ck_hsum8(_mm256_add_ps(hi, lo));
    if (np < n) {
        float tail[CK_MAX_HEAD_DIM];
        for (int v = np / 8; v < n / 8; v++) _mm256_storeu_ps(tail + 8 * v, q[v]);
        for (int i = np; i < n; i++) sum += (double)(tail[i] * _cvtsh_ss(k[i]));
    }
    return (float)sum;
}

// Q.K as llamafile's f16 x f16 GEMM (prompt batches): one 16-lane sum over the row, then reduced.
CK_FAST static inline float dot_f16_tiny(const __m256 *q, const uint16_t *k, int n) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        lo = _mm256_fmadd_ps(q[i >> 3], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))), lo);
        hi = _mm256_fmadd_ps(q[(i >> 3) + 1], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8))), hi);
    }
    return ck_hsum8(_mm256_add_ps(hi, lo));
}

// Q.K for a row of a prompt batch. llamafile's GEMM takes the batch's Q.K product only when the
// head width is a multiple of its step (16 on AVX-512); ggml computes the others key by key with
// ggml_vec_dot_f16, as for a decoding row. dot_f16_tiny reads 16 values per step, so on another
// width it would also read the next head's query and key.
CK_FAST static inline float dot_f16_batch(const __m256 *q, const uint16_t *k, int n) {
    return n % 16 == 0 ? dot_f16_tiny(q, k, n) : dot_f16_ggml(q, k, n);
}

// The end of the keys ggml_vec_dot_f16 sums in whole 64-element steps for a row that sees `keys`
// keys as a decode step (its call's KV range is those keys): it runs over that range padded to a
// multiple of 32 (at least 32); the keys from here on are summed in double. Taking the row's own
// keys, not the rows given at once, keeps decode steps verified together (call_rows 1) each as
// it is alone.
static inline int attention_full_steps_end(int keys) {
    int n_kv = (keys + 31) & ~31;
    if (n_kv < 32) n_kv = 32;
    return n_kv & ~63;
}

// Sixteen lanes x[0..15] reduced to one in ggml's order, for 8 values of d at once.
CK_FAST static inline __m256 reduce16_lanes(const __m256 *x) {
    __m256 t3[8], t6[4];
    for (int i = 0; i < 8; i++) t3[i] = _mm256_add_ps(x[i + 8], x[i]);
    for (int i = 0; i < 4; i++) t6[i] = _mm256_add_ps(t3[i + 4], t3[i]);
    const __m256 t80 = _mm256_add_ps(t6[0], t6[2]);
    const __m256 t81 = _mm256_add_ps(t6[1], t6[3]);
    return _mm256_add_ps(t80, t81);
}

// Reduce 16 lanes held as acc[l][d] (l = 0..15), vectorized over 8 values of d.
CK_FAST static inline __m256 reduce16_over_d(const float *acc, int stride, int d) {
    __m256 x[16];
    for (int l = 0; l < 16; l++) x[l] = _mm256_loadu_ps(acc + (size_t)l * stride + d);
    return reduce16_lanes(x);
}

// The 64 values of one f16 row as 8 float vectors.
CK_FAST static inline void load_f16_row_64(const uint16_t *row, __m256 *out) {
    for (int m = 0; m < 8; m++) out[m] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 8 * m)));
}

// Softmax of nk scores in place, given their maximum, as ggml on AVX-512: exp per 16 keys of
// the padded range (masked keys give 0), each 16-lane sum reduced in float and added in double;
// weights scaled by float(1 / sum), then rounded to f16 (the product with V takes them so).
// scores must have room for nk rounded up to 16.
// sink: the head's sink logit (-inf: none), taken into the maximum and the sum as ggml does.
CK_FAST static inline void softmax_weights_from_max(float *scores, int nk, float max, float sink) {
    max = max > sink ? max : sink;
    const int n16 = (nk + 15) & ~15;
    for (int j = nk; j < n16; j++) scores[j] = 0.0f;
    const __m256 vmax = _mm256_set1_ps(max);
    double sum = 0.0;
    for (int j = 0; j < n16; j += 16) {
        __m256 lo = ck_v_expf(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vmax));
        __m256 hi = ck_v_expf(_mm256_sub_ps(_mm256_loadu_ps(scores + j + 8), vmax));
        if (j + 16 > nk) {  // masked keys weigh exactly 0
            const __m256 idx_lo = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256 limit = _mm256_set1_ps((float)(nk - j));
            lo = _mm256_and_ps(lo, _mm256_cmp_ps(idx_lo, limit, _CMP_LT_OQ));
            hi = _mm256_and_ps(hi, _mm256_cmp_ps(_mm256_add_ps(idx_lo, _mm256_set1_ps(8)), limit, _CMP_LT_OQ));
        }
        _mm256_storeu_ps(scores + j, lo);
        _mm256_storeu_ps(scores + j + 8, hi);
        sum += (double)ck_hsum8(_mm256_add_ps(hi, lo));
    }
    sum += (double)expf(sink - max);
    const __m256 vinv = _mm256_set1_ps((float)(1.0 / sum));
    for (int j = 0; j < nk; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(scores + j), vinv);
        _mm256_storeu_ps(scores + j, _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
    }
}

// The softmax of attention_unit_fast_per_head on one head's scores, in place: exp per 16 keys of
// the padded range (masked keys give 0), each 16-lane sum reduced in float and added in double;
// weights scaled by float(1 / sum), then rounded to f16 for the product with V.
CK_FAST static inline void softmax_weights_ggml(float *scores, int nk, float sink) {
    // The maximum 8 keys at a time. Like the scalar `s > max ? s : max`, vmaxps(s, max) never
    // takes a NaN, so the maximum is the same but for the sign of a zero, which s - max and so
    // the weights do not see (exp(+0) = exp(-0) = 1, s - (+0) = s - (-0) otherwise).
    __m256 vm = _mm256_set1_ps(-INFINITY);
    int j8 = 0;
    for (; j8 + 8 <= nk; j8 += 8) vm = _mm256_max_ps(_mm256_loadu_ps(scores + j8), vm);
    float lanes[8];
    _mm256_storeu_ps(lanes, vm);
    float max = -INFINITY;
    for (int l = 0; l < 8; l++) max = lanes[l] > max ? lanes[l] : max;
    for (int j = j8; j < nk; j++) max = scores[j] > max ? scores[j] : max;
    softmax_weights_from_max(scores, nk, max, sink);
}

// acc[l][d] = sum over keys j < n with j % lanes == l, in increasing j, of fma(v_j[d], w_j, .):
// the per-lane partial sums of a `lanes`-wide vector dot product over the keys. Each lane's
// sums stay in registers while its keys go by (head_dim <= 256: at most 32 ymm, the compiler
// spills beyond its register file but the order of operations is fixed).
CK_FAST static inline void accumulate_lanes(float *acc, int lanes, int hd, const uint16_t *vbase, int kv_stride,
                                     const float *w, int n) {
    const int nv = hd / 8;
    for (int l = 0; l < lanes; l++) {
        __m256 a[CK_MAX_HEAD_DIM / 8];
        for (int v = 0; v < nv; v++) a[v] = _mm256_setzero_ps();
        for (int j = l; j < n; j += lanes) {
            const uint16_t *vj = vbase + (size_t)j * kv_stride;
            const __m256 wj = _mm256_set1_ps(w[j]);
            for (int v = 0; v < nv; v++) {
                a[v] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vj + 8 * v))), wj, a[v]);
            }
        }
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(acc + (size_t)l * hd + 8 * v, a[v]);
    }
}
#endif

#endif
