#!/usr/bin/env python3
"""An exact float64 forward pass of a GGUF model (llama, qwen2, qwen3, gemma3), for judging
exactness figures: how far llama.cpp's own next-token probabilities are from exact arithmetic
over the same dequantized weights (PyPI `gguf` dequantizes them; numpy does the rest).

    python3 scripts/float64-forward.py MODEL.gguf REFERENCE.json [CASES]

REFERENCE.json is one of Tests/Fixtures/reference/gemma3/reference.json or tiny/tiny-*.json; for each
of its `logits` cases (the first CASES, default all) it prints the largest |p(float64) - p(llama.cpp)|
over llama.cpp's top 10. Not used by the tests (they must not need Python); it backs the
tolerances stated in ModelArchitectureTests and GemmaReferenceTests. Gemma 3's 262,144 x 640
embedding in float64 takes about 1.3 GB and a minute.
"""
import json
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def main():
    model, reference = sys.argv[1], json.load(open(sys.argv[2]))
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    reader = GGUFReader(model)
    fields = reader.fields
    tensors = {t.name: t for t in reader.tensors}

    def value(key, default=None):
        return fields[key].contents() if key in fields else default

    def weight(name):
        t = tensors.get(name)
        if t is None:
            return None
        return dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(s) for s in t.shape][::-1])

    arch = value("general.architecture")
    p = arch + "."
    width, layers = value(p + "embedding_length"), value(p + "block_count")
    heads, kv_heads = value(p + "attention.head_count"), value(p + "attention.head_count_kv")
    head_dim = value(p + "attention.key_length", width // heads)
    base, eps = value(p + "rope.freq_base", 10000.0), value(p + "attention.layer_norm_rms_epsilon")
    window = value(p + "attention.sliding_window", 0) if arch == "gemma3" else 0
    halves = arch in ("qwen2", "qwen3", "gemma3")
    factors = weight("rope_freqs.weight")
    embedding = weight("token_embd.weight")
    output = weight("output.weight")
    output = embedding if output is None else output

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def forward(ids):
        n = len(ids)
        x = embedding[ids] * (np.sqrt(np.float32(width)) if arch == "gemma3" else 1.0)
        positions = np.arange(n)
        for layer in range(layers):
            b = f"blk.{layer}."
            local = arch == "gemma3" and window > 0 and layer % 6 < 5
            inverse = (10000.0 if local else base) ** (-np.arange(0, head_dim, 2) / head_dim)
            if factors is not None:
                inverse = inverse / factors
            angles = positions[:, None] * inverse[None, :]
            cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]

            def rope(q):
                if halves:
                    a, c = q[..., : head_dim // 2], q[..., head_dim // 2 :]
                    return np.concatenate([a * cos - c * sin, a * sin + c * cos], -1)
                out = np.empty_like(q)
                a, c = q[..., 0::2], q[..., 1::2]
                out[..., 0::2], out[..., 1::2] = a * cos - c * sin, a * sin + c * cos
                return out

            h = rms(x, weight(b + "attn_norm.weight"))
            q, k, v = (h @ weight(b + f"attn_{m}.weight").T for m in "qkv")
            if b + "attn_q.bias" in tensors:
                q, k, v = q + weight(b + "attn_q.bias"), k + weight(b + "attn_k.bias"), v + weight(b + "attn_v.bias")
            q, k, v = q.reshape(n, heads, head_dim), k.reshape(n, kv_heads, head_dim), v.reshape(n, kv_heads, head_dim)
            if b + "attn_q_norm.weight" in tensors:
                q, k = rms(q, weight(b + "attn_q_norm.weight")), rms(k, weight(b + "attn_k_norm.weight"))
            q, k = rope(q), rope(k)
            mask = np.triu(np.full((n, n), -np.inf), 1)
            if local:
                mask = mask + np.where(positions[:, None] - positions[None, :] >= window, -np.inf, 0)
            attended = np.zeros((n, heads, head_dim))
            for hh in range(heads):
                g = hh // (heads // kv_heads)
                scores = q[:, hh, :] @ k[:, g, :].T / np.sqrt(head_dim) + mask
                scores = np.exp(scores - scores.max(-1, keepdims=True))
                attended[:, hh, :] = (scores / scores.sum(-1, keepdims=True)) @ v[:, g, :]
            a = attended.reshape(n, heads * head_dim) @ weight(b + "attn_output.weight").T
            if b + "post_attention_norm.weight" in tensors:
                a = rms(a, weight(b + "post_attention_norm.weight"))
            x = x + a
            h = rms(x, weight(b + "ffn_norm.weight"))
            gate, up = h @ weight(b + "ffn_gate.weight").T, h @ weight(b + "ffn_up.weight").T
            if arch == "gemma3":
                act = 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate**3)))
            else:
                act = gate / (1 + np.exp(-gate))
            f = (act * up) @ weight(b + "ffn_down.weight").T
            if b + "post_ffw_norm.weight" in tensors:
                f = rms(f, weight(b + "post_ffw_norm.weight"))
            x = x + f
        logits = output @ rms(x[-1], weight("output_norm.weight"))
        shifted = logits - logits.max()
        return shifted - np.log(np.exp(shifted).sum())

    for case in reference["logits"][:limit]:
        logprobs = forward(case["prompt_ids"])
        worst = max(abs(np.exp(logprobs[t["id"]]) - np.exp(t["logprob"])) for t in case["top10"])
        print(f"{case['name']}: largest |p(float64) - p(llama.cpp)| over its top 10 = {worst:.4f}")


if __name__ == "__main__":
    main()
