#!/usr/bin/env python3
"""The cost of inferd's proxy hop (--backend openai) over an inferd upstream on loopback.

Usage: scripts/proxy-overhead.py --direct http://127.0.0.1:8081 --proxy http://127.0.0.1:8082
       [--reps 150] [--rounds 3] [--streams 8] [--tokens 64]

Measures, alternating direct and proxied requests so machine noise hits both alike (the order
within each pair alternates too, so neither always runs first):
  - time to first token: a streamed greedy chat completion, from sending the request to the
    first content delta; the median over --reps of each, and the median of the per-pair
    differences (proxy minus direct), which cancels the noise the two share;
  - throughput: --streams concurrent streamed completions of --tokens tokens each
    (ignore_eos), total completion tokens / wall time; the median over --rounds of each, and the
    median of the per-round ratios.
"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse


def stream(base, model, tokens, prompt):
    url = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    body = json.dumps({"model": model, "stream": True, "temperature": 0, "max_tokens": tokens, "ignore_eos": True,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": prompt}]})
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    first = None
    deltas = 0
    generated = None
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            # Tokens as the server counts them: a delta may carry several tokens when the
            # client reads slower than they come, so counting deltas would favour the slower side.
            generated = chunk["usage"]["completion_tokens"]
        for choice in chunk.get("choices", []):
            if choice.get("delta", {}).get("content"):
                deltas += 1
                if first is None:
                    first = time.perf_counter()
    conn.close()
    assert generated is not None, "no usage in the stream"
    return (first - start) * 1000, generated


def throughput(base, model, streams, tokens):
    results = [0] * streams

    def run(i):
        results[i] = stream(base, model, tokens, "Tell story number %d." % i)[1]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(results) / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--direct", required=True)
    p.add_argument("--proxy", required=True)
    # 150: on a shared 2-core VM the direct first token itself moves by several ms from request to
    # request, and the median of 30 pair differences moved between -11 and +9 ms from run to run.
    p.add_argument("--reps", type=int, default=150)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--streams", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    a = p.parse_args()
    url = urllib.parse.urlparse(a.direct)
    conn = http.client.HTTPConnection(url.hostname, url.port)
    conn.request("GET", "/v1/models")
    model = json.loads(conn.getresponse().read())["data"][0]["id"]
    ttft = {"direct": [], "proxy": []}
    stream(a.direct, model, 2, "Hi")  # warm up both
    stream(a.proxy, model, 2, "Hi")
    pairs = (("direct", a.direct), ("proxy", a.proxy))
    for rep in range(a.reps):
        for name, base in pairs if rep % 2 == 0 else pairs[::-1]:
            ttft[name].append(stream(base, model, 2, "What is the capital of France?")[0])
    tps = {"direct": [], "proxy": []}
    for round in range(a.rounds):
        for name, base in pairs if round % 2 == 0 else pairs[::-1]:
            tps[name].append(throughput(base, model, a.streams, a.tokens))
    d, q = statistics.median(ttft["direct"]), statistics.median(ttft["proxy"])
    added = statistics.median(y - x for x, y in zip(ttft["direct"], ttft["proxy"]))
    print("time to first token, median of %d: direct %.2f ms, proxy %.2f ms; added (median of pair differences) %.2f ms"
          % (a.reps, d, q, added))
    d, q = statistics.median(tps["direct"]), statistics.median(tps["proxy"])
    ratio = statistics.median(y / x for x, y in zip(tps["direct"], tps["proxy"]))
    print("throughput, %d streams x %d tokens, median of %d: direct %.1f tok/s, proxy %.1f tok/s "
          "(median of round ratios %.1f %%)" % (a.streams, a.tokens, a.rounds, d, q, 100 * ratio))


if __name__ == "__main__":
    main()
