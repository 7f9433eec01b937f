// Attention over the f16 KV cache and the small element-wise operations.
#include <math.h>

#include "internal.h"

// MARK: - Attention

#define CK_MAX_HEAD_DIM 256

static void softmax_f16_weights(float *s, int n) {
    float max = -INFINITY;
    for (int j = 0; j < n; j++) max = s[j] > max ? s[j] : max;
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        const float e = expf(s[j] - max);
        s[j] = e;
        sum += (double)e;
    }
    const float inv = (float)(1.0 / sum);
    // Round the weights to f16 as the f16 matrix product with V does.
    for (int j = 0; j < n; j++) s[j] = ck_fp16_to_fp32(ck_fp32_to_fp16(s[j] * inv));
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
    softmax_f16_weights(scores, nk);
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

// head_dim is a multiple of 8 here.
CK_FAST static void attention_unit_fast(const ck_attention_args *p, int t, int h, float *scores) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int nk = p->pos0 + t + 1;
    const int kvh = h / (p->n_head / p->n_kv_head);
    const float *qh = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
    __m256 q[CK_MAX_HEAD_DIM / 8];
    for (int v = 0; v < nv; v++) {
        q[v] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(qh + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
    const uint16_t *kbase = p->k_cache + (size_t)kvh * hd;
    for (int j = 0; j < nk; j++) {
        const uint16_t *kj = kbase + (size_t)j * p->kv_stride;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        int v = 0;
        for (; v + 1 < nv; v += 2) {
            a0 = _mm256_fmadd_ps(q[v], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * v))), a0);
            a1 = _mm256_fmadd_ps(q[v + 1], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * v + 8))), a1);
        }
        if (v < nv) a0 = _mm256_fmadd_ps(q[v], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kj + 8 * v))), a0);
        scores[j] = hsum8_ops(_mm256_add_ps(a0, a1)) * p->scale;
    }
    // softmax (f32, sum in double as ggml), weights rounded to f16
    float max = -INFINITY;
    for (int j = 0; j < nk; j++) max = scores[j] > max ? scores[j] : max;
    double sum = 0.0;
    for (int j = 0; j < nk; j++) {
        const float e = expf(scores[j] - max);
        scores[j] = e;
        sum += (double)e;
    }
    const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    int j = 0;
    for (; j + 8 <= nk; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(scores + j), inv);
        _mm256_storeu_ps(scores + j, _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
    }
    for (; j < nk; j++) {
        scores[j] = _cvtsh_ss(_cvtss_sh(scores[j] * _mm256_cvtss_f32(inv), _MM_FROUND_TO_NEAREST_INT));
    }
    __m256 acc[CK_MAX_HEAD_DIM / 8];
    for (int v = 0; v < nv; v++) acc[v] = _mm256_setzero_ps();
    const uint16_t *vbase = p->v_cache + (size_t)kvh * hd;
    for (int jj = 0; jj < nk; jj++) {
        const uint16_t *vj = vbase + (size_t)jj * p->kv_stride;
        const __m256 w = _mm256_set1_ps(scores[jj]);
        for (int v = 0; v < nv; v++) {
            acc[v] = _mm256_fmadd_ps(w, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vj + 8 * v))), acc[v]);
        }
    }
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    for (int v = 0; v < nv; v++) _mm256_storeu_ps(out + 8 * v, acc[v]);
}
#endif

void ck_attention_units(const ck_attention_args *p, int u0, int u1, int slot) {
    float *scores = p->scratch + (size_t)slot * p->scratch_stride;
#if CK_X86
    const int fast = ck_fast_paths_enabled() && p->head_dim % 8 == 0 && p->head_dim <= CK_MAX_HEAD_DIM;
#endif
    for (int u = u0; u < u1; u++) {
        const int t = u / p->n_head, h = u % p->n_head;
#if CK_X86
        if (fast) {
            attention_unit_fast(p, t, h, scores);
            continue;
        }
#endif
        attention_unit_portable(p, t, h, scores);
    }
}

typedef struct {
    const ck_attention_args *args;
    _Atomic int next;
    int units;
} attention_job;

static void attention_task(void *ctx, int ith, int nth) {
    (void)nth;
    attention_job *job = (attention_job *)ctx;
    for (;;) {
        const int u = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (u >= job->units) break;
        ck_attention_units(job->args, u, u + 1, ith);
    }
}

void ck_attention(ck_pool *pool, const ck_attention_args *args) {
    const int units = args->n_tokens * args->n_head;
    if (!pool || ck_pool_size(pool) <= 1 || units < 2) {
        ck_attention_units(args, 0, units, 0);
        return;
    }
    attention_job job;
    job.args = args;
    job.units = units;
    atomic_init(&job.next, 0);
    ck_pool_run(pool, attention_task, &job);
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
            v[i] = x0 * cs[i] - x1 * cs[i + 1];
            v[i + 1] = x0 * cs[i + 1] + x1 * cs[i];
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

void ck_silu_mul(const float *gate, const float *up, float *out, int n) {
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

void ck_add(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}
