"""The schema corpus (Tests/Fixtures/schemas) through the official client, checked by an
independent validator: for every schema inferd compiles, a greedy chat completion (with the penalties below) with
`response_format: json_schema` must end with `finish_reason: stop` and its content must pass
PyPI `jsonschema` with a format checker (hostname, date-time and time, uri checked through the
optional packages scripts/compat-tests.sh installs). The schemas inferd refuses must be a 400
naming the keyword. Same prompt as SchemaCorpusTests."""

import json
import pathlib
import time

import jsonschema
import openai
import pytest

DIRECTORY = pathlib.Path(__file__).resolve().parent.parent / "Fixtures" / "schemas"
NAMES = sorted(p.name for p in DIRECTORY.glob("*.json"))

# The schemas using a keyword inferd does not implement, and that keyword (as SchemaCorpusTests).
REFUSED = {
    "api-invoice-line.json": "multipleOf",
    "api-product.json": "uniqueItems",
    "ci-matrix.json": "patternProperties",
}

# Every schema is decoded greedily with OpenAI's penalties (as SchemaCorpusTests.sampling): under
# plain greedy decoding the 135M model repeats itself inside what a schema leaves unbounded, and
# strict-ui-component, json-patch and api-geojson-feature ran until max_tokens. A penalty is what
# users of small models set; with this one all 32 compiled schemas finish and validate
# (2026-12-02; README, Structured output: the settings tried; scripts/corpus-penalties.py).
PENALTIES = {"presence_penalty": 0.5, "frequency_penalty": 0.4}

# Room to spare over the longest greedy answer (SchemaCorpusTests uses the same budget).
MAX_TOKENS = 600
# large.json has 40 properties: its finished answer is longer than the others.
MAX_TOKENS_OF = {"large.json": 1200}

# Formats the checker must be able to check here: without their optional packages jsonschema
# passes every string, and this test would check less than it says.
CHECKED_FORMATS = {"date-time", "date", "time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname"}


def format_checker(schema):
    """The format checker of the schema's own draft (2020-12 without `$schema`). A bare
    `jsonschema.FormatChecker()` holds every draft's checkers, the last registered winning:
    its `time` is draft 3's `%H:%M:%S`, which refuses RFC 3339 times with an offset."""
    return jsonschema.validators.validator_for(schema).FORMAT_CHECKER


def test_the_format_checker_checks_every_format_inferd_generates():
    checker = format_checker({})
    assert CHECKED_FORMATS <= set(checker.checkers)
    for name, bad in [("hostname", "a" * 64 + ".com"), ("date-time", "2026-12-01T10:00:00"),
                      ("time", "25:00:00Z"), ("uri", "http://a b"), ("date", "2026-02-30")]:
        assert not checker.conforms(bad, name), name
    assert checker.conforms("20:00:00.5-05:00", "time")


def test_the_corpus_is_there():
    assert len(NAMES) >= 30
    assert set(REFUSED) <= set(NAMES)


def corpus_request(model, name, schema, **fields):
    """The chat completion request for corpus schema `name`, greedy, with `fields` added (the
    test adds PENALTIES; scripts/corpus-penalties.py sends other settings)."""
    compact = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return dict(
        model=model,
        messages=[{"role": "user",
                   "content": f"Produce one realistic example, as JSON, of this JSON Schema: {compact[:600]}"}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": name.removesuffix(".json"), "schema": schema}},
        temperature=0,
        max_tokens=MAX_TOKENS_OF.get(name, MAX_TOKENS),
        **fields,
    )


@pytest.mark.parametrize("name", NAMES)
def test_corpus_schema_answer_finishes_and_validates(client, model, name):
    schema = json.loads((DIRECTORY / name).read_text())
    request = corpus_request(model, name, schema, **PENALTIES)
    if name in REFUSED:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(**request)
        assert f"'{REFUSED[name]}'" in e.value.message
        return
    started = time.monotonic()
    # A loaded 2-core machine can take minutes over a 600-token answer.
    completion = client.with_options(timeout=900).chat.completions.create(**request)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", (completion.usage.completion_tokens, choice.message.content[-300:])
    jsonschema.validate(json.loads(choice.message.content), schema, format_checker=format_checker(schema))
    print(f"{name}: {completion.usage.completion_tokens} tokens in {time.monotonic() - started:.1f} s")
