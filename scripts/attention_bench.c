// Attention alone, for instruction counts: valgrind 3.19 stops on the inferd binary (its
// debuginfo reader gives up, and callgrind crashes in the Swift runtime), so this links
// CKernels' objects into a small C program instead. SmolLM2-135M shapes (9 query heads, 3 KV
// heads, head_dim 64), 8 streams each decoding one token per pass through ck_attention_many
// (as a batched pass does) at positions p0 + step + 3 * stream, for `layers` layers a step;
// mode 1 is one 64-token prompt instead. Pool NULL: everything on the calling thread.
//
//   swift build -c release
//   O=.build/release/CKernels.build
//   clang -O2 -ISources/CKernels/include scripts/attention_bench.c $O/*.o -lm -lpthread -o /tmp/attention_bench
//   strip --strip-debug /tmp/attention_bench
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/attn.cg /tmp/attention_bench 64 128 2
//   callgrind_annotate --inclusive=yes /tmp/attn.cg | grep ck_attention_many
//
// usage: attention_bench [p0=64] [steps=128] [layers=2] [mode=0]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckernels.h"

int main(int argc, char **argv) {
    const int streams = 8, n_head = 9, n_kv = 3, hd = 64, ctx = 512;
    const int p0 = argc > 1 ? atoi(argv[1]) : 64;
    const int steps = argc > 2 ? atoi(argv[2]) : 128;
    const int layers = argc > 3 ? atoi(argv[3]) : 2;
    const int mode = argc > 4 ? atoi(argv[4]) : 0;  // 0 decode, 1 prompt of 64
    const int kv_dim = n_kv * hd, dim = n_head * hd;
    uint16_t *k = malloc(sizeof(uint16_t) * (size_t)streams * ctx * kv_dim);
    uint16_t *v = malloc(sizeof(uint16_t) * (size_t)streams * ctx * kv_dim);
    float *q = malloc(sizeof(float) * (size_t)streams * 64 * dim);
    float *out = malloc(sizeof(float) * (size_t)streams * 64 * dim);
    const int stride = (n_head / n_kv) * (64 * hd + ctx + 32);
    float *scratch = calloc((size_t)stride, sizeof(float));
    unsigned s = 12345;
    for (size_t i = 0; i < (size_t)streams * ctx * kv_dim; i++) {
        s = s * 1664525u + 1013904223u;
        k[i] = ck_fp32_to_fp16(((float)(s >> 8) / 16777216.0f - 0.5f) * 3);
        s = s * 1664525u + 1013904223u;
        v[i] = ck_fp32_to_fp16(((float)(s >> 8) / 16777216.0f - 0.5f) * 3);
    }
    for (size_t i = 0; i < (size_t)streams * 64 * dim; i++) {
        s = s * 1664525u + 1013904223u;
        q[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 3;
    }
    ck_attention_args args[8];
    double check = 0;
    const int n_tokens = mode == 1 ? 64 : 1;
    const int count = mode == 1 ? 1 : streams;
    for (int step = 0; step < (mode == 1 ? 1 : steps); step++) {
        for (int l = 0; l < layers; l++) {
            for (int m = 0; m < count; m++) {
                ck_attention_args a = {
                    .q = q + (size_t)m * 64 * dim, .q_stride = dim,
                    .k_cache = k + (size_t)m * ctx * kv_dim, .v_cache = v + (size_t)m * ctx * kv_dim,
                    .kv_stride = kv_dim, .n_head = n_head, .n_kv_head = n_kv, .head_dim = hd,
                    .n_tokens = n_tokens, .pos0 = mode == 1 ? 0 : p0 + step + 3 * m, .scale = 0.125f,
                    .out = out + (size_t)m * 64 * dim, .out_stride = dim, .scratch = scratch,
                    .scratch_stride = stride};
                args[m] = a;
            }
            ck_attention_many(NULL, args, count);
            for (int i = 0; i < n_tokens * dim; i++) check += out[i];
        }
    }
    printf("checksum %.9g\n", check);
    return 0;
}
