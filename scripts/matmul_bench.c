// Decode's matrix products alone, to compare weight forms and kernel variants in seconds instead
// of a release build: SmolLM2-135M's shapes (30 layers of Q4_1: Q 576×576, K and V 192×576 as
// one pool task, O 576×576, gate and up 1536×576 as one task, down 576×1536; the Q8_0 output
// head 49152×576; 96.5 MB), random weights, one token per pass, as a decode step runs them.
// Passes alternate between the file layout (the per-row kernels) and the interleaved form, so
// both see the same machine; it prints the median ms per pass of each and the weight bytes read
// per second.
//
//   clang -O2 -ISources/CKernels/include Sources/CKernels/*.c scripts/matmul_bench.c -lm -lpthread \
//       -o /tmp/matmul_bench
//   chrt -f 50 /tmp/matmul_bench 1 40
//
// -DCK_ROWS_AHEAD=0 builds the per-row kernels without their look-ahead prefetch (dot.c);
// -DCK_Q41_AHEAD_AVX2=N -DCK_Q80_AHEAD_AVX2=M other distances for the interleaved AVX2 ones.
//
// usage: matmul_bench [threads=1] [passes=40]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ckernels.h"

typedef struct {
    int type, rows, k;
    void *file, *packed;
    size_t row_bytes, group_bytes;
    int packed_type;
} matrix;

static unsigned seed = 12345;
static float rnd(void) {
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) / 16777216.0f - 0.5f;
}

static matrix make(int type, int rows, int k) {
    matrix m = {type, rows, k, 0, 0, 0, 0, -1};
    const int nb = k / 32;
    m.row_bytes = (size_t)nb * (type == CK_TYPE_Q4_1 ? sizeof(ck_block_q4_1) : sizeof(ck_block_q8_0));
    m.file = aligned_alloc(64, (m.row_bytes * rows + 63) / 64 * 64);
    unsigned char *p = m.file;
    for (size_t i = 0; i < m.row_bytes * rows; i++) p[i] = (unsigned char)(rnd() * 256);
    // Sane scales: fp16 of small numbers (random bytes would include NaNs and subnormals).
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < nb; b++) {
            if (type == CK_TYPE_Q4_1) {
                ck_block_q4_1 *q = (ck_block_q4_1 *)(p + r * m.row_bytes) + b;
                q->d = ck_fp32_to_fp16(0.01f + rnd() * 0.01f);
                q->m = ck_fp32_to_fp16(rnd() * 0.1f);
            } else {
                ck_block_q8_0 *q = (ck_block_q8_0 *)(p + r * m.row_bytes) + b;
                q->d = ck_fp32_to_fp16(0.001f + rnd() * 0.001f);
            }
        }
    }
    m.group_bytes = ck_interleaved_group_bytes(type, k);
    m.packed = aligned_alloc(64, (m.group_bytes * (rows / 8) + 63) / 64 * 64);
    m.packed_type = ck_interleave(type, m.file, m.row_bytes, rows, k, m.packed);
    return m;
}

static ck_matmul_args args_for(const matrix *m, int packed, const void *x, size_t x_bytes, float *y) {
    ck_matmul_args a = {packed ? m->packed_type : m->type, packed ? m->packed : m->file,
                        packed ? m->group_bytes : m->row_bytes, m->rows, m->k, x, x_bytes, 1, y, m->rows};
    return a;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    const int passes = argc > 2 ? atoi(argv[2]) : 40;
    const int layers = 30, dim = 576, kv = 192, ff = 1536, vocab = 49152;
    matrix mats[30][7];
    size_t bytes = 0;
    for (int l = 0; l < layers; l++) {
        const int shape[7][2] = {{dim, dim}, {kv, dim}, {kv, dim}, {dim, dim}, {ff, dim}, {ff, dim}, {dim, ff}};
        for (int i = 0; i < 7; i++) {
            mats[l][i] = make(CK_TYPE_Q4_1, shape[i][0], shape[i][1]);
            bytes += mats[l][i].row_bytes * (size_t)shape[i][0];
        }
    }
    const matrix head = make(CK_TYPE_Q8_0, vocab, dim);
    bytes += head.row_bytes * (size_t)vocab;
    float xf[1536];
    for (int i = 0; i < 1536; i++) xf[i] = rnd() * 4;
    ck_block_q8_1 x576[18], x1536[48];
    ck_block_q8_0 xh[18];
    ck_quantize_row_q8_1(xf, x576, 576);
    ck_quantize_row_q8_1(xf, x1536, 1536);
    ck_quantize_row_q8_0(xf, xh, 576);
    float *y = malloc(sizeof(float) * 8 * (size_t)vocab);
    ck_pool *pool = threads > 1 ? ck_pool_create(threads) : NULL;
    double *ms[2] = {malloc(sizeof(double) * passes), malloc(sizeof(double) * passes)};
    for (int p = 0; p < 2 * passes + 2; p++) {
        const int packed = p & 1;
        const double t0 = now();
        for (int l = 0; l < layers; l++) {
            matrix *m = mats[l];
            ck_matmul_args qkv[3] = {args_for(&m[0], packed, x576, sizeof x576, y),
                                     args_for(&m[1], packed, x576, sizeof x576, y + 2048),
                                     args_for(&m[2], packed, x576, sizeof x576, y + 4096)};
            ck_matmul_many(pool, qkv, 3);
            ck_matmul_args o = args_for(&m[3], packed, x576, sizeof x576, y);
            ck_matmul(pool, &o);
            ck_matmul_args gu[2] = {args_for(&m[4], packed, x576, sizeof x576, y),
                                    args_for(&m[5], packed, x576, sizeof x576, y + 2048)};
            ck_matmul_many(pool, gu, 2);
            ck_matmul_args down = args_for(&m[6], packed, x1536, sizeof x1536, y);
            ck_matmul(pool, &down);
        }
        ck_matmul_args h = args_for(&head, packed, xh, sizeof xh, y);
        ck_matmul(pool, &h);
        if (p >= 2) ms[packed][(p - 2) / 2] = (now() - t0) * 1e3;  // the first pair warms up
    }
    const char *names[2] = {"file layout (per-row kernels)", "interleaved"};
    for (int f = 0; f < 2; f++) {
        qsort(ms[f], passes, sizeof(double), cmp);
        const double med = ms[f][passes / 2];
        printf("%-30s threads=%d passes=%d median=%.3f ms (min %.3f, max %.3f) %.2f GB/s\n", names[f], threads,
               passes, med, ms[f][0], ms[f][passes - 1], (double)bytes / med / 1e6);
    }
    printf("weights %.1f MB, check %g\n", (double)bytes / 1e6, (double)y[7]);
    return 0;
}
