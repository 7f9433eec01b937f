#!/usr/bin/env python3
"""Greedy answers of the schema corpus (Tests/Fixtures/schemas) under sampling settings: for each
setting, how many compiled schemas finish (`stop`) and validate (PyPI jsonschema with the format
checker of the schema's draft, as Tests/compat/test_structured_corpus.py), which do not, and the
longest answer in tokens. Same prompt and budgets as the corpus tests.

Needs a running server and the compat venv (jsonschema and the format packages):
  .build/release/inferd serve --port 8080 &
  .build/compat-venv/bin/python scripts/corpus-penalties.py http://127.0.0.1:8080 \\
      none frequency_penalty=0.5 presence_penalty=0.5,frequency_penalty=0.3 repeat_penalty=1.1
A setting is `none` or comma-separated `name=value` pairs sent as request fields; `--only a.json,b.json`
runs a few schemas.
"""

import json
import pathlib
import sys
import time
import urllib.error
import urllib.request

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "compat"))
# The compat test's request and format checker, so the experiment asks exactly what the test asks.
from test_structured_corpus import DIRECTORY, corpus_request, format_checker  # noqa: E402


def post(base, body):
    request = urllib.request.Request(
        base + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=1800) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def setting_fields(text):
    if text == "none":
        return {}
    fields = {}
    for pair in text.split(","):
        name, value = pair.split("=")
        fields[name] = float(value)
    return fields


def run(base, model, name, extra):
    schema = json.loads((DIRECTORY / name).read_text())
    body = corpus_request(model, name, schema, **extra)
    status, answer = post(base, body)
    if status == 400 and "unsupported schema keyword" in answer["error"]["message"]:
        return None
    assert status == 200, answer
    choice = answer["choices"][0]
    tokens = answer["usage"]["completion_tokens"]
    if choice["finish_reason"] != "stop":
        return (False, tokens, f"{choice['finish_reason']}: …{choice['message']['content'][-60:]!r}")
    try:
        jsonschema.validate(json.loads(choice["message"]["content"]), schema,
                            format_checker=format_checker(schema))
    except (jsonschema.ValidationError, json.JSONDecodeError) as e:
        return (False, tokens, f"invalid: {str(e).splitlines()[0][:100]}")
    return (True, tokens, "")


def main():
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1].split(",")
        del args[i:i + 2]
    base, settings = args[0].rstrip("/"), args[1:] or ["none"]
    with urllib.request.urlopen(base + "/v1/models") as r:
        model = json.load(r)["data"][0]["id"]
    names = only or sorted(p.name for p in DIRECTORY.glob("*.json"))
    rows = []
    for setting in settings:
        extra = setting_fields(setting)
        results = {}
        started = time.monotonic()
        for name in names:
            result = run(base, model, name, extra)
            if result is None:
                continue
            results[name] = result
            ok, tokens, why = result
            print(f"{setting}\t{name}\t{'ok' if ok else 'FAIL'}\t{tokens}\t{why}", flush=True)
        failed = sorted(n for n, r in results.items() if not r[0])
        longest = max((r[1] for r in results.values()), default=0)
        longest_ok = max((r[1] for r in results.values() if r[0]), default=0)
        rows.append((setting, len(results) - len(failed), len(results), failed, longest, longest_ok,
                     time.monotonic() - started))
    print("\n| setting (greedy) | finish and validate | not | longest answer (tokens; of those that finish) | time |")
    print("|---|---|---|---|---|")
    for setting, good, total, failed, longest, longest_ok, seconds in rows:
        print(f"| {setting} | {good} of {total} | {', '.join(failed) or '—'} | {longest} ({longest_ok}) | {seconds:.0f} s |")


if __name__ == "__main__":
    main()
