// Attention with the arithmetic of llama.cpp's tiled CPU flash attention, which it runs for
// micro-batches of 64 query rows or more (a prompt given in one piece of 64+ tokens); shorter
// batches take its row-by-row kernel (attention_flash.c). The reference answers of a model
// whose activations are quantized to 8 bits depend on these roundings to the last bit.
//
// Per query row and head, over the keys in tiles of 64 cache positions (0..63, 64..127, ...;
// a tile with no visible position for the row adds nothing):
//   - the query in f32, times `scale` (a power of two for Gemma, so exact, as ggml_scale before
//     the op); the keys f16 widened to f32;
//   - each score one FMA chain over the head's dimensions in order (ggml's simd_gemm keeps one
//     accumulator per output and walks the inner dimension), hidden positions -inf;
//   - the tile's maximum; on a new running maximum the f32 accumulator and S are multiplied by
//     expf(old - new) (libm);
//   - weights exp(s - max) by ggml's AVX-512 exp approximation (ggml_v_expf: polynomial,
//     scalef), summed per 16 lanes as _mm512_reduce_add_ps sums, the four sums of a tile added
//     in double, and S = float(double(S) + that);
//   - each output dimension one FMA chain over the tile's positions in order;
//   - at the end the accumulator times 1/S.
// Rows are independent of one another, so the pool splits them freely. The loops are plain C
// with fmaf (exact under any vectorization); the x86 build compiles them a second time for
// AVX2/FMA, giving the same bits faster.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CK_FA_TILE 64
// Query rows of one token block in a chunk: the key and value tiles, converted once, serve them.
#define CK_FA_TOKENS 16

typedef struct {
    const ck_attention_args *p;
    int token_blocks;
} tiled_ctx;

// Key tile transposed (dimension-major, kt[d * 64 + j]) and value tile (vt[j * hd + d]) of KV
// head g, positions ic..ic+n-1 widened to f32, zeros past n.
static void pack_tile_portable(const ck_attention_args *p, int g, int ic, int n, float *kt, float *vt) {
    const int hd = p->head_dim;
    for (int j = 0; j < CK_FA_TILE; j++) {
        const uint16_t *k = p->k_cache + (size_t)(ic + j) * p->kv_stride + (size_t)g * hd;
        const uint16_t *v = p->v_cache + (size_t)(ic + j) * p->kv_stride + (size_t)g * hd;
        for (int d = 0; d < hd; d++) {
            kt[(size_t)d * CK_FA_TILE + j] = j < n ? ck_fp16_to_fp32(k[d]) : 0.0f;
            vt[(size_t)j * hd + d] = j < n ? ck_fp16_to_fp32(v[d]) : 0.0f;
        }
    }
}

#if CK_X86
CK_FAST static void pack_tile_fast(const ck_attention_args *p, int g, int ic, int n, float *kt, float *vt) {
    const int hd = p->head_dim;
    for (int j = 0; j < CK_FA_TILE; j++) {
        if (j >= n) {
            for (int d = 0; d < hd; d++) kt[(size_t)d * CK_FA_TILE + j] = 0.0f;
            memset(vt + (size_t)j * hd, 0, sizeof(float) * (size_t)hd);
            continue;
        }
        const uint16_t *k = p->k_cache + (size_t)(ic + j) * p->kv_stride + (size_t)g * hd;
        const uint16_t *v = p->v_cache + (size_t)(ic + j) * p->kv_stride + (size_t)g * hd;
        for (int d = 0; d < hd; d += 8) {
            float tmp[8];
            _mm256_storeu_ps(tmp, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + d))));
            for (int i = 0; i < 8; i++) kt[(size_t)(d + i) * CK_FA_TILE + j] = tmp[i];
            _mm256_storeu_ps(vt + (size_t)j * hd + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d))));
        }
    }
}
#endif

// a[d] += w[j] * v[j][d] for the tile's positions j in order: one FMA chain per dimension.
// Dimensions go in blocks of CK_FA_DIMS whose running sums stay in registers over the 64
// positions (a d-outer loop; a j-outer one loads and stores the whole row at every position);
// each dimension's chain, and so every bit, is the same either way. 64 dimensions are eight
// AVX2 registers: eight independent FMA chains, enough to hide the FMA's latency (32 gave four,
// and the loop waited on them).
#define CK_FA_DIMS 64
static inline __attribute__((always_inline)) void accumulate_values(const float *w, const float *vt, int hd,
                                                                     float *a) {
    int d0 = 0;
    for (; d0 + CK_FA_DIMS <= hd; d0 += CK_FA_DIMS) {
        float blk[CK_FA_DIMS];
        for (int d = 0; d < CK_FA_DIMS; d++) blk[d] = a[d0 + d];
        for (int j = 0; j < CK_FA_TILE; j++) {
            if (w[j] == 0.0f) continue;  // fmaf(0, v, a) is a (v finite): hidden positions
            const float *vj = vt + (size_t)j * hd + d0;
            for (int d = 0; d < CK_FA_DIMS; d++) blk[d] = fmaf(w[j], vj[d], blk[d]);
        }
        for (int d = 0; d < CK_FA_DIMS; d++) a[d0 + d] = blk[d];
    }
    for (int j = 0; j < CK_FA_TILE && d0 < hd; j++) {
        if (w[j] == 0.0f) continue;
        const float *vj = vt + (size_t)j * hd;
        for (int d = d0; d < hd; d++) a[d] = fmaf(w[j], vj[d], a[d]);
    }
}

// Token block `tb`, every query head of KV head `g`: every row's pass over the key tiles. Rows
// r = token * heads + head; q, acc hold rows × hd floats.
static inline __attribute__((always_inline)) void tiled_block(const ck_attention_args *p, int tb, int g, float *kt,
                                                               float *vt, float *q, float *acc, int fast) {
    const int hd = p->head_dim;
    const int heads = p->n_head / p->n_kv_head;
    const int t0 = tb * CK_FA_TOKENS;
    const int tokens = p->n_tokens - t0 < CK_FA_TOKENS ? p->n_tokens - t0 : CK_FA_TOKENS;
    const int rows = tokens * heads;
    float M[CK_FA_TOKENS * 8], S[CK_FA_TOKENS * 8];
    for (int r = 0; r < rows; r++) {
        const int t = r / heads, h = g * heads + r % heads;
        M[r] = -INFINITY;
        S[r] = 0.0f;
        const float *src = p->q + (size_t)(t0 + t) * p->q_stride + (size_t)h * hd;
        for (int d = 0; d < hd; d++) q[(size_t)r * hd + d] = src[d] * p->scale;
        memset(acc + (size_t)r * hd, 0, sizeof(float) * (size_t)hd);
    }
    const int last = p->pos0 + t0 + tokens - 1;  // the block's last position
    for (int ic = 0; ic <= last; ic += CK_FA_TILE) {
        const int n = last + 1 - ic < CK_FA_TILE ? last + 1 - ic : CK_FA_TILE;
        // Tokens that see this tile: position pos sees j in [first(pos), pos].
        int any = 0;
        for (int t = 0; t < tokens && !any; t++) {
            const int pos = p->pos0 + t0 + t;
            const int first = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
            any = ic <= pos && first < ic + CK_FA_TILE;
        }
        if (!any) continue;
#if CK_X86
        if (fast) {
            pack_tile_fast(p, g, ic, n, kt, vt);
        } else
#endif
            pack_tile_portable(p, g, ic, n, kt, vt);
        (void)fast;
        for (int r = 0; r < rows; r++) {
            const int pos = p->pos0 + t0 + r / heads;
            const int first = p->window > 0 && pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
            if (!(ic <= pos && first < ic + CK_FA_TILE)) continue;
            const float *qr = q + (size_t)r * hd;
            float s[CK_FA_TILE] = {0};
            for (int d = 0; d < hd; d++) {
                const float qd = qr[d];
                const float *kd = kt + (size_t)d * CK_FA_TILE;
                for (int j = 0; j < CK_FA_TILE; j++) s[j] = fmaf(kd[j], qd, s[j]);
            }
            float tile_max = -INFINITY;
            for (int j = 0; j < CK_FA_TILE; j++) {
                const int at = ic + j;
                if (j >= n || at > pos || at < first) s[j] = -INFINITY;
                tile_max = s[j] > tile_max ? s[j] : tile_max;
            }
            float *a = acc + (size_t)r * hd;
            const float m_new = M[r] > tile_max ? M[r] : tile_max;
            if (m_new > M[r]) {
                const float ms = expf(M[r] - m_new);
                for (int d = 0; d < hd; d++) a[d] *= ms;
                S[r] *= ms;
            }
            M[r] = m_new;
            for (int j = 0; j < CK_FA_TILE; j++) s[j] = ck_expf_ggml512(s[j] - m_new);
            double sum = 0.0;
            for (int l = 0; l < CK_FA_TILE; l += 16) sum += (double)ck_reduce16(s + l);
            S[r] = (float)((double)S[r] + sum);
            accumulate_values(s, vt, hd, a);
        }
    }
    for (int r = 0; r < rows; r++) {
        const int t = r / heads, h = g * heads + r % heads;
        const float inv = S[r] == 0.0f ? 0.0f : 1.0f / S[r];
        float *out = p->out + (size_t)(t0 + t) * p->out_stride + (size_t)h * hd;
        const float *a = acc + (size_t)r * hd;
        for (int d = 0; d < hd; d++) out[d] = a[d] * inv;
    }
}

static void tiled_block_portable(const ck_attention_args *p, int tb, int g, float *kt, float *vt, float *q,
                                 float *acc) {
    tiled_block(p, tb, g, kt, vt, q, acc, 0);
}

#if CK_X86
CK_FAST static void tiled_block_fast(const ck_attention_args *p, int tb, int g, float *kt, float *vt, float *q,
                                     float *acc) {
    tiled_block(p, tb, g, kt, vt, q, acc, 1);
}
#endif

static void tiled_chunk(void *ctx, int chunk, int thread) {
    (void)thread;
    const tiled_ctx *c = ctx;
    const ck_attention_args *p = c->p;
    const size_t hd = (size_t)p->head_dim;
    const size_t rows = (size_t)CK_FA_TOKENS * (size_t)(p->n_head / p->n_kv_head);
    float *buffer = malloc(sizeof(float) * (2 * CK_FA_TILE * hd + 2 * rows * hd));
    if (!buffer) abort();
    float *kt = buffer, *vt = kt + CK_FA_TILE * hd, *q = vt + CK_FA_TILE * hd, *acc = q + rows * hd;
    const int tb = chunk % c->token_blocks, g = chunk / c->token_blocks;
#if CK_X86
    if (ck_fast_paths_enabled() && p->head_dim % 8 == 0) {
        tiled_block_fast(p, tb, g, kt, vt, q, acc);
        free(buffer);
        return;
    }
#endif
    tiled_block_portable(p, tb, g, kt, vt, q, acc);
    free(buffer);
}

void ck_attention_flash_tiled(ck_pool *pool, const ck_attention_args *p) {
    if (p->n_tokens <= 0) return;
    if (p->n_head / p->n_kv_head > 8) abort();  // the per-row state holds 8 heads per KV head
    tiled_ctx c = {p, (p->n_tokens + CK_FA_TOKENS - 1) / CK_FA_TOKENS};
    const int chunks = c.token_blocks * p->n_kv_head;
    if (pool) {
        ck_pool_run_chunks(pool, tiled_chunk, &c, chunks);
    } else {
        for (int i = 0; i < chunks; i++) tiled_chunk(&c, i, 0);
    }
}
