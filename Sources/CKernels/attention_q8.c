// Attention over a KV cache stored as q8_0 (`kv_cache_type` q8_0): each position's keys and
// values, n_kv_head * head_dim floats, quantized as one row of 32-value blocks (an f16 scale and
// 32 int8), 34 bytes per 32 values instead of 64 in f16. The steps are modelled on llama.cpp's
// CPU flash attention over a quantized cache, with a two-pass softmax in place of its online
// rescaling (no reference holds llama.cpp's answers with a q8_0 cache, so nothing here is
// checked against it bit for bit):
//   - the query head is quantized to q8_0 (the key type's dot-product partner) and each score is
//     ck_dot_q8_0_q8_0 (integer block sums, each scaled by d_k * d_q) times `scale`;
//   - softmax over the scores in f32: weights expf(s - max), their sum in key order;
//   - the output sums weight * value in f32 (d_v * q_v per element, one FMA per element and
//     key, in key order), then divides by the weights' sum.
// The scores take ck_dot_q8_0_q8_0's order on each path (ggml's AVX2 order when fast, its scalar
// order when portable); the weighted sum of values is the same operations in the same order on
// both. A pool worker takes the path of the thread that started the task.
#include <string.h>

#include "internal.h"

static inline const ck_block_q8_0 *q8_row(const void *cache, int pos, int row_blocks) {
    return (const ck_block_q8_0 *)cache + (size_t)pos * row_blocks;
}

// out[d] += w * d_v * q_v[d] over one head's head_dim values (nb blocks).
static void add_weighted_portable(float *out, const ck_block_q8_0 *v, int nb, float w) {
    for (int b = 0; b < nb; b++) {
        const float scale = w * ck_fp16_to_fp32(v[b].d);
        for (int i = 0; i < CK_QK; i++) out[b * CK_QK + i] = fmaf(scale, (float)v[b].qs[i], out[b * CK_QK + i]);
    }
}

#if CK_X86
CK_FAST static void add_weighted_fast(float *out, const ck_block_q8_0 *v, int nb, float w) {
    for (int b = 0; b < nb; b++) {
        const __m256 scale = _mm256_set1_ps(w * ck_fp16_to_fp32(v[b].d));
        for (int i = 0; i < CK_QK; i += 8) {
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(v[b].qs + i))));
            float *o = out + b * CK_QK + i;
            _mm256_storeu_ps(o, _mm256_fmadd_ps(scale, q, _mm256_loadu_ps(o)));
        }
    }
}
#endif

// Token t's query head h (of KV head h / group) against its visible keys; scores: scratch.
static void head_q8(const ck_attention_args *p, int t, int h, float *scores, int fast) {
    const int hd = p->head_dim;
    const int nb = hd / CK_QK;
    const int row_blocks = p->kv_stride / CK_QK;
    const int g = h / (p->n_head / p->n_kv_head);
    const int pos = p->pos0 + t;
    const int j0 = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
    ck_block_q8_0 qq[CK_MAX_HEAD_DIM / CK_QK];
    ck_quantize_row_q8_0(p->q + (size_t)t * p->q_stride + (size_t)h * hd, qq, hd);
    float max = -INFINITY;
    for (int j = j0; j <= pos; j++) {
        const float s = ck_dot_q8_0_q8_0(hd, q8_row(p->k_cache, j, row_blocks) + g * nb, qq) * p->scale;
        scores[j - j0] = s;
        if (s > max) max = s;
    }
    const float sink = ck_attention_sink(p, h);
    if (sink > max) max = sink;
    float sum = 0.0f;
    for (int j = j0; j <= pos; j++) {
        scores[j - j0] = expf(scores[j - j0] - max);
        sum += scores[j - j0];
    }
    sum += expf(sink - max);
    float *out = p->out + (size_t)t * p->out_stride + (size_t)h * hd;
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int j = j0; j <= pos; j++) {
        const ck_block_q8_0 *v = q8_row(p->v_cache, j, row_blocks) + g * nb;
#if CK_X86
        if (fast) {
            add_weighted_fast(out, v, nb, scores[j - j0]);
            continue;
        }
#endif
        (void)fast;
        add_weighted_portable(out, v, nb, scores[j - j0]);
    }
    const float inv = 1.0f / sum;
    for (int d = 0; d < hd; d++) out[d] *= inv;
}

// One unit: token t and every query head of KV head g.
static void unit_q8(const ck_attention_args *p, int u, int slot, int fast) {
    const int t = u / p->n_kv_head;
    const int g = u % p->n_kv_head;
    const int group = p->n_head / p->n_kv_head;
    float *scores = p->scratch + (size_t)slot * p->scratch_stride;
    for (int h = g * group; h < (g + 1) * group; h++) head_q8(p, t, h, scores, fast);
}

#define CK_ATTENTION_Q8_MANY_MAX 16

typedef struct {
    const ck_attention_args *args;
    int first_unit[CK_ATTENTION_Q8_MANY_MAX + 1];
    int fast;
} q8_job;

// Workers take the calling thread's path choice (as rows.c's tasks do), so the dot products
// inside follow it too.
static void q8_chunk(void *ctx, int u, int thread) {
    const q8_job *job = (const q8_job *)ctx;
    int m = 0;
    while (u >= job->first_unit[m + 1]) m++;
    const int saved = ck_fast_paths_override();
    if (thread != 0) ck_set_fast_paths_override(job->fast);
    unit_q8(&job->args[m], u - job->first_unit[m], thread, job->fast);
    if (thread != 0) ck_set_fast_paths_override(saved);
}

void ck_attention_q8_0_many(ck_pool *pool, const ck_attention_args *args, int count) {
    for (int start = 0; start < count; start += CK_ATTENTION_Q8_MANY_MAX) {
        const int n = count - start < CK_ATTENTION_Q8_MANY_MAX ? count - start : CK_ATTENTION_Q8_MANY_MAX;
        q8_job job;
        job.args = args + start;
        job.fast = ck_fast_paths_enabled();
        job.first_unit[0] = 0;
        for (int m = 0; m < n; m++) job.first_unit[m + 1] = job.first_unit[m] + args[start + m].n_tokens * args[start + m].n_kv_head;
        const int units = job.first_unit[n];
        if (!pool || ck_pool_size(pool) <= 1 || units < 2) {
            for (int u = 0; u < units; u++) q8_chunk(&job, u, 0);
        } else {
            ck_pool_run_chunks(pool, q8_chunk, &job, units);
        }
    }
}

void ck_kv_q8_0_to_f16(const uint16_t *cache, uint16_t *dst, int rows, int kv_dim) {
    float tmp[16 * CK_MAX_HEAD_DIM];
    const ck_block_q8_0 *blocks = (const ck_block_q8_0 *)(const void *)cache;
    const int row_blocks = kv_dim / CK_QK;
    for (int r = 0; r < rows; r++) {
        ck_dequantize_row(CK_TYPE_Q8_0, blocks + (size_t)r * row_blocks, tmp, kv_dim);
        ck_fp32_to_fp16_row(tmp, dst + (size_t)r * kv_dim, (size_t)kv_dim);
    }
}
