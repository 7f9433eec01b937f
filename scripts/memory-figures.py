#!/usr/bin/env python3
"""Resident memory of a running server while 8 requests run at once: VmRSS of PID sampled every
5 ms from /proc/PID/statm, before (idle) and at its peak. Usage:
  scripts/memory-figures.py PORT PID [TOKENS]
Without TOKENS the answers end where the model ends them (max_tokens left at its default);
with TOKENS each request generates exactly that many (ignore_eos). Standard library only."""
import http.client, json, sys, threading, time

port, pid = int(sys.argv[1]), int(sys.argv[2])
tokens = int(sys.argv[3]) if len(sys.argv) > 3 else None
page = 4096


def resident():
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * page


def one(i, out):
    options = {"temperature": 0}
    if tokens:
        options.update({"ignore_eos": True, "max_tokens": tokens})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    body = {"prompt": f"Reader {i}: name one fruit that is red.", "options": options}
    c.request("POST", "/v1/generations", body=json.dumps(body), headers={"Content-Type": "application/json"})
    out[i] = json.loads(c.getresponse().read())


idle = resident()
peak = idle
out = [None] * 8
threads = [threading.Thread(target=one, args=(i, out)) for i in range(8)]
for t in threads:
    t.start()
while any(t.is_alive() for t in threads):
    peak = max(peak, resident())
    time.sleep(0.005)
counts = [o.get("usage", {}).get("completion_tokens") for o in out]
print(f"idle {idle / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB while 8 requests ran; completion tokens {counts}")
