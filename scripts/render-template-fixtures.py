#!/usr/bin/env python3
"""Renders the chat-template fixtures with jinja2 (configured as Hugging Face's
apply_chat_template configures it) to make the expected prompts the Swift tests compare with.

Run from the package root: python3 scripts/render-template-fixtures.py
Writes Tests/EngineTests/Fixtures/templates/expected.json. Needs PyPI's jinja2; tests do not.
"""
import json
import pathlib

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXTURES = pathlib.Path("Tests/EngineTests/Fixtures/templates")

# Special tokens each family's tokenizer supplies as bos_token / eos_token.
TOKENS = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "gemma3": ("<bos>", "<eos>"),
    "qwen2.5": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
    "smollm3": ("", "<|im_end|>"),
}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "system-user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "multi-turn": [
        {"role": "system", "content": "  Be kind.  "},
        {"role": "user", "content": "Hi\nthere "},
        {"role": "assistant", "content": " Hello! How can I help?"},
        {"role": "user", "content": "Spell <|im_start|> and <end_of_turn>, café ✓"},
    ],
    "thinking": [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nreason\n</think>\n\nA1"},
        {"role": "user", "content": "Q2"},
    ],
    # SmolLM3's switch (a system message holding /no_think), which the others render as text.
    "no-think": [
        {"role": "system", "content": "Be brief. /no_think  "},
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "\nA1"},
        {"role": "user", "content": "Q2"},
    ],
}


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    expected = []
    for name, (bos, eos) in TOKENS.items():
        template = env.from_string((FIXTURES / f"{name}.jinja").read_text())
        for conversation, messages in CONVERSATIONS.items():
            for generation in (True, False):
                try:
                    prompt = template.render(
                        messages=messages, add_generation_prompt=generation, bos_token=bos, eos_token=eos, tools=None)
                    error = None
                except jinja2.exceptions.TemplateError as e:
                    prompt, error = None, str(e)
                expected.append({
                    "template": name, "conversation": conversation, "messages": messages,
                    "add_generation_prompt": generation, "bos_token": bos, "eos_token": eos,
                    "prompt": prompt, "error": error,
                })
    (FIXTURES / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(expected)} cases")


if __name__ == "__main__":
    main()
