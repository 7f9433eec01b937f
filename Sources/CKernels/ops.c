// The small element-wise operations: RMSNorm, RoPE, softmax, SwiGLU, residual add.
#include <math.h>

#include "internal.h"


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
