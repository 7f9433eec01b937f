#!/usr/bin/env python3
"""Writes Tests/Fixtures/reference/score.json: llama.cpp's log-probability of every token of three
texts given the tokens before it, with the top 5 there and the text's perplexity, for the default
model (the reference for inferd's echoed log-probabilities, /v1/completions with echo).

The texts (about 10, 100 and 300 tokens: one inside inferd's 64-token prompt chunk, two across
it) are tokenized by the same llama.cpp (parse_special off; BOS only if the model adds one, which
SmolLM2 does not: the convention of tokenize.json), then scored in one llama_decode call each by
scripts/llama-cpp-score.cpp (scripts/llama-cpp-build.sh builds both).

Usage (from the package root):
    python3 scripts/make-score-reference.py SCORE_TOOL [MODEL] [OUT]
    SCORE_TOOL  the built llama-cpp-score (scripts/llama-cpp-build.sh prints its path)
    MODEL       default models/SmolLM2-135M-Instruct.Q4_1.gguf
    OUT         default Tests/Fixtures/reference/score.json
No network.
"""
import hashlib
import json
import os
import subprocess
import sys

TEXTS = [
    ("short", "The quick brown fox jumps over the lazy dog."),
    (
        "medium",
        "A lighthouse keeper on a small island kept a notebook of every ship that passed. Most days there "
        "were two or three: a ferry in the morning, a fishing boat at noon, and sometimes a cargo ship far "
        "out on the horizon. In winter the storms came from the west, and the keeper climbed the stairs "
        "every four hours to clean the salt from the glass. She never missed a night in thirty-one years.",
    ),
    (
        "long",
        "Bread is one of the oldest prepared foods. The simplest loaf needs only flour, water, salt and time. "
        "When flour and water are mixed, two proteins in the wheat, glutenin and gliadin, bind into gluten, an "
        "elastic network that traps the gas made by yeast. Kneading stretches and aligns that network, which is "
        "why a well-kneaded dough can be pulled into a thin, translucent sheet without tearing.\n\n"
        "Yeast feeds on the sugars in the flour and releases carbon dioxide and alcohol. At room temperature, "
        "around 24 degrees Celsius, a dough usually doubles in one to two hours. In a cold refrigerator the same "
        "rise can take a whole day, and the slower fermentation gives the bread a deeper, slightly sour flavour.\n\n"
        "Baking sets the structure. In the first ten minutes the gas expands quickly and the loaf grows, which "
        "bakers call oven spring. Then the starches gelatinize, the proteins set, and the crust browns through "
        "the Maillard reaction at about 150 degrees. A loaf is done when its centre reaches roughly 96 degrees; "
        "tapped on the bottom, it sounds hollow.\n\n"
        "A few common problems have simple causes:\n"
        "1. A dense loaf often means too little kneading or a short rise.\n"
        "2. A pale crust means the oven was not hot enough.\n"
        "3. Large holes under the crust come from shaping that trapped air.\n\n"
        "Bake, take notes, and change one thing at a time.",
    ),
]


def score(tool: str, model: str, payload: dict, fa: str = "off") -> dict:
    out = subprocess.run(
        [tool, "-m", model, "-k", "5", "-t", "2", "-fa", fa],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, SCORE_QUIET="1"),
    ).stdout
    return json.loads(out)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tool = sys.argv[1]
    model = sys.argv[2] if len(sys.argv) > 2 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    out_path = sys.argv[3] if len(sys.argv) > 3 else "Tests/Fixtures/reference/score.json"
    with open(model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    cases = []
    settings = None
    for name, text in TEXTS:
        tokenized = score(tool, model, {"text": text}, fa="off")
        # Scored again from the ids alone, as a caller of the fixture would send them.
        r = score(tool, model, {"ids": tokenized["ids"]})
        assert r["ids"] == tokenized["ids"] and r["positions"] == tokenized["positions"], name
        settings = r["settings"]
        default = score(tool, model, {"ids": tokenized["ids"]}, fa="auto")
        assert any("Flash Attention enabled" in line for line in default["settings"]["flash_attn_log"]), default["settings"]
        cases.append(
            {
                "name": name,
                "text": text,
                "n_tokens": r["n_tokens"],
                "ids": r["ids"],
                "pieces": r["pieces"],
                # Aligned with ids: entry i is ln p(ids[i] | ids[:i]); entry 0 has no context (null).
                "logprobs": [None] + [p["logprob"] for p in r["positions"]],
                "top5": [None] + [p["top"] for p in r["positions"]],
                "mean_nll": r["mean_nll"],
                "perplexity": r["perplexity"],
                "flash_attn_auto": {
                    "logprobs": [None] + [p["logprob"] for p in default["positions"]],
                    "top5": [None] + [p["top"] for p in default["positions"]],
                    "mean_nll": default["mean_nll"],
                    "perplexity": default["perplexity"],
                },
            }
        )
    doc = {
        "meta": {
            "llama_cpp_commit": "0c1e57098",
            "tool": "scripts/llama-cpp-score.cpp (built by scripts/llama-cpp-build.sh), -fa off and -fa auto",
            "model": os.path.basename(model),
            "model_sha256": sha,
            "add_bos": tokenized["add_bos"],
            "tokenization": "llama_tokenize with add_special=true (the model adds no BOS/EOS), parse_special=false",
            "flash_attn": (
                "logprobs/top5/perplexity: flash attention off (llama_context_params.flash_attn_type DISABLED, "
                "K/V cache F16), the attention inferd follows. flash_attn_auto: llama.cpp 0c1e57098's default "
                "(AUTO, which its CPU backend resolves to enabled: Q rounded to F16 for QK, softmax and V in "
                "its flash kernel). On this model the two differ by up to a few tenths in log-probability "
                "(SmolLM2-135M is that sensitive: float64 over the same weights differs from both as much)."
            ),
            "settings": {k: v for k, v in settings.items() if k not in ("n_ctx", "n_batch", "n_ubatch")},
            "batching": (
                "per text: n_batch = the number of ids, n_ctx the same rounded up to a multiple of 256 by "
                "llama.cpp, n_ubatch = min(512, n_batch) (llama.cpp's default 512): each text is one ubatch"
            ),
            "meaning": (
                "All ids decoded in one llama_decode with an output per position (ubatches of n_ubatch). "
                "logprobs[i] = ln p(ids[i] | ids[:i]): log-softmax in double over the float32 logits of row i-1 "
                "(max subtracted, exp summed in double); logprobs[0] is null. top5[i] = the 5 largest at row i-1 "
                "as [id, logprob], ties by lower id. perplexity = exp(mean_nll), mean_nll = -mean(logprobs[1:])."
            ),
        },
        "cases": cases,
    }
    # One line per field of a case (the arrays are long), the meta indented.
    parts = ["{", ' "meta": ' + json.dumps(doc["meta"], indent=2).replace("\n", "\n ") + ",", ' "cases": [']
    for k, c in enumerate(cases):
        fields = [f'   "{key}": {json.dumps(value)}' for key, value in c.items()]
        parts.append("  {\n" + ",\n".join(fields) + "\n  }" + ("," if k + 1 < len(cases) else ""))
    parts += [" ]", "}"]
    text = "\n".join(parts) + "\n"
    assert json.loads(text) == json.loads(json.dumps(doc))
    with open(out_path, "w") as f:
        f.write(text)
    for c in cases:
        print(f"{c['name']}: {c['n_tokens']} tokens, perplexity {c['perplexity']:.4f}")


if __name__ == "__main__":
    main()
