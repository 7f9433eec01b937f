// Attention over the f16 KV cache and the small element-wise operations.
#include <math.h>

#include "internal.h"

// MARK: - Attention

#define CK_MAX_HEAD_DIM 256

static void softmax_weights(float *s, int n, int round_f16) {
    float max = -INFINITY;
    for (int j = 0; j < n; j++) max = s[j] > max ? s[j] : max;
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        const float e = expf(s[j] - max);
        s[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    // llama.cpp rounds the weights to f16 for the product with V.
    for (int j = 0; j < n; j++) s[j] = round_f16 ? ck_fp16_to_fp32(ck_fp32_to_fp16(s[j] * inv)) : s[j] * inv;
}

static void attention_unit_portable(const ck_attention_args *p, int t, int h, float *scores) {
    const int hd = p->head_dim;
    const int nk = p->pos0 + t + 1;
    const int kvh = h / (p->n_head / p->n_kv_head);
    const float *qh = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
    float q16[CK_MAX_HEAD_DIM];
    for (int d = 0; d < hd; d++) q16[d] = ck_fp16_to_fp32(ck_fp32_to_fp16(qh[d]));
    for (int j = 0; j < nk; j++) {
        const uint16_t *kj = p->k_cache + (size_t)j * p->kv_stride + (size_t)kvh * hd;
        float s = 0.0f;
        for (int d = 0; d < hd; d++) s += q16[d] * ck_fp16_to_fp32(kj[d]);
        scores[j] = s * p->scale;
    }
    softmax_weights(scores, nk, 1);
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    for (int d = 0; d < hd; d++) out[d] = 0.0f;
    for (int j = 0; j < nk; j++) {
        const uint16_t *vj = p->v_cache + (size_t)j * p->kv_stride + (size_t)kvh * hd;
        const float w = scores[j];
        for (int d = 0; d < hd; d++) out[d] += w * ck_fp16_to_fp32(vj[d]);
    }
}

#if CK_X86
CK_FAST static inline float hsum8_ops(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

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
    double sum = (double)hsum8_ops(_mm256_add_ps(hi, lo));
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
    return hsum8_ops(_mm256_add_ps(hi, lo));
}

// Reduce 16 lanes held as acc[l][d] (l = 0..15), vectorized over 8 values of d.
CK_FAST static inline __m256 reduce16_over_d(const float *acc, int stride, int d) {
    __m256 x[16];
    for (int l = 0; l < 16; l++) x[l] = _mm256_loadu_ps(acc + (size_t)l * stride + d);
    __m256 t3[8], t6[4];
    for (int i = 0; i < 8; i++) t3[i] = _mm256_add_ps(x[i + 8], x[i]);
    for (int i = 0; i < 4; i++) t6[i] = _mm256_add_ps(t3[i + 4], t3[i]);
    const __m256 t80 = _mm256_add_ps(t6[0], t6[2]);
    const __m256 t81 = _mm256_add_ps(t6[1], t6[3]);
    return _mm256_add_ps(t80, t81);
}

// acc[l][d] = sum over keys j < n with j % lanes == l, in increasing j, of fma(v_j[d], w_j, .):
// the per-lane partial sums of a `lanes`-wide vector dot product over the keys. Each lane's
// sums stay in registers while its keys go by (head_dim <= 256: at most 32 ymm, the compiler
// spills beyond its register file but the order of operations is fixed).
CK_FAST static void accumulate_lanes(float *acc, int lanes, int hd, const uint16_t *vbase, int kv_stride,
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

// One query head on its own. The grouped kernel below does the same arithmetic for all the
// heads of a KV group; this one stays as its reference (ck_attention_units_per_head) and for the
// groups that one cannot take (more than CK_MAX_GROUP heads, or a scratch row too small).
// head_dim is a multiple of 8 here. acc: 64 * head_dim floats, scores: n_kv floats.
CK_FAST static void attention_unit_fast_per_head(const ck_attention_args *p, int t, int h, float *acc, float *scores) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int nk = p->pos0 + t + 1;  // valid keys; the rest of the padded range weighs 0
    int n_kv = (p->pos0 + p->n_tokens + 31) & ~31;
    if (n_kv < 32) n_kv = 32;
    const int batched = p->n_tokens >= 2;
    const int kvh = h / (p->n_head / p->n_kv_head);
    const float *qh = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
    __m256 q[CK_MAX_HEAD_DIM / 8];
    for (int v = 0; v < nv; v++) {
        q[v] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(qh + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
    const uint16_t *kbase = p->k_cache + (size_t)kvh * hd;
    if (batched) {
        for (int j = 0; j < nk; j++) scores[j] = dot_f16_tiny(q, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
    } else {
        for (int j = 0; j < nk; j++) scores[j] = dot_f16_ggml(q, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
    }
    // softmax as ggml on AVX-512: exp per 16 keys of the padded range (masked keys give 0), each
    // 16-lane sum reduced in float and added in double; weights scaled by float(1 / sum).
    float max = -INFINITY;
    for (int j = 0; j < nk; j++) max = scores[j] > max ? scores[j] : max;
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
        sum += (double)hsum8_ops(_mm256_add_ps(hi, lo));
    }
    // The product with V takes the weights as f16.
    const __m256 vinv = _mm256_set1_ps((float)(1.0 / sum));
    for (int j = 0; j < nk; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(scores + j), vinv);
        _mm256_storeu_ps(scores + j, _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
    }
    const uint16_t *vbase = p->v_cache + (size_t)kvh * hd;
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    if (batched) {
        // llamafile's f16 x f16 GEMM: one 16-lane sum over the keys.
        accumulate_lanes(acc, 16, hd, vbase, p->kv_stride, scores, nk);
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + 8 * v, reduce16_over_d(acc, hd, 8 * v));
        return;
    }
    // ggml_vec_dot_f16 per output dimension over the padded key range.
    const int np = n_kv & ~63;
    const int nmain = nk < np ? nk : np;
    if (nmain > 0) {
        accumulate_lanes(acc, 64, hd, vbase, p->kv_stride, scores, nmain);
        // fold the four 16-lane sums (lanes l, 16+l, 32+l, 48+l): (0+2) + (1+3)
        for (int l = 0; l < 16; l++) {
            float *a0 = acc + (size_t)l * hd, *a1 = acc + (size_t)(16 + l) * hd;
            const float *a2 = acc + (size_t)(32 + l) * hd, *a3 = acc + (size_t)(48 + l) * hd;
            for (int v = 0; v < nv; v++) {
                const __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(a0 + 8 * v), _mm256_loadu_ps(a2 + 8 * v));
                const __m256 x1 = _mm256_add_ps(_mm256_loadu_ps(a1 + 8 * v), _mm256_loadu_ps(a3 + 8 * v));
                _mm256_storeu_ps(a0 + 8 * v, _mm256_add_ps(x0, x1));
            }
        }
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + 8 * v, reduce16_over_d(acc, hd, 8 * v));
    } else {
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + 8 * v, _mm256_setzero_ps());
    }
    // Leftover keys (beyond the last full 64) in double, key by key, 4 output dims per register.
    // The f16 x f16 products are exact in float, so converting them to double loses nothing.
    if (nk > np) {
        for (int d0 = 0; d0 < hd; d0 += 32) {
            const int dn = hd - d0 < 32 ? hd - d0 : 32;  // a multiple of 8
            __m256d s[8];
            for (int g = 0; g < dn / 4; g++) s[g] = _mm256_cvtps_pd(_mm_loadu_ps(out + d0 + 4 * g));
            for (int j = np; j < nk; j++) {
                const uint16_t *vj = vbase + (size_t)j * p->kv_stride + d0;
                const __m256 w = _mm256_set1_ps(scores[j]);
                for (int g = 0; g < dn / 8; g++) {
                    const __m256 prod = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vj + 8 * g))), w);
                    s[2 * g] = _mm256_add_pd(s[2 * g], _mm256_cvtps_pd(_mm256_castps256_ps128(prod)));
                    s[2 * g + 1] = _mm256_add_pd(s[2 * g + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(prod, 1)));
                }
            }
            for (int g = 0; g < dn / 4; g++) _mm_storeu_ps(out + d0 + 4 * g, _mm256_cvtpd_ps(s[g]));
        }
    }
}

// MARK: Grouped units

// With GQA several query heads share one KV head. A grouped unit does all R of them for one
// token, converting each K and V row from f16 once for the group instead of once per head.
// Every head's sums are attention_unit_fast_per_head's, in the same order with the same
// roundings, so the results are bit-identical; the loops are arranged differently, and where
// an instruction differs (the fused pair sums of the scores, the double tail, the maximum) the
// comment there says why it gives the same value. R is a compile-time constant in each
// instantiation, so the per-head sums stay in registers.
#define CK_MAX_GROUP 8
#define CK_INLINE __attribute__((always_inline)) inline

// Scores of R heads (q: R * 8 vectors) for head_dim 64, one 64-element step of
// ggml_vec_dot_f16: the key row is converted once into 8 registers, then each head's dot
// product is dot_f16_tiny's (batch) or dot_f16_ggml's (decode) on it.
CK_FAST static CK_INLINE void group_scores_64(const __m256 *q, const uint16_t *kbase, int kv_stride, int nk,
                                              float scale, int batched, float *scores, int sstride, const int R) {
    if (batched) {
        for (int j = 0; j < nk; j++) {
            const uint16_t *kj = kbase + (size_t)j * kv_stride;
            __m256 k[8];
            for (int m = 0; m < 8; m++) k[m] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * m)));
            for (int i = 0; i < R; i++) {
                const __m256 *qi = q + 8 * i;
                __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
                for (int m = 0; m < 8; m += 2) {
                    lo = _mm256_fmadd_ps(qi[m], k[m], lo);
                    hi = _mm256_fmadd_ps(qi[m + 1], k[m + 1], hi);
                }
                scores[(size_t)i * sstride + j] = hsum8_ops(_mm256_add_ps(hi, lo)) * scale;
            }
        }
        return;
    }
    for (int j = 0; j < nk; j++) {
        const uint16_t *kj = kbase + (size_t)j * kv_stride;
        __m256 k[8];
        for (int m = 0; m < 8; m++) k[m] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * m)));
        for (int i = 0; i < R; i++) {
            const __m256 *qi = q + 8 * i;
            // dot_f16_ggml's products a[m] = fma(q, k, 0) and the first level of its fold,
            // a[m] + a[m + 4]. A product of two f16 values is exact in float, so
            // fma(q[m + 4], k[m + 4], a[m]) rounds a[m] + a[m + 4] to the same float (the sign
            // of a zero sum included) in one instruction.
            __m256 a[4];
            for (int m = 0; m < 4; m++) a[m] = _mm256_fmadd_ps(qi[m], k[m], _mm256_setzero_ps());
            for (int m = 0; m < 4; m++) a[m] = _mm256_fmadd_ps(qi[m + 4], k[m + 4], a[m]);
            // 16-lane sums j = 0..3 are (a[2j], a[2j+1]); fold 0+2, 1+3, then 0+1.
            const __m256 lo = _mm256_add_ps(a[0], a[2]);
            const __m256 hi = _mm256_add_ps(a[1], a[3]);
            // dot_f16_ggml's double sum holds one float here, so it rounds back to that float.
            scores[(size_t)i * sstride + j] = (float)(double)hsum8_ops(_mm256_add_ps(hi, lo)) * scale;
        }
    }
}

// The softmax of attention_unit_fast_per_head on one head's scores, in place: exp per 16 keys of
// the padded range (masked keys give 0), each 16-lane sum reduced in float and added in double;
// weights scaled by float(1 / sum), then rounded to f16 for the product with V.
CK_FAST static void softmax_weights_ggml(float *scores, int nk) {
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
        sum += (double)hsum8_ops(_mm256_add_ps(hi, lo));
    }
    const __m256 vinv = _mm256_set1_ps((float)(1.0 / sum));
    for (int j = 0; j < nk; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(scores + j), vinv);
        _mm256_storeu_ps(scores + j, _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
    }
}

// Output vectors v0..v0+C-1 of lane l of accumulate_lanes for R heads (head i's sums at
// acc + i * acc_stride, its weights at w + i * w_stride): each V vector is converted once and
// multiplied into every head's sum, keys in increasing order as there.
CK_FAST static CK_INLINE void accumulate_lanes_block(float *acc, size_t acc_stride, int lanes, int hd, int l, int v0,
                                                     const uint16_t *vbase, int kv_stride, const float *w,
                                                     int w_stride, int n, const int R, const int C) {
    __m256 a[CK_MAX_GROUP][8];
    for (int i = 0; i < R; i++) {
        for (int c = 0; c < C; c++) a[i][c] = _mm256_setzero_ps();
    }
    for (int j = l; j < n; j += lanes) {
        const uint16_t *vj = vbase + (size_t)j * kv_stride + 8 * v0;
        __m256 wj[CK_MAX_GROUP];
        for (int i = 0; i < R; i++) wj[i] = _mm256_set1_ps(w[(size_t)i * w_stride + j]);
        for (int c = 0; c < C; c++) {
            const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vj + 8 * c)));
            for (int i = 0; i < R; i++) a[i][c] = _mm256_fmadd_ps(x, wj[i], a[i][c]);
        }
    }
    for (int i = 0; i < R; i++) {
        for (int c = 0; c < C; c++) _mm256_storeu_ps(acc + i * acc_stride + (size_t)l * hd + 8 * (v0 + c), a[i][c]);
    }
}

// accumulate_lanes for the R heads of a group. The output vectors go in blocks of C so that the
// R * C sums, the converted V vector and the R weights fit the 16 ymm registers.
CK_FAST static CK_INLINE void accumulate_lanes_group(float *acc, size_t acc_stride, int lanes, int hd,
                                                     const uint16_t *vbase, int kv_stride, const float *w,
                                                     int w_stride, int n, const int R) {
    const int C = R == 1 ? 8 : R <= 3 ? 4 : R == 4 ? 2 : 1;
    const int nv = hd / 8;
    for (int l = 0; l < lanes; l++) {
        int v = 0;
        for (; v + C <= nv; v += C) {
            accumulate_lanes_block(acc, acc_stride, lanes, hd, l, v, vbase, kv_stride, w, w_stride, n, R, C);
        }
        for (; v < nv; v++) {
            accumulate_lanes_block(acc, acc_stride, lanes, hd, l, v, vbase, kv_stride, w, w_stride, n, R, 1);
        }
    }
}

// The fold of the four 16-lane sums (lanes l, 16+l, 32+l, 48+l) as (0+2) + (1+3), then
// reduce16_over_d, without storing the folded lanes in between.
CK_FAST static inline __m256 reduce64_over_d(const float *acc, int stride, int d) {
    __m256 x[16];
    for (int l = 0; l < 16; l++) {
        const __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(acc + (size_t)l * stride + d),
                                        _mm256_loadu_ps(acc + (size_t)(32 + l) * stride + d));
        const __m256 x1 = _mm256_add_ps(_mm256_loadu_ps(acc + (size_t)(16 + l) * stride + d),
                                        _mm256_loadu_ps(acc + (size_t)(48 + l) * stride + d));
        x[l] = _mm256_add_ps(x0, x1);
    }
    __m256 t3[8], t6[4];
    for (int i = 0; i < 8; i++) t3[i] = _mm256_add_ps(x[i + 8], x[i]);
    for (int i = 0; i < 4; i++) t6[i] = _mm256_add_ps(t3[i + 4], t3[i]);
    const __m256 t80 = _mm256_add_ps(t6[0], t6[2]);
    const __m256 t81 = _mm256_add_ps(t6[1], t6[3]);
    return _mm256_add_ps(t80, t81);
}

// Leftover keys j0..<j1 (fewer than 64) of R heads in double, dims d0..d0+4Q-1: out_i += sum of
// w_i[j] * v_j in double, key by key. attention_unit_fast_per_head multiplies in float and
// converts the product to double; an f16 x f16 product is exact in float and in double, so
// fma(v, w, s) in double rounds the same sum to the same double, with V converted once per group.
CK_FAST static CK_INLINE void tail_block(float *out, int hd, const uint16_t *vbase, int kv_stride,
                                         const double (*wd)[64], int j0, int j1, int d0, const int R, const int Q) {
    __m256d s[CK_MAX_GROUP][4];
    for (int i = 0; i < R; i++) {
        for (int g = 0; g < Q; g++) s[i][g] = _mm256_cvtps_pd(_mm_loadu_ps(out + (size_t)i * hd + d0 + 4 * g));
    }
    for (int j = j0; j < j1; j++) {
        const uint16_t *vj = vbase + (size_t)j * kv_stride + d0;
        __m256d x[4];
        for (int g = 0; g < Q; g++) {
            x[g] = _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(vj + 4 * g))));
        }
        for (int i = 0; i < R; i++) {
            const __m256d wi = _mm256_broadcast_sd(&wd[i][j - j0]);
            for (int g = 0; g < Q; g++) s[i][g] = _mm256_fmadd_pd(x[g], wi, s[i][g]);
        }
    }
    for (int i = 0; i < R; i++) {
        for (int g = 0; g < Q; g++) _mm_storeu_ps(out + (size_t)i * hd + d0 + 4 * g, _mm256_cvtpd_ps(s[i][g]));
    }
}

// scratch: group_scratch_floats(p) floats: R accumulators of 64 * head_dim, then R score rows.
CK_FAST static CK_INLINE void attention_group_body(const ck_attention_args *p, int t, int g, float *scratch,
                                                   const int R) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int nk = p->pos0 + t + 1;  // valid keys; the rest of the padded range weighs 0
    int n_kv = (p->pos0 + p->n_tokens + 31) & ~31;
    if (n_kv < 32) n_kv = 32;
    const int batched = p->n_tokens >= 2;
    const size_t astride = (size_t)64 * hd;
    const int sstride = (p->pos0 + p->n_tokens + 15) & ~15;  // the softmax pads to 16 keys
    float *acc = scratch;
    float *scores = scratch + R * astride;
    // The group's query heads g * R ..< (g + 1) * R lie side by side, as do their outputs.
    const float *qg = p->q + (size_t)t * p->q_stride + (size_t)g * R * hd;
    __m256 q[CK_MAX_GROUP * CK_MAX_HEAD_DIM / 8];
    for (int v = 0; v < R * nv; v++) {
        q[v] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(qg + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
    const uint16_t *kbase = p->k_cache + (size_t)g * hd;
    if (hd == 64) {
        group_scores_64(q, kbase, p->kv_stride, nk, p->scale, batched, scores, sstride, R);
    } else {
        // Other sizes convert the key row per head, as attention_unit_fast_per_head does.
        for (int i = 0; i < R; i++) {
            float *si = scores + (size_t)i * sstride;
            const __m256 *qi = q + i * nv;
            if (batched) {
                for (int j = 0; j < nk; j++) si[j] = dot_f16_tiny(qi, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
            } else {
                for (int j = 0; j < nk; j++) si[j] = dot_f16_ggml(qi, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
            }
        }
    }
    for (int i = 0; i < R; i++) softmax_weights_ggml(scores + (size_t)i * sstride, nk);
    const uint16_t *vbase = p->v_cache + (size_t)g * hd;
    float *out = p->out + (size_t)t * p->out_stride + (size_t)g * R * hd;  // head i at out + i * hd
    if (batched) {
        // llamafile's f16 x f16 GEMM: one 16-lane sum over the keys.
        accumulate_lanes_group(acc, astride, 16, hd, vbase, p->kv_stride, scores, sstride, nk, R);
        for (int i = 0; i < R; i++) {
            for (int v = 0; v < nv; v++) {
                _mm256_storeu_ps(out + (size_t)i * hd + 8 * v, reduce16_over_d(acc + i * astride, hd, 8 * v));
            }
        }
        return;
    }
    // ggml_vec_dot_f16 per output dimension over the padded key range.
    const int np = n_kv & ~63;
    const int nmain = nk < np ? nk : np;
    if (nmain > 0) {
        accumulate_lanes_group(acc, astride, 64, hd, vbase, p->kv_stride, scores, sstride, nmain, R);
        for (int i = 0; i < R; i++) {
            for (int v = 0; v < nv; v++) {
                _mm256_storeu_ps(out + (size_t)i * hd + 8 * v, reduce64_over_d(acc + i * astride, hd, 8 * v));
            }
        }
    } else {
        for (int v = 0; v < R * nv; v++) _mm256_storeu_ps(out + 8 * v, _mm256_setzero_ps());
    }
    // Leftover keys (beyond the last full 64) in double, key by key.
    if (nk > np) {
        double wd[CK_MAX_GROUP][64];  // their weights, converted once (nk - np < 64)
        for (int i = 0; i < R; i++) {
            for (int j = np; j < nk; j++) wd[i][j - np] = (double)scores[(size_t)i * sstride + j];
        }
        // Q quads of dims at a time: R * Q sums, Q converted V quads and one weight in registers.
        const int Q = R <= 2 ? 4 : R <= 4 ? 2 : 1;
        const int quads = hd / 4;
        int d = 0;
        for (; d + Q <= quads; d += Q) tail_block(out, hd, vbase, p->kv_stride, wd, np, nk, 4 * d, R, Q);
        for (; d < quads; d++) tail_block(out, hd, vbase, p->kv_stride, wd, np, nk, 4 * d, R, 1);
    }
}

CK_FAST static void attention_group_fast(const ck_attention_args *p, int t, int g, float *scratch) {
    switch (p->n_head / p->n_kv_head) {
    case 1: attention_group_body(p, t, g, scratch, 1); break;
    case 2: attention_group_body(p, t, g, scratch, 2); break;
    case 3: attention_group_body(p, t, g, scratch, 3); break;
    case 4: attention_group_body(p, t, g, scratch, 4); break;
    case 5: attention_group_body(p, t, g, scratch, 5); break;
    case 6: attention_group_body(p, t, g, scratch, 6); break;
    case 7: attention_group_body(p, t, g, scratch, 7); break;
    case 8: attention_group_body(p, t, g, scratch, 8); break;
    }
}
#endif

// Floats of scratch a grouped unit needs: R accumulators of 64 * head_dim and R score rows
// padded to 16 keys.
static size_t group_scratch_floats(const ck_attention_args *p) {
    const size_t r = (size_t)(p->n_head / p->n_kv_head);
    return r * ((size_t)64 * p->head_dim + (size_t)((p->pos0 + p->n_tokens + 15) & ~15));
}

// Unit u is token t = u / n_kv_head with the query heads of KV head g = u % n_kv_head.
static void attention_units_with(int fast_paths, const ck_attention_args *p, int u0, int u1, int slot) {
    (void)fast_paths;
    float *acc = p->scratch + (size_t)slot * p->scratch_stride;
    float *scores = acc + (size_t)64 * p->head_dim;
    const int r = p->n_head / p->n_kv_head;
#if CK_X86
    const int fast = fast_paths && p->head_dim % 8 == 0 && p->head_dim <= CK_MAX_HEAD_DIM;
    const int grouped = fast && r <= CK_MAX_GROUP && (size_t)p->scratch_stride >= group_scratch_floats(p);
#endif
    for (int u = u0; u < u1; u++) {
        const int t = u / p->n_kv_head, g = u % p->n_kv_head;
#if CK_X86
        if (grouped) {
            attention_group_fast(p, t, g, acc);
            continue;
        }
#endif
        for (int h = g * r; h < (g + 1) * r; h++) {
#if CK_X86
            if (fast) {
                attention_unit_fast_per_head(p, t, h, acc, scores);
                continue;
            }
#endif
            attention_unit_portable(p, t, h, scores);
        }
    }
}

void ck_attention_units(const ck_attention_args *p, int u0, int u1, int slot) {
    attention_units_with(ck_fast_paths_enabled(), p, u0, u1, slot);
}

void ck_attention_units_per_head(const ck_attention_args *p, int u0, int u1, int slot) {
    float *acc = p->scratch + (size_t)slot * p->scratch_stride;
    float *scores = acc + (size_t)64 * p->head_dim;
#if CK_X86
    const int fast = ck_fast_paths_enabled() && p->head_dim % 8 == 0 && p->head_dim <= CK_MAX_HEAD_DIM;
#endif
    for (int u = u0; u < u1; u++) {
        const int t = u / p->n_head, h = u % p->n_head;
#if CK_X86
        if (fast) {
            attention_unit_fast_per_head(p, t, h, acc, scores);
            continue;
        }
#endif
        attention_unit_portable(p, t, h, scores);
    }
}

typedef struct {
    const ck_attention_args *args;
    int fast;
} attention_job;

static void attention_chunk(void *ctx, int u, int thread) {
    const attention_job *job = (const attention_job *)ctx;
    attention_units_with(job->fast, job->args, u, u + 1, thread);
}

void ck_attention(ck_pool *pool, const ck_attention_args *args) {
    const int units = args->n_tokens * args->n_kv_head;
    attention_job job;
    job.args = args;
    job.fast = ck_fast_paths_enabled();
    if (!pool || ck_pool_size(pool) <= 1 || units < 2) {
        attention_units_with(job.fast, args, 0, units, 0);
        return;
    }
    ck_pool_run_chunks(pool, attention_chunk, &job, units);
}

#define CK_ATTENTION_MANY_MAX 16

typedef struct {
    const ck_attention_args *args;
    int count;
    int first_unit[CK_ATTENTION_MANY_MAX + 1];  // prefix sums of each item's units
    int fast;
} attention_many_job;

static void attention_many_chunk(void *ctx, int u, int thread) {
    const attention_many_job *job = (const attention_many_job *)ctx;
    int m = 0;
    while (u >= job->first_unit[m + 1]) m++;
    const int local = u - job->first_unit[m];
    attention_units_with(job->fast, &job->args[m], local, local + 1, thread);
}

void ck_attention_many(ck_pool *pool, const ck_attention_args *args, int count) {
    if (count > CK_ATTENTION_MANY_MAX || !pool || ck_pool_size(pool) <= 1) {
        for (int m = 0; m < count; m++) ck_attention(pool, &args[m]);
        return;
    }
    attention_many_job job;
    job.args = args;
    job.count = count;
    job.fast = ck_fast_paths_enabled();
    job.first_unit[0] = 0;
    for (int m = 0; m < count; m++) job.first_unit[m + 1] = job.first_unit[m] + args[m].n_tokens * args[m].n_kv_head;
    ck_pool_run_chunks(pool, attention_many_chunk, &job, job.first_unit[count]);
}

// MARK: - Element-wise

void ck_rmsnorm(const float *x, const float *w, float *y, int n, float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

void ck_rope(float *x, int n_heads, int head_dim, int n_rot, int pos, float base) {
    // Angles as ggml builds them: theta starts at pos and is multiplied by base^(-2/n_rot) per pair.
    float cs[2 * CK_MAX_HEAD_DIM];
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int i = 0; i < n_rot; i += 2) {
        cs[i] = cosf(theta);
        cs[i + 1] = sinf(theta);
        theta *= theta_scale;
    }
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < n_rot; i += 2) {
            const float x0 = v[i], x1 = v[i + 1];
            v[i] = fmaf(x0, cs[i], -(x1 * cs[i + 1]));
            v[i + 1] = fmaf(x0, cs[i + 1], x1 * cs[i]);
        }
    }
}

void ck_softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

#if CK_X86
CK_FAST static void silu_mul_fast(const float *gate, const float *up, float *out, int n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = ck_v_expf(_mm256_sub_ps(_mm256_setzero_ps(), g));
        const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        const float g = gate[i];
        out[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}
#endif

void ck_silu_mul(const float *gate, const float *up, float *out, int n) {
#if CK_X86
    if (ck_fast_paths_enabled()) {
        silu_mul_fast(gate, up, out, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

void ck_add(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}
