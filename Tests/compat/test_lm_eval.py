"""lm-evaluation-harness against the running server (issue #34): lm-eval 0.4.13's
`local-completions` model runs the small multiple-choice task in Tests/compat/eval offline, with
the server's own tokenizer endpoints, and every log-likelihood it computed must equal the sum of
the server's echoed log-probabilities for that choice's continuation, asked directly.

The harness runs in its own venv (.build/lmeval-venv, made by scripts/compat-tests.sh; its Python
is in INFERD_LMEVAL_PYTHON) through Tests/compat/eval/run_lm_eval.py; see docs/evaluation.md."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK_DOCS = ROOT / "Tests/compat/eval/inferd_mc.jsonl"


def lmeval_python() -> str:
    python = os.environ.get("INFERD_LMEVAL_PYTHON", str(ROOT / ".build/lmeval-venv/bin/python"))
    if not os.access(python, os.X_OK):
        pytest.fail(f"no lm-eval venv at {python}: run scripts/compat-tests.sh, which makes it")
    return python


def tokenize(raw, text: str) -> list[int]:
    status, body = raw.json("POST", "/tokenize", {"prompt": text, "add_special_tokens": False})
    assert status == 200, body
    return body["tokens"]


def echoed(raw, model: str, ids: list[int]) -> dict:
    """The prompt's own log-probabilities, from a plain /v1/completions call that generates nothing."""
    status, body = raw.json(
        "POST", "/v1/completions", {"model": model, "prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 1}
    )
    assert status == 200, body
    return body["choices"][0]["logprobs"]


@pytest.fixture(scope="module")
def harness_run(base_url, model, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("lm_eval") / "run.json"
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(out.parent / "hf"),  # nothing cached from elsewhere is read
        PYTHONDONTWRITEBYTECODE="1",
    )
    proc = subprocess.run(
        [lmeval_python(), "Tests/compat/eval/run_lm_eval.py", base_url, model, str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(out.read_text())


def test_lm_eval_runs_offline_to_the_end(harness_run):
    docs = [line for line in TASK_DOCS.read_text().splitlines() if line.strip()]
    assert harness_run["lm_eval_version"] == "0.4.13"
    assert sorted(s["doc_id"] for s in harness_run["samples"]) == list(range(len(docs)))
    for sample in harness_run["samples"]:
        assert len(sample["resps"]) == 4
        for loglikelihood, _ in sample["resps"]:
            assert loglikelihood <= 0.0
    assert 0.0 <= harness_run["metrics"]["acc,none"] <= 1.0


# Found by this test (2026-12-06), fixed the same day: the harness asks with max_tokens 1 and
# reads token_logprobs[ctxlen:-1], taking the last entry for the generated token; when that token
# was the end of text it had no entry, and " oxygen" scored 0.0 instead of -7.469035.
def test_lm_eval_loglikelihoods_equal_the_echoed_logprobs(harness_run, raw, model):
    docs = [json.loads(line) for line in TASK_DOCS.read_text().splitlines() if line.strip()]
    samples = sorted(harness_run["samples"], key=lambda s: s["doc_id"])
    assert [s["doc_id"] for s in samples] == list(range(len(docs)))
    correct = 0
    for sample, doc in zip(samples, docs):
        assert len(sample["arguments"]) == len(doc["choices"]) == len(sample["resps"])
        scores = []
        for (context, continuation), (loglikelihood, greedy), choice in zip(
            sample["arguments"], sample["resps"], doc["choices"]
        ):
            assert context == f"Question: {doc['question']}\nAnswer:"
            assert continuation == " " + choice
            # The harness's split for a causal model: the whole text tokenized, the context's
            # tokens cut off the front (the context has no trailing space to move here).
            whole = tokenize(raw, context + continuation)
            n_context = len(tokenize(raw, context))
            assert 0 < n_context < len(whole)
            logprobs = echoed(raw, model, whole)
            entries = logprobs["token_logprobs"]
            assert len(entries) == len(whole) and entries[0] is None
            assert "".join(logprobs["tokens"]) == context + continuation
            expected = sum(entries[n_context:])
            assert abs(loglikelihood - expected) <= 1e-6, (doc["question"], choice, loglikelihood, expected)
            tops = logprobs["top_logprobs"][n_context:]
            assert greedy == all(e == max(t.values()) for e, t in zip(entries[n_context:], tops)), choice
            scores.append(expected)
        correct += scores.index(max(scores)) == doc["answer"]
    assert harness_run["metrics"]["acc,none"] == pytest.approx(correct / len(docs), abs=1e-12)
