// Writes Tests/Fixtures/reference/bf16-products.json: llama.cpp's own BF16 matrix products on
// fixed pseudo-random data, for BF16ProductTests. ggml rounds the f32 activations to bf16 (its
// BF16 vec_dot_type, round to nearest even) and then, built with -march=native on a CPU with
// AVX512-BF16:
// - one activation row, or a width that is not a multiple of 32, or a row count that is not a
//   multiple of 4: ggml_vec_dot_bf16 per output (two vdpbf16ps accumulators over steps of 64
//   values, then the rest one by one in double);
// - two or more activation rows otherwise: llamafile's tinyBLAS (one vdpbf16ps accumulator per
//   output over steps of 32).
// Four weight matrices (K x rows: 512 x 8, 544 x 8, 528 x 8, 512 x 6: widths past whole steps of
// 64 and of 32, and a row count tinyBLAS refuses) of floats from a fixed xorshift generator
// rounded to bf16, times the first 1, 4 and 9 of nine activation rows (the first K of 544 floats
// each, some of them exact halfway cases of the bf16 rounding). The JSON holds the weights (bf16
// bits in hex), the activations and the products as float bit patterns (hex), and the CPU flag the
// products depend on. These are the bits of that CPU kind only: without AVX512-BF16 llama.cpp
// multiplies in f32 lanes of another order.
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-bf16-products scripts/llama-cpp-bf16-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-bf16-products > Tests/Fixtures/reference/bf16-products.json
// A reference maker; not a test.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

static uint64_t state = 0x9e3779b97f4a7c15ull;
static float next_float() {  // uniform in [-1, 1)
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (float)((state >> 40) / 8388608.0 - 1.0);
}

static uint16_t to_bf16(float f) {  // nearest even; the data has no NaN
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

// y = w · a (activation rows of `stride` floats, the first K of each), one thread.
static std::vector<float> product(ggml_backend_t cpu, const std::vector<uint16_t> &w, int K, int rows,
                                  const std::vector<float> &x, int stride, int n) {
    ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *wt = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, K, rows);
    ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, n);
    ggml_tensor *y = ggml_mul_mat(ctx, wt, a);  // [rows, n]
    ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    ggml_backend_tensor_set(wt, w.data(), 0, w.size() * 2);
    for (int t = 0; t < n; t++) {
        ggml_backend_tensor_set(a, x.data() + (size_t)t * stride, (size_t)t * K * 4, (size_t)K * 4);
    }
    ggml_backend_graph_compute(cpu, g);
    std::vector<float> out((size_t)rows * n);
    ggml_backend_tensor_get(y, out.data(), 0, out.size() * sizeof(float));
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return out;
}

int main() {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    const int stride = 544, tokens = 9;
    std::vector<float> x((size_t)stride * tokens);
    for (size_t i = 0; i < x.size(); i++) {
        float v = next_float() * 2.0f;
        if (i % 7 == 0) {  // halfway between two bf16 values: the rounding's ties
            uint32_t u;
            memcpy(&u, &v, 4);
            u = (u & 0xffff0000u) | 0x8000u;
            memcpy(&v, &u, 4);
        }
        x[i] = v;
    }
    const int shapes[][2] = {{512, 8}, {544, 8}, {528, 8}, {512, 6}};
    printf("{\"cpu\": \"avx512_bf16\", \"stride\": %d, \"activations\": [", stride);
    for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
    printf("],\n\"matrices\": [");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int K = shapes[s][0], rows = shapes[s][1];
        std::vector<uint16_t> w((size_t)K * rows);
        for (uint16_t &v : w) v = to_bf16(next_float() * 0.25f);
        printf("%s\n{\"k\": %d, \"rows\": %d, \"weights\": \"", s ? "," : "", K, rows);
        for (uint16_t v : w) printf("%04x", v);
        printf("\", \"products\": [");
        const int ns[] = {1, 4, 9};
        for (int i = 0; i < 3; i++) {
            const std::vector<float> y = product(cpu, w, K, rows, x, stride, ns[i]);
            printf("%s\n {\"n\": %d, \"y\": [", i ? "," : "", ns[i]);
            for (size_t j = 0; j < y.size(); j++) {
                uint32_t bits;
                memcpy(&bits, &y[j], 4);
                printf("%s\"%08x\"", j ? ", " : "", bits);
            }
            printf("]}");
        }
        printf("]}");
    }
    printf("\n]}\n");
    ggml_backend_free(cpu);
    return 0;
}
