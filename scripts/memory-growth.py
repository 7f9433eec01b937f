#!/usr/bin/env python3
"""Whether a running server's memory grows as its prompts use more of the vocabulary: VmRSS of
PID before and after N sequential requests (default 200), each a prompt of 40 words drawn at
random (fixed seed) from the words of this repository's README, answered with 4 tokens.
Usage: scripts/memory-growth.py PORT PID [N]. Standard library only."""
import http.client, json, os, random, re, sys

port, pid = int(sys.argv[1]), int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
words = sorted(set(re.findall(r"[A-Za-z][a-z]{2,}", open(readme, encoding="utf-8").read())))
random.seed(7)


def resident():
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


print(f"{len(words)} distinct words; before: {resident():.1f} MiB")
for i in range(n):
    prompt = " ".join(random.choice(words) for _ in range(40))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = {"prompt": prompt, "options": {"max_tokens": 4}}
    c.request("POST", "/v1/generations", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = c.getresponse()
    response.read()
    c.close()
    if response.status != 200:
        sys.exit(f"request {i + 1} answered {response.status}")
    if (i + 1) % max(1, n // 4) == 0:
        print(f"after {i + 1} requests: {resident():.1f} MiB")
