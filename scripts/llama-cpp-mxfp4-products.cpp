// Writes Tests/Fixtures/reference/mxfp4-products.json: llama.cpp's own MXFP4 matrix products
// (ggml's CPU backend, one thread, a plain CPU context: no repacked weights) on fixed
// pseudo-random data, for ProductReferenceTests. For K = 512 (16 blocks) and K = 544 (17: ggml's
// AVX2 kernel takes blocks in pairs and the odd last one in its scalar tail), a weight matrix of
// 8 rows (floats from a fixed xorshift generator, quantized by ggml_quantize_chunk) times n = 1,
// 4 and 9 activation rows (multiples of 1/256 in [-2, 2), so that they print short). ggml
// quantizes the activations to Q8_0 (MXFP4's vec_dot_type) and takes ggml_vec_dot_mxfp4_q8_0 at
// every n (llamafile's tinyBLAS has no MXFP4 product). The JSON holds the weight bytes (hex),
// the activation floats and the products as float bit patterns (hex).
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-mxfp4-products scripts/llama-cpp-mxfp4-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-mxfp4-products > Tests/Fixtures/reference/mxfp4-products.json
// A reference maker; not a test.
#include "ggml-cpu.h"
#include "ggml.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

static uint64_t state = 0x2545f4914f6cdd1dull;
static float next_float() {  // uniform in [-1, 1)
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (float)((state >> 40) / 8388608.0 - 1.0);
}

int main() {
    ggml_cpu_init();
    const int ROWS = 8;
    const int ks[] = {512, 544};
    const int ns[] = {1, 4, 9};
    printf("{\"rows\": %d,\n \"cases\": [\n", ROWS);
    bool first = true;
    for (int K : ks) {
        std::vector<float> wf((size_t)K * ROWS);
        for (float &v : wf) v = next_float() * 0.5f;
        const size_t row_bytes = ggml_row_size(GGML_TYPE_MXFP4, K);
        std::vector<uint8_t> wq(row_bytes * ROWS);
        ggml_quantize_chunk(GGML_TYPE_MXFP4, wf.data(), wq.data(), 0, ROWS, K, nullptr);
        for (int n : ns) {
            std::vector<float> x((size_t)K * n);
            for (float &v : x) v = (float)(int)(next_float() * 512.0f) / 256.0f;
            ggml_init_params ip = {64 * 1024 * 1024, nullptr, false};
            ggml_context *ctx = ggml_init(ip);
            ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_MXFP4, K, ROWS);
            memcpy(w->data, wq.data(), wq.size());
            ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, n);
            memcpy(a->data, x.data(), x.size() * sizeof(float));
            ggml_tensor *y = ggml_mul_mat(ctx, w, a);  // [ROWS, n]
            ggml_cgraph *g = ggml_new_graph(ctx);
            ggml_build_forward_expand(g, y);
            ggml_graph_compute_with_ctx(ctx, g, 1);
            printf("%s{\"type\": \"MXFP4\", \"k\": %d, \"n\": %d,\n \"weights\": \"", first ? "" : ",\n", K, n);
            first = false;
            for (uint8_t b : wq) printf("%02x", b);
            printf("\",\n \"activations\": [");
            for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
            printf("],\n \"products\": [");
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
