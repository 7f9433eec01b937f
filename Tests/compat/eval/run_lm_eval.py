"""Runs lm-evaluation-harness's `local-completions` model on the inferd_mc task against a running
inferd and writes what the harness computed (its metrics and, per sample, the log-likelihood and
is-greedy flag of each choice with the (context, continuation) strings it scored) to a JSON file.

Run with the Python of the venv that has lm-eval (scripts/compat-tests.sh makes
.build/lmeval-venv), from the repository root, offline:

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 .build/lmeval-venv/bin/python \
        Tests/compat/eval/run_lm_eval.py BASE_URL MODEL_ID OUT.json

It is `lm_eval --model local-completions --tasks inferd_mc --include_path Tests/compat/eval
--log_samples` through the harness's Python entry point, with the task index limited to this
folder: the command line indexes the harness's ~14,700 bundled tasks first (37 s measured on the
shared 2-core machine), which this test does not need. The tokenizer is the server's own
(tokenizer_backend=remote: GET /tokenizer_info, POST /tokenize, POST /detokenize); no model hub.
"""

import json
import sys

import lm_eval
from lm_eval.tasks import TaskManager


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    base_url, model_id, out_path = sys.argv[1:]
    manager = TaskManager(include_path="Tests/compat/eval", include_defaults=False)
    results = lm_eval.simple_evaluate(
        model="local-completions",
        model_args={
            "model": model_id,
            "base_url": base_url.rstrip("/") + "/v1/completions",
            "tokenizer_backend": "remote",
            "num_concurrent": 1,
            "max_retries": 1,
            "timeout": 120,
        },
        tasks=["inferd_mc"],
        task_manager=manager,
        log_samples=True,
        batch_size=1,
    )
    samples = []
    for s in results["samples"]["inferd_mc"]:
        samples.append(
            {
                "doc_id": s["doc_id"],
                "target": s["target"],
                # One (context, continuation) pair per choice, in choice order.
                "arguments": [list(a) for a in s["arguments"]],
                # One [log-likelihood, is_greedy] per choice.
                "resps": [[float(r[0][0]), bool(r[0][1])] for r in s["resps"]],
            }
        )
    out = {
        "lm_eval_version": lm_eval.__version__,
        "metrics": {k: v for k, v in results["results"]["inferd_mc"].items() if isinstance(v, (int, float))},
        "samples": samples,
    }
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
