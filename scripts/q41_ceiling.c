// How close the prompt path's Q4_1 product is to what this core can issue (README, "Speed II
// targets": why pp512 stays short of 1,500 tok/s). Three measurements in one run:
//
// 1. the clock: 8 dependent adds per iteration, one per cycle, so adds/s is the core's clock;
// 2. the vector pipes: 12 independent vpdpbusd / vfmadd231ps / vcvtdq2ps per iteration (ymm,
//    no memory), alone and mixed, in cycles per iteration at that clock (6.0 = two per cycle);
// 3. the product itself: a 1536×576 Q4_1 matrix (gate/up's shape) interleaved as the engine
//    does, times N q8_1 tokens, one thread, in ns and cycles per token-block (8 rows × 32
//    values × one token), checked bit for bit against the per-row kernel.
//
// ggml's Q4_1 order fixes, per row, block and token, 8 integer lane sums of 4 products each
// (one vpdpbusd), those 8 lanes converted and multiply-added in float by d·d_x (one vfmadd),
// and the block's m·s term: per token-block 8 vpdpbusd + 8 vfmadd + about 2 more (the scales'
// multiply, the m·s add), all on the two pipes that (2.) shows vpdpbusd and vfmadd share, so
// ≥ 9 cycles per token-block before a single load.
//
//   clang -O2 -mavx2 -mfma -mavx512vnni -mavx512vl -ISources/CKernels/include \
//       Sources/CKernels/*.c scripts/q41_ceiling.c -lm -lpthread -o /tmp/q41_ceiling
//   /tmp/q41_ceiling 64 200        # [tokens=64] [passes=200]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckernels.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static unsigned seed = 12345;
static float rnd(void) {
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) / 16777216.0f - 0.5f;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// 1. Clock: a chain of dependent adds retires one per cycle on every x86 core of this decade.
static double clock_hz(void) {
    long n = 200000000;
    unsigned long x = 1;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        __asm__ volatile("add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
                         "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0"
                         : "+r"(x));
    }
    return 8.0 * n / (now() - t0);
}

// 2. Pipes: 12 independent ops (ymm0–11, sources ymm14/15 zeroed), no dependency between
// iterations beyond each accumulator's own, which 12 registers cover at 4–5 cycles latency.
#define DP(r) "vpdpbusd %%ymm14, %%ymm15, %%ymm" #r "\n"
#define FM(r) "vfmadd231ps %%ymm14, %%ymm15, %%ymm" #r "\n"
#define CV(r) "vcvtdq2ps %%ymm15, %%ymm" #r "\n"
#define CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"
#define PIPES(name, body)                                                      \
    {                                                                          \
        long n = 20000000;                                                     \
        double t0 = now();                                                     \
        for (long i = 0; i < n; i++) __asm__ volatile(body ::: CLOBBERS);      \
        printf("  %-28s %5.2f cycles per 12 ops\n", name, (now() - t0) / n * hz); \
    }

int main(int argc, char **argv) {
    int tokens = argc > 1 ? atoi(argv[1]) : 64, passes = argc > 2 ? atoi(argv[2]) : 200;
    double hz = clock_hz();
    printf("clock: %.2f GHz (dependent adds)\n", hz / 1e9);

    __asm__ volatile("vpxor %%xmm14, %%xmm14, %%xmm14\n vpxor %%xmm15, %%xmm15, %%xmm15" ::: "xmm14", "xmm15");
    printf("pipes (6.00 = two per cycle):\n");
    PIPES("12 vpdpbusd", DP(0) DP(1) DP(2) DP(3) DP(4) DP(5) DP(6) DP(7) DP(8) DP(9) DP(10) DP(11))
    PIPES("12 vfmadd231ps", FM(0) FM(1) FM(2) FM(3) FM(4) FM(5) FM(6) FM(7) FM(8) FM(9) FM(10) FM(11))
    PIPES("12 vcvtdq2ps", CV(0) CV(1) CV(2) CV(3) CV(4) CV(5) CV(6) CV(7) CV(8) CV(9) CV(10) CV(11))
    PIPES("6 vpdpbusd + 6 vfmadd", DP(0) DP(1) DP(2) DP(3) DP(4) DP(5) FM(6) FM(7) FM(8) FM(9) FM(10) FM(11))
    PIPES("6 vfmadd + 6 vcvtdq2ps", FM(0) FM(1) FM(2) FM(3) FM(4) FM(5) CV(6) CV(7) CV(8) CV(9) CV(10) CV(11))

    // 3. The product: gate/up's shape, random Q4_1 weights, `tokens` random activations.
    int rows = 1536, k = 576, nb = k / 32;
    size_t row_bytes = nb * sizeof(ck_block_q4_1);
    unsigned char *file = aligned_alloc(64, row_bytes * rows);
    for (size_t i = 0; i < row_bytes * rows; i++) file[i] = (unsigned char)(rnd() * 256);
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < nb; b++) {
            ck_block_q4_1 *q = (ck_block_q4_1 *)(file + r * row_bytes) + b;
            q->d = ck_fp32_to_fp16(0.01f + rnd() * 0.01f);
            q->m = ck_fp32_to_fp16(rnd() * 0.1f);
        }
    }
    size_t group_bytes = ck_interleaved_group_bytes(CK_TYPE_Q4_1, k);
    void *packed = aligned_alloc(64, group_bytes * rows / 8);
    int packed_type = ck_interleave(CK_TYPE_Q4_1, file, row_bytes, rows, k, packed);
    ck_block_q8_1 *x = malloc(sizeof(ck_block_q8_1) * nb * tokens);
    float xf[576];
    for (int t = 0; t < tokens; t++) {
        for (int i = 0; i < k; i++) xf[i] = rnd() * 4;
        ck_quantize_row_q8_1(xf, x + t * nb, k);
    }
    float *y = malloc(sizeof(float) * rows * tokens), *y_rows = malloc(sizeof(float) * rows * tokens);
    ck_matmul_args fast = {packed_type, packed, group_bytes, rows, k, x, nb * sizeof(ck_block_q8_1), tokens, y, rows, NULL};
    ck_matmul_args per_row = {CK_TYPE_Q4_1, file, row_bytes, rows, k, x, nb * sizeof(ck_block_q8_1), tokens, y_rows, rows, NULL};
    ck_matmul(NULL, &per_row);
    double *ms = malloc(sizeof(double) * passes);
    for (int p = 0; p < passes + 5; p++) {
        double t0 = now();
        ck_matmul(NULL, &fast);
        if (p >= 5) ms[p - 5] = (now() - t0) * 1e3;
    }
    qsort(ms, passes, sizeof(double), cmp);
    int same = memcmp(y, y_rows, sizeof(float) * rows * tokens) == 0;
    double token_blocks = (double)rows / 8 * nb * tokens, median = ms[passes / 2];
    double ns = median * 1e6 / token_blocks;
    printf("Q4_1 %dx%d, %d tokens, interleaved (type %d): median %.4f ms, %.2f ns = %.1f cycles per "
           "token-block, bits %s the per-row kernel's\n",
           rows, k, tokens, packed_type, median, ns, ns * 1e-9 * hz, same ? "equal to" : "DIFFER from");
    return same ? 0 : 1;
}
