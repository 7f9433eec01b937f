// Writes Tests/Fixtures/reference/kquant-products.json: llama.cpp's own K-quant matrix products
// (ggml's CPU backend, one thread) on fixed pseudo-random data, for KQuantProductReferenceTests.
// For each of Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F16, BF16: a weight matrix of ROWS rows of K values (floats from a
// fixed xorshift generator, quantized by ggml_quantize_chunk) times the first n = 4 and all n = 9
// rows of one activation matrix (multiples of 1/256 in [-2, 2) from the same generator, so that
// they print short). ggml quantizes the activations to Q8_K
// and, for n >= 8, takes its tiled K-quant product (ggml-cpu/tiled); for n = 4 the per-row
// vec_dot kernels. F16 and BF16 weights: ggml rounds the activations to that type and takes
// llamafile's tinyBLAS product at any n (BF16 with AVX512-BF16 instructions). No repacked buffers (a plain CPU context), as with llama-cpp-score's default.
// The JSON holds the weight bytes (hex), the activation floats and the products as float bit
// patterns (hex), so the test needs neither llama.cpp nor its quantizer at run time.
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-kquant-products scripts/llama-cpp-kquant-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-kquant-products > Tests/Fixtures/reference/kquant-products.json
// A reference maker; not a test.
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

int main() {
    ggml_cpu_init();
    const int K = 512, ROWS = 8;
    const ggml_type types[] = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                               GGML_TYPE_F16, GGML_TYPE_BF16};
    const int ns[] = {4, 9};
    std::vector<float> x((size_t)K * 9);
    for (float &v : x) v = (float)(int)(next_float() * 512.0f) / 256.0f;
    printf("{\"k\": %d, \"rows\": %d,\n \"activations\": [", K, ROWS);
    for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
    printf("],\n \"cases\": [\n");
    bool first = true;
    for (ggml_type type : types) {
        std::vector<float> wf((size_t)K * ROWS);
        for (float &v : wf) v = next_float() * 0.2f;
        const size_t row_bytes = ggml_row_size(type, K);
        std::vector<uint8_t> wq(row_bytes * ROWS);
        ggml_quantize_chunk(type, wf.data(), wq.data(), 0, ROWS, K, nullptr);
        for (int n : ns) {
            ggml_init_params ip = {64 * 1024 * 1024, nullptr, false};
            ggml_context *ctx = ggml_init(ip);
            ggml_tensor *w = ggml_new_tensor_2d(ctx, type, K, ROWS);
            memcpy(w->data, wq.data(), wq.size());
            ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, n);
            memcpy(a->data, x.data(), (size_t)K * n * sizeof(float));
            ggml_tensor *y = ggml_mul_mat(ctx, w, a);  // [ROWS, n]
            ggml_cgraph *g = ggml_new_graph(ctx);
            ggml_build_forward_expand(g, y);
            ggml_graph_compute_with_ctx(ctx, g, 1);
            printf("%s{\"type\": \"%s\", \"n\": %d,\n \"weights\": \"", first ? "" : ",\n", ggml_type_name(type), n);
            first = false;
            for (uint8_t b : wq) printf("%02x", b);
            printf("\",\n \"products\": [");
            const float *yd = (const float *)y->data;
            for (int i = 0; i < ROWS * n; i++) {
                uint32_t bits;
                memcpy(&bits, &yd[i], 4);
                printf("%s\"%08x\"", i ? ", " : "", bits);
            }
            printf("]}");
            ggml_free(ctx);
        }
    }
    printf("\n]}\n");
    return 0;
}
