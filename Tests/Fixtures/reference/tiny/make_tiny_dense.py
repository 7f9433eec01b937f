# Random-weight models of the dense families added for issue #38 (smollm3, phi3, mistral3), in the
# shape sweep's form (make_tiny.py's approach: the default model's first 512 tokens as
# vocabulary, f32 layers, a Q8_0 token embedding, written with PyPI's gguf). ModelShapeTests runs
# them against llama.cpp's answers, which scripts/make-dense-references.sh makes.
#
#   python3 make_tiny_dense.py models/SmolLM2-135M-Instruct.Q4_1.gguf OUTDIR
import math, sys
import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

src = GGUFReader(sys.argv[1])
out = sys.argv[2]
tok_f = src.fields["tokenizer.ggml.tokens"]; tokens = [bytes(tok_f.parts[i]).decode("utf-8") for i in tok_f.data]
tt_f = src.fields["tokenizer.ggml.token_type"]; ttypes = [int(tt_f.parts[i][0]) for i in tt_f.data]
mg_f = src.fields["tokenizer.ggml.merges"]; merges = [bytes(mg_f.parts[i]).decode("utf-8") for i in mg_f.data]
VOCAB = 512
toks, types = tokens[:VOCAB], ttypes[:VOCAB]
kept = set(toks)
mrg = [m for m in merges if m.split(" ")[0] in kept and m.split(" ")[1] in kept and m.replace(" ", "") in kept]


def build(arch, name, seed, dims, pre, rope_base=10000.0, rope_dims=None, extra=None, tensors=None):
    """dims = (width, heads, KV heads, head width, FFN width, layers)."""
    rng = np.random.default_rng(seed)
    D, H, KV, HD, F, L = dims
    w = GGUFWriter(f"{out}/{name}.gguf", arch)
    # Not the family's name: llama.cpp gives a file whose general.name says "phi3" Phi-3's token
    # attributes, which look up tokens this borrowed vocabulary lacks.
    w.add_name(f"tiny-dense-{seed}")
    w.add_context_length(512); w.add_embedding_length(D); w.add_block_count(L); w.add_feed_forward_length(F)
    w.add_head_count(H); w.add_head_count_kv(KV)
    if H * HD != D:
        w.add_key_length(HD); w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(rope_base)
    w.add_rope_dimension_count(rope_dims or HD)
    for key, value in (extra or {}).items():
        getattr(w, key)(value)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre(pre)
    w.add_token_list(toks); w.add_token_types(types); w.add_token_merges(mrg)
    w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_add_bos_token(False)

    def f32(tname, shape, std=0.2, mean=0.0):
        w.add_tensor(tname, (rng.standard_normal(shape) * std + mean).astype(np.float32))

    emb = (rng.standard_normal((VOCAB, D)) * 0.6).astype(np.float32)
    w.add_tensor("token_embd.weight", quantize(emb, Q.Q8_0), raw_dtype=Q.Q8_0)
    f32("output_norm.weight", (D,), 0.1, 1.0)
    for tname, values in (tensors or {}).items():
        w.add_tensor(tname, np.array(values, dtype=np.float32))
    for l in range(L):
        p = f"blk.{l}."
        f32(p + "attn_norm.weight", (D,), 0.1, 1.0)
        if arch == "phi3":
            f32(p + "attn_qkv.weight", (H * HD + 2 * KV * HD, D))
        else:
            f32(p + "attn_q.weight", (H * HD, D)); f32(p + "attn_k.weight", (KV * HD, D)); f32(p + "attn_v.weight", (KV * HD, D))
        f32(p + "attn_output.weight", (D, H * HD))
        f32(p + "ffn_norm.weight", (D,), 0.1, 1.0)
        if arch == "phi3":
            f32(p + "ffn_up.weight", (2 * F, D))
        else:
            f32(p + "ffn_gate.weight", (F, D)); f32(p + "ffn_up.weight", (F, D))
        f32(p + "ffn_down.weight", (D, F))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def factors(rng, n, low, high):
    return list(np.exp(rng.uniform(math.log(low), math.log(high), n)))


frng = np.random.default_rng(7)
# SmolLM3: layers 3 (and 7) attend without RoPE; Llama 3's tokenizer (llama-bpe).
build("smollm3", "smollm3-hd16-gqa2", 201, (64, 4, 2, 16, 96, 4), "llama-bpe", 5000000.0)
build("smollm3", "smollm3-hd8-gqa4", 202, (64, 8, 2, 8, 72, 8), "llama-bpe", 5000000.0)
# Phi-3: fused QKV and gate/up, NEOX RoPE, the query scaled before attention (1/√32 is not a
# power of two); a sliding_window llama.cpp ignores for phi3.
build("phi3", "phi3-hd32-gqa1", 211, (64, 2, 2, 32, 96, 2), "default", extra={"add_sliding_window": 16})
# LongRoPE past the original context (512 > 128: the long factors) with its attention factor.
long_dims = 16
build("phi3", "phi3-hd16-gqa2-longrope", 212, (64, 4, 2, 16, 80, 2), "default",
      extra={"add_rope_scaling_orig_ctx_len": 128,
             "add_rope_scaling_attn_factors": math.sqrt(1 + math.log(512 / 128) / math.log(128))},
      tensors={"rope_factors_long.weight": factors(frng, long_dims // 2, 1.0, 40.0),
               "rope_factors_short.weight": factors(frng, long_dims // 2, 1.0, 3.0)})
# Phi-4-mini's partial rotation (16 of 24 dims) with the short factors (512 ≤ 512).
build("phi3", "phi3-hd24-rot16-short", 213, (96, 4, 4, 24, 64, 1), "default", rope_dims=16,
      extra={"add_rope_scaling_orig_ctx_len": 512, "add_rope_scaling_attn_factors": 1.1},
      tensors={"rope_factors_long.weight": factors(frng, 8, 1.0, 40.0),
               "rope_factors_short.weight": factors(frng, 8, 1.0, 3.0)})
# Ministral 3: YaRN (factor 16 over an original context of 16) and the attention temperature,
# whose step (16 positions) the 40-token prompt and its continuation cross; tekken pre-tokenizer.
build("mistral3", "mistral3-hd32-gqa4-yarn", 221, (64, 4, 1, 32, 96, 2), "tekken", 1000000.0,
      extra={"add_rope_scaling_type": gguf.RopeScalingType.YARN, "add_rope_scaling_factor": 16.0,
             "add_rope_scaling_orig_ctx_len": 16, "add_rope_scaling_yarn_log_mul": 1.0,
             "add_rope_scaling_yarn_beta_fast": 32.0, "add_rope_scaling_yarn_beta_slow": 1.0,
             "add_attn_temperature_scale": 0.1})
# Plain (no scaling), narrow heads.
build("mistral3", "mistral3-hd8-gqa2", 222, (64, 8, 4, 8, 64, 1), "tekken", 1000000.0)
print("ok")
