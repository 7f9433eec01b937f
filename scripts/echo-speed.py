#!/usr/bin/env python3
"""Echo scoring against a plain prompt pass (#34: "a 512-token echo within 1.2x of a pp512").

Against a running server: alternated rounds of a 512-token prompt run for one token
(`max_tokens: 1`, the prompt pass and one sample) and the same length scored (`echo: true,
max_tokens: 0, logprobs: 1`: every row's logits and log-softmax), each request a fresh random
token-id prompt so no prefix is reused. Prints each kind's median wall time and the ratio.

Usage: python3 scripts/echo-speed.py http://127.0.0.1:8080 [rounds=7] [tokens=512]
"""
import json
import random
import statistics
import sys
import time
import urllib.request

base = sys.argv[1].rstrip("/")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
model = json.load(urllib.request.urlopen(base + "/v1/models"))["data"][0]["id"]
vocab = json.load(urllib.request.urlopen(base + "/tokenizer_info")).get("vocab_size", 49152)
rng = random.Random(34)


def post(body):
    req = urllib.request.Request(
        base + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        answer = json.load(r)
    return (time.perf_counter() - start) * 1000, answer


def prompt():
    return [rng.randrange(100, min(vocab, 49000)) for _ in range(n)]


kinds = {
    "pp": lambda ids: {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0},
    "echo": lambda ids: {"model": model, "prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 1},
}
post(kinds["pp"](prompt()))  # warm up
times = {k: [] for k in kinds}
for r in range(rounds):
    order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
    for k in order:
        ms, answer = post(kinds[k](prompt()))
        if k == "echo":
            assert len(answer["choices"][0]["logprobs"]["token_logprobs"]) == n
        times[k].append(ms)
pp, echo = statistics.median(times["pp"]), statistics.median(times["echo"])
print(f"{n}-token prompt, {rounds} alternated rounds: pp median {pp:.0f} ms, echo median {echo:.0f} ms, echo/pp {echo / pp:.3f}")
print("pp:", " ".join(f"{t:.0f}" for t in times["pp"]))
print("echo:", " ".join(f"{t:.0f}" for t in times["echo"]))
