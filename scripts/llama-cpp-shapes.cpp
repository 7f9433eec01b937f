// Writes llama.cpp's answers for the shape sweep (Tests/Fixtures/reference/tiny/shapes/, ModelShapeTests)
// as JSON on stdout: for each prompt of token ids, the top 10 log-probabilities after the prompt
// (fed as one decode call, as llama-server feeds a short prompt) and N_PREDICT greedy tokens (one
// decode call each, never stopping at an end-of-generation token), each with the gap between its
// logit and the runner-up's, so a test can tell a near-tie from a wrong layer. Context settings are
// common_params' defaults (llama-server's: flash attention "auto", f16 KV cache) but for the
// options given. Not a test; scripts/make-shape-references.sh runs it. Built like
// llama-cpp-tensors.cpp:
//
//   llama-cpp-shapes -m MODEL.gguf -t 2 -c 512 [-fa off]   with the environment
//     PROMPTS=1,17,300;1,42,42,99    prompts (BOS included where the model wants one), ';'-separated
//     N_PREDICT=16
#include "arg.h"
#include "common.h"
#include "llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<int> numbers(const char *text, const char *end) {
    std::vector<int> out;
    for (const char *p = text; p < end && *p;) {
        out.push_back(atoi(p));
        p = strchr(p, ',');
        if (!p || p >= end) break;
        p++;
    }
    return out;
}

// The ids ordered by logit, highest first (the first n of them).
static std::vector<int> top(const float *logits, int n_vocab, int n) {
    std::vector<int> order(n_vocab);
    for (int i = 0; i < n_vocab; i++) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    order.resize(n);
    return order;
}

int main(int argc, char **argv) {
    common_params params;
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_COMMON)) return 1;
    const char *prompts = getenv("PROMPTS");
    const int n_predict = getenv("N_PREDICT") ? atoi(getenv("N_PREDICT")) : 16;
    if (!prompts) {
        fprintf(stderr, "set PROMPTS\n");
        return 2;
    }
    llama_backend_init();
    params.warmup = false;
    auto init = common_init_from_params(params);
    llama_context *ctx = init->context();
    if (!ctx) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(init->model());
    const int n_vocab = llama_vocab_n_tokens(vocab);
    printf("{\"cases\": [");
    int index = 0;
    for (const char *p = prompts; *p;) {
        const char *end = strchr(p, ';');
        if (!end) end = p + strlen(p);
        std::vector<llama_token> tokens;
        for (int id : numbers(p, end)) tokens.push_back(id);
        llama_memory_clear(llama_get_memory(ctx), true);
        if (llama_decode(ctx, llama_batch_get_one(tokens.data(), (int)tokens.size()))) return 1;
        const float *logits = llama_get_logits_ith(ctx, -1);
        // Log-probabilities in double (llama-server sums its softmax in float).
        const float max = *std::max_element(logits, logits + n_vocab);
        double sum = 0;
        for (int i = 0; i < n_vocab; i++) sum += std::exp((double)logits[i] - max);
        printf("%s\n  {\"name\": \"p%d\", \"prompt_ids\": [", index ? "," : "", index);
        for (size_t i = 0; i < tokens.size(); i++) printf("%s%d", i ? ", " : "", tokens[i]);
        printf("],\n   \"top10\": [");
        const std::vector<int> best = top(logits, n_vocab, 10);
        for (int r = 0; r < 10; r++) {
            printf("%s{\"id\": %d, \"logprob\": %.7f}", r ? ", " : "", best[r],
                   (double)logits[best[r]] - max - std::log(sum));
        }
        std::vector<int> generated;
        std::vector<float> margins;
        for (int n = 0; n < n_predict; n++) {
            const std::vector<int> two = top(logits, n_vocab, 2);
            generated.push_back(two[0]);
            margins.push_back(logits[two[0]] - logits[two[1]]);
            llama_token next = two[0];
            if (llama_decode(ctx, llama_batch_get_one(&next, 1))) return 1;
            logits = llama_get_logits_ith(ctx, -1);
        }
        printf("],\n   \"generated_ids\": [");
        for (size_t i = 0; i < generated.size(); i++) printf("%s%d", i ? ", " : "", generated[i]);
        printf("],\n   \"generated_margins\": [");
        for (size_t i = 0; i < margins.size(); i++) printf("%s%.5f", i ? ", " : "", margins[i]);
        printf("]}");
        index++;
        p = *end ? end + 1 : end;
    }
    printf("\n]}\n");
    return 0;
}
