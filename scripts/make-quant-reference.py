#!/usr/bin/env python3
"""Writes Tests/Fixtures/quants.json: random blocks of every weight type the engine
computes with (MXFP4 also from raw bytes covering its special scale bytes), and the floats PyPI `gguf`'s numpy dequantizers make of them (the independent
reference the Swift and C dequantizers are checked against; tests do not need Python).

Types `gguf.quants.quantize` supports are made from random floats; the K-quants (which it only
dequantizes) from random bytes with their f16 scales replaced by sane values. Every float is
stored as the hex of its IEEE-754 bits, so the comparison is exact.

It also stores row 0 of four of Gemma 3 270M's matrices (models/gemma-3-270m-q4_k_m.gguf,
Q5_0, Q4_K, Q6_K, Q8_0) with gguf's floats, so tests check the real file's blocks too.

Usage (from the package root): python3 scripts/make-quant-reference.py [output]
"""
import json
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = sys.argv[1] if len(sys.argv) > 1 else "Tests/Fixtures/quants.json"
rng = np.random.default_rng(20261130)
N = 512  # values per type: two K-quant super-blocks, sixteen 32-value blocks

# (offset of an f16 scale inside the block, block bytes) for the K-quants made from raw bytes.
K_SCALES = {
    T.Q2_K: ([80, 82], 84),  # scales[16] qs[64] d dmin
    T.Q3_K: ([108], 110),  # hmask[32] qs[64] scales[12] d
    T.Q4_K: ([0, 2], 144),  # d dmin scales[12] qs[128]
    T.Q5_K: ([0, 2], 176),  # d dmin scales[12] qh[32] qs[128]
    T.Q6_K: ([208], 210),  # ql[128] qh[64] scales[16] d
}


def random_floats(n):
    # Mostly normal values with a few larger ones, like weights.
    x = rng.standard_normal(n).astype(np.float32) * 0.05
    x[rng.integers(0, n, n // 64)] *= 8
    return x


def hex_floats(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32).astype(">u4").tobytes().hex()


cases = []
for name in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "MXFP4"]:
    t = T[name]
    if t in K_SCALES:
        offsets, size = K_SCALES[t]
        raw = bytearray(rng.integers(0, 256, size * (N // 256), dtype=np.uint8).tobytes())
        for b in range(N // 256):
            for o in offsets:
                scale = np.float16(rng.uniform(0.0005, 0.02))
                raw[b * size + o : b * size + o + 2] = scale.tobytes()
        data = np.frombuffer(bytes(raw), dtype=np.uint8)
    else:
        data = quants.quantize(random_floats(N), t)
    values = quants.dequantize(data, t).astype(np.float32).reshape(-1)
    assert values.size == N, (name, values.size)
    cases.append({"type": name, "count": N, "bytes": np.asarray(data).view(np.uint8).tobytes().hex(),
                  "values": hex_floats(values)})

# MXFP4 from raw bytes too: every E8M0 scale byte ggml treats specially (0 and 1 are
# subnormal halves, 255 is not NaN there) and a spread of others, with random 4-bit indices.
raw = bytearray(rng.integers(0, 256, 17 * 16, dtype=np.uint8).tobytes())
for b, e in enumerate([0, 1, 2, 3, 100, 117, 120, 124, 126, 127, 128, 130, 140, 200, 254, 255]):
    raw[17 * b] = e
data = np.frombuffer(bytes(raw), dtype=np.uint8)
values = quants.dequantize(data, T.MXFP4).astype(np.float32).reshape(-1)
cases.append({"type": "MXFP4", "count": values.size, "bytes": bytes(raw).hex(), "values": hex_floats(values)})

# Row 0 of Gemma 3 270M's hot matrices (one per quantized type it uses), as the file stores them.
GEMMA = "models/gemma-3-270m-q4_k_m.gguf"
gemma = []
from gguf import GGUFReader

reader = GGUFReader(GEMMA)
for name in ["blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_down.weight", "blk.0.attn_v.weight"]:
    t = next(t for t in reader.tensors if t.name == name)
    columns = int(t.shape[0])
    row = np.asarray(t.data).view(np.uint8).reshape(-1)[: len(np.asarray(t.data).view(np.uint8).reshape(-1)) // int(t.shape[1])]
    values = quants.dequantize(row, t.tensor_type).astype(np.float32).reshape(-1)
    assert values.size == columns, (name, values.size)
    gemma.append({"tensor": name, "type": t.tensor_type.name, "count": columns, "bytes": row.tobytes().hex(),
                  "values": hex_floats(values)})

with open(OUT, "w") as f:
    json.dump({"generator": "scripts/make-quant-reference.py", "cases": cases, "gemma_rows": gemma}, f, indent=1)
    f.write("\n")
print(f"wrote {OUT}")
