// The small element-wise operations: RMSNorm, RoPE, softmax, SwiGLU, residual add.
#include <math.h>
#include <pthread.h>

#include "internal.h"


void ck_rmsnorm(const float *x, const float *w, float *y, int n, float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

void ck_rope(float *x, int n_heads, int head_dim, int n_rot, int pos, float base) {
    ck_rope_ext(x, n_heads, head_dim, n_rot, pos, base, 1.0f, NULL, 0);
}

// ggml_rope_yarn_corr_dim: the rotary dimension whose wavelength fits n_rot (here a beta) turns
// in the original context.
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return n_dims * logf(n_ctx_orig / (n_rot * 2 * (float)3.14159265358979323846)) / (2 * logf(base));
}

void ck_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float base, float beta_fast, float beta_slow, float dims[2]) {
    const float start = floorf(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, base));
    const float end = ceilf(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, base));
    dims[0] = start > 0 ? start : 0;
    dims[1] = (float)(n_dims - 1) < end ? (float)(n_dims - 1) : end;
}

// ggml's rope_yarn_ramp: 1 below the low correction dimension, 0 above the high one.
static float yarn_ramp(float low, float high, int i0) {
    const float span = high - low > 0.001f ? high - low : 0.001f;
    const float y = (i0 / 2 - low) / span;
    const float clamped = y > 0 ? y : 0;
    return 1 - (clamped < 1 ? clamped : 1);
}

void ck_rope_angles(float *cs, int n_rot, int pos, float base, float freq_scale, const float *freq_factors,
                    const ck_rope_yarn *yarn) {
    // Angles as ggml builds them (ggml_rope_cache_init, rope_yarn): theta starts at pos and is
    // multiplied by base^(-2/n_rot) per pair; divided by the pair's frequency factor it is the
    // extrapolated angle, times freq_scale the interpolated one. With YaRN (ext_factor != 0) a
    // pair mixes the two by its ramp between the correction dimensions, and the magnitude is
    // scaled by 1 + 0.1 ln(1 / freq_scale) (the FMAs are those GCC makes of ggml's expressions);
    // cosines and sines are multiplied by attn_factor (1 without scaling: the same bits).
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const float ext_factor = yarn ? yarn->ext_factor : 0.0f;
    const float attn_factor = yarn ? yarn->attn_factor : 1.0f;
    float corr[2] = {0.0f, 0.0f};
    if (ext_factor != 0.0f) ck_rope_yarn_corr_dims(n_rot, yarn->n_ctx_orig, base, yarn->beta_fast, yarn->beta_slow, corr);
    float theta = (float)pos;
    for (int i = 0; i < n_rot; i += 2) {
        const float ff = freq_factors ? freq_factors[i / 2] : 1.0f;
        const float extrap = theta / ff;
        const float interp = freq_scale * extrap;
        float angle = interp, mscale = attn_factor;
        if (ext_factor != 0.0f) {
            const float mix = yarn_ramp(corr[0], corr[1], i) * ext_factor;
            angle = fmaf(interp, 1 - mix, extrap * mix);
            mscale *= fmaf(0.1f, logf(1.0f / freq_scale), 1.0f);
        }
        cs[i] = cosf(angle) * mscale;
        cs[i + 1] = sinf(angle) * mscale;
        theta *= theta_scale;
    }
}

void ck_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cs, int halves) {
    // Pair i is (2i, 2i + 1) in the adjacent mode, (i, i + n_rot / 2) over halves (NEOX).
    const int stride = halves ? n_rot / 2 : 1;
    for (int h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int i = 0; i < n_rot; i += 2) {
            const int a = halves ? i / 2 : i;
            const float x0 = v[a], x1 = v[a + stride];
            v[a] = fmaf(x0, cs[i], -(x1 * cs[i + 1]));
            v[a + stride] = fmaf(x0, cs[i + 1], x1 * cs[i]);
        }
    }
}

void ck_rope_ext(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                 const float *freq_factors, int halves) {
    ck_rope_ext_yarn(x, n_heads, head_dim, n_rot, pos, base, freq_scale, freq_factors, halves, NULL);
}

void ck_rope_ext_yarn(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                      const float *freq_factors, int halves, const ck_rope_yarn *yarn) {
    float cs[2 * CK_MAX_HEAD_DIM];
    ck_rope_angles(cs, n_rot, pos, base, freq_scale, freq_factors, yarn);
    ck_rope_apply(x, n_heads, head_dim, n_rot, cs, halves);
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

void ck_swiglu_oai_mul(const float *gate, const float *up, float *out, int n, float alpha, float limit) {
    for (int i = 0; i < n; i++) {
        // std::min and std::clamp as ggml calls them (NaN passes through as there).
        const float g = limit < gate[i] ? limit : gate[i];
        const float u = up[i] < -limit ? -limit : (limit < up[i] ? limit : up[i]);
        const float glu = g / (1.0f + expf(alpha * (-g)));
        out[i] = glu * (u + 1.0f);
    }
}

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

// ggml evaluates GELU on the CPU through a table over every f16 value: the input rounded to f16,
// the table holding f16(gelu(that value)); inputs at or below -10 give 0, at or above 10 give the
// input itself. The table is built once (64 Ki entries, 128 KiB) on first use. One entry more
// than there are f16 values: the vector path gathers 32 bits at entry h and keeps the low half.
static uint16_t gelu_table[(1 << 16) + 1];
static pthread_once_t gelu_table_once = PTHREAD_ONCE_INIT;

static float gelu_tanh(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    // The inner 1 + 0.044715·x·x is one fused multiply-add, as GCC contracts ggml's expression
    // (-ffp-contract=fast, FMA targets): without it one entry of 65,536 (x = -1.999) differs by
    // an f16 step from the table llama.cpp builds (checked entry by entry against libggml-cpu).
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * fmaf(0.044715f * x, x, 1.0f)));
}

static void gelu_table_init(void) {
    for (int i = 0; i < (1 << 16); i++) gelu_table[i] = ck_fp32_to_fp16(gelu_tanh(ck_fp16_to_fp32((uint16_t)i)));
}

float ck_gelu(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    pthread_once(&gelu_table_once, gelu_table_init);
    return ck_fp16_to_fp32(gelu_table[ck_fp32_to_fp16(x)]);
}

#if CK_X86
// Eight at a time: F16C's conversion rounds to nearest even like ck_fp32_to_fp16 (and ggml's
// own on x86), the table entries are gathered, and the two clamps are blends, so each output is
// the scalar loop's.
CK_FAST static void gelu_mul_fast(const float *gate, const float *up, float *out, int n) {
    const __m256 low = _mm256_set1_ps(-10.0f), high = _mm256_set1_ps(10.0f);
    const __m256i half = _mm256_set1_epi32(0xffff);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 u = _mm256_loadu_ps(up + i);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT));
        const __m256i e = _mm256_and_si256(_mm256_i32gather_epi32((const int *)gelu_table, h, 2), half);
        const __m256 a = _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(e), _mm256_extracti128_si256(e, 1)));
        __m256 r = _mm256_blendv_ps(_mm256_mul_ps(a, u), _mm256_mul_ps(g, u), _mm256_cmp_ps(g, high, _CMP_GE_OQ));
        r = _mm256_andnot_ps(_mm256_cmp_ps(g, low, _CMP_LE_OQ), r);
        _mm256_storeu_ps(out + i, r);
    }
    for (; i < n; i++) {
        const float g = gate[i];
        const float a = g <= -10.0f ? 0.0f : g >= 10.0f ? g : _cvtsh_ss(gelu_table[_cvtss_sh(g, _MM_FROUND_TO_NEAREST_INT)]);
        out[i] = g <= -10.0f ? 0.0f : a * up[i];
    }
}
#endif

void ck_gelu_mul(const float *gate, const float *up, float *out, int n) {
    pthread_once(&gelu_table_once, gelu_table_init);
#if CK_X86
    if (ck_fast_paths_enabled()) {
        gelu_mul_fast(gate, up, out, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        const float a = g <= -10.0f ? 0.0f : g >= 10.0f ? g : ck_fp16_to_fp32(gelu_table[ck_fp32_to_fp16(g)]);
        out[i] = g <= -10.0f ? 0.0f : a * up[i];
    }
}

void ck_scale(float *x, float s, int n) {
    for (int i = 0; i < n; i++) x[i] *= s;
}
