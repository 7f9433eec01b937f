// Writes llama.cpp's own matrix products in its two layouts on fixed pseudo-random data, for
// the product fixture tests: Tests/Fixtures/reference/q4_0-products.json (Q4_0ProductTests) and
// q2_k-products.json (Q2_KProductTests).
// - "repacked": the weights set into the CPU backend's CPU_REPACK buffer type, as llama-server,
//   llama-cli and llama-bench load every such matrix of a multiple of 8 rows: Q4_0 on an AVX2
//   machine (ggml_gemv/gemm_q4_0_8x8_q8_0), Q2_K on an AVX-512 one (ggml_gemv/gemm_q2_K_8x8_q8_K):
//   the GEMV for one activation row, the GEMM for four at a time, the rest through the GEMV.
//   inferd follows this order (Q2_K on AVX-512 CPUs).
// - "plain": a plain CPU buffer (`--no-repack`): ggml's vec_dot row by row (Q2_K: its tiled
//   product from 8 rows on); kept so the tests can tell that the two differ on this data, and
//   Q2_K's plain order is what inferd follows where llama.cpp does not repack.
// A weight matrix of 24 rows (floats from a fixed xorshift generator, quantized by
// ggml_quantize_chunk) for K = 512 and 544 (Q4_0: 16 and 17 blocks) or 512 and 768 (Q2_K: 2 and
// 3 super-blocks), times n = 1, 4 and 9 (Q4_0) or 1 and 9 (Q2_K: nine is two GEMM groups and
// one GEMV row) activation rows (multiples of 1/256 in [-2, 2)); ggml quantizes the activations
// to Q8_0 / Q8_K. The JSON holds the weight bytes (hex), the activation floats and the products
// as float bit patterns (hex).
//
// Build against the llama.cpp that scripts/llama-cpp-build.sh makes (commit 0c1e57098):
//   src=/tmp/llama-cpp/llama_cpp_python-0.3.36/vendor/llama.cpp
//   g++ -O2 -std=c++17 -o /tmp/llama-cpp/llama-cpp-repacked-products scripts/llama-cpp-repacked-products.cpp \
//       -I$src/ggml/include -L$src/build/bin -lggml -lggml-base -lggml-cpu -Wl,-rpath,$src/build/bin
//   /tmp/llama-cpp/llama-cpp-repacked-products Q4_0 > Tests/Fixtures/reference/q4_0-products.json
//   /tmp/llama-cpp/llama-cpp-repacked-products Q2_K > Tests/Fixtures/reference/q2_k-products.json
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
static std::vector<float> product(ggml_backend_t cpu, ggml_backend_buffer_type_t wtype, ggml_type type,
                                  const std::vector<uint8_t> &wq,
                                  int K, int rows, const std::vector<float> &x, int n) {
    ggml_init_params wp = {ggml_tensor_overhead() * 2, nullptr, true};
    ggml_context *wctx = ggml_init(wp);
    ggml_tensor *w = ggml_new_tensor_2d(wctx, type, K, rows);
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

int main(int argc, char **argv) {
    const bool q2 = argc > 1 && strcmp(argv[1], "Q2_K") == 0;
    if (argc < 2 || (!q2 && strcmp(argv[1], "Q4_0") != 0)) {
        fprintf(stderr, "usage: %s Q4_0|Q2_K\n", argv[0]);
        return 2;
    }
    const ggml_type type = q2 ? GGML_TYPE_Q2_K : GGML_TYPE_Q4_0;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    ggml_backend_buffer_type_t repacked = repack_type(cpu);
    ggml_backend_buffer_type_t plain = ggml_backend_cpu_buffer_type();
    const std::vector<int> ks = q2 ? std::vector<int>{512, 768} : std::vector<int>{512, 544};
    const int rows = 24;  // Q4_0: llama.cpp's GEMM takes 16 rows at a time, then 8
    const std::vector<int> ns = q2 ? std::vector<int>{1, 9} : std::vector<int>{1, 4, 9};
    printf("{\"cases\": [\n");
    bool first = true;
    for (int K : ks) {
        std::vector<float> wf((size_t)K * rows);
        for (float &v : wf) v = next_float() * 0.5f;
        std::vector<uint8_t> wq(ggml_row_size(type, K) * rows);
        ggml_quantize_chunk(type, wf.data(), wq.data(), 0, rows, K, nullptr);
        for (int n : ns) {
            std::vector<float> x((size_t)K * n);
            for (float &v : x) v = (float)(int)(next_float() * 512.0f) / 256.0f;
            printf("%s{\"type\": \"%s\", \"k\": %d, \"rows\": %d, \"n\": %d,\n \"weights\": \"", first ? "" : ",\n",
                   argv[1], K, rows, n);
            first = false;
            for (uint8_t b : wq) printf("%02x", b);
            printf("\",\n \"activations\": [");
            for (size_t i = 0; i < x.size(); i++) printf("%s%.9g", i ? ", " : "", x[i]);
            printf("]");
            print_bits("repacked", product(cpu, repacked, type, wq, K, rows, x, n));
            print_bits("plain", product(cpu, plain, type, wq, K, rows, x, n));
            printf("}");
        }
    }
    printf("\n]}\n");
    ggml_backend_free(cpu);
    return 0;
}
