// Scores a token sequence with llama.cpp: every position's log-probability of its token given the
// tokens before it, the top K there, and the text's perplexity. The reference inferd's echoed
// log-probabilities (/v1/completions with echo) are compared against (Tests/Fixtures/reference/
// score.json, scripts/logprob-exactness.py). scripts/llama-cpp-build.sh builds it.
//
//   llama-cpp-score -m MODEL.gguf [-k 5] [-t 2] [-fa auto|on|off] [-extra-bufts off|on] [FILE]
//
// Input (FILE, or stdin): JSON, one of
//   [ids...]                    token ids as they are (nothing added)
//   {"ids": [ids...]}           the same
//   {"text": "..."}             tokenized here: parse_special false, BOS/EOS added only where the
//                               model's vocabulary says so (llama_vocab_get_add_bos/eos)
// Output (stdout): JSON with the ids, their pieces (a string when valid UTF-8, else the bytes),
// and for each position i >= 1 {"i", "id", "logprob", "top": [[id, logprob], ...]} where logprob
// is ln p(ids[i] | ids[0..i-1]): log-softmax over all float logits of row i-1, computed in double
// (max subtracted, sum of exp in double). "perplexity" is exp(-mean logprob over positions
// 1...n-1). The context settings used (n_ctx, n_batch, n_ubatch, threads, flash attention as
// requested and as llama.cpp resolved it) are in "settings".
//
// All ids are decoded in one llama_decode call with an output for every position; llama.cpp splits
// the batch into ubatches of n_ubatch (its default 512). n_ctx and n_batch are the number of ids
// (llama.cpp rounds n_ctx up to a multiple of 256). Extra buffer types (llama_model_params
// .use_extra_bufts: the AMX kernels and the repacked Q4_0/Q4_K/IQ4_NL layouts) are off by default:
// on this project's machines the CPU advertises AMX and arch_prctl grants it, yet the first AMX
// instruction (tilezero in the Q4_1 kernel) raises SIGILL; off, every type goes through ggml-cpu's
// plain vec_dot kernels, as on a CPU without AMX or repacking. A diagnostic and reference maker;
// not a test.
#include "llama.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

using json = nlohmann::ordered_json;

static std::vector<std::string> fa_log;  // llama.cpp's log lines about flash attention

static void on_log(enum ggml_log_level level, const char *text, void *) {
    if (strstr(text, "Flash Attention") || strstr(text, "flash_attn")) {
        std::string line = text;
        while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
        fa_log.push_back(line);
    }
    if ((level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) && getenv("SCORE_QUIET") == nullptr) {
        fputs(text, stderr);
    }
}

static bool valid_utf8(const std::string &s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = s[i];
        size_t n;  // continuation bytes
        if (c < 0x80) n = 0;
        else if ((c >> 5) == 6) n = 1;
        else if ((c >> 4) == 14) n = 2;
        else if ((c >> 3) == 30) n = 3;
        else return false;
        if (i + n >= s.size()) return false;
        for (size_t k = 1; k <= n; k++) {
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        }
        i += n + 1;
    }
    return true;
}

static json piece(const llama_vocab *vocab, llama_token id) {
    std::vector<char> buf(64);
    int n = llama_token_to_piece(vocab, id, buf.data(), (int)buf.size(), 0, true);
    if (n < 0) {
        buf.resize(-n);
        n = llama_token_to_piece(vocab, id, buf.data(), (int)buf.size(), 0, true);
    }
    std::string s(buf.data(), n);
    if (valid_utf8(s)) return s;
    json bytes = json::array();
    for (unsigned char c : s) bytes.push_back((int)c);
    return bytes;
}

static void usage() {
    fprintf(stderr, "usage: llama-cpp-score -m MODEL.gguf [-k K] [-t THREADS] [-fa auto|on|off] [-extra-bufts off|on] [FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    std::string model_path, input_path;
    int top_k = 5, threads = 2;
    std::string fa = "auto", extra = "off";
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "-m") model_path = next();
        else if (a == "-k") top_k = atoi(next().c_str());
        else if (a == "-t") threads = atoi(next().c_str());
        else if (a == "-fa") fa = next();
        else if (a == "-extra-bufts") extra = next();
        else if (!a.empty() && a[0] == '-') usage();
        else input_path = a;
    }
    if (model_path.empty() || top_k < 0 || threads < 1 || (fa != "auto" && fa != "on" && fa != "off") ||
        (extra != "on" && extra != "off"))
        usage();

    std::string raw;
    if (input_path.empty()) {
        raw.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
        std::ifstream f(input_path);
        if (!f) {
            fprintf(stderr, "cannot read %s\n", input_path.c_str());
            return 1;
        }
        raw.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    const json input = json::parse(raw);

    llama_log_set(on_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = extra == "on";
    llama_model *model = llama_model_load_from_file(model_path.c_str(), mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", model_path.c_str());
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    std::vector<llama_token> ids;
    bool tokenized = false;
    if (input.is_array()) {
        for (auto &v : input) ids.push_back(v.get<int>());
    } else if (input.contains("ids")) {
        for (auto &v : input["ids"]) ids.push_back(v.get<int>());
    } else if (input.contains("text")) {
        const std::string text = input["text"].get<std::string>();
        std::vector<llama_token> buf(text.size() + 8);
        int n = llama_tokenize(vocab, text.c_str(), (int)text.size(), buf.data(), (int)buf.size(), true, false);
        if (n < 0) {
            buf.resize(-n);
            n = llama_tokenize(vocab, text.c_str(), (int)text.size(), buf.data(), (int)buf.size(), true, false);
        }
        ids.assign(buf.begin(), buf.begin() + n);
        tokenized = true;
    } else {
        fprintf(stderr, "input: a JSON array of ids, or an object with \"ids\" or \"text\"\n");
        return 2;
    }
    const int n = (int)ids.size();
    if (n < 2) {
        fprintf(stderr, "need at least 2 tokens, got %d\n", n);
        return 2;
    }
    for (llama_token t : ids) {
        if (t < 0 || t >= n_vocab) {
            fprintf(stderr, "token id %d outside the vocabulary (%d)\n", t, n_vocab);
            return 2;
        }
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n;
    cp.n_batch = (uint32_t)n;
    // n_ubatch stays at llama.cpp's default (512); n_batch bounds it.
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.no_perf = true;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context\n");
        return 1;
    }

    llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "llama_decode failed\n");
        return 1;
    }

    json positions = json::array();
    double sum = 0;
    std::vector<int> order(n_vocab);
    for (int i = 1; i < n; i++) {
        const float *logits = llama_get_logits_ith(ctx, i - 1);
        const float max = *std::max_element(logits, logits + n_vocab);
        double z = 0;
        for (int v = 0; v < n_vocab; v++) z += std::exp((double)logits[v] - (double)max);
        const double log_z = std::log(z);
        auto lp = [&](int v) { return (double)logits[v] - (double)max - log_z; };
        for (int v = 0; v < n_vocab; v++) order[v] = v;
        const int k = std::min(top_k, n_vocab);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
            return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
        });
        json top = json::array();
        for (int r = 0; r < k; r++) top.push_back(json::array({order[r], lp(order[r])}));
        const double l = lp(ids[i]);
        sum += l;
        positions.push_back({{"i", i}, {"id", ids[i]}, {"logprob", l}, {"top", top}});
    }
    const double mean_nll = -sum / (n - 1);

    json pieces = json::array();
    for (llama_token t : ids) pieces.push_back(piece(vocab, t));
    json out;
    out["model"] = model_path;
    out["settings"] = {{"n_ctx", llama_n_ctx(ctx)},
                       {"n_batch", llama_n_batch(ctx)},
                       {"n_ubatch", llama_n_ubatch(ctx)},
                       {"threads", threads},
                       {"flash_attn_requested", fa},
                       {"flash_attn_log", fa_log},
                       {"use_extra_bufts", extra == "on"},
                       {"logprob", "log-softmax in double over the float logits of the row before"}};
    out["tokenized_here"] = tokenized;
    out["add_bos"] = llama_vocab_get_add_bos(vocab);
    out["n_tokens"] = n;
    out["ids"] = ids;
    out["pieces"] = pieces;
    out["mean_nll"] = mean_nll;
    out["perplexity"] = std::exp(mean_nll);
    out["positions"] = positions;
    std::cout << out.dump(-1) << "\n";

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
