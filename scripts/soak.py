#!/usr/bin/env python3
"""make soak: many loopback clients against the release binary for a while, then checks.

Starts `inferd serve` on port 0 (with API keys, so auth is exercised), waits for /health, and runs
CLIENTS threads until SECONDS pass. Each request is one of: a session's life (create, turns
some of them abandoned mid-stream, a read by another key which must get 404, a transcript
check, delete), a one-shot /v1/generations, a full
stream, a stream or one-shot the client abandons part-way (a cancel: the server must notice the
disconnect and stop), or a bad request (bad JSON, too deep, max_tokens over the limit, no key,
wrong key, unknown path, oversized body). Every request sent is classified by the client as
completed, cancelled, refused (the expected 4xx) or failed (anything else); they must add up.

Meanwhile FLOOD_CLIENTS threads of a third key flood the server (fair shares, issue #39): each
keeps one long stream or background response in flight and asks again at once, more than the
key's share (`per_key_max_generations`, by default half the engine's places). The flooding key
may get 429 `key_busy` (refused) but nothing else; the first key's clients must still see no
failure at all (no 503 `server_busy`, no timeout).

At the end: the process is alive, failed == 0, the server's own request count matches what was
sent, threads / fds / RSS after the load settles are within the bounds below of their values
after warm-up, and SIGTERM exits 0. Standard library only.
"""
import argparse, json, os, random, re, socket, sys, tempfile, threading, time

from loadtools import proc_stats, read_all, report, start_server, stop_server

THREAD_BOUND = 4          # extra threads allowed after the load, versus after warm-up
FD_BOUND = 4              # extra open fds allowed
RSS_BOUND_MB = 64         # extra resident memory allowed
KEY = "soak-key-0123456789abcdef"
OTHER_KEY = "soak-other-key-0123456789"
FLOOD_KEY = "soak-flood-key-0123456789"




class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {"sent": 0, "completed": 0, "cancelled": 0, "refused": 0, "failed": 0}
        self.kinds = {}
        self.failures = []

    def add(self, what, kind, detail=None):
        with self.lock:
            self.c[what] += 1
            self.kinds.setdefault(kind, {}).setdefault(what, 0)
            self.kinds[kind][what] += 1
            if what == "failed" and len(self.failures) < 10:
                self.failures.append(f"{kind}: {detail}")

    def sent(self):
        with self.lock:
            self.c["sent"] += 1


def raw_request(port, method, path, body=b"", headers=None, timeout=120):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    s.sendall(head.encode() + body)
    return s




def status_of(data):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else 0


def client(port, deadline, counts, rng):
    auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    other = {"Authorization": f"Bearer {OTHER_KEY}", "Content-Type": "application/json"}
    prompts = ["Hi", "Name three colors.", "Count to ten.", "What is the capital of France?", "Write a haiku."]
    while time.monotonic() < deadline:
        kind = rng.choices(
            ["oneshot", "stream", "stream_abandon", "oneshot_abandon", "bad", "session"],
            weights=[3, 3, 2, 1, 3, 2])[0]
        if kind == "session":
            session_flow(port, counts, rng, auth, other, prompts)
            continue
        body = {"prompt": rng.choice(prompts), "options": {"max_tokens": rng.randint(1, 24), "temperature": 0.7}}
        counts.sent()
        try:
            if kind == "oneshot":
                s = raw_request(port, "POST", "/v1/generations", json.dumps(body).encode(), auth)
                data = read_all(s)
                s.close()
                ok = status_of(data) == 200 and b'"status":"completed"' in data
                counts.add("completed" if ok else "failed", kind, data[:200])
            elif kind == "stream":
                body["stream"] = True
                s = raw_request(port, "POST", "/v1/generations", json.dumps(body).encode(), auth)
                data = read_all(s)
                s.close()
                ok = status_of(data) == 200 and data.count(b"event: completed") == 1 and b"event: error" not in data
                counts.add("completed" if ok else "failed", kind, data[-300:])
            elif kind == "stream_abandon":
                body["stream"] = True
                body["options"]["max_tokens"] = 200
                body["options"]["ignore_eos"] = True
                s = raw_request(port, "POST", "/v1/generations", json.dumps(body).encode(), auth)
                wanted = rng.choice([b"event: started", b"event: snapshot", b"HTTP/1.1"])
                data = read_all(s, stop=lambda d: wanted in d)
                s.close()  # a disconnect mid-stream: the server must cancel the generation
                counts.add("cancelled" if status_of(data) == 200 else "failed", kind, data[:200])
            elif kind == "oneshot_abandon":
                body["options"]["max_tokens"] = 200
                body["options"]["ignore_eos"] = True
                s = raw_request(port, "POST", "/v1/generations", json.dumps(body).encode(), auth)
                time.sleep(rng.uniform(0.0, 0.3))
                s.close()
                counts.add("cancelled", kind)
            else:
                which = rng.choice(["json", "deep", "max_tokens", "nokey", "badkey", "path", "big"])
                expect = {"json": 400, "deep": 400, "max_tokens": 400, "nokey": 401, "badkey": 401,
                          "path": 404, "big": 413}[which]
                headers = dict(auth)
                payload = json.dumps(body).encode()
                path = "/v1/generations"
                if which == "json":
                    payload = b'{"prompt": "Hi"'
                elif which == "deep":
                    payload = b'{"prompt": "Hi", "options": {"stop": ' + b"[" * 100 + b"]" * 100 + b"}}"
                elif which == "max_tokens":
                    payload = json.dumps({"prompt": "Hi", "options": {"max_tokens": 100000}}).encode()
                elif which == "nokey":
                    del headers["Authorization"]
                elif which == "badkey":
                    headers["Authorization"] = "Bearer not-the-key-0123456789"
                elif which == "path":
                    path = "/v1/nothing"
                elif which == "big":
                    payload = b'{"prompt": "' + b"x" * (2 << 20) + b'"}'
                try:
                    s = raw_request(port, "POST", path, payload, headers)
                    data = read_all(s)
                    s.close()
                except (BrokenPipeError, ConnectionResetError):
                    data = b""  # the server may refuse an oversized body before reading it all
                st = status_of(data)
                ok = st == expect and b'"error"' in data
                if which == "big" and st == 0:
                    ok = True  # answered 413 and closed while we were still sending: still a refusal
                counts.add("refused" if ok else "failed", "bad_" + which, data[:200])
        except Exception as e:  # noqa: BLE001 - every outcome must be accounted for
            counts.add("failed", kind, repr(e))


def flood_client(port, deadline, counts, rng, model):
    """Keeps one generation of the flooding key in flight: a long stream read to its end, or a
    background response (which holds a place but no connection). 200 or 429 key_busy only."""
    auth = {"Authorization": f"Bearer {FLOOD_KEY}", "Content-Type": "application/json"}
    while time.monotonic() < deadline:
        kind = rng.choices(["flood_stream", "flood_background"], weights=[3, 1])[0]
        if kind == "flood_stream":
            path = "/v1/generations"
            body = {"prompt": f"Count to one hundred. ({rng.random()})", "stream": True,
                    "options": {"max_tokens": 64, "ignore_eos": True, "temperature": 0.7}}
        else:
            path = "/v1/responses"
            body = {"model": model, "input": f"Count to one hundred. ({rng.random()})", "background": True,
                    "max_output_tokens": 64, "ignore_eos": True, "temperature": 0.7}
        counts.sent()
        try:
            s = raw_request(port, "POST", path, json.dumps(body).encode(), auth)
            data = read_all(s)
            s.close()
        except Exception as e:  # noqa: BLE001
            counts.add("failed", kind, repr(e))
            continue
        st = status_of(data)
        if st == 429 and b'"key_busy"' in data:
            counts.add("refused", kind)
            time.sleep(0.05)  # a flood, not a spin
        elif st == 200 and (kind == "flood_background" or data.count(b"event: completed") == 1):
            counts.add("completed", kind)
            if kind == "flood_background":
                time.sleep(1.0)  # it runs on without a connection: keep about one per thread
        else:
            counts.add("failed", kind, data[:300])


MONITOR = {"answered": 0}  # /health and /metrics calls the soak itself made (the server counts them too)


def call(port, counts, kind, method, path, body, headers, expect, detail_ok=None):
    """One counted request whose answer should have status `expect` (2xx: completed, 4xx:
    refused); returns the parsed JSON body or None."""
    counts.sent()
    try:
        s = raw_request(port, method, path, json.dumps(body).encode() if body is not None else b"", headers)
        data = read_all(s)
        s.close()
    except Exception as e:  # noqa: BLE001
        counts.add("failed", kind, repr(e))
        return None
    st = status_of(data)
    payload = data.split(b"\r\n\r\n", 1)[-1]
    parsed = None
    if b"chunked" not in data.split(b"\r\n\r\n", 1)[0].lower():
        try:
            parsed = json.loads(payload) if payload else {}
        except ValueError:
            parsed = None
    problem = None if st == expect else f"status {st}, expected {expect}: {data[:200]!r}"
    if problem is None and detail_ok is not None:
        problem = detail_ok(parsed, data)
    if problem:
        counts.add("failed", kind, problem)
        return None
    counts.add("completed" if st < 300 else "refused", kind)
    return parsed if parsed is not None else {}


def session_flow(port, counts, rng, auth, other, prompts):
    """Create a session, run turns (some streamed, some abandoned mid-stream), check that the
    other key cannot see it, check the transcript, delete it."""
    created = call(port, counts, "session_create", "POST", "/v1/sessions",
                   {"instructions": "Be brief.", "options": {"max_tokens": 8, "temperature": 0.7}}, auth, 201)
    if not created:
        return
    sid = created["id"]
    turns = 0
    for _ in range(rng.randint(1, 3)):
        body = {"prompt": rng.choice(prompts), "options": {"max_tokens": rng.randint(1, 8)}}
        if rng.random() < 0.3:
            body["stream"] = True
            body["options"].update({"max_tokens": 200, "ignore_eos": True})
            counts.sent()
            try:
                s = raw_request(port, "POST", f"/v1/sessions/{sid}/responses", json.dumps(body).encode(), auth)
                data = read_all(s, stop=lambda d: b"event: snapshot" in d or b"event: error" in d)
                s.close()
                ok = status_of(data) == 200
                counts.add("cancelled" if ok else "failed", "session_turn_abandon", data[:200])
                turns += 1 if ok else 0
            except Exception as e:  # noqa: BLE001
                counts.add("failed", "session_turn_abandon", repr(e))
        else:
            r = call(port, counts, "session_turn", "POST", f"/v1/sessions/{sid}/responses", body, auth, 200)
            turns += 1 if r is not None else 0
    # The other key: 404, as if the session did not exist.
    call(port, counts, "session_other_key", "GET", f"/v1/sessions/{sid}", None, other, 404)
    # A last turn waits behind anything still cancelling; then every response must be terminal.
    if call(port, counts, "session_turn", "POST", f"/v1/sessions/{sid}/responses",
            {"prompt": "Bye.", "options": {"max_tokens": 1}}, auth, 200) is not None:
        turns += 1

    def consistent(parsed, _data):
        t = (parsed or {}).get("transcript") or []
        prompts_seen = [e for e in t if e.get("type") == "prompt"]
        responses = [e for e in t if e.get("type") == "response"]
        bad = [e.get("status") for e in responses if e.get("status") not in ("completed", "cancelled")]
        if len(prompts_seen) != turns or len(responses) != turns or bad:
            return f"transcript of {sid}: {len(prompts_seen)} prompts, {len(responses)} responses, {turns} turns, bad {bad}"
        return None

    call(port, counts, "session_transcript", "GET", f"/v1/sessions/{sid}", None, auth, 200, consistent)
    call(port, counts, "session_delete", "DELETE", f"/v1/sessions/{sid}", None, auth, 204)


def get(port, path, headers=None):
    s = raw_request(port, "GET", path, headers=headers or {}, timeout=10)
    data = read_all(s)
    s.close()
    if status_of(data):
        MONITOR["answered"] += 1
    return status_of(data), data.split(b"\r\n\r\n", 1)[-1]


def server_metrics(port):
    """(HTTP requests completed, generations by finish reason) from the server's /metrics."""
    _, body = get(port, "/metrics", {"Authorization": f"Bearer {KEY}"})
    total = 0.0
    finishes = {}
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("inferd_http_requests_total{"):
            total += float(line.rsplit(" ", 1)[1])
        m = re.match(r'inferd_generations_total\{finish_reason="(\w+)"\} (\S+)', line)
        if m:
            finishes[m.group(1)] = int(float(m.group(2)))
    return total, finishes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 120)))
    ap.add_argument("--clients", type=int, default=int(os.environ.get("SOAK_CLIENTS", 12)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", 1)))
    ap.add_argument("--flood-clients", type=int, default=int(os.environ.get("SOAK_FLOOD_CLIENTS", 80)))
    a = ap.parse_args()

    data_dir = tempfile.mkdtemp(prefix="inferd-soak-")
    env = dict(os.environ, INFERD_API_KEYS=f"{KEY},{OTHER_KEY},{FLOOD_KEY}")
    proc, port, log, log_path = start_server(
        "soak", a.binary, a.model, data_dir, extra_args=("--max-tokens-limit", "256"), env=env,
        health=lambda port: get(port, "/health")[0])  # counted: the server counts these probes too

    counts = Counts()
    model = json.loads(get(port, "/health")[1]).get("model", "")
    warmup = min(15.0, a.seconds / 4)
    deadline = time.monotonic() + a.seconds
    threads = [threading.Thread(target=client, args=(port, deadline, counts, random.Random(a.seed * 1000 + i)))
               for i in range(a.clients)]
    threads += [threading.Thread(target=flood_client, args=(port, deadline, counts, random.Random(a.seed * 7919 + i), model))
                for i in range(a.flood_clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(warmup)
    warm = proc_stats(proc.pid)
    peak = dict(warm)
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        st = proc_stats(proc.pid)
        for k in peak:
            peak[k] = max(peak[k], st[k])
    elapsed = time.monotonic() - t0
    time.sleep(3)  # let abandoned requests finish cancelling and connections close
    alive = proc.poll() is None
    final = proc_stats(proc.pid) if alive else None
    monitors = MONITOR["answered"]  # a request is counted when it completes: /metrics cannot count itself
    served, finishes = server_metrics(port) if alive else (-1, {})
    health_ok = alive and get(port, "/health")[0] == 200

    exit_code = stop_server(proc, log)

    c = counts.c
    accounted = c["completed"] + c["cancelled"] + c["refused"] + c["failed"]
    flood = {k: v for k, v in counts.kinds.items() if k.startswith("flood_")}
    flood_refused = sum(v.get("refused", 0) for v in flood.values())
    flood_completed = sum(v.get("completed", 0) for v in flood.values())
    checks = [
        ("the flooding key was served and refused 429 key_busy past its share (none of it 503)",
         a.flood_clients == 0 or (flood_refused > 0 and flood_completed > 0)),
        ("server alive at the end", alive),
        ("every request accounted for (completed + cancelled + refused + failed = sent)", accounted == c["sent"]),
        ("no failed requests", c["failed"] == 0),
        ("server counted every request sent", served == c["sent"] + monitors),
        (f"threads within +{THREAD_BOUND} of warm-up", final and final["threads"] <= warm["threads"] + THREAD_BOUND),
        (f"fds within +{FD_BOUND} of warm-up", final and final["fds"] <= warm["fds"] + FD_BOUND),
        (f"RSS within +{RSS_BOUND_MB} MB of warm-up", final and final["rss_mb"] <= warm["rss_mb"] + RSS_BOUND_MB),
        ("/health still 200 after the load", health_ok),
        ("SIGTERM exits 0", exit_code == 0),
    ]
    print(f"\nsoak summary: {a.clients} clients and {a.flood_clients} flooding ones for {elapsed:.0f} s against "
          f"{a.binary} (log: {log_path})")
    print(f"  sent {c['sent']}: completed {c['completed']}, cancelled {c['cancelled']}, refused {c['refused']}, "
          f"failed {c['failed']} ({c['sent'] / max(elapsed, 1):.1f} req/s)")
    for kind in sorted(counts.kinds):
        print(f"    {kind:18} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.kinds[kind].items())))
    print(f"  server counted {served:.0f} HTTP requests (sent {c['sent']} + {monitors} health probes)")
    print("  server generations by finish reason: " + ", ".join(f"{k} {v}" for k, v in sorted(finishes.items())))
    fmt = lambda s: f"threads {s['threads']}, fds {s['fds']}, RSS {s['rss_mb']:.1f} MB" if s else "n/a"
    print(f"  after warm-up: {fmt(warm)}\n  peak:          {fmt(peak)}\n  after load:    {fmt(final)}")
    for f in counts.failures:
        print(f"  failure: {f}")
    report(checks)


if __name__ == "__main__":
    main()
