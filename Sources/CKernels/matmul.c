// Matrix products split into row chunks over the pool, with the kernels dot.c picks.
#include "internal.h"

// Rows whose arithmetic follows llama.cpp's batched orders (p->orders): Q4_K's rows flagged
// CK_ORDER_GROUP4 go four at a time through its four-row kernel (that order), Q6_K's flagged
// CK_ORDER_TILED through the tiled kernel, every other row through the single-row kernel.
static void matmul_rows_ordered(const ck_kernels *kern, const ck_matmul_args *p, int r0, int r1) {
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    int grouped[p->n > 0 ? p->n : 1];
    int g = 0;
    if (kern->dot1x4 && kern->dot_pairs) {
        for (int t = 0; t < p->n; t++) {
            if (p->orders[t] & CK_ORDER_GROUP4) grouped[g++] = t;
        }
    }
    const int whole = g - g % 4;
    for (int r = r0; r < r1; r++) {
        const void *wr = w + (size_t)r * p->w_row_bytes;
        for (int i = 0; i < whole; i += 4) {
            const void *xs[4];
            for (int u = 0; u < 4; u++) xs[u] = x + (size_t)grouped[i + u] * p->x_row_bytes;
            float out[4];
            kern->dot1x4(p->k, wr, xs, out);
            for (int u = 0; u < 4; u++) p->y[(size_t)grouped[i + u] * p->ldy + r] = out[u];
        }
        for (int i = whole; i < g; i++) {
            const int t = grouped[i];
            p->y[(size_t)t * p->ldy + r] = kern->dot_pairs(p->k, wr, x + (size_t)t * p->x_row_bytes);
        }
        // The rest: tiled rows four at a time where there is a four-row tiled kernel.
        int pending[4], count = 0;
        for (int t = 0; t < p->n; t++) {
            const unsigned char order = p->orders[t];
            if (g > 0 && (order & CK_ORDER_GROUP4)) continue;
            const void *xt = x + (size_t)t * p->x_row_bytes;
            if (!((order & CK_ORDER_TILED) && kern->dot_tiled)) {
                p->y[(size_t)t * p->ldy + r] = kern->dot(p->k, wr, xt);
            } else if (kern->dot1x4_tiled) {
                pending[count++] = t;
                if (count == 4) {
                    const void *xs[4];
                    for (int u = 0; u < 4; u++) xs[u] = x + (size_t)pending[u] * p->x_row_bytes;
                    float out[4];
                    kern->dot1x4_tiled(p->k, wr, xs, out);
                    for (int u = 0; u < 4; u++) p->y[(size_t)pending[u] * p->ldy + r] = out[u];
                    count = 0;
                }
            } else {
                p->y[(size_t)t * p->ldy + r] = kern->dot_tiled(p->k, wr, xt);
            }
        }
        for (int u = 0; u < count; u++) {
            const int t = pending[u];
            p->y[(size_t)t * p->ldy + r] = kern->dot_tiled(p->k, wr, x + (size_t)t * p->x_row_bytes);
        }
    }
}

// Float types with a GEMM order of their own (kern->dot_gemm): each run of tokens that are
// rows of a micro-batch (CK_ORDER_BATCH; every token for NULL orders and n > 1) through the GEMM
// where llama.cpp's tinyBLAS takes it (k a multiple of its step, a matrix of a multiple of 4 rows),
// every other run through the rows kernel, whose outputs are a row alone's. An output's bits
// depend on its row and token only, so runs may be cut anywhere.
static int in_batch(const ck_matmul_args *p, int t) {
    return p->orders ? (p->orders[t] & CK_ORDER_BATCH) != 0 : p->n > 1;
}

static void matmul_rows_gemm(const ck_kernels *kern, const ck_matmul_args *p, int r0, int r1) {
    const char *w = (const char *)p->w + (size_t)r0 * p->w_row_bytes;
    const char *x = (const char *)p->x;
    const int gemm_shape = p->k % kern->gemm_k == 0 && p->rows % 4 == 0;
    for (int t0 = 0; t0 < p->n;) {
        const int batch = in_batch(p, t0);
        int t1 = t0 + 1;
        while (t1 < p->n && in_batch(p, t1) == batch) t1++;
        const ck_dot_rows_fn fn = batch && gemm_shape ? kern->dot_gemm : kern->dot_rows;
        fn(p->k, w, p->w_row_bytes, r1 - r0, x + (size_t)t0 * p->x_row_bytes, p->x_row_bytes, t1 - t0,
           p->y + (size_t)t0 * p->ldy + r0, p->ldy);
        t0 = t1;
    }
}

static void matmul_rows_with(const ck_kernels *kern, const ck_matmul_args *p, int r0, int r1) {
    if (p->orders && !kern->interleaved && kern->dot && (kern->dot_tiled || kern->dot_pairs)) {
        matmul_rows_ordered(kern, p, r0, r1);
        return;
    }
    if (kern->interleaved) {
        ck_matmul_interleaved_rows(p, r0, r1, kern->interleaved_fast);
        return;
    }
    if (!kern->dot) return;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    if (kern->dot_gemm) {
        matmul_rows_gemm(kern, p, r0, r1);
        return;
    }
    int r = r0;
    // Four weight rows (a few hundred bytes) stay in L1 while every token passes over them.
    // (Types that also have a four-token kernel use that one from four tokens on.)
    if (kern->dot4 && !(kern->dot1x4 && p->n >= 4)) {
        const size_t blocks = p->type == CK_TYPE_Q4_1   ? p->w_row_bytes / sizeof(ck_block_q4_1)
                              : p->type == CK_TYPE_Q5_0 ? p->w_row_bytes / sizeof(ck_block_q5_0)
                                                        : p->w_row_bytes / sizeof(ck_block_q8_0);
        for (; r + 4 <= r1; r += 4) {
            const void *wr = w + (size_t)r * p->w_row_bytes;
            int t = 0;
            if (kern->dot4x4) {
                for (; t + 4 <= p->n; t += 4) {
                    const void *xs[4];
                    float *ys[4];
                    for (int u = 0; u < 4; u++) {
                        xs[u] = x + (size_t)(t + u) * p->x_row_bytes;
                        ys[u] = p->y + (size_t)(t + u) * p->ldy + r;
                    }
                    kern->dot4x4(p->k, wr, blocks, xs, ys);
                }
            }
            if (kern->dot4x2) {
                for (; t + 2 <= p->n; t += 2) {
                    kern->dot4x2(p->k, wr, blocks, x + (size_t)t * p->x_row_bytes, x + (size_t)(t + 1) * p->x_row_bytes,
                                 p->y + (size_t)t * p->ldy + r, p->y + (size_t)(t + 1) * p->ldy + r);
                }
            }
            for (; t < p->n; t++) kern->dot4(p->k, wr, blocks, x + (size_t)t * p->x_row_bytes, p->y + (size_t)t * p->ldy + r);
        }
    }
    // Sixteen rows (a cache line of each token's outputs, a few KB of weights) at a time, four
    // tokens per weight pass: every output line is written once, not once per row (token rows
    // lie a power-of-two stride apart and would evict each other from L1).
    if (kern->dot1x4) {
        for (; r + 16 <= r1; r += 16) {
            int t = 0;
            for (; t + 4 <= p->n; t += 4) {
                const void *xs[4] = {x + (size_t)t * p->x_row_bytes, x + (size_t)(t + 1) * p->x_row_bytes,
                                     x + (size_t)(t + 2) * p->x_row_bytes, x + (size_t)(t + 3) * p->x_row_bytes};
                float out[16][4];
                for (int i = 0; i < 16; i++) kern->dot1x4(p->k, w + (size_t)(r + i) * p->w_row_bytes, xs, out[i]);
                for (int u = 0; u < 4; u++) {
                    float *yt = p->y + (size_t)(t + u) * p->ldy + r;
                    for (int i = 0; i < 16; i++) yt[i] = out[i][u];
                }
            }
            for (; t < p->n; t++) {
                for (int i = 0; i < 16; i++) {
                    p->y[(size_t)t * p->ldy + r + i] =
                        kern->dot(p->k, w + (size_t)(r + i) * p->w_row_bytes, x + (size_t)t * p->x_row_bytes);
                }
            }
        }
    }
    for (; r < r1; r++) {
        const void *wr = w + (size_t)r * p->w_row_bytes;
        int t = 0;
        // One row unpacked once for four tokens (types whose unpacking costs more than the loads).
        if (kern->dot1x4) {
            for (; t + 4 <= p->n; t += 4) {
                const void *xs[4] = {x + (size_t)t * p->x_row_bytes, x + (size_t)(t + 1) * p->x_row_bytes,
                                     x + (size_t)(t + 2) * p->x_row_bytes, x + (size_t)(t + 3) * p->x_row_bytes};
                float out[4];
                kern->dot1x4(p->k, wr, xs, out);
                for (int u = 0; u < 4; u++) p->y[(size_t)(t + u) * p->ldy + r] = out[u];
            }
        }
        for (; t < p->n; t++) {
            p->y[(size_t)t * p->ldy + r] = kern->dot(p->k, wr, x + (size_t)t * p->x_row_bytes);
        }
    }
}

void ck_matmul_rows(const ck_matmul_args *p, int r0, int r1) {
    const ck_kernels kern = ck_pick_kernels(p->type, ck_fast_paths_enabled());
    matmul_rows_with(&kern, p, r0, r1);
}

typedef struct {
    const ck_matmul_args *args;
    ck_kernels kern;
    int chunk;
} matmul_job;

static void matmul_chunk(void *ctx, int c, int thread) {
    (void)thread;
    const matmul_job *job = (const matmul_job *)ctx;
    const int rows = job->args->rows;
    const int r0 = c * job->chunk;
    const int r1 = r0 + job->chunk < rows ? r0 + job->chunk : rows;
    matmul_rows_with(&job->kern, job->args, r0, r1);
}

// Rows per chunk: about `per` chunks per thread (8 for one matrix) so a thread slowed by a noisy
// neighbour does not hold the rest up; whole pairs of groups of 8 rows (the interleaved forms
// need whole groups, and their 16-lane kernels read two at a time: an odd group costs a pair's
// work).
static int matmul_chunk_rows(int rows, int nth, int per) {
    int chunk = (rows + nth * per - 1) / (nth * per);
    chunk = (chunk + 15) & ~15;
    return chunk < 16 ? 16 : chunk;
}

// Chunks per thread of each of `count` products run together. One token's products read every
// weight once, from memory, and each chunk is a stream of its own whose start the prefetchers
// lose: the 8 chunks of a mixture of experts' 768-row matrices were 57 KiB streams. There the
// chunks of all the products share out the work, about 8 per thread in all (two threads, eight
// experts' 768 x 2048 Q4_K and 2048 x 768 Q6_K products, scripts/kquant_decode_bench.c: 27.0 ->
// 40 GB/s). Several tokens keep 8 per matrix: a chunk's rows stay in L2 while its tokens pass.
static int matmul_many_per_thread(const ck_matmul_args *a, int count) {
    return a->n > 1 ? 8 : (8 + count - 1) / count;
}

#define CK_MANY_MAX_CHUNKS 256

typedef struct {
    const ck_matmul_args *args;
    ck_kernels kern[8];
    int count;
    short matrix[CK_MANY_MAX_CHUNKS];
    int r0[CK_MANY_MAX_CHUNKS];
    int r1[CK_MANY_MAX_CHUNKS];
} matmul_many_job;

static void matmul_many_chunk(void *ctx, int c, int thread) {
    (void)thread;
    const matmul_many_job *job = (const matmul_many_job *)ctx;
    const int m = job->matrix[c];
    matmul_rows_with(&job->kern[m], &job->args[m], job->r0[c], job->r1[c]);
}

void ck_matmul_many(ck_pool *pool, const ck_matmul_args *args, int count) {
    const int nth = pool ? ck_pool_size(pool) : 1;
    if (nth <= 1 || count > 8) {
        for (int m = 0; m < count; m++) ck_matmul(pool, &args[m]);
        return;
    }
    matmul_many_job job;
    job.args = args;
    job.count = count;
    int n_chunks = 0;
    for (int m = 0; m < count; m++) {
        job.kern[m] = ck_pick_kernels(args[m].type, ck_fast_paths_enabled());
        const int chunk = matmul_chunk_rows(args[m].rows, nth, matmul_many_per_thread(&args[m], count));
        for (int r = 0; r < args[m].rows; r += chunk) {
            if (n_chunks == CK_MANY_MAX_CHUNKS) {
                for (int i = 0; i < count; i++) ck_matmul(pool, &args[i]);
                return;
            }
            job.matrix[n_chunks] = (short)m;
            job.r0[n_chunks] = r;
            job.r1[n_chunks] = r + chunk < args[m].rows ? r + chunk : args[m].rows;
            n_chunks++;
        }
    }
    ck_pool_run_chunks(pool, matmul_many_chunk, &job, n_chunks);
}

void ck_matmul(ck_pool *pool, const ck_matmul_args *args) {
    const int nth = pool ? ck_pool_size(pool) : 1;
    matmul_job job;
    job.args = args;
    job.kern = ck_pick_kernels(args->type, ck_fast_paths_enabled());
    if (nth <= 1 || args->rows < 16) {
        matmul_rows_with(&job.kern, args, 0, args->rows);
        return;
    }
    const int chunk = matmul_chunk_rows(args->rows, nth, 8);
    job.chunk = chunk;
    ck_pool_run_chunks(pool, matmul_chunk, &job, (args->rows + chunk - 1) / chunk);
}
