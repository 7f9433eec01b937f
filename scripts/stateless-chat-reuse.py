#!/usr/bin/env python3
"""How much of a resent conversation the prefix cache reuses.

A stateless chat client (the OpenAI chat API without sessions) resends the whole conversation
every turn. This plays six turns against a running inferd, each turn's request holding every
earlier message and answer, and prints each turn's prompt tokens, the tokens reused from a kept
prefix (usage.prompt_tokens_details.cached_tokens) and their share, with the time to the answer.
A pause between turns (a person reading; --pause, 1 s by default) is idle time, in which the
engine recomputes the kept answer as prompt rows so that the next turn reuses it too.

    python3 scripts/stateless-chat-reuse.py http://127.0.0.1:8080 [MODEL] [--max-tokens 48] [--pause 1]
        [--json OUT]

MODEL defaults to the server's first model. Greedy answers, so a run repeats.
"""
import argparse
import json
import time
import urllib.error
import urllib.request

QUESTIONS = [
    "Name three fruits that grow on trees.",
    "Which of them has the most vitamin C?",
    "How should I store it to keep it fresh?",
    "Give me a simple recipe that uses it.",
    "How long does that recipe take?",
    "Summarize our conversation in one sentence.",
]


def post(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        raise SystemExit(f"{url}: HTTP {error.code}: {error.read().decode(errors='replace')}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("model", nargs="?")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--pause", type=float, default=1.0,
                        help="seconds between an answer and the next turn (a person reading it)")
    parser.add_argument("--json")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    model = args.model
    if model is None:
        with urllib.request.urlopen(base + "/v1/models", timeout=30) as response:
            model = json.load(response)["data"][0]["id"]
    messages = []
    rows = []
    for turn, question in enumerate(QUESTIONS, start=1):
        if turn > 1:
            time.sleep(args.pause)
        messages.append({"role": "user", "content": question})
        started = time.monotonic()
        answer = post(base + "/v1/chat/completions", {
            "model": model, "messages": messages, "max_tokens": args.max_tokens, "temperature": 0})
        elapsed = time.monotonic() - started
        usage = answer["usage"]
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        rows.append({"turn": turn, "prompt_tokens": usage["prompt_tokens"], "cached_tokens": cached,
                     "completion_tokens": usage["completion_tokens"], "seconds": round(elapsed, 3)})
        messages.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})
    print(f"model: {model}, answers up to {args.max_tokens} tokens, {args.pause} s between turns")
    print("| turn | prompt tokens | reused (cached_tokens) | share | answer tokens | seconds |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        share = r["cached_tokens"] / r["prompt_tokens"]
        print(f"| {r['turn']} | {r['prompt_tokens']} | {r['cached_tokens']} | {share:.0%} | "
              f"{r['completion_tokens']} | {r['seconds']:.2f} |")
    later = rows[1:]
    total = sum(r["cached_tokens"] for r in later) / sum(r["prompt_tokens"] for r in later)
    print(f"turns 2-{len(rows)}: {total:.0%} of their prompt tokens reused; "
          f"lowest turn {min(r['cached_tokens'] / r['prompt_tokens'] for r in later):.0%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": model, "rows": rows}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
