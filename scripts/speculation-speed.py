#!/usr/bin/env python3
"""Decode speed with and without speculative decoding, in alternated rounds.

Give two running inferd servers on the same model file: one with `speculative_lookup: 0`, one
with it on. Each round sends both the same greedy requests (the order alternating): a
JSON-schema answer whose objects repeat their keys (prompt lookup finds them), and a free-text
answer. It prints the median decode tokens per second of each (completion tokens over the time
from the first to the last token, from streamed chunks), their ratio, and checks that the two
servers' answers are identical.

    python3 scripts/speculation-speed.py http://127.0.0.1:8081 http://127.0.0.1:8082 [--rounds 5]
"""
import argparse
import json
import statistics
import time
import urllib.request

SCHEMA = {
    "type": "object",
    "properties": {
        "people": {
            "type": "array", "minItems": 6, "maxItems": 6,
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 12},
                               "city": {"type": "string", "maxLength": 12},
                               "age": {"type": "integer"}},
                "required": ["name", "city", "age"], "additionalProperties": False,
            },
        },
    },
    "required": ["people"], "additionalProperties": False,
}

CASES = {
    "json": {"messages": [{"role": "user", "content": "List six people with their name, city and age."}],
             "response_format": {"type": "json_schema", "json_schema": {"name": "people", "schema": SCHEMA}}},
    "text": {"messages": [{"role": "user", "content": "Write a short story about a lighthouse keeper."}]},
}


def stream(base, body):
    """(text, completion tokens, seconds from the first content to the last)."""
    request = urllib.request.Request(
        base + "/v1/chat/completions",
        data=json.dumps({**body, "stream": True, "stream_options": {"include_usage": True}}).encode(),
        headers={"content-type": "application/json"}, method="POST")
    text, tokens, first, last = "", 0, None, None
    with urllib.request.urlopen(request, timeout=600) as response:
        for line in response:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content")
                if piece:
                    now = time.monotonic()
                    first = first or now
                    last = now
                    text += piece
    return text, tokens, (last - first) if first and last else 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("plain")
    parser.add_argument("speculative")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    with urllib.request.urlopen(args.plain.rstrip("/") + "/v1/models", timeout=30) as response:
        model = json.load(response)["data"][0]["id"]
    speeds = {(case, side): [] for case in CASES for side in ("plain", "speculative")}
    answers = {}
    for r in range(args.rounds):
        for case, body in CASES.items():
            sides = [("plain", args.plain), ("speculative", args.speculative)]
            if r % 2:
                sides.reverse()
            for side, base in sides:
                request = {**body, "model": model, "max_tokens": args.max_tokens, "temperature": 0}
                text, tokens, seconds = stream(base.rstrip("/"), request)
                if seconds > 0 and tokens > 1:
                    speeds[(case, side)].append((tokens - 1) / seconds)
                answers.setdefault((case, side), text)
                if answers[(case, side)] != text:
                    print(f"warning: {case} on {side} answered differently in round {r}")
    print(f"model: {model}; {args.rounds} alternated rounds, greedy, up to {args.max_tokens} tokens")
    print("| answer | plain tok/s | speculative tok/s | ratio | same text |")
    print("|---|---|---|---|---|")
    for case in CASES:
        plain = statistics.median(speeds[(case, "plain")])
        fast = statistics.median(speeds[(case, "speculative")])
        same = answers[(case, "plain")] == answers[(case, "speculative")]
        print(f"| {case} | {plain:.1f} | {fast:.1f} | {fast / plain:.2f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
