// Attention one query head at a time: the portable kernel (any CPU, the plain reference) and
// the fast per-head kernel, which the grouped kernel (attention_group.c) is checked against bit
// for bit and which takes the groups that one cannot.
#include <math.h>

#include "attention_simd.h"

static void softmax_weights(float *s, int n, int round_f16, float sink) {
    float max = -INFINITY;
    for (int j = 0; j < n; j++) max = s[j] > max ? s[j] : max;
    max = max > sink ? max : sink;
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        const float e = expf(s[j] - max);
        s[j] = e;
        sum += (double)e;
    }
    sum += (double)expf(sink - max);
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
    ck_attention_mask_window(p, t, scores);
    softmax_weights(scores, nk, 1, ck_attention_sink(p, h));
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    for (int d = 0; d < hd; d++) out[d] = 0.0f;
    for (int j = 0; j < nk; j++) {
        const uint16_t *vj = p->v_cache + (size_t)j * p->kv_stride + (size_t)kvh * hd;
        const float w = scores[j];
        for (int d = 0; d < hd; d++) out[d] += w * ck_fp16_to_fp32(vj[d]);
    }
}

#if CK_X86
// One query head on its own. The grouped kernel (attention_group.c) does the same arithmetic for
// all the heads of a KV group; this one stays as its reference (ck_attention_units_per_head) and
// for the groups that one cannot take (more than CK_MAX_GROUP heads, or a scratch row too small).
// head_dim is a multiple of 8 here. acc: 64 * head_dim floats, scores: the keys rounded up to 16.
CK_FAST static void attention_unit_fast_per_head(const ck_attention_args *p, int t, int h, float *acc, float *scores) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int nk = p->pos0 + t + 1;  // valid keys; the rest of the padded range weighs 0
    const int batched = ck_attention_batched(p);
    const int kvh = h / (p->n_head / p->n_kv_head);
    const float *qh = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
    __m256 q[CK_MAX_HEAD_DIM / 8];
    for (int v = 0; v < nv; v++) {
        q[v] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(qh + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
    const uint16_t *kbase = p->k_cache + (size_t)kvh * hd;
    if (batched) {
        for (int j = 0; j < nk; j++) scores[j] = dot_f16_batch(q, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
    } else {
        for (int j = 0; j < nk; j++) scores[j] = dot_f16_ggml(q, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
    }
    ck_attention_mask_window(p, t, scores);
    // softmax as ggml on AVX-512 (see softmax_weights_from_max).
    float max = -INFINITY;
    for (int j = 0; j < nk; j++) max = scores[j] > max ? scores[j] : max;
    softmax_weights_from_max(scores, nk, max, ck_attention_sink(p, h));
    const uint16_t *vbase = p->v_cache + (size_t)kvh * hd;
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    if (batched) {
        // llamafile's f16 x f16 GEMM: one 16-lane sum over the keys.
        accumulate_lanes(acc, 16, hd, vbase, p->kv_stride, scores, nk);
        for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + 8 * v, reduce16_over_d(acc, hd, 8 * v));
        return;
    }
    // ggml_vec_dot_f16 per output dimension over the padded key range.
    const int np = attention_full_steps_end(nk);
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
#endif

void ck_attention_head(const ck_attention_args *p, int t, int h, int fast, float *acc) {
    float *scores = acc + (size_t)64 * p->head_dim;
#if CK_X86
    if (fast) {
        attention_unit_fast_per_head(p, t, h, acc, scores);
        return;
    }
#endif
    (void)fast;
    attention_unit_portable(p, t, h, scores);
}

void ck_attention_units_per_head(const ck_attention_args *p, int u0, int u1, int slot) {
    float *acc = p->scratch + (size_t)slot * p->scratch_stride;
    const int fast = ck_attention_fast_shape(p);
    for (int u = u0; u < u1; u++) ck_attention_head(p, u / p->n_head, u % p->n_head, fast, acc);
}
