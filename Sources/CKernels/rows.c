// The steps between a pass's matrix products (RMSNorm, activation quantizing, the gated
// activation, RoPE with the KV cache writes, the residual add), split over the pool by rows.
// Each row runs the one-row function (ck_rmsnorm, ck_quantize_row_*, ck_gelu_mul, ...), so the
// result is bit for bit a loop over the rows on one thread; only who computes which rows
// changes. On one thread these steps left the other core idle for ~19 % of a 2-thread prompt
// (INFERD_POOL_PROFILE=1, Gemma 3 pp512). Small jobs (decode's one row) stay on the caller: a
// pool task costs a few microseconds, more than normalizing a row.
#include "internal.h"

// Below this many floats of work a step runs on the calling thread alone.
#define CK_ROWS_MIN_PARALLEL 8192
// About this many floats per chunk: enough chunks for the caller to even out a slow worker.
#define CK_ROWS_CHUNK_FLOATS 8192

typedef void (*rows_fn)(const void *job, int r0, int r1);

typedef struct {
    rows_fn fn;
    const void *job;
    int n, rows_per_chunk, fast;
} rows_task;

// Pool tasks take the path choice of the thread that starts them (ck_set_fast_paths is
// per thread, for tests): a worker adopts it for the chunk and puts its own back after.
static void rows_chunk(void *ctx, int chunk, int thread) {
    const rows_task *t = (const rows_task *)ctx;
    const int r0 = chunk * t->rows_per_chunk;
    const int r1 = r0 + t->rows_per_chunk < t->n ? r0 + t->rows_per_chunk : t->n;
    if (thread == 0) {
        t->fn(t->job, r0, r1);
        return;
    }
    const int saved = ck_fast_paths_override();
    ck_set_fast_paths_override(t->fast);
    t->fn(t->job, r0, r1);
    ck_set_fast_paths_override(saved);
}

// Runs fn over rows 0..<n of `width` floats each, split over the pool when the work is large.
static void run_rows(ck_pool *pool, rows_fn fn, const void *job, int n, int width) {
    const int nth = ck_pool_size(pool);
    if (n <= 0) return;
    if (nth <= 1 || n < 2 || (size_t)n * (size_t)width < CK_ROWS_MIN_PARALLEL) {
        fn(job, 0, n);
        return;
    }
    int per = CK_ROWS_CHUNK_FLOATS / (width > 0 ? width : 1);
    if (per < 1) per = 1;
    // At least two chunks per thread.
    const int most = (n + 2 * nth - 1) / (2 * nth);
    if (per > most) per = most;
    rows_task t = {fn, job, n, per, ck_fast_paths_enabled()};
    ck_pool_run_chunks(pool, rows_chunk, &t, (n + per - 1) / per);
}

// MARK: - RMSNorm

typedef struct {
    const float *x, *w;
    float *y;
    int width;
    float eps;
} rmsnorm_job;

static void rmsnorm_rows(const void *job, int r0, int r1) {
    const rmsnorm_job *j = (const rmsnorm_job *)job;
    for (int r = r0; r < r1; r++) {
        ck_rmsnorm(j->x + (size_t)r * j->width, j->w, j->y + (size_t)r * j->width, j->width, j->eps);
    }
}

void ck_rows_rmsnorm(ck_pool *pool, const float *x, const float *w, float *y, int n, int width, float eps) {
    const rmsnorm_job j = {x, w, y, width, eps};
    run_rows(pool, rmsnorm_rows, &j, n, width);
}

// MARK: - Log-sum-exp

typedef struct {
    const float *x;
    float *out;
    int width;
} logsumexp_job;

static void logsumexp_rows(const void *job, int r0, int r1) {
    const logsumexp_job *j = (const logsumexp_job *)job;
    for (int r = r0; r < r1; r++) j->out[r] = ck_logsumexp(j->x + (size_t)r * j->width, j->width);
}

void ck_rows_logsumexp(ck_pool *pool, const float *x, float *out, int n, int width) {
    const logsumexp_job j = {x, out, width};
    run_rows(pool, logsumexp_rows, &j, n, width);
}

// MARK: - Activation quantizing

typedef struct {
    int type;
    const float *x;
    int width;
    char *y;
    size_t y_row_bytes;
} quantize_job;

// F32 values rounded to f16 (nearest even) and back, as llama.cpp converts the activations of
// an F16 weight's product to its F16 vec_dot_type.
static void round_row_f16_portable(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = ck_fp16_to_fp32(ck_fp32_to_fp16(x[i]));
}

#if CK_X86
CK_FAST static void round_row_f16_fast(const float *x, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) y[i] = _cvtsh_ss(_cvtss_sh(x[i], 0));
}
#endif

void ck_round_row_f16(const float *x, float *y, int n) {
#if CK_X86
    if (ck_fast_paths_enabled()) {
        round_row_f16_fast(x, y, n);
        return;
    }
#endif
    round_row_f16_portable(x, y, n);
}

// F32 values rounded to bf16 (nearest even; NaN kept quiet) and back, as llama.cpp converts the
// activations of a BF16 weight's product to its BF16 vec_dot_type (ggml_compute_fp32_to_bf16).
void ck_round_row_bf16(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, 4);
        const uint32_t h = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 64u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        u = h << 16;
        memcpy(y + i, &u, 4);
    }
}

static void quantize_rows(const void *job, int r0, int r1) {
    const quantize_job *j = (const quantize_job *)job;
    for (int r = r0; r < r1; r++) {
        const float *x = j->x + (size_t)r * j->width;
        void *y = j->y + (size_t)r * j->y_row_bytes;
        switch (j->type) {
        case CK_TYPE_F16: ck_round_row_f16(x, (float *)y, j->width); break;
        case CK_TYPE_BF16: ck_round_row_bf16(x, (float *)y, j->width); break;
        case CK_TYPE_Q8_0: ck_quantize_row_q8_0(x, (ck_block_q8_0 *)y, j->width); break;
        case CK_TYPE_Q8_1: ck_quantize_row_q8_1(x, (ck_block_q8_1 *)y, j->width); break;
        default: ck_quantize_row_q8_K(x, (ck_block_q8_K *)y, j->width); break;
        }
    }
}

int ck_rows_quantize(ck_pool *pool, int type, const float *x, int width, void *y, size_t y_row_bytes, int n) {
    if (type != CK_TYPE_Q8_0 && type != CK_TYPE_Q8_1 && type != CK_TYPE_Q8_K && type != CK_TYPE_F16 &&
        type != CK_TYPE_BF16)
        return -1;
    const quantize_job j = {type, x, width, (char *)y, y_row_bytes};
    run_rows(pool, quantize_rows, &j, n, width);
    return 0;
}

// MARK: - Gated activation and residual add

typedef struct {
    int kind;
    const float *gate, *up;
    float *out;
    int width;
} glu_job;

static void glu_rows(const void *job, int r0, int r1) {
    const glu_job *j = (const glu_job *)job;
    const size_t at = (size_t)r0 * j->width;
    const int count = (r1 - r0) * j->width;
    switch (j->kind) {
    case CK_GLU_GELU: ck_gelu_mul(j->gate + at, j->up + at, j->out + at, count); break;
    case CK_GLU_SWIGLU_OAI:
        ck_swiglu_oai_mul(j->gate + at, j->up + at, j->out + at, count, CK_SWIGLU_OAI_ALPHA, CK_SWIGLU_OAI_LIMIT);
        break;
    default: ck_silu_mul(j->gate + at, j->up + at, j->out + at, count); break;
    }
}

void ck_rows_glu(ck_pool *pool, int kind, const float *gate, const float *up, float *out, int n, int width) {
    const glu_job j = {kind, gate, up, out, width};
    run_rows(pool, glu_rows, &j, n, width);
}

typedef struct {
    float *y;
    const float *x;
    int width;
} add_job;

static void add_rows(const void *job, int r0, int r1) {
    const add_job *j = (const add_job *)job;
    const size_t at = (size_t)r0 * j->width;
    ck_add(j->y + at, j->x + at, (r1 - r0) * j->width);
}

void ck_rows_add(ck_pool *pool, float *y, const float *x, int n, int width) {
    const add_job j = {y, x, width};
    run_rows(pool, add_rows, &j, n, width);
}

// MARK: - RoPE and the KV cache

// RoPE on row t's query and key heads, in place, with one table of angles for both
// (ck_rope_ext would build it twice).
static void rope_row(const ck_rope_kv_args *a, int t) {
    float cs[2 * CK_MAX_HEAD_DIM];
    ck_rope_angles(cs, a->n_rot, a->pos0 + t, a->base, a->freq_scale, a->freq_factors, a->yarn);
    float *q = a->q + (size_t)t * a->q_stride;
    ck_rope_apply(q, a->n_head, a->head_dim, a->n_rot, cs, a->halves);
    if (a->q_scale != NULL) {
        // The attention temperature (per position) or a scale before attention, in f32 after
        // RoPE, as llama.cpp multiplies Qcur.
        const float s = a->q_scale[t];
        for (int i = 0; i < a->n_head * a->head_dim; i++) q[i] *= s;
    }
    ck_rope_apply(a->k + (size_t)t * a->kv_stride, a->n_kv_head, a->head_dim, a->n_rot, cs, a->halves);
}

static void rope_kv_rows(const void *job, int r0, int r1) {
    const ck_rope_kv_args *a = (const ck_rope_kv_args *)job;
    const size_t width = (size_t)a->n_kv_head * a->head_dim;
    for (int t = r0; t < r1; t++) {
        rope_row(a, t);
        const size_t at = (size_t)(a->pos0 + t) * a->kv_stride;
        ck_fp32_to_fp16_row(a->k + (size_t)t * a->kv_stride, a->k_cache + at, width);
        ck_fp32_to_fp16_row(a->v + (size_t)t * a->kv_stride, a->v_cache + at, width);
    }
}

void ck_rows_rope_kv(ck_pool *pool, const ck_rope_kv_args *args) {
    // RoPE's angles (a cosine and a sine per pair) make a row cost several of its width.
    run_rows(pool, rope_kv_rows, args, args->n_tokens, 4 * (args->n_head + args->n_kv_head) * args->head_dim);
}

// The same with the keys and values quantized into a q8_0 cache (attention_q8.c): each
// position's row of n_kv_head * head_dim values as 32-value blocks.
static void rope_kv_q8_0_rows(const void *job, int r0, int r1) {
    const ck_rope_kv_args *a = (const ck_rope_kv_args *)job;
    const int width = a->n_kv_head * a->head_dim;
    ck_block_q8_0 *keys = (ck_block_q8_0 *)(void *)a->k_cache;
    ck_block_q8_0 *values = (ck_block_q8_0 *)(void *)a->v_cache;
    for (int t = r0; t < r1; t++) {
        rope_row(a, t);
        const size_t at = (size_t)(a->pos0 + t) * (size_t)(width / CK_QK);
        ck_quantize_row_q8_0(a->k + (size_t)t * a->kv_stride, keys + at, width);
        ck_quantize_row_q8_0(a->v + (size_t)t * a->kv_stride, values + at, width);
    }
}

void ck_rows_rope_kv_q8_0(ck_pool *pool, const ck_rope_kv_args *args) {
    run_rows(pool, rope_kv_q8_0_rows, args, args->n_tokens, 4 * (args->n_head + args->n_kv_head) * args->head_dim);
}
