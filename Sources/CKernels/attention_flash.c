// Attention with the arithmetic of llama.cpp's CPU flash attention, row by row (ggml's
// "one chunk" kernel), which a current llama.cpp runs by default (flash_attn auto is on for the
// CPU) whenever a batch has fewer than 64 query rows and, for a single row, the KV view is
// under 512 cells (at most 256 positions: the view is padded to 256).
//
// Why a kernel of its own: Gemma 3 quantizes every activation to 8 bits before each product,
// so a difference of one f32 rounding anywhere can flip a quantized value and move the
// next-token probabilities by 0.01 (measured with scripts/gemma3-emulate.py --perturb); the
// other attention kernels reproduce the old non-flash path (f16 weights times V, one softmax),
// whose roundings are not these. Per query row and head:
//   - the query (already scaled by the caller's `scale`, a power of two for Gemma, in f32 as
//     ggml_scale does before the op) is rounded to f16;
//   - each score is ggml_vec_dot_f16 of the f16 key and query, summed as its AVX-512 form sums
//     (four 16-lane FMA accumulators over steps of 64, folded 0+2, 1+3, then 0+1, then the
//     16 lanes reduced as _mm512_reduce_add_ps does), the rest in double;
//   - an online softmax: on a new maximum the f16 accumulator is scaled by expf(old - new),
//     else the value's weight is expf(s - max); V is added into an f16 accumulator
//     (f16(fma(v, w, acc)) per element, ggml_vec_mad_f16); S = S * ms + vs (fused);
//   - the accumulator back to f32 and times 1/S.
// A lone query row over a KV view of 512 cells or more (more than 256 positions; llama.cpp pads
// the view to 256) is split instead: the view cut in equal ranges, one per llama.cpp thread,
// each range's online softmax as above, the partial results merged range by range
// (ck_attention_flash_split). Micro-batches of 64+ rows take the tiled kernel
// (attention_flash_tiled.c).
// The plain form below is the reference; on x86 an AVX2/F16C form of the same operations (the
// default path) gives the same bits, checked in GemmaFlashAttentionTests.
#include <math.h>

#include "internal.h"

static float f16_round(float x) { return ck_fp16_to_fp32(ck_fp32_to_fp16(x)); }

// ggml_vec_dot_f16's sum for n values (AVX-512 without FP16 arithmetic: 64 per step).
static float dot_f16_ggml512(int n, const uint16_t *x, const float *y) {
    float acc[4][16] = {{0}};
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64) {
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 16; l++) {
                acc[j][l] = fmaf(ck_fp16_to_fp32(x[i + 16 * j + l]), y[i + 16 * j + l], acc[j][l]);
            }
        }
    }
    float r[16];
    for (int l = 0; l < 16; l++) r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    // _mm512_reduce_add_ps: high 8 + low 8, high 4 + low 4, lanes 2,3 + 0,1, then lane 1 + 0.
    float t3[8], t6[4];
    for (int l = 0; l < 8; l++) t3[l] = r[l + 8] + r[l];
    for (int l = 0; l < 4; l++) t6[l] = t3[l + 4] + t3[l];
    double sum = (double)((t6[2] + t6[0]) + (t6[3] + t6[1]));
    for (int i = np; i < n; i++) sum += (double)(ck_fp16_to_fp32(x[i]) * y[i]);
    return (float)sum;
}

#if CK_X86
// The same three steps with AVX2/F16C: elementwise operations give the same bits at any width,
// and the score keeps the 16-lane accumulators as two 8-lane halves.
CK_FAST static float dot_f16_ggml512_fast(int n, const uint16_t *x, const float *y) {
    __m256 lo[4], hi[4];
    for (int j = 0; j < 4; j++) lo[j] = hi[j] = _mm256_setzero_ps();
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64) {
        for (int j = 0; j < 4; j++) {
            const int o = i + 16 * j;
            lo[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + o))),
                                    _mm256_loadu_ps(y + o), lo[j]);
            hi[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + o + 8))),
                                    _mm256_loadu_ps(y + o + 8), hi[j]);
        }
    }
    const __m256 rlo = _mm256_add_ps(_mm256_add_ps(lo[0], lo[2]), _mm256_add_ps(lo[1], lo[3]));
    const __m256 rhi = _mm256_add_ps(_mm256_add_ps(hi[0], hi[2]), _mm256_add_ps(hi[1], hi[3]));
    float t3[8];
    _mm256_storeu_ps(t3, _mm256_add_ps(rhi, rlo));
    float t6[4];
    for (int l = 0; l < 4; l++) t6[l] = t3[l + 4] + t3[l];
    double sum = (double)((t6[2] + t6[0]) + (t6[3] + t6[1]));
    for (int i = np; i < n; i++) sum += (double)(ck_fp16_to_fp32(x[i]) * y[i]);
    return (float)sum;
}

CK_FAST static void scale_f16_fast(float *acc, int n, float ms) {
    const __m256 m = _mm256_set1_ps(ms);
    for (int d = 0; d < n; d += 8) {
        const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + d), m);
        _mm256_storeu_ps(acc + d, _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)));
    }
}

CK_FAST static void mad_f16_fast(float *acc, int n, const uint16_t *v, float vs) {
    const __m256 w = _mm256_set1_ps(vs);
    for (int d = 0; d < n; d += 8) {
        const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
        const __m256 a = _mm256_fmadd_ps(x, w, _mm256_loadu_ps(acc + d));
        _mm256_storeu_ps(acc + d, _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)));
    }
}
#endif

// The online softmax of one query row (qh: the f16-rounded query) over positions j0..j1
// (inclusive; none when j1 < j0) of KV head g, from a fresh state: acc the f16 accumulator
// (as floats), *M the running maximum, *S the sum.
static void flash_range(const ck_attention_args *p, int g, const float *qh, int j0, int j1, int fast, float *acc,
                        float *M_out, float *S_out) {
    const int hd = p->head_dim;
    for (int d = 0; d < hd; d++) acc[d] = 0.0f;
    float S = 0.0f, M = -INFINITY;
    for (int j = j0; j <= j1; j++) {
        const uint16_t *k = p->k_cache + (size_t)j * p->kv_stride + (size_t)g * hd;
        const uint16_t *v = p->v_cache + (size_t)j * p->kv_stride + (size_t)g * hd;
#if CK_X86
        const float s = fast ? dot_f16_ggml512_fast(hd, k, qh) : dot_f16_ggml512(hd, k, qh);
#else
        const float s = dot_f16_ggml512(hd, k, qh);
        (void)fast;
#endif
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            const float old = M;
            M = s;
            ms = expf(old - M);
#if CK_X86
            if (fast) {
                scale_f16_fast(acc, hd, ms);
            } else
#endif
                for (int d = 0; d < hd; d++) acc[d] = f16_round(acc[d] * ms);
        } else {
            vs = expf(s - M);
        }
#if CK_X86
        if (fast) {
            mad_f16_fast(acc, hd, v, vs);
        } else
#endif
            for (int d = 0; d < hd; d++) acc[d] = f16_round(fmaf(ck_fp16_to_fp32(v[d]), vs, acc[d]));
        S = fmaf(S, ms, vs);
    }
    *M_out = M;
    *S_out = S;
}

void ck_attention_flash_rows(const ck_attention_args *p) {
#if CK_X86
    const int fast = ck_fast_paths_enabled() && p->head_dim % 8 == 0;
#else
    const int fast = 0;
#endif
    const int hd = p->head_dim;
    const int ratio = p->n_head / p->n_kv_head;
    float qh[CK_MAX_HEAD_DIM];
    float acc[CK_MAX_HEAD_DIM];
    for (int t = 0; t < p->n_tokens; t++) {
        const int pos = p->pos0 + t;
        const int first = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
        for (int h = 0; h < p->n_head; h++) {
            const float *q = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
            for (int d = 0; d < hd; d++) qh[d] = f16_round(q[d] * p->scale);
            float M, S;
            flash_range(p, h / ratio, qh, first, pos, fast, acc, &M, &S);
            const float inv = S == 0.0f ? 0.0f : 1.0f / S;
            float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
            for (int d = 0; d < hd; d++) out[d] = acc[d] * inv;
        }
    }
}

void ck_attention_flash_split(const ck_attention_args *p, int n_chunks) {
#if CK_X86
    const int fast = ck_fast_paths_enabled() && p->head_dim % 8 == 0;
#else
    const int fast = 0;
#endif
    const int hd = p->head_dim;
    const int ratio = p->n_head / p->n_kv_head;
    if (n_chunks < 1) n_chunks = 1;
    float qh[CK_MAX_HEAD_DIM], acc[CK_MAX_HEAD_DIM], total[CK_MAX_HEAD_DIM];
    for (int t = 0; t < p->n_tokens; t++) {
        const int pos = p->pos0 + t;
        const int first = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
        // llama.cpp's KV view: the cells in use (here positions 0...pos) padded to 256.
        const int n_kv = (pos + 1 + 255) / 256 * 256;
        const int chunk = (n_kv + n_chunks - 1) / n_chunks;
        for (int h = 0; h < p->n_head; h++) {
            const float *q = p->q + (size_t)t * p->q_stride + (size_t)h * hd;
            for (int d = 0; d < hd; d++) qh[d] = f16_round(q[d] * p->scale);
            float M = -INFINITY, S = 0.0f;
            for (int d = 0; d < hd; d++) total[d] = 0.0f;
            for (int c = 0; c < n_chunks; c++) {
                const int lo = c * chunk, hi = (c + 1) * chunk < n_kv ? (c + 1) * chunk : n_kv;
                const int j0 = lo > first ? lo : first, j1 = hi - 1 < pos ? hi - 1 : pos;
                float Mc, Sc;
                flash_range(p, h / ratio, qh, j0, j1, fast, acc, &Mc, &Sc);
                if (Sc == 0.0f) continue;
                // ggml_flash_attn_ext_reduce_partials, as GCC contracts it: the first product
                // of each sum fused with the second.
                const float m_new = fmaxf(M, Mc);
                const float scale_old = expf(M - m_new);
                const float scale_new = expf(Mc - m_new);
                for (int d = 0; d < hd; d++) {
                    const float fresh = acc[d] * scale_new;
                    total[d] = fmaf(total[d], scale_old, fresh);
                }
                const float fresh = Sc * scale_new;
                S = fmaf(S, scale_old, fresh);
                M = m_new;
            }
            const float inv = S == 0.0f ? 0.0f : 1.0f / S;
            float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
            for (int d = 0; d < hd; d++) out[d] = total[d] * inv;
        }
    }
}
