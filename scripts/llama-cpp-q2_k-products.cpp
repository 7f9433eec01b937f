// Writes Tests/Fixtures/reference/q2_k-products.json: llama.cpp's own Q2_K matrix products on
// fixed pseudo-random data, for Q2_KProductTests, in both of its layouts:
// - "repacked": the weights set into the CPU backend's CPU_REPACK buffer type, as llama-server,
//   llama-cli and llama-bench load every Q2_K matrix of a multiple of 8 rows on an AVX-512
//   machine (ggml_gemv_q2_K_8x8_q8_K for one activation row, ggml_gemm_q2_K_8x8_q8_K for four at
//   a time, the rest through the GEMV); inferd follows this one on AVX-512 CPUs.
// - "plain": a plain CPU buffer (`--no-repack`; what llama.cpp runs without AVX-512):
//   ggml_vec_dot_q2_K_q8_K row by row, or its tiled product from 8 rows on.
// For K = 512 and 768 (2 and 3 super-blocks), a weight matrix of 24 rows (floats from a fixed
// xorshift generator, quantized by ggml_quantize_chunk) times n = 1 and 9 activation rows
// (multiples of 1/256 in [-2, 2)); ggml quantizes the activations to Q8_K. The JSON holds the
// weight bytes (hex), the activation floats and the products as float bit patterns (hex).
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-q2_k-products scripts/llama-cpp-q2_k-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-q2_k-products > Tests/Fixtures/reference/q2_k-products.json
// (on a CPU that advertises AMX but faults on it, run it with
// LD_LIBRARY_PATH=/tmp/llama-cpp/build-noamx/bin). A reference maker; not a test.
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static uint64_t state = 0x2545f4914f6cdd1dull;
static float next_float() {  // uniform in [-1, 1)
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (float)((state >> 40) / 8388608.0 - 1.0);
}

static ggml_backend_buffer_type_t repack_type(ggml_backend_t cpu) {
    ggml_backend_dev_t dev = ggml_backend_get_device(cpu);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto get = (ggml_backend_buffer_type_t * (*)(ggml_backend_dev_t))
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    for (ggml_backend_buffer_type_t *t = get ? get(dev) : nullptr; t && *t; t++) {
        if (strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") == 0) return *t;
    }
    fprintf(stderr, "no CPU_REPACK buffer type (not an AVX2 build?)\n");
    exit(1);
}

// y = w · a with the weights in a buffer of `wtype`, one thread.
static std::vector<float> product(ggml_backend_t cpu, ggml_backend_buffer_type_t wtype, const std::vector<uint8_t> &wq,
                                  int K, int rows, const std::vector<float> &x, int n) {
    ggml_init_params wp = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context *wctx = ggml_init(wp);
    ggml_tensor *w = ggml_new_tensor_2d(wctx, GGML_TYPE_Q2_K, K, rows);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, wtype);
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_tensor_set(w, wq.data(), 0, wq.size());

    ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, n);
    ggml_tensor *y = ggml_mul_mat(ctx, w, a);  // [rows, n]
    ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    ggml_backend_tensor_set(a, x.data(), 0, x.size() * sizeof(float));
    ggml_backend_graph_compute(cpu, g);
    std::vector<float> out((size_t)rows * n);
    ggml_backend_tensor_get(y, out.data(), 0, out.size() * sizeof(float));
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(ctx);
    ggml_free(wctx);
    return out;
}

static void print_bits(const char *name, const std::vector<float> &v) {
    printf(",\n \"%s\": [", name);
    for (size_t i = 0; i < v.size(); i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        printf("%s\"%08x\"", i ? ", " : "", bits);
    }
    printf("]");
}

int main() {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    ggml_backend_buffer_type_t repacked = repack_type(cpu);
    ggml_backend_buffer_type_t plain = ggml_backend_cpu_buffer_type();
    const int ks[] = {512, 768};
    const int row_counts[] = {24};  // three groups of eight rows
    const int ns[] = {1, 9};  // nine: two GEMM groups of four and one GEMV row
    printf("{\"cases\": [\n");
    bool first = true;
    for (int K : ks) {
        for (int rows : row_counts) {
            std::vector<float> wf((size_t)K * rows);
            for (float &v : wf) v = next_float() * 0.5f;
            std::vector<uint8_t> wq(ggml_row_size(GGML_TYPE_Q2_K, K) * rows);
            ggml_quantize_chunk(GGML_TYPE_Q2_K, wf.data(), wq.data(), 0, rows, K, nullptr);
            for (int n : ns) {
                std::vector<float> x((size_t)K * n);
                for (float &v : x) v = (float)(int)(next_float() * 512.0f) / 256.0f;
                printf("%s{\"type\": \"Q2_K\", \"k\": %d, \"rows\": %d, \"n\": %d,\n \"weights\": \"", first ? "" : ",\n",
                       K, rows, n);
                first = false;
                for (uint8_t b : wq) printf("%02x", b);
                printf("\",\n \"activations\": [");
                for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
                printf("]");
                print_bits("repacked", product(cpu, repacked, wq, K, rows, x, n));
                print_bits("plain", product(cpu, plain, wq, K, rows, x, n));
                printf("}");
            }
        }
    }
    printf("\n]}\n");
    ggml_backend_free(cpu);
    return 0;
}
