#!/usr/bin/env python3
"""Log-probability exactness of inferd against llama.cpp, per weight type (issue #34).

For each weight type inferd loads, the default model is requantized with llama.cpp's
llama-quantize (--allow-requantize --pure: every weight matrix of the named type, except where a
row's width is not a multiple of the type's block, which llama-quantize gives another type; the
table lists each file's tensor types, read with PyPI's gguf). A fixed text of about 500 tokens
(scripts/logprob-exactness.txt) is tokenized and scored by llama.cpp (scripts/llama-cpp-score.cpp:
every position's log-probability, one decode, log-softmax in double) with the attention inferd
follows: llama.cpp's non-flash path for SmolLM2 (llama), its flash kernel for Gemma 3
(docs/models.md); once more with the other path (for SmolLM2 llama.cpp's default, auto, which its
CPU backend resolves to flash), whose perplexity alone is shown in the last column. Then inferd is
started on
the same file (`BIN serve --port 0 --model FILE --data-dir TMP --log-format text`) and asked for
the same ids with POST /v1/completions {prompt: ids, max_tokens: 0, echo: true, logprobs: 5}.
Gemma 3 270M Q4_K_M is compared as it is. Prints a markdown table: type, tensor mix, mean and max
|Δ logprob| over positions 1...n-1 (with the position of the max), how many positions differ by
more than 0.01, both perplexities and their ratio (inferd / llama.cpp).

Usage (from the package root):
    python3 scripts/logprob-exactness.py BIN [--llama DIR] [--types F32,Q4_K,...] [--no-gemma]
    BIN       the inferd binary (e.g. .build/release/inferd)
    --llama   where scripts/llama-cpp-build.sh built llama.cpp (default /tmp/llama-cpp): it needs
              DIR/llama-cpp-score and the build's bin/llama-quantize
    --types   a subset of the 13 types (default all)
    --extra-bufts on|off  llama.cpp with its repacked Q4_0/Q4_K layouts (its default) or without (the
              default here: on a CPU that advertises AMX but faults on it, on crashes)
Needs PyPI's gguf (0.19.0 here; it brings numpy) importable by this Python. No network.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter

TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
BASE = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = "models/gemma-3-270m-q4_k_m.gguf"
TEXT = "scripts/logprob-exactness.txt"


def tensor_mix(path: str) -> str:
    from gguf import GGUFReader

    counts = Counter(t.tensor_type.name for t in GGUFReader(path).tensors)
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


EXTRA_BUFTS = "off"  # --extra-bufts: llama.cpp's repacked layouts (its default; off where AMX faults)


def llama_score(tool: str, model: str, payload: dict, fa: str = "off") -> dict:
    out = subprocess.run(
        [tool, "-m", model, "-k", "5", "-t", "2", "-fa", fa, "-extra-bufts", EXTRA_BUFTS],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, SCORE_QUIET="1"),
    ).stdout
    return json.loads(out)


def post(base: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{path}: HTTP {e.code}: {e.read().decode()[:500]}") from None


def inferd_logprobs(binary: str, model: str, ids: list[int]) -> list:
    data = tempfile.mkdtemp(prefix="exactness-data-")
    log = open(os.path.join(data, "server.log"), "w+")
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--model", model, "--data-dir", data, "--log-format", "text"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        port = None
        deadline = time.time() + 120
        while port is None and time.time() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"inferd exited on {model}:\n{log.read()[-3000:]}")
            log.seek(0)
            m = re.search(r"server listening.* port=(\d+)", log.read())
            port = int(m.group(1)) if m else None
            time.sleep(0.1)
        if port is None:
            raise RuntimeError("no 'server listening ... port=N' line in 120 s")
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.time() > deadline:
                raise RuntimeError("/health never answered 200")
            time.sleep(0.2)
        with urllib.request.urlopen(base + "/v1/models", timeout=10) as r:
            model_id = json.loads(r.read())["data"][0]["id"]
        body = post(base, "/v1/completions", {"model": model_id, "prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 5})
        return body["choices"][0]["logprobs"]["token_logprobs"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(data, ignore_errors=True)


def compare(name: str, mix: str, ref: dict, got: list, ref_fa: dict) -> dict:
    ids = ref["ids"]
    if len(got) != len(ids) or got[0] is not None:
        raise RuntimeError(f"{name}: inferd returned {len(got)} entries for {len(ids)} ids (first {got[0]!r})")
    ours = [p["logprob"] for p in ref["positions"]]
    theirs = got[1:]
    deltas = [abs(a - b) for a, b in zip(theirs, ours)]
    worst = max(range(len(deltas)), key=lambda i: deltas[i])
    ppl_inferd = math.exp(-sum(theirs) / len(theirs))
    return {
        "type": name,
        "mix": mix,
        "n": len(ids),
        "mean": sum(deltas) / len(deltas),
        "max": deltas[worst],
        "max_at": worst + 1,
        "over": sum(d > 0.01 for d in deltas),
        "ppl_llama": ref["perplexity"],
        "ppl_inferd": ppl_inferd,
        "ratio": ppl_inferd / ref["perplexity"],
        "ppl_llama_fa": ref_fa["perplexity"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--llama", default="/tmp/llama-cpp")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--no-gemma", action="store_true")
    ap.add_argument("--extra-bufts", choices=["on", "off"], default="off",
                    help="llama.cpp's extra buffer types (its repacked Q4_0/Q4_K layouts, and AMX where the CPU has "
                    "it): on is llama.cpp's default; off (the default here) where AMX faults")
    args = ap.parse_args()
    global EXTRA_BUFTS
    EXTRA_BUFTS = args.extra_bufts
    score_tool = os.path.join(args.llama, "llama-cpp-score")
    quantize = os.path.join(args.llama, "llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-quantize")
    for path in (args.binary, score_tool, quantize):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path} (build llama.cpp with scripts/llama-cpp-build.sh, inferd with swift build)")
    types = [t for t in args.types.split(",") if t]
    for t in types:
        if t not in TYPES:
            sys.exit(f"unknown type {t}; one of {','.join(TYPES)}")
    text = open(TEXT).read()
    work = tempfile.mkdtemp(prefix="exactness-")
    rows = []
    try:
        ids = llama_score(score_tool, BASE, {"text": text})["ids"]
        print(f"text: {TEXT}, {len(ids)} tokens (SmolLM2 vocabulary, no BOS)", file=sys.stderr)
        for t in types:
            path = os.path.join(work, f"smollm2-{t}.gguf")
            q = subprocess.run(
                [quantize, "--allow-requantize", "--pure", BASE, path, t, "2"], capture_output=True, text=True
            )
            if q.returncode != 0:
                rows.append({"type": t, "skipped": f"llama-quantize failed: {q.stderr.strip().splitlines()[-1:]}"})
                continue
            ref = llama_score(score_tool, path, {"ids": ids})
            ref_fa = llama_score(score_tool, path, {"ids": ids}, fa="auto")
            got = inferd_logprobs(args.binary, path, ids)
            rows.append(compare(t, tensor_mix(path), ref, got, ref_fa))
            print(f"{t}: done", file=sys.stderr)
            os.remove(path)
        if not args.no_gemma:
            # Gemma's vocabulary, BOS added. inferd's Gemma 3 attention follows llama.cpp's flash
            # kernel (docs/models.md), so that is the reference here and the other is shown.
            other = llama_score(score_tool, GEMMA, {"text": text})
            ref = llama_score(score_tool, GEMMA, {"ids": other["ids"]}, fa="on")
            got = inferd_logprobs(args.binary, GEMMA, ref["ids"])
            rows.append(compare("Gemma 3 270M Q4_K_M (as is)", tensor_mix(GEMMA), ref, got, other))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(
        "| type | tensor types in the file | tokens | mean \\|Δ logprob\\| | max \\|Δ logprob\\| (position) | positions with \\|Δ\\| > 0.01 "
        "| perplexity llama.cpp | perplexity inferd | ratio | perplexity llama.cpp, the other attention |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "skipped" in r:
            print(f"| {r['type']} | skipped: {r['skipped']} | | | | | | | | |")
            continue
        print(
            f"| {r['type']} | {r['mix']} | {r['n']} | {r['mean']:.2e} | {r['max']:.2e} ({r['max_at']}) | {r['over']} | "
            f"{r['ppl_llama']:.4f} | {r['ppl_inferd']:.4f} | {r['ratio']:.6f} | {r['ppl_llama_fa']:.4f} |"
        )


if __name__ == "__main__":
    main()
