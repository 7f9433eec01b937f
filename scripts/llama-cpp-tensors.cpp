// Runs token ids through llama.cpp in the batches given and writes every tensor of the last
// batch's pass as raw float32 (DIR/NAME.f32, repeated names get #1, #2 ...; DIR/index.txt lists
// name, op and shape), then the last row's logits (DIR/logits.f32) and its top 10 on stdout.
// A diagnostic for inferd's exactness work (scripts/llama-cpp-build.sh builds it); not a test.
//
//   llama-cpp-tensors -m MODEL.gguf -t 2 -c 4096 -p x   with the environment
//     IDS=2,818,5279,...   the token ids, BOS included
//     BATCHES=2,4          sizes of the decode calls before the last (the last takes the rest)
//     DIR=/tmp/llama       where the tensors go
#include "arg.h"
#include "common.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

static std::string out_dir;  // empty until the last batch
static std::map<std::string, int> seen;
static FILE *index_file = nullptr;

static std::vector<int> numbers(const char *text) {
    std::vector<int> out;
    for (const char *p = text; p && *p;) {
        out.push_back(atoi(p));
        p = strchr(p, ',');
        if (p) p++;
    }
    return out;
}

// The scheduler asks before each node (ask = true) and hands it over when computed.
static bool on_tensor(struct ggml_tensor *t, bool ask, void *) {
    if (ask) return true;
    if (out_dir.empty()) return true;
    std::string name = t->name;
    for (auto &c : name) {
        if (c == '/' || c == ' ') c = '_';
    }
    const int k = seen[name]++;
    if (k) name += "#" + std::to_string(k);
    const size_t n = ggml_nelements(t);
    std::vector<uint8_t> raw(ggml_nbytes(t));
    ggml_backend_tensor_get(t, raw.data(), 0, raw.size());
    std::vector<float> values(n);
    if (t->type == GGML_TYPE_F32 && ggml_is_contiguous(t)) {
        memcpy(values.data(), raw.data(), n * sizeof(float));
    } else if (t->type == GGML_TYPE_F16 && ggml_is_contiguous(t)) {
        for (size_t i = 0; i < n; i++) values[i] = ggml_fp16_to_fp32(((const ggml_fp16_t *)raw.data())[i]);
    } else {
        fprintf(index_file, "%s skipped type=%d\n", name.c_str(), (int)t->type);
        return true;
    }
    FILE *f = fopen((out_dir + "/" + name + ".f32").c_str(), "wb");
    fwrite(values.data(), sizeof(float), n, f);
    fclose(f);
    fprintf(index_file, "%s %s %lld %lld %lld %lld\n", name.c_str(), ggml_op_desc(t), (long long)t->ne[0],
            (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    return true;
}

int main(int argc, char **argv) {
    common_params params;
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_COMMON)) return 1;
    const std::vector<int> ids = numbers(getenv("IDS"));
    const std::vector<int> batches = numbers(getenv("BATCHES"));
    const char *dir = getenv("DIR");
    if (ids.empty() || !dir) {
        fprintf(stderr, "set IDS and DIR\n");
        return 2;
    }
    llama_backend_init();
    params.cb_eval = on_tensor;
    params.cb_eval_user_data = nullptr;
    params.warmup = false;
    auto init = common_init_from_params(params);
    llama_context *ctx = init->context();
    const llama_vocab *vocab = llama_model_get_vocab(init->model());
    std::vector<llama_token> tokens(ids.begin(), ids.end());
    size_t start = 0;
    for (int size : batches) {
        if (llama_decode(ctx, llama_batch_get_one(tokens.data() + start, size))) return 1;
        start += size;
    }
    out_dir = dir;
    index_file = fopen((out_dir + "/index.txt").c_str(), "w");
    if (llama_decode(ctx, llama_batch_get_one(tokens.data() + start, (int)(tokens.size() - start)))) return 1;
    fclose(index_file);
    const float *logits = llama_get_logits_ith(ctx, -1);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    FILE *f = fopen((out_dir + "/logits.f32").c_str(), "wb");
    fwrite(logits, sizeof(float), n_vocab, f);
    fclose(f);
    // Top 10 with log-probabilities in double (llama-server sums its softmax in float).
    const float max = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += std::exp((double)logits[i] - max);
    std::vector<int> order(n_vocab);
    for (int i = 0; i < n_vocab; i++) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    for (int r = 0; r < 10; r++) {
        printf("%d %.7f %.7f\n", order[r], logits[order[r]], (double)logits[order[r]] - max - std::log(sum));
    }
    return 0;
}
