#!/usr/bin/env python3
"""What a client of an OpenAI-compatible server sees, measured the same way against inferd and
llama.cpp's llama-server, so the two can be run in the same minutes and compared (README,
"Speed II targets"). Streamed /v1/chat/completions, greedy, standard library only.

  scripts/openai-figures.py --port P [--pid PID] [--inferd-sessions] [--label NAME] [--variant WORDS]

Every prompt is the same from run to run unless --variant adds words to each: llama.cpp keeps an
earlier identical prompt's KV cache in its slots and answers a repeated one from it, which is a
different measurement (a repeated prompt) from a client's new one.

- one stream: a short prompt ("Write a detailed story about X.", ~30 tokens after the chat
  template), 128 tokens (ignore_eos): time to the first chunk with text, tokens per second after it;
- 8 streams started together (8 different prompts, 128 tokens each): aggregate completion tokens per
  second over the wall time, median and largest time to first text;
- one arrival: 7 streams decoding, then one more: its time to first text;
- a 6-turn conversation (system message, max_tokens 64, the whole history sent each turn, as a
  stateless client does): time to first text per turn. llama.cpp reuses its slot's cache
  (cache_prompt, its default); inferd has no cache between stateless requests, so with
  --inferd-sessions each request also names a server-side session (`session_id`, created first
  with the same system message) whose kept KV cache the turn reuses;
- with --pid, the server's resident memory (VmRSS) after the 8 streams.

One JSON line on stdout with every figure (milliseconds, tokens per second, MiB).
"""
import argparse, http.client, json, statistics, threading, time

from loadtools import proc_stats

TOPICS = ["a lighthouse", "a lost key", "a mountain village", "a clockmaker", "the first snow",
          "a river barge", "an old library", "a night train"]


MODEL = None


def model_id(port):
    """The id the server lists first under /v1/models (OpenAI's `model` is required by inferd)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/v1/models")
    models = json.loads(c.getresponse().read())
    c.close()
    return models["data"][0]["id"]


def stream_chat(port, body, on_first=None):
    """One streamed chat completion: seconds to first text and to the end, completion tokens, text."""
    body = dict(body, model=MODEL, stream=True, stream_options={"include_usage": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    first, usage, text = None, None, ""
    while True:
        line = r.fp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices", []):
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece and first is None:
                first = time.perf_counter() - t0
                if on_first:
                    on_first()
            text += piece
    end = time.perf_counter() - t0
    c.close()
    if first is None or usage is None:
        raise RuntimeError("the stream ended without text or usage")
    return first, end, usage["completion_tokens"], text, usage["prompt_tokens"]


VARIANT = ""


def story(topic, tokens):
    return {"messages": [{"role": "user", "content": f"Write a detailed story about {topic}{VARIANT}."}],
            "max_tokens": tokens, "temperature": 0, "ignore_eos": True}


def one_stream(port):
    first, end, n, _, prompt = stream_chat(port, story(TOPICS[0], 128))
    return {"ttft_ms": first * 1000, "tok_s": (n - 1) / (end - first), "prompt_tokens": prompt}


def concurrent(port, streams=8, pid=None):
    out = [None] * streams
    def run(i):
        out[i] = stream_chat(port, story(TOPICS[i % len(TOPICS)], 128))
    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttfts = sorted(o[0] * 1000 for o in out)
    figures = {"aggregate_tok_s": sum(o[2] for o in out) / wall, "ttft_median_ms": statistics.median(ttfts),
               "ttft_max_ms": ttfts[-1]}
    if pid:
        figures["rss_mib"] = proc_stats(pid)["rss_mb"]  # VmRSS in KiB / 1024
    return figures


def arrival(port, running=7):
    started = threading.Semaphore(0)
    def run(i):
        try:
            stream_chat(port, story(TOPICS[i % len(TOPICS)] + " at dusk", 512), on_first=started.release)
        except Exception:
            started.release()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(running)]
    for t in threads:
        t.start()
    for _ in range(running):
        started.acquire()
    first, _, _, _, _ = stream_chat(port, story("a quiet harbour", 8))
    for t in threads:
        t.join()
    return {"arrival_ttft_ms": first * 1000}


def conversation(port, sessions):
    system = "You are a helpful assistant. Answer concisely."
    extra = {}
    if sessions:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("POST", "/v1/sessions", json.dumps({"instructions": system + VARIANT}), {"Content-Type": "application/json"})
        extra = {"session_id": json.loads(c.getresponse().read())["id"]}
        c.close()
    messages = [{"role": "system", "content": system + VARIANT}]
    ttfts = []
    for i in range(1, 7):
        messages.append({"role": "user", "content": f"Tell me one fact about the number {i}."})
        first, _, _, text, _ = stream_chat(port, dict({"messages": messages, "max_tokens": 64, "temperature": 0}, **extra))
        messages.append({"role": "assistant", "content": text})
        ttfts.append(round(first * 1000, 1))
    if sessions:
        # Its KV cache would otherwise stay resident and count in the next run's memory figure.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("DELETE", f"/v1/sessions/{extra['session_id']}")
        if c.getresponse().status != 204:
            raise RuntimeError("the session was not deleted")
        c.close()
    return {"turn_ttft_ms": ttfts}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int)
    p.add_argument("--label", default="")
    p.add_argument("--inferd-sessions", action="store_true")
    p.add_argument("--variant", default="", help="words appended to every prompt, so that a server that keeps "
                   "earlier prompts' KV cache (llama.cpp's cache_prompt) meets new ones each run")
    a = p.parse_args()
    global MODEL, VARIANT
    MODEL = model_id(a.port)
    VARIANT = f" ({a.variant})" if a.variant else ""
    stream_chat(a.port, story("warming up", 8))
    figures = {"label": a.label}
    figures.update(one_stream(a.port))
    figures.update(concurrent(a.port, pid=a.pid))
    figures.update(arrival(a.port))
    figures.update(conversation(a.port, a.inferd_sessions))
    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
