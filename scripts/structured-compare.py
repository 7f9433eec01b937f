#!/usr/bin/env python3
"""Side by side: llguidance (PyPI `llguidance`) and inferd on the same vocabulary and schemas.

For each JSON Schema, both engines are measured the same way: compile time (median of
repetitions), then 20 random walks of 60 steps, each step computing the token mask and taking a
random allowed token (MaskBench's procedure), per-mask times pooled into median, mean and p99.
llguidance runs in this process on the default model's vocabulary rebuilt from the GGUF with PyPI
`gguf` (byte-level tokens decoded to their bytes, control tokens marked special); inferd runs as
`inferd bench --schema FILE --threads 1` with its decode measurement turned off
(INFERD_BENCH_DECODE=0). The walks are random on both sides (same procedure and length, not the
same token sequences). llguidance's times include its Python call overhead (about a
microsecond); inferd's do not.

    pip install llguidance gguf numpy
    swift build -c release
    scripts/structured-compare.py [--repetitions 3] [SCHEMA.json ...]

Prints one table; with repetitions, each figure is the median over the repetitions.
"""
import argparse
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

import gguf
import llguidance
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def byte_decoder():
    """GPT-2's byte-level alphabet: printable code points standing for bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class GGUFVocabulary:
    """What llguidance's TokenizerWrapper needs, from the GGUF's tokenizer fields."""

    def __init__(self, path):
        reader = gguf.GGUFReader(path)

        def field(name):
            f = reader.fields.get(name)
            return None if f is None else f

        tokens = field("tokenizer.ggml.tokens")
        texts = [bytes(tokens.parts[i]).decode("utf-8") for i in tokens.data]
        types_field = field("tokenizer.ggml.token_type")
        types = [int(types_field.parts[i][0]) for i in types_field.data] if types_field else [1] * len(texts)
        model = bytes(field("tokenizer.ggml.model").parts[-1]).decode()
        eos = int(field("tokenizer.ggml.eos_token_id").parts[-1][0])
        bos_field = field("tokenizer.ggml.bos_token_id")
        self.eos_token_id = eos
        self.bos_token_id = int(bos_field.parts[-1][0]) if bos_field else None
        decoder = byte_decoder()
        self.tokens = []
        self.special_token_ids = []
        for i, (text, kind) in enumerate(zip(texts, types)):
            if kind == 3:  # control: never text
                self.tokens.append(b"\xff" + text.encode())
                self.special_token_ids.append(i)
            elif model == "gpt2":
                self.tokens.append(bytes(decoder.get(ch, ord(" ")) for ch in text))
            elif kind == 6 and re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", text):
                self.tokens.append(bytes([int(text[3:5], 16)]))
            else:
                self.tokens.append(text.replace("▁", " ").encode())
        self.by_bytes = {}
        for i, t in enumerate(self.tokens):
            if i not in self.special_token_ids:
                self.by_bytes.setdefault(t, i)
        self.longest = max(len(t) for t in self.tokens)

    def __call__(self, text):
        """Greedy longest-match tokenization (llguidance uses it only for forced text)."""
        data = text if isinstance(text, bytes) else text.encode()
        out, i = [], 0
        while i < len(data):
            for n in range(min(self.longest, len(data) - i), 0, -1):
                t = self.by_bytes.get(data[i:i + n])
                if t is not None:
                    out.append(t)
                    i += n
                    break
            else:
                i += 1
        return out


def measure_llguidance(tokenizer, schema, walks, steps, seed):
    compile_times = []
    for _ in range(5):
        start = time.perf_counter()
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema)
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        compile_times.append((time.perf_counter() - start) * 1e3)
        if matcher.is_error():
            return {"error": matcher.get_error()}
    rng = random.Random(seed)
    eos = set(tokenizer.eos_tokens)
    times = []
    for _ in range(walks):
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        for _ in range(steps):
            start = time.perf_counter()
            mask = matcher.compute_bitmask()
            times.append((time.perf_counter() - start) * 1e6)
            bits = np.unpackbits(np.frombuffer(mask, dtype=np.uint8), bitorder="little")
            allowed = [t for t in np.flatnonzero(bits[: tokenizer.vocab_size]).tolist() if t not in eos]
            if not allowed:
                break
            if not matcher.consume_token(rng.choice(allowed)) or matcher.is_stopped():
                break
    return summary(times, compile_times)


def summary(times, compile_times):
    times = sorted(times)
    return {
        "compile": statistics.median(compile_times),
        "median": statistics.median(times),
        "mean": statistics.fmean(times),
        "p99": times[min(len(times) - 1, round((len(times) - 1) * 0.99))],
        "masks": len(times),
    }


def measure_inferd(binary, model, path):
    env = dict(os.environ, INFERD_BENCH_DECODE="0")
    out = subprocess.run(
        [binary, "bench", "--model", model, "--schema", path, "--threads", "1"],
        capture_output=True, text=True, env=env)
    text = out.stdout + out.stderr
    refused = re.search(r"unsupported schema keyword '([^']+)'", text)
    if refused:
        return {"error": f"refuses '{refused.group(1)}'"}
    compile_ = re.search(r"compile median ([0-9.]+) ms", text)
    mask = re.search(r"mask median ([0-9.]+) us, mean ([0-9.]+) us, p99 ([0-9.]+) us, max ([0-9.]+) us \((\d+) masks\)", text)
    if not (compile_ and mask):
        return {"error": text.strip().splitlines()[-1] if text.strip() else f"exit {out.returncode}"}
    return {"compile": float(compile_.group(1)), "median": float(mask.group(1)), "mean": float(mask.group(2)),
            "p99": float(mask.group(3)), "masks": int(mask.group(5))}


def combine(runs):
    """The median of each figure over repetitions (errors win)."""
    for r in runs:
        if "error" in r:
            return r
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("schemas", nargs="*")
    parser.add_argument("--model", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--inferd", default=os.path.join(ROOT, ".build/release/inferd"))
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--walks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    schemas = args.schemas or sorted(glob.glob(os.path.join(ROOT, "Tests/Fixtures/schemas/*.json")))

    vocabulary = GGUFVocabulary(args.model)
    start = time.perf_counter()
    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(vocabulary), slices=llguidance.LLTokenizer.json_slices())
    print(f"llguidance {llguidance.__version__}: tokenizer of {tokenizer.vocab_size} tokens in "
          f"{(time.perf_counter() - start) * 1e3:.0f} ms", file=sys.stderr)

    rows = []
    for path in schemas:
        name = os.path.basename(path)
        with open(path) as f:
            schema = json.load(f)
        ll = combine([measure_llguidance(tokenizer, schema, args.walks, args.steps, seed=r)
                      for r in range(args.repetitions)])
        inf = combine([measure_inferd(args.inferd, args.model, path) for _ in range(args.repetitions)])
        rows.append((name, ll, inf))
        print(f"  {name}: done", file=sys.stderr)

    def cell(r, key, fmt):
        return "—" if "error" in r else fmt.format(r[key])

    print("| schema | llguidance compile ms | median µs | mean µs | p99 µs | inferd compile ms | median µs | mean µs | p99 µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ll, inf in rows:
        line = [name]
        for r in (ll, inf):
            if "error" in r:
                line += [r["error"][:60], "", "", ""]
            else:
                line += [cell(r, "compile", "{:.2f}"), cell(r, "median", "{:.1f}"), cell(r, "mean", "{:.1f}"),
                         cell(r, "p99", "{:.0f}")]
        print("| " + " | ".join(line) + " |")
    for label, index in (("llguidance", 1), ("inferd", 2)):
        ok = [row[index] for row in rows if "error" not in row[index]]
        if ok:
            print(f"| **{label}: median over {len(ok)} accepted schemas** | compile {statistics.median(r['compile'] for r in ok):.2f} ms"
                  f" | median {statistics.median(r['median'] for r in ok):.1f} µs | mean {statistics.median(r['mean'] for r in ok):.1f} µs"
                  f" | p99 {statistics.median(r['p99'] for r in ok):.0f} µs (worst {max(r['p99'] for r in ok):.0f}) | | | | |")
    print(f"accepted: llguidance {sum('error' not in r[1] for r in rows)}/{len(rows)}, "
          f"inferd {sum('error' not in r[2] for r in rows)}/{len(rows)}")
    for name, ll, inf in rows:
        for label, r in (("llguidance", ll), ("inferd", inf)):
            if "error" in r:
                print(f"  {label} refuses {name}: {r['error'][:120]}")


if __name__ == "__main__":
    main()
