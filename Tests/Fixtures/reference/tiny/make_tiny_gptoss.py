"""Tiny random-weight GGUFs for issue #38's gpt-oss pieces that are not mixture-of-experts layers,
written with PyPI's `gguf` from the default model's vocabulary (make_tiny.py's conventions):

  python3 make_tiny_gptoss.py MODEL yarn     shapes/*-yarn-*.gguf: llama, qwen2 and qwen3 files with
                                             YaRN RoPE scaling (`rope.scaling.type = yarn`) over an
                                             original context of 16 positions, so that prompts of 40
                                             tokens run far past it, one with MXFP4 layer matrices
                                             (ModelShapeTests)
  python3 make_tiny_gptoss.py MODEL vocab    tiny-gpt4o-vocab.gguf: the default model's vocabulary
                                             and merges under the `gpt-4o` pre-tokenizer (gpt-oss's),
                                             no tensors (TinyTokenizerTests)

MODEL is the default model (models/SmolLM2-135M-Instruct.Q4_1.gguf). llama.cpp's answers on
these files: scripts/make-gptoss-references.sh.
"""
import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

src = GGUFReader(sys.argv[1])
tok_f = src.fields["tokenizer.ggml.tokens"]; tokens = [bytes(tok_f.parts[i]).decode("utf-8") for i in tok_f.data]
tt_f = src.fields["tokenizer.ggml.token_type"]; ttypes = [int(tt_f.parts[i][0]) for i in tt_f.data]
mg_f = src.fields["tokenizer.ggml.merges"]; merges = [bytes(mg_f.parts[i]).decode("utf-8") for i in mg_f.data]


def vocabulary(w, pre, vocab, bos=1, eos=2, add_bos=False):
    """The default model's first `vocab` tokens (all when None) and the merges they can make."""
    toks, types, mrg = tokens, ttypes, merges
    if vocab is not None:
        toks, types = tokens[:vocab], ttypes[:vocab]
        kept = set(toks)
        mrg = [m for m in merges if m.split(" ")[0] in kept and m.split(" ")[1] in kept and m.replace(" ", "") in kept]
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre(pre)
    w.add_token_list(toks); w.add_token_types(types); w.add_token_merges(mrg)
    w.add_bos_token_id(bos); w.add_eos_token_id(eos); w.add_add_bos_token(add_bos)
    return len(toks)


def yarn_model(arch, name, seed, dims, rope_base, factor, original, attn_factor=None, qkv_bias=False, qk_norm=False,
               matrices=None):
    """A dense llama/qwen2/qwen3 file with YaRN scaling. dims = (width, heads, KV heads, head
    width, FFN width, layers); matrices: a type the layers' 2-D weights are quantized to
    (PyPI gguf's quantizer), else F32."""
    rng = np.random.default_rng(seed)
    D, H, KV, HD, F, L = dims
    w = GGUFWriter(f"shapes/{name}.gguf", arch)
    w.add_name(f"tiny-{name}")
    w.add_context_length(512); w.add_embedding_length(D); w.add_block_count(L); w.add_feed_forward_length(F)
    w.add_head_count(H); w.add_head_count_kv(KV); w.add_key_length(HD); w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(rope_base)
    if arch == "llama":
        w.add_rope_dimension_count(HD)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(factor)
    w.add_rope_scaling_orig_ctx_len(original)
    if attn_factor is not None:
        w.add_key_value(f"{arch}.rope.scaling.attn_factor", attn_factor, gguf.GGUFValueType.FLOAT32)
    w.add_file_type(0)
    V = vocabulary(w, "llama-bpe" if arch == "llama" else "qwen2", 512, add_bos=arch == "llama")

    def f32(tensor, shape, std=0.2, mean=0.0):
        a = (rng.standard_normal(shape) * std + mean).astype(np.float32)
        if matrices is not None and len(shape) == 2:
            w.add_tensor(tensor, quantize(a, matrices), raw_dtype=matrices)
        else:
            w.add_tensor(tensor, a)

    emb = (rng.standard_normal((V, D)) * 0.6).astype(np.float32)
    w.add_tensor("token_embd.weight", quantize(emb, Q.Q8_0), raw_dtype=Q.Q8_0)
    f32("output_norm.weight", (D,), 0.1, 1.0)
    for l in range(L):
        p = f"blk.{l}."
        f32(p + "attn_norm.weight", (D,), 0.1, 1.0)
        f32(p + "attn_q.weight", (H * HD, D)); f32(p + "attn_k.weight", (KV * HD, D)); f32(p + "attn_v.weight", (KV * HD, D))
        if qkv_bias:
            f32(p + "attn_q.bias", (H * HD,), 0.1); f32(p + "attn_k.bias", (KV * HD,), 0.1); f32(p + "attn_v.bias", (KV * HD,), 0.1)
        if qk_norm:
            f32(p + "attn_q_norm.weight", (HD,), 0.1, 1.0); f32(p + "attn_k_norm.weight", (HD,), 0.1, 1.0)
        f32(p + "attn_output.weight", (D, H * HD))
        f32(p + "ffn_norm.weight", (D,), 0.1, 1.0)
        f32(p + "ffn_gate.weight", (F, D)); f32(p + "ffn_up.weight", (F, D)); f32(p + "ffn_down.weight", (D, F))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def gptoss_model(name, seed, dims, experts, used, window=8, factor=32.0, original=16, mxfp4=False):
    """A gpt-oss (llama.cpp's openai-moe) file: Q/K/V/O biases, one sink logit per head, sliding
    window on even layers, YaRN, a router with biases choosing `used` of `experts` experts
    (softmax over the chosen logits), experts' gate/up/down as 3-D tensors with biases, gpt-oss's
    clamped SwiGLU. dims = (width, heads, KV heads, head width, expert FFN width, layers)."""
    rng = np.random.default_rng(seed)
    D, H, KV, HD, F, L = dims
    w = GGUFWriter(f"shapes/{name}.gguf", "gpt-oss")
    w.add_name(f"tiny-{name}")
    w.add_context_length(512); w.add_embedding_length(D); w.add_block_count(L); w.add_feed_forward_length(F)
    w.add_head_count(H); w.add_head_count_kv(KV); w.add_key_length(HD); w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(150000.0)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN); w.add_rope_scaling_factor(factor)
    w.add_rope_scaling_orig_ctx_len(original)
    w.add_sliding_window(window)
    w.add_expert_count(experts); w.add_expert_used_count(used); w.add_expert_feed_forward_length(F)
    w.add_file_type(0)
    V = vocabulary(w, "gpt-4o", 512, bos=1, eos=2, add_bos=False)

    def t(tensor, shape, std=0.2, mean=0.0):
        w.add_tensor(tensor, (rng.standard_normal(shape) * std + mean).astype(np.float32))

    w.add_tensor("token_embd.weight", quantize((rng.standard_normal((V, D)) * 0.6).astype(np.float32), Q.Q8_0),
                 raw_dtype=Q.Q8_0)
    t("output_norm.weight", (D,), 0.1, 1.0)
    t("output.weight", (V, D))
    for l in range(L):
        p = f"blk.{l}."
        t(p + "attn_norm.weight", (D,), 0.1, 1.0)
        t(p + "attn_q.weight", (H * HD, D)); t(p + "attn_k.weight", (KV * HD, D)); t(p + "attn_v.weight", (KV * HD, D))
        t(p + "attn_q.bias", (H * HD,), 0.1); t(p + "attn_k.bias", (KV * HD,), 0.1); t(p + "attn_v.bias", (KV * HD,), 0.1)
        t(p + "attn_output.weight", (D, H * HD)); t(p + "attn_output.bias", (D,), 0.1)
        t(p + "attn_sinks.weight", (H,), 1.0)
        t(p + "post_attention_norm.weight", (D,), 0.1, 1.0)
        t(p + "ffn_gate_inp.weight", (experts, D), 0.5); t(p + "ffn_gate_inp.bias", (experts,), 0.5)
        # numpy shapes are ggml's reversed: [experts, rows, columns]
        for kind, rows, cols in (("gate", F, D), ("up", F, D), ("down", D, F)):
            a = (rng.standard_normal((experts, rows, cols)) * 0.3).astype(np.float32)
            if mxfp4:
                w.add_tensor(p + f"ffn_{kind}_exps.weight", quantize(a, Q.MXFP4), raw_dtype=Q.MXFP4)
            else:
                w.add_tensor(p + f"ffn_{kind}_exps.weight", a)
            t(p + f"ffn_{kind}_exps.bias", (experts, rows), 0.1)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def vocab_only(path, pre):
    """Tokenizer metadata and the hyper-parameters llama.cpp reads before it, no tensors (loaded
    with vocab_only)."""
    w = GGUFWriter(path, "llama")
    w.add_name(f"tiny-vocab-{pre}")
    w.add_context_length(512); w.add_embedding_length(64); w.add_block_count(1); w.add_feed_forward_length(64)
    w.add_head_count(4); w.add_head_count_kv(4); w.add_layer_norm_rms_eps(1e-6)
    vocabulary(w, pre, None, bos=1, eos=2, add_bos=False)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


which = sys.argv[2]
if which == "yarn":
    # Original contexts of 16 and prompts of up to 40 tokens (plus 24 generated): most positions
    # are past it. Corrections dims (beta_fast 32, beta_slow 1, llama.cpp's defaults) land inside
    # the rotary pairs for these head widths and bases, so the ramp mixes both angles.
    yarn_model("llama", "llama-yarn-hd32-gqa2", 141, (64, 4, 2, 32, 96, 2), 10000.0, 32.0, 16)
    yarn_model("qwen2", "qwen2-yarn-hd16-gqa2", 142, (64, 4, 2, 16, 80, 2), 10000.0, 4.0, 16, qkv_bias=True)
    yarn_model("qwen3", "qwen3-yarn-hd64-gqa4", 143, (64, 4, 1, 64, 96, 1), 1000000.0, 32.0, 16, attn_factor=0.9,
               qk_norm=True)
    # Every layer matrix MXFP4 (gpt-oss's expert type, here as plain 2-D matrices), so a product
    # of that type runs through the whole pass against llama.cpp's.
    yarn_model("llama", "llama-yarn-mxfp4-hd32", 144, (64, 4, 2, 32, 96, 2), 10000.0, 32.0, 16, matrices=Q.MXFP4)
elif which == "gptoss":
    # gpt-oss shapes for when the engine has mixture-of-experts layers: experts 4-32, top-k 1-4,
    # a sliding window of 8 on layer 0 (llama.cpp's pattern 2: even layers slide).
    gptoss_model("gptoss-e4-k1", 151, (64, 4, 2, 16, 32, 2), 4, 1)
    gptoss_model("gptoss-e8-k2", 152, (64, 8, 2, 16, 32, 2), 8, 2)
    gptoss_model("gptoss-e32-k4", 153, (64, 4, 1, 32, 64, 2), 32, 4)
    # (gptoss-e8-k2-mxfp4.gguf: llama-quantize MXFP4_MOE of gptoss-e8-k2.gguf, see
    # scripts/make-gptoss-references.sh)
elif which == "vocab":
    vocab_only("tiny-gpt4o-vocab.gguf", "gpt-4o")
else:
    raise SystemExit(f"unknown set {which}")
print("ok")
