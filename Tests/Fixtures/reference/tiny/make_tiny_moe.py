# Random-weight qwen3moe models for the mixture-of-experts sweep (MoEShapeTests), written like
# make_tiny.py's shape sweep: the default model's first 512 tokens as vocabulary, F32 weights
# (the token embedding Q8_0), one file per shape in the output directory.
#
#   python3 make_tiny_moe.py DEFAULT_MODEL.gguf OUT_DIR [--source-only NAME]
#
# dims = (width, heads, KV heads, head width, experts, experts used, expert FFN width, layers).
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

src = GGUFReader(sys.argv[1])
out_dir = sys.argv[2]
tok_f = src.fields["tokenizer.ggml.tokens"]
tokens = [bytes(tok_f.parts[i]).decode("utf-8") for i in tok_f.data]
tt_f = src.fields["tokenizer.ggml.token_type"]
ttypes = [int(tt_f.parts[i][0]) for i in tt_f.data]
mg_f = src.fields["tokenizer.ggml.merges"]
merges = [bytes(mg_f.parts[i]).decode("utf-8") for i in mg_f.data]
VOCAB = 512


def build(name, seed, dims, dtype=np.float32):
    rng = np.random.default_rng(seed)
    D, H, KV, HD, E, K, F, L = dims
    toks, types = tokens[:VOCAB], ttypes[:VOCAB]
    kept = set(toks)
    mrg = [m for m in merges if m.split(" ")[0] in kept and m.split(" ")[1] in kept and m.replace(" ", "") in kept]
    w = GGUFWriter(f"{out_dir}/{name}.gguf", "qwen3moe")
    w.add_name(f"tiny-{name}")
    w.add_context_length(512); w.add_embedding_length(D); w.add_block_count(L)
    # Real qwen3moe files carry a dense width too (unused by the layers); keep it unlike F.
    w.add_feed_forward_length(F * K)
    w.add_head_count(H); w.add_head_count_kv(KV); w.add_key_length(HD); w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(1000000.0)
    w.add_expert_count(E); w.add_expert_used_count(K); w.add_expert_feed_forward_length(F)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre("qwen2")
    w.add_token_list(toks); w.add_token_types(types); w.add_token_merges(mrg)
    w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_add_bos_token(False)

    def f32(name, shape, std=0.2, mean=0.0):
        a = (rng.standard_normal(shape) * std + mean).astype(np.float32)
        w.add_tensor(name, a if len(shape) == 1 else a.astype(dtype))

    emb = (rng.standard_normal((VOCAB, D)) * 0.6).astype(np.float32)
    w.add_tensor("token_embd.weight", quantize(emb, Q.Q8_0), raw_dtype=Q.Q8_0)
    f32("output_norm.weight", (D,), 0.1, 1.0)
    for l in range(L):
        p = f"blk.{l}."
        f32(p + "attn_norm.weight", (D,), 0.1, 1.0)
        f32(p + "attn_q.weight", (H * HD, D)); f32(p + "attn_k.weight", (KV * HD, D)); f32(p + "attn_v.weight", (KV * HD, D))
        f32(p + "attn_q_norm.weight", (HD,), 0.1, 1.0); f32(p + "attn_k_norm.weight", (HD,), 0.1, 1.0)
        f32(p + "attn_output.weight", (D, H * HD))
        f32(p + "ffn_norm.weight", (D,), 0.1, 1.0)
        # The router's logits spread over a few units, so the top-k is decided by clear margins
        # mostly, with a near-tie now and then.
        f32(p + "ffn_gate_inp.weight", (E, D), 0.25)
        # numpy (experts, rows, columns) is GGUF's [columns, rows, experts]
        f32(p + "ffn_gate_exps.weight", (E, F, D)); f32(p + "ffn_up_exps.weight", (E, F, D))
        f32(p + "ffn_down_exps.weight", (E, D, F))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    print(name)


SHAPES = [
    # name, seed, (D, H, KV, HD, E, K, F, L)
    ("qwen3moe-e4-k1-hd16-gqa1", 201, (64, 4, 4, 16, 4, 1, 32, 1)),
    ("qwen3moe-e8-k2-hd32-gqa2", 202, (64, 4, 2, 32, 8, 2, 64, 2)),
    ("qwen3moe-e16-k4-hd48-gqa4", 203, (64, 4, 1, 48, 16, 4, 40, 2)),
    ("qwen3moe-e32-k8-hd64-gqa2", 204, (64, 2, 1, 64, 32, 8, 32, 2)),
]
# Sources for llama-quantize, not committed: width and expert FFN 256 so the K-quants apply.
SOURCES = [
    ("qwen3moe-e4-k2-hd64-gqa2-f32", 205, (256, 4, 2, 64, 4, 2, 256, 2)),
    ("qwen3moe-e4-k2-hd128-gqa2-f32", 206, (256, 2, 1, 128, 4, 2, 256, 2)),
]

# A larger file to time routed decoding (docs/performance.md), F16 for llama-quantize; not a fixture.
BENCH = [
    ("qwen3moe-bench-e32-k4-w1024-f16", 207, (1024, 16, 4, 64, 32, 4, 512, 4)),
]

if len(sys.argv) > 3 and sys.argv[3] == "--bench":
    for name, seed, dims in BENCH:
        build(name, seed, dims, np.float16)
elif len(sys.argv) > 3 and sys.argv[3] == "--sources":
    for name, seed, dims in SOURCES:
        build(name, seed, dims)
else:
    for name, seed, dims in SHAPES:
        build(name, seed, dims)
