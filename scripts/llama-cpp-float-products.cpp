// Writes llama.cpp's own BF16 or F16 matrix products on fixed pseudo-random data, for
// BF16ProductTests and F16ProductTests (Tests/Fixtures/reference/bf16-products.json,
// f16-products-avx512.json, f16-products-avx2.json). ggml rounds the f32 activations to the
// weights' type (its vec_dot_type, round to nearest even) and then, one thread:
// - one activation row, a width tinyBLAS does not take, or a row count that is not a multiple of
//   4: ggml_vec_dot_bf16 / ggml_vec_dot_f16 per output;
// - two or more activation rows otherwise: llamafile's tinyBLAS, one accumulator per output.
// Their arithmetic depends on the CPU the backend was built for (its vector width; vdpbf16ps
// with AVX512-BF16): the JSON names it (the second argument) and holds the weights (bits in hex),
// the activations, and the products as float bit patterns (hex).
// BF16: four weight matrices (K x rows: 512 x 8, 544 x 8, 528 x 8, 512 x 6: widths past whole
// steps of 64 and of 32, and a row count tinyBLAS refuses). F16: 512 x 8, 528 x 8 (past whole
// steps of 64 and of 32), 520 x 8 (past whole steps of 16: tinyBLAS takes it with AVX2 only),
// 512 x 6. Floats from a fixed xorshift generator rounded to the type, times the first 1, 4 and 9
// of nine activation rows (the first K of 544 floats each, some of them exact halfway cases of
// the rounding).
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-float-products scripts/llama-cpp-float-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-float-products BF16 avx512_bf16 > Tests/Fixtures/reference/bf16-products.json
//   /tmp/llama-cpp/llama-cpp-float-products F16 avx512 > Tests/Fixtures/reference/f16-products-avx512.json
// (on an AVX-512 CPU; the BF16 file needs AVX512-BF16). The AVX2 products come from the same
// program with the CPU backend built for AVX2 alone, loaded in place of the native one:
//   cmake -S $src -B /tmp/llama-cpp/build-avx2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
//       -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON && ninja -C /tmp/llama-cpp/build-avx2 ggml-cpu
//   LD_LIBRARY_PATH=/tmp/llama-cpp/build-avx2/bin /tmp/llama-cpp/llama-cpp-float-products F16 avx2 \
//       > Tests/Fixtures/reference/f16-products-avx2.json
// A reference maker; not a test.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
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
static std::vector<float> product(ggml_backend_t cpu, ggml_type type, const std::vector<uint16_t> &w, int K, int rows,
                                  const std::vector<float> &x, int stride, int n) {
    ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *wt = ggml_new_tensor_2d(ctx, type, K, rows);
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

int main(int argc, char **argv) {
    if (argc != 3 || (std::string(argv[1]) != "BF16" && std::string(argv[1]) != "F16")) {
        fprintf(stderr, "usage: %s BF16|F16 CPU-LABEL\n", argv[0]);
        return 2;
    }
    const bool f16 = std::string(argv[1]) == "F16";
    const ggml_type type = f16 ? GGML_TYPE_F16 : GGML_TYPE_BF16;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    const int stride = 544, tokens = 9;
    std::vector<float> x((size_t)stride * tokens);
    for (size_t i = 0; i < x.size(); i++) {
        float v = next_float() * 2.0f;
        if (i % 7 == 0) {  // halfway between two values of the type: the rounding's ties
            uint32_t u;
            memcpy(&u, &v, 4);
            u = f16 ? (u & 0xffffe000u) | 0x1000u : (u & 0xffff0000u) | 0x8000u;
            memcpy(&v, &u, 4);
        }
        x[i] = v;
    }
    const int bf16_shapes[][2] = {{512, 8}, {544, 8}, {528, 8}, {512, 6}};
    const int f16_shapes[][2] = {{512, 8}, {528, 8}, {520, 8}, {512, 6}};
    const int(*shapes)[2] = f16 ? f16_shapes : bf16_shapes;
    printf("{\"cpu\": \"%s\", \"stride\": %d, \"activations\": [", argv[2], stride);
    for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
    printf("],\n\"matrices\": [");
    for (size_t s = 0; s < 4; s++) {
        const int K = shapes[s][0], rows = shapes[s][1];
        std::vector<uint16_t> w((size_t)K * rows);
        for (uint16_t &v : w) v = f16 ? ggml_fp32_to_fp16(next_float() * 0.25f) : to_bf16(next_float() * 0.25f);
        printf("%s\n{\"k\": %d, \"rows\": %d, \"weights\": \"", s ? "," : "", K, rows);
        for (uint16_t v : w) printf("%04x", v);
        printf("\", \"products\": [");
        const int ns[] = {1, 4, 9};
        for (int i = 0; i < 3; i++) {
            const std::vector<float> y = product(cpu, type, w, K, rows, x, stride, ns[i]);
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
