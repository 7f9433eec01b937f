// Attention for all the query heads of one KV head at once.
#include <math.h>

#include "attention_simd.h"

#if CK_X86

// With GQA several query heads share one KV head. A grouped unit does all R of them for one
// token, converting each K and V row from f16 once for the group instead of once per head.
// Every head's sums are attention_unit_fast_per_head's, in the same order with the same
// roundings, so the results are bit-identical; the loops are arranged differently, and where
// an instruction differs (the fused pair sums of the scores, the double tail, the maximum) the
// comment there says why it gives the same value. R is a compile-time constant in each
// instantiation, so the per-head sums stay in registers.
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
            load_f16_row_64(kj, k);
            for (int i = 0; i < R; i++) {
                const __m256 *qi = q + 8 * i;
                __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
                for (int m = 0; m < 8; m += 2) {
                    lo = _mm256_fmadd_ps(qi[m], k[m], lo);
                    hi = _mm256_fmadd_ps(qi[m + 1], k[m + 1], hi);
                }
                scores[(size_t)i * sstride + j] = ck_hsum8(_mm256_add_ps(hi, lo)) * scale;
            }
        }
        return;
    }
    for (int j = 0; j < nk; j++) {
        const uint16_t *kj = kbase + (size_t)j * kv_stride;
        __m256 k[8];
        load_f16_row_64(kj, k);
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
            scores[(size_t)i * sstride + j] = (float)(double)ck_hsum8(_mm256_add_ps(hi, lo)) * scale;
        }
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

// accumulate_lanes for the R heads of a group, lanes l0..<l1 of `lanes`. The output vectors go in
// blocks of C so that the R * C sums, the converted V vector and the R weights fit the 16 ymm
// registers.
CK_FAST static CK_INLINE void accumulate_lanes_group(float *acc, size_t acc_stride, int lanes, int l0, int l1, int hd,
                                                     const uint16_t *vbase, int kv_stride, const float *w,
                                                     int w_stride, int n, const int R) {
    const int C = R == 1 ? 8 : R <= 3 ? 4 : R == 4 ? 2 : 1;
    const int nv = hd / 8;
    for (int l = l0; l < l1; l++) {
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
    return reduce16_lanes(x);
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

// A decoding token's outputs for the R heads of a group (head i at out + i * hd), once the 64
// lane sums over the keys before attention_full_steps_end are in acc (head i at acc + i *
// astride) and the weights in scores (head i at scores + i * sstride): the lanes folded in
// ggml's order, then the leftover keys (beyond the last full 64) added in double, key by key.
CK_FAST static CK_INLINE void decode_outputs(const ck_attention_args *p, float *out, const float *acc, size_t astride,
                                             const uint16_t *vbase, const float *scores, int sstride, int nk,
                                             const int R) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int np = attention_full_steps_end(nk);
    const int nmain = nk < np ? nk : np;
    if (nmain > 0) {
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

// The R query heads of group g for token t (they lie side by side), rounded to f16 as ggml
// rounds the query for its f16 dot products: R * head_dim / 8 vectors.
CK_FAST static CK_INLINE void group_query(const ck_attention_args *p, int t, int g, __m256 *q, const int R) {
    const int hd = p->head_dim;
    const float *qg = p->q + (size_t)t * p->q_stride + (size_t)g * R * hd;
    for (int v = 0; v < R * hd / 8; v++) {
        q[v] = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(qg + 8 * v), _MM_FROUND_TO_NEAREST_INT));
    }
}

// Scores of keys j0..<j1 of group g for its R heads, into scores + i * sstride + j; each key's
// score is its own dot product, so any split of the keys gives the same bits.
CK_FAST static CK_INLINE void group_scores(const ck_attention_args *p, const __m256 *q, int g, int j0, int j1,
                                           int batched, float *scores, int sstride, const int R) {
    const int hd = p->head_dim;
    const uint16_t *kbase = p->k_cache + (size_t)g * hd;
    if (hd == 64) {
        group_scores_64(q, kbase + (size_t)j0 * p->kv_stride, p->kv_stride, j1 - j0, p->scale, batched, scores + j0,
                        sstride, R);
        return;
    }
    // Other sizes convert the key row per head, as attention_unit_fast_per_head does.
    for (int i = 0; i < R; i++) {
        float *si = scores + (size_t)i * sstride;
        const __m256 *qi = q + i * hd / 8;
        if (batched) {
            for (int j = j0; j < j1; j++) si[j] = dot_f16_batch(qi, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
        } else {
            for (int j = j0; j < j1; j++) si[j] = dot_f16_ggml(qi, kbase + (size_t)j * p->kv_stride, hd) * p->scale;
        }
    }
}

// scratch: group_scratch_floats(p) floats: R accumulators of 64 * head_dim, then R score rows.
CK_FAST static CK_INLINE void attention_group_body(const ck_attention_args *p, int t, int g, float *scratch,
                                                   const int R) {
    const int hd = p->head_dim;
    const int nv = hd / 8;
    const int nk = p->pos0 + t + 1;  // valid keys; the rest of the padded range weighs 0
    const int batched = ck_attention_batched(p);
    const size_t astride = (size_t)64 * hd;
    const int sstride = (p->pos0 + p->n_tokens + 15) & ~15;  // the softmax pads to 16 keys
    float *acc = scratch;
    float *scores = scratch + R * astride;
    __m256 q[CK_MAX_GROUP * CK_MAX_HEAD_DIM / 8];
    group_query(p, t, g, q, R);
    group_scores(p, q, g, 0, nk, batched, scores, sstride, R);
    for (int i = 0; i < R; i++) {
        ck_attention_mask_window(p, t, scores + (size_t)i * sstride);
        softmax_weights_ggml(scores + (size_t)i * sstride, nk, ck_attention_sink(p, g * R + i));
    }
    const uint16_t *vbase = p->v_cache + (size_t)g * hd;
    float *out = p->out + (size_t)t * p->out_stride + (size_t)g * R * hd;  // head i at out + i * hd
    if (batched) {
        // llamafile's f16 x f16 GEMM: one 16-lane sum over the keys.
        accumulate_lanes_group(acc, astride, 16, 0, 16, hd, vbase, p->kv_stride, scores, sstride, nk, R);
        for (int i = 0; i < R; i++) {
            for (int v = 0; v < nv; v++) {
                _mm256_storeu_ps(out + (size_t)i * hd + 8 * v, reduce16_over_d(acc + i * astride, hd, 8 * v));
            }
        }
        return;
    }
    // ggml_vec_dot_f16 per output dimension over the padded key range.
    const int np = attention_full_steps_end(nk);
    const int nmain = nk < np ? nk : np;
    if (nmain > 0) accumulate_lanes_group(acc, astride, 64, 0, 64, hd, vbase, p->kv_stride, scores, sstride, nmain, R);
    decode_outputs(p, out, acc, astride, vbase, scores, sstride, nk, R);
}

// `call(R)` with R a compile-time constant 1..8, so each group size gets its own instantiation
// (the per-head sums stay in registers).
#define CK_FOR_GROUP_SIZE(R, call)                                                                                      \
    switch (R) {                                                                                                        \
    case 1: call(1); break;                                                                                             \
    case 2: call(2); break;                                                                                             \
    case 3: call(3); break;                                                                                             \
    case 4: call(4); break;                                                                                             \
    case 5: call(5); break;                                                                                             \
    case 6: call(6); break;                                                                                             \
    case 7: call(7); break;                                                                                             \
    case 8: call(8); break;                                                                                             \
    }

CK_FAST void ck_attention_group_fast(const ck_attention_args *p, int t, int g, float *scratch) {
#define CK_GROUP_BODY(R) attention_group_body(p, t, g, scratch, R)
    CK_FOR_GROUP_SIZE(p->n_head / p->n_kv_head, CK_GROUP_BODY)
#undef CK_GROUP_BODY
}

// MARK: - One decoding token split over the pool

// One token's grouped units are one per KV head, so with a KV head count the threads cannot
// share evenly (SmolLM2's 3 on 2 threads, or a single KV head) a thread idles for part of each
// call; deep in a context, where attention is most of a token's time, that idling is most of
// what the second thread could have added. Here the same arithmetic runs in three pool tasks:
// the scores by ranges of keys, the softmax by heads, the 64 lane sums over the values by ranges
// of lanes; the calling thread then folds the lanes and adds the leftover keys. Every value is
// computed by attention_group_body's operations in its order, only on other threads, so the
// bits are the same (AttentionDecodeSplitTests).
typedef struct {
    const ck_attention_args *p;
    int R, nk, nmain, sstride, key_slices, lane_slices;
    size_t astride;
    float *scores;  // n_head rows of sstride: head h = g * R + i
    float *acc;     // per group g, at g * R * astride: R accumulators of 64 * head_dim
} decode_split_job;

// Fewer keys than this run unsplit. From 256 keys on (inferd bench tg128@256, SmolLM2 on 2
// threads) the split measured even with the grouped units, 179.7 against 179.6 tok/s, and after
// 2,048 it was 15 % faster (medians of 8 alternated runs, 93.0 against 80.9): with fewer keys
// there is less idle time to win back than the two extra pool tasks per layer cost.
#define CK_DECODE_SPLIT_MIN_KEYS 256

static int decode_split_stride(const ck_attention_args *p) { return (p->pos0 + 1 + 15) & ~15; }

static size_t decode_split_floats(const ck_attention_args *p) {
    return (size_t)p->n_head * ((size_t)decode_split_stride(p) + (size_t)64 * p->head_dim);
}

int ck_attention_decode_split_applies(ck_pool *pool, const ck_attention_args *p) {
    if (!pool || p->n_tokens != 1 || p->call_rows >= 2 || p->n_kv_head < 1 || p->n_head % p->n_kv_head != 0)
        return 0;
    const int threads = ck_pool_size(pool);
    const int r = p->n_head / p->n_kv_head;
    return threads >= 2 && p->n_kv_head % threads != 0 && r <= CK_MAX_GROUP && ck_attention_fast_shape(p) &&
           p->pos0 + 1 >= CK_DECODE_SPLIT_MIN_KEYS &&
           decode_split_floats(p) <= (size_t)threads * (size_t)p->scratch_stride;
}

CK_FAST static CK_INLINE void split_scores_body(const decode_split_job *job, int u, const int R) {
    const int g = u / job->key_slices, s = u % job->key_slices;
    const int j0 = (int)((long)job->nk * s / job->key_slices);
    const int j1 = (int)((long)job->nk * (s + 1) / job->key_slices);
    __m256 q[CK_MAX_GROUP * CK_MAX_HEAD_DIM / 8];
    group_query(job->p, 0, g, q, R);
    group_scores(job->p, q, g, j0, j1, 0, job->scores + (size_t)g * R * job->sstride, job->sstride, R);
}

CK_FAST static void split_scores(void *ctx, int u, int thread) {
    (void)thread;
    const decode_split_job *job = (const decode_split_job *)ctx;
#define CK_SPLIT_SCORES(R) split_scores_body(job, u, R)
    CK_FOR_GROUP_SIZE(job->R, CK_SPLIT_SCORES)
#undef CK_SPLIT_SCORES
}

CK_FAST static void split_softmax(void *ctx, int h, int thread) {
    (void)thread;
    const decode_split_job *job = (const decode_split_job *)ctx;
    float *row = job->scores + (size_t)h * job->sstride;
    ck_attention_mask_window(job->p, 0, row);
    softmax_weights_ggml(row, job->nk, ck_attention_sink(job->p, h));
}

CK_FAST static CK_INLINE void split_values_body(const decode_split_job *job, int u, const int R) {
    const ck_attention_args *p = job->p;
    const int g = u / job->lane_slices, s = u % job->lane_slices;
    const int l0 = 64 * s / job->lane_slices, l1 = 64 * (s + 1) / job->lane_slices;
    accumulate_lanes_group(job->acc + (size_t)g * R * job->astride, job->astride, 64, l0, l1, p->head_dim,
                           p->v_cache + (size_t)g * p->head_dim, p->kv_stride,
                           job->scores + (size_t)g * R * job->sstride, job->sstride, job->nmain, R);
}

CK_FAST static void split_values(void *ctx, int u, int thread) {
    (void)thread;
    const decode_split_job *job = (const decode_split_job *)ctx;
#define CK_SPLIT_VALUES(R) split_values_body(job, u, R)
    CK_FOR_GROUP_SIZE(job->R, CK_SPLIT_VALUES)
#undef CK_SPLIT_VALUES
}

CK_FAST static CK_INLINE void split_outputs(const decode_split_job *job, int g, const int R) {
    const ck_attention_args *p = job->p;
    decode_outputs(p, p->out + (size_t)g * R * p->head_dim, job->acc + (size_t)g * R * job->astride, job->astride,
                   p->v_cache + (size_t)g * p->head_dim, job->scores + (size_t)g * R * job->sstride, job->sstride,
                   job->nk, R);
}

CK_FAST void ck_attention_decode_split(ck_pool *pool, const ck_attention_args *p) {
    const int threads = ck_pool_size(pool);
    decode_split_job job;
    job.p = p;
    job.R = p->n_head / p->n_kv_head;
    job.nk = p->pos0 + 1;
    const int np = attention_full_steps_end(job.nk);
    job.nmain = job.nk < np ? job.nk : np;
    job.sstride = decode_split_stride(p);
    job.astride = (size_t)64 * p->head_dim;
    job.scores = p->scratch;
    job.acc = p->scratch + (size_t)p->n_head * job.sstride;
    // About four ranges per thread over all groups, none under 64 keys; lanes in ranges of 8.
    int slices = (4 * threads + p->n_kv_head - 1) / p->n_kv_head;
    if (slices > job.nk / 64) slices = job.nk / 64 > 0 ? job.nk / 64 : 1;
    job.key_slices = slices;
    job.lane_slices = 8;
    ck_pool_run_chunks(pool, split_scores, &job, p->n_kv_head * job.key_slices);
    ck_pool_run_chunks(pool, split_softmax, &job, p->n_head);
    if (job.nmain > 0) ck_pool_run_chunks(pool, split_values, &job, p->n_kv_head * job.lane_slices);
    for (int g = 0; g < p->n_kv_head; g++) {
#define CK_SPLIT_OUTPUTS(R) split_outputs(&job, g, R)
        CK_FOR_GROUP_SIZE(job.R, CK_SPLIT_OUTPUTS)
#undef CK_SPLIT_OUTPUTS
    }
}
#else
int ck_attention_decode_split_applies(ck_pool *pool, const ck_attention_args *p) {
    (void)pool;
    (void)p;
    return 0;
}
void ck_attention_decode_split(ck_pool *pool, const ck_attention_args *p) {
    (void)pool;
    (void)p;
}
#endif
