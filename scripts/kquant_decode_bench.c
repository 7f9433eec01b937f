// A mixture-of-experts decode step's expert products alone (Qwen3-30B-A3B's: per layer 8 of the
// experts' 768 x 2048 gate and up matrices and 2048 x 768 down matrices, one activation row, in
// ck_matmul_many's batches of eight as LlamaModel+Experts runs them), 8 layers of 32 experts
// (~800 MB, past the caches), to compare the K-quant forms' decode kernels in seconds instead of
// a release build and a model file. Prints the median ms per pass and the bytes read per second
// (of the form read: the interleaved Q6_K form is 1.3x the file's bytes).
//
//   clang -O2 -ISources/CKernels/include Sources/CKernels/*.c scripts/kquant_decode_bench.c -lm -lpthread \
//       -o /tmp/kquant_decode_bench
//   /tmp/kquant_decode_bench [threads=1] [passes=30] [gate/up type=12 (Q4_K)] [down type=14 (Q6_K)] [interleaved=1]
//
// -DCK_Q4K_AHEAD=0 -DCK_Q6K_AHEAD=0 builds the interleaved kernels prefetching only the block they
// read (as good as no prefetch)
// (interleave_q4_k.c, interleave_q6_k.c).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ckernels.h"
static unsigned seed = 12345;
static float rnd(void) { seed = seed * 1664525u + 1013904223u; return (float)(seed >> 8) / 16777216.0f - 0.5f; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
typedef struct { int type, rows, k; void *packed; size_t gb; int pt; } mat;
static size_t blk(int type) { return type == CK_TYPE_Q4_K ? sizeof(ck_block_q4_K) : type == CK_TYPE_Q6_K ? sizeof(ck_block_q6_K) : type == CK_TYPE_Q5_K ? sizeof(ck_block_q5_K) : sizeof(ck_block_q8_0); }
static int per(int type) { return type == CK_TYPE_Q8_0 ? 32 : 256; }
static mat make(int type, int rows, int k, int interleave) {
    mat m = {type, rows, k, 0, 0, type};
    size_t rb = (size_t)(k / per(type)) * blk(type);
    unsigned char *p = malloc(rb * rows);
    for (size_t i = 0; i < rb * rows; i++) p[i] = (unsigned char)(rnd() * 256);
    for (int r = 0; r < rows; r++) for (int b = 0; b < k / per(type); b++) {
        unsigned char *q = p + r * rb + b * blk(type);
        uint16_t h = ck_fp32_to_fp16(0.001f + rnd() * 0.001f);
        if (type == CK_TYPE_Q4_K || type == CK_TYPE_Q5_K) { memcpy(q, &h, 2); memcpy(q + 2, &h, 2); }
        else if (type == CK_TYPE_Q6_K) memcpy(q + 208, &h, 2);
        else memcpy(q, &h, 2);
    }
    if (!interleave) { m.packed = p; m.gb = rb; return m; }
    m.gb = ck_interleaved_group_bytes(type, k);
    m.packed = aligned_alloc(64, (m.gb * (rows / 8) + 63) / 64 * 64);
    m.pt = ck_interleave(type, p, rb, rows, k, m.packed);
    free(p);
    return m;
}
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1, passes = argc > 2 ? atoi(argv[2]) : 30;
    int tg = argc > 3 ? atoi(argv[3]) : CK_TYPE_Q4_K, td = argc > 4 ? atoi(argv[4]) : CK_TYPE_Q6_K;
    int inter = argc > 5 ? atoi(argv[5]) : 1;
    const int L = 8, E = 32, dim = 2048, ff = 768;
    mat g[8][32], u[8][32], d[8][32];
    size_t bytes = 0;
    for (int l = 0; l < L; l++) for (int e = 0; e < E; e++) {
        g[l][e] = make(tg, ff, dim, inter); u[l][e] = make(tg, ff, dim, inter); d[l][e] = make(td, dim, ff, inter);
    }
    float xf[2048]; for (int i = 0; i < 2048; i++) xf[i] = rnd() * 4;
    static ck_block_q8_K xk[8], xk2[3]; static ck_block_q8_0 x0[64], x02[24];
    ck_quantize_row_q8_K(xf, xk, 2048); ck_quantize_row_q8_K(xf, xk2, 768);
    ck_quantize_row_q8_0(xf, x0, 2048); ck_quantize_row_q8_0(xf, x02, 768);
    const void *xa = tg == CK_TYPE_Q8_0 ? (void *)x0 : (void *)xk; size_t xab = tg == CK_TYPE_Q8_0 ? sizeof x0 : sizeof xk;
    const void *xd = td == CK_TYPE_Q8_0 ? (void *)x02 : (void *)xk2; size_t xdb = td == CK_TYPE_Q8_0 ? sizeof x02 : sizeof xk2;
    float *y = malloc(sizeof(float) * 16 * 2048);
    ck_pool *pool = threads > 1 ? ck_pool_create(threads) : NULL;
    double *ms = malloc(sizeof(double) * passes);
    for (int p = 0; p < passes + 2; p++) {
        size_t pb = 0; double t0 = now();
        for (int l = 0; l < L; l++) {
            int ch[8]; for (int i = 0; i < 8; i++) ch[i] = (p * 13 + i * 4 + l) % E;
            ck_matmul_args a[8];
            for (int h = 0; h < 2; h++) {
                for (int i = 0; i < 4; i++) {
                    mat *gm = &g[l][ch[4 * h + i]], *um = &u[l][ch[4 * h + i]];
                    a[2 * i] = (ck_matmul_args){gm->pt, gm->packed, gm->gb, ff, dim, xa, xab, 1, y + (2 * i) * 768, 768, NULL};
                    a[2 * i + 1] = (ck_matmul_args){um->pt, um->packed, um->gb, ff, dim, xa, xab, 1, y + (2 * i + 1) * 768, 768, NULL};
                }
                ck_matmul_many(pool, a, 8);
            }
            for (int i = 0; i < 8; i++) { mat *dm = &d[l][ch[i]]; a[i] = (ck_matmul_args){dm->pt, dm->packed, dm->gb, dim, ff, xd, xdb, 1, y + i * 2048, 2048, NULL}; }
            ck_matmul_many(pool, a, 8);
            for (int i = 0; i < 8; i++) pb += g[l][ch[i]].gb * (inter ? ff / 8 : ff) * 2 + d[l][ch[i]].gb * (inter ? dim / 8 : dim);
        }
        if (p >= 2) ms[p - 2] = (now() - t0) * 1e3;
        bytes = pb;
    }
    qsort(ms, passes, sizeof(double), cmp);
    printf("types %d/%d inter=%d threads=%d median %.3f ms min %.3f  %.2f GB/s (%.1f MB per pass)\n", tg, td, inter, threads, ms[passes / 2], ms[0], bytes / ms[passes / 2] / 1e6, bytes / 1e6);
    return 0;
}
