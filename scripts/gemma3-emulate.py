#!/usr/bin/env python3
"""A numpy forward pass of Gemma 3 that reproduces, step by step and each on its own switch,
the roundings llama.cpp's CPU backend makes, to find which of them (or which real difference)
separates inferd's next-token probabilities from llama.cpp's.

    python3 scripts/gemma3-emulate.py MODEL.gguf REFERENCE.json [--case NAME] [--exact]
        [--no-q8] [--no-f16kv] [--no-gelu-table] [--no-fa] [--no-fa-f16-acc] [--dump DIR]
        [--perturb REL [--perturb-layers A-B] [--perturb-name SUBSTRING]]

Default: everything emulated as a default llama-server run does it (activations quantized to
Q8_0 for Q5_0/Q8_0 weights and to Q8_K for K-quants, K/V (and with flash attention Q) rounded to
f16, GELU through ggml's f16 table, float32 everywhere else). `--exact` turns all of it off
(float64 over the dequantized weights). It prints the largest |p - p(llama.cpp)| over llama.cpp's
top 10 for the chosen logits case(s); `--dump DIR` writes each layer's output rows (float32
.npy) for comparing with inferd's. `--perturb 1e-7` multiplies every product (or those of
the chosen layers / tensors) by 1 + 1e-7 * N(0, 1): how far a single f32 rounding can move the
answer (for the capital case, up to 0.017 in p: the 8-bit activations turn such differences
into flipped quanta). The flash attention emulated is ggml's row-by-row kernel (prompts under
64 tokens). Not used by the tests (they must not need Python).
"""
import argparse
import json
import os

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

F32, F64 = np.float32, np.float64
RNG = np.random.default_rng(1)
CURRENT = [None]


def f16(x):
    return np.asarray(x, F32).astype(np.float16).astype(F32)


def q8_0_roundtrip(x):
    """ggml's quantize_row_q8_0 (x86 SIMD form: round to nearest even), then back to floats."""
    b = np.asarray(x, F32).reshape(-1, 32)
    amax = np.abs(b).max(-1, keepdims=True)
    d = amax / F32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(amax != 0, F32(127) / amax, F32(0)).astype(F32)
    q = np.rint(b * inv)
    return (q * f16(d)).reshape(np.shape(x)).astype(F32)


def q8_k_roundtrip(x):
    """ggml's quantize_row_q8_K: scale from the signed value of largest magnitude, -127/max,
    nearest_int (ties to even), at most 127; d = 1/iscale kept as float32."""
    b = np.asarray(x, F32).reshape(-1, 256)
    idx = np.abs(b).argmax(-1)
    mx = b[np.arange(len(b)), idx][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        iscale = np.where(mx != 0, F32(-127) / mx, F32(0)).astype(F32)
        q = np.minimum(np.rint(iscale * b), 127)
        d = np.where(mx != 0, F32(1) / iscale, F32(0)).astype(F32)
    return (q * d).reshape(np.shape(x)).astype(F32)


class Model:
    def __init__(self, path):
        r = GGUFReader(path)
        self.fields = r.fields
        self.tensors = {t.name: t for t in r.tensors}
        self.cache = {}

    def value(self, key, default=None):
        return self.fields[key].contents() if key in self.fields else default

    def type(self, name):
        return self.tensors[name].tensor_type.name

    def weight(self, name):
        if name not in self.cache:
            t = self.tensors[name]
            self.cache[name] = dequantize(t.data, t.tensor_type).astype(F32).reshape(
                [int(s) for s in t.shape][::-1])
        return self.cache[name]


def forward(m, ids, opt, dump=None):
    a = "gemma3."
    width, layers = m.value(a + "embedding_length"), m.value(a + "block_count")
    heads, kv_heads = m.value(a + "attention.head_count"), m.value(a + "attention.head_count_kv")
    hd = m.value(a + "attention.key_length")
    base, eps = m.value(a + "rope.freq_base"), F32(m.value(a + "attention.layer_norm_rms_epsilon"))
    window = m.value(a + "attention.sliding_window")
    exact = opt.exact
    T = F64 if exact else F32
    n = len(ids)

    def rms(x, w):
        if exact:
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + float(eps)) * w
        # ggml: sum of float squares in double, mean as float, 1/sqrtf(mean + eps), then the weight
        s = (x.astype(F32) ** 2).astype(F64).sum(-1, keepdims=True)
        mean = (s / x.shape[-1]).astype(F32)
        scale = (F32(1) / np.sqrt(mean + eps)).astype(F32)
        return ((x * scale).astype(F32) * w).astype(F32)

    def matmul(x, name):
        w = m.weight(name)
        if not exact and opt.q8:
            form = m.type(name)
            if form in ("Q4_K", "Q5_K", "Q6_K", "Q2_K", "Q3_K"):
                x = q8_k_roundtrip(x)
            elif form in ("Q8_0", "Q5_0", "Q4_0"):
                x = q8_0_roundtrip(x)
            elif form in ("Q5_1", "Q4_1"):
                raise SystemExit("Q8_1 not emulated")
        y = x.astype(F64) @ w.astype(F64).T
        if opt.perturb and (opt.perturb_layers is None or CURRENT[0] in opt.perturb_layers) and (opt.perturb_name is None or opt.perturb_name in name):
            y = y * (1 + opt.perturb * RNG.standard_normal(y.shape))
        return y.astype(T)

    emb = m.weight("token_embd.weight")
    x = emb[ids].astype(T) * T(np.sqrt(F32(width)) if not exact else np.sqrt(width))
    positions = np.arange(n)
    for layer in range(layers):
        b = f"blk.{layer}."
        CURRENT[0] = layer
        local = layer % 6 < 5
        lbase = 10000.0 if local else base
        if exact:
            inv = lbase ** (-np.arange(0, hd, 2) / hd)
            ang = positions[:, None] * inv[None, :]
        else:
            # ggml: theta = p, multiplied by powf(base, -2/n_dims) per pair, in float32
            ts = np.power(F32(lbase), F32(-2.0) / F32(hd), dtype=F32)
            ang = np.zeros((n, hd // 2), F32)
            for p in range(n):
                th = F32(p)
                for i in range(hd // 2):
                    ang[p, i] = th
                    th = F32(th * ts)
        cos, sin = np.cos(ang).astype(T)[:, None, :], np.sin(ang).astype(T)[:, None, :]

        def rope(q):
            lo, hi = q[..., : hd // 2], q[..., hd // 2 :]
            return np.concatenate([lo * cos - hi * sin, lo * sin + hi * cos], -1).astype(T)

        h = rms(x, m.weight(b + "attn_norm.weight"))
        q = matmul(h, b + "attn_q.weight").reshape(n, heads, hd)
        k = matmul(h, b + "attn_k.weight").reshape(n, kv_heads, hd)
        v = matmul(h, b + "attn_v.weight").reshape(n, kv_heads, hd)
        q = rms(q, m.weight(b + "attn_q_norm.weight"))
        k = rms(k, m.weight(b + "attn_k_norm.weight"))
        q, k = rope(q), rope(k)
        q = (q * T(1.0 / np.sqrt(hd))).astype(T)
        if not exact and opt.f16kv:
            k, v = f16(k), f16(v)
            if opt.fa:
                q = f16(q)
        mask = np.triu(np.full((n, n), -np.inf), 1)
        if local:
            mask = mask + np.where(positions[:, None] - positions[None, :] >= window, -np.inf, 0)
        att = np.zeros((n, heads, hd), T)
        for hh in range(heads):
            g = hh // (heads // kv_heads)
            s = (q[:, hh, :].astype(F64) @ k[:, g, :].astype(F64).T).astype(T) + mask
            if not exact and opt.fa and opt.f16kv and opt.fa_f16_acc:
                # online softmax over positions, V summed in an f16 buffer (ggml_vec_mad_f16)
                for r in range(n):
                    M, S = -np.inf, F32(0)
                    acc = np.zeros(hd, np.float16)
                    for c in range(n):
                        sv = F32(s[r, c])
                        if sv == -np.inf:
                            continue
                        ms, vs = F32(1), F32(1)
                        if sv > M:
                            Mold, M = M, sv
                            ms = F32(np.exp(F32(Mold - M))) if Mold != -np.inf else F32(0)
                            acc = (acc.astype(F32) * ms).astype(np.float16)
                        else:
                            vs = F32(np.exp(F32(sv - M)))
                        acc = (acc.astype(F32) + v[c, g, :] * vs).astype(np.float16)
                        S = F32(S * ms + vs)
                    att[r, hh, :] = acc.astype(F32) / S
            else:
                e = np.exp(s - s.max(-1, keepdims=True)).astype(T)
                att[:, hh, :] = ((e / e.sum(-1, keepdims=True)).astype(F64) @ v[:, g, :].astype(F64)).astype(T)
        if dump:
            np.save(os.path.join(dump, f"attn{layer:02d}.npy"), att.reshape(n, heads * hd).astype(F32))
            np.save(os.path.join(dump, f"q{layer:02d}.npy"), q.reshape(n, heads * hd).astype(F32))
            np.save(os.path.join(dump, f"k{layer:02d}.npy"), k.reshape(n, kv_heads * hd).astype(F32))
            np.save(os.path.join(dump, f"v{layer:02d}.npy"), v.reshape(n, kv_heads * hd).astype(F32))
        o = matmul(att.reshape(n, heads * hd), b + "attn_output.weight")
        o = rms(o, m.weight(b + "post_attention_norm.weight"))
        x = (x + o).astype(T)
        h = rms(x, m.weight(b + "ffn_norm.weight"))
        gate, up = matmul(h, b + "ffn_gate.weight"), matmul(h, b + "ffn_up.weight")
        if exact or not opt.gelu_table:
            act = 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate**3)))
        else:
            g32 = gate.astype(F32).astype(F64)
            table = f16(0.5 * f16(g32) * (1 + np.tanh(np.sqrt(2 / np.pi) * f16(g32) * (1 + 0.044715 * f16(g32) ** 2))))
            act = np.where(gate <= -10, 0, np.where(gate >= 10, gate, table))
        f = matmul((act * up).astype(T), b + "ffn_down.weight")
        f = rms(f, m.weight(b + "post_ffw_norm.weight"))
        x = (x + f).astype(T)
        if dump:
            np.save(os.path.join(dump, f"layer{layer:02d}.npy"), x.astype(F32))
    last = rms(x[-1:], m.weight("output_norm.weight"))
    logits = matmul(last, "token_embd.weight")[0].astype(F64)
    if dump:
        np.save(os.path.join(dump, "logits.npy"), logits.astype(F32))
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("reference")
    ap.add_argument("--case", action="append")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--no-q8", dest="q8", action="store_false")
    ap.add_argument("--no-f16kv", dest="f16kv", action="store_false")
    ap.add_argument("--no-fa", dest="fa", action="store_false")
    ap.add_argument("--no-fa-f16-acc", dest="fa_f16_acc", action="store_false")
    ap.add_argument("--no-gelu-table", dest="gelu_table", action="store_false")
    ap.add_argument("--dump")
    ap.add_argument("--perturb-name")
    ap.add_argument("--perturb-layers", type=lambda v: set(range(*map(int, v.split("-")))), help="a-b: only layers a..b-1")
    ap.add_argument("--perturb", type=float, default=0.0, help="relative noise on every product (sensitivity)")
    opt = ap.parse_args()
    m = Model(opt.model)
    ref = json.load(open(opt.reference))
    for case in ref["logits"]:
        if opt.case and case["name"] not in opt.case:
            continue
        if opt.dump:
            os.makedirs(opt.dump, exist_ok=True)
        lp = forward(m, case["prompt_ids"], opt, opt.dump)
        diffs = [(t["id"], np.exp(lp[t["id"]]) - np.exp(t["logprob"])) for t in case["top10"]]
        worst = max(abs(d) for _, d in diffs)
        print(f"{case['name']}: largest |p - p(llama.cpp)| over its top 10 = {worst:.4f}")
        for (i, d), t in list(zip(diffs, case["top10"]))[:4]:
            print(f"   id {i}: ours {np.exp(lp[i]):.4f} llama.cpp {np.exp(t['logprob']):.4f}")


if __name__ == "__main__":
    main()
