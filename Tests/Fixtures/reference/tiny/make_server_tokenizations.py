# llama.cpp's tokenizations on vocabulary files it serves (TekkenTokenizerTests, Phi3TokenizerTests):
# the default model's whole vocabulary and merges in a one-layer random-weight file, served by
# llama-server, each text through its /tokenize (special tokens parsed, none added).
#   tekken: tokenizer.ggml.pre "tekken" (Mistral's pattern; the vocabulary is borrowed, so the ids
#           show where llama.cpp cuts the words, which is what is compared).
#   phi3:   a file whose general.name says "phi3", plus Phi-3's control tokens (<unk>, <s>, </s>,
#           <|user|>, …): llama.cpp then drops the whitespace after special tokens (their rstrip
#           attribute).
#
#   python3 make_server_tokenizations.py tekken|phi3 models/SmolLM2-135M-Instruct.Q4_1.gguf LLAMA_SERVER OUT.json
import json, subprocess, sys, time, urllib.request
import numpy as np
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

TEKKEN_TEXTS = [
    "Hello world", "helloWorld HelloWorld HELLOworld HELLO", "camelCaseAndPascalCase XMLHttpRequest",
    "I'm don't WE'LL", "12345 and 3.14159", "a/b//c http://x.y/z?q=1", "line one\nline two\r\n\r\nthree",
    "  leading spaces   and trailing  ", "tabs\tand\t\tmore", "Café ÉCOLE naïve Ångström",
    "ÜBERgröße straße", "Αθήνα ΑΘΗΝΑ αθΗνα", "Москва MOSCOW москваМосква", "日本語のテキスト",
    "e\u0301te\u0301 combining", "emoji 🙂👍 ok", "non\u00a0breaking\u2028sep", "ΣΊΣΥΦΟΣ's",
    "!!!Hello ???", "x ==> y", "$100 & 50% off!!", "  \n  \n x", "ÀB Àb àB", "IPhone iPHONE",
]
PHI3_EXTRA = ["<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
PHI3_TEXTS = [
    "<|user|>\nHello<|end|>\n<|assistant|>\n", "<|system|>\n \t  spaced out<|end|>\n<|user|>\n\n\nQ<|end|>\n",
    "<s> a</s>  b", "<unk>  x", "<|endoftext|>  y", "a <|user|>b <|end|> c", "<|assistant|>\r\n\f\vtext",
    "<|user|>\u00a0nbsp<|end|>", "<|end|><|end|> <|end|>", "<|user|>", "plain  text\n",
]

# name in the file, tokenizer.ggml.pre, extra control tokens, texts, port, the output's first key
CASES = {
    "tekken": ("tekken-vocab", "tekken", [], TEKKEN_TEXTS, 18391, ("pre", "tekken")),
    "phi3": ("tiny-phi3-tokenizer", "default", PHI3_EXTRA, PHI3_TEXTS, 18392, ("name", "tiny-phi3-tokenizer")),
}


def main():
    name, pre, extra, texts, port, first = CASES[sys.argv[1]]
    model, server_binary, output = sys.argv[2:5]
    src = GGUFReader(model)
    f = src.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    merges = [bytes(f["tokenizer.ggml.merges"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.merges"].data]
    tokens = tokens + extra
    types = types + [3] * len(extra)
    path = f"/tmp/{sys.argv[1]}-vocab.gguf"
    w = GGUFWriter(path, "llama")
    D = 32
    w.add_name(name); w.add_context_length(64); w.add_embedding_length(D); w.add_block_count(1)
    w.add_feed_forward_length(32); w.add_head_count(2); w.add_head_count_kv(2); w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(16)
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre(pre)
    w.add_token_list(tokens); w.add_token_types(types); w.add_token_merges(merges)
    w.add_bos_token_id(1); w.add_eos_token_id(2)
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", quantize(rng.standard_normal((len(tokens), D)).astype(np.float32), Q.Q8_0),
                 raw_dtype=Q.Q8_0)
    w.add_tensor("output_norm.weight", np.ones(D, dtype=np.float32))
    for name, shape in [("attn_norm", (D,)), ("ffn_norm", (D,)), ("attn_q", (D, D)), ("attn_k", (D, D)),
                        ("attn_v", (D, D)), ("attn_output", (D, D)), ("ffn_gate", (32, D)), ("ffn_up", (32, D)),
                        ("ffn_down", (D, 32))]:
        w.add_tensor(f"blk.0.{name}.weight", rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    server = subprocess.Popen([server_binary, "-m", path, "--port", str(port), "-t", "1", "-c", "64"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health").read()
                break
            except Exception:
                time.sleep(0.5)
        cases = []
        for text in texts:
            body = json.dumps({"content": text, "add_special": False}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", body, {"Content-Type": "application/json"})
            cases.append({"text": text, "ids": json.loads(urllib.request.urlopen(req).read())["tokens"]})
    finally:
        server.terminate(); server.wait()
    with open(output, "w") as out:
        out.write("{" + f'"{first[0]}": "{first[1]}", "cases": [\n' + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]}\n")
    print(len(cases), "cases")


main()
