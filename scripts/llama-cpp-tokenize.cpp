// Writes llama.cpp's tokenizations of a string set as JSON on stdout, for the tokenizer tests'
// references (Tests/Fixtures/reference/tiny/tiny-gpt4o.json, TinyTokenizerTests): for each string
// of a JSON array file, the token ids (no BOS/EOS added, special tokens not parsed) and the
// detokenized text of those ids. Loads the vocabulary only. Not a test;
// scripts/make-gptoss-references.sh builds and runs it:
//
//   llama-cpp-tokenize MODEL.gguf STRINGS.json > OUT.json
#include "llama.h"
#include "nlohmann/json.hpp"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.gguf STRINGS.json\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    std::ifstream in(argv[2]);
    const nlohmann::json strings = nlohmann::json::parse(in);
    nlohmann::json cases = nlohmann::json::array();
    for (const auto &s : strings) {
        const std::string text = s.get<std::string>();
        std::vector<llama_token> ids(text.size() + 8);
        const int n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), false, false);
        if (n < 0) return 1;
        ids.resize(n);
        std::vector<char> buf(text.size() * 4 + 64);
        const int m = llama_detokenize(vocab, ids.data(), n, buf.data(), (int)buf.size(), false, false);
        if (m < 0) return 1;
        cases.push_back({{"text", text}, {"ids", ids}, {"detokenized", std::string(buf.data(), m)}});
    }
    nlohmann::json out = {{"meta", {{"generator", "scripts/llama-cpp-tokenize.cpp"}, {"model", argv[1]}}},
                          {"tokenize", cases}};
    printf("%s\n", out.dump(1).c_str());
    llama_model_free(model);
    return 0;
}
