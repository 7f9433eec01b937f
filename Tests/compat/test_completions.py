"""Legacy text completions through the official client."""

import openai
import pytest

PROMPT = "The three primary colors are"


def test_completion_answers_once(client, model):
    r = client.completions.create(model=model, prompt=PROMPT, temperature=0, max_tokens=16)
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    assert r.model == model
    assert len(r.choices) == 1 and r.choices[0].index == 0
    assert r.choices[0].text.strip()
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 16
    assert r.usage.total_tokens == r.usage.prompt_tokens + 16


def test_default_max_tokens_is_sixteen_as_openai(client, model):
    r = client.completions.create(model=model, prompt=PROMPT, temperature=0)
    assert r.usage.completion_tokens == 16


def test_completion_stream_with_usage(client, model):
    whole = client.completions.create(model=model, prompt=PROMPT, temperature=0, max_tokens=20)
    chunks = list(
        client.completions.create(
            model=model, prompt=PROMPT, temperature=0, max_tokens=20, stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert all(c.object == "text_completion" for c in chunks)
    usage = chunks[-1]
    assert usage.choices == [] and usage.usage.completion_tokens == 20
    body = chunks[:-1]
    assert "".join(c.choices[0].text for c in body) == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in body][-1] == "length"
    assert all(c.choices[0].finish_reason is None for c in body[:-1])


def test_prompt_as_token_ids(client, model):
    r = client.completions.create(model=model, prompt=[504, 1341, 3153, 2380, 359], temperature=0, max_tokens=4)
    assert r.usage.prompt_tokens == 5
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=model, prompt=[10**9], max_tokens=4)
    assert e.value.param == "prompt"


def test_completion_stop_and_seed(client, model):
    whole = client.completions.create(model=model, prompt=PROMPT, temperature=0, max_tokens=24).choices[0].text
    stop = whole.strip().split()[1]
    r = client.completions.create(model=model, prompt=PROMPT, temperature=0, max_tokens=24, stop=stop)
    assert r.choices[0].text == whole[: whole.index(stop)]
    assert r.choices[0].finish_reason == "stop"
    a = client.completions.create(model=model, prompt=PROMPT, temperature=1, seed=5, max_tokens=16)
    b = client.completions.create(model=model, prompt=PROMPT, temperature=1, seed=5, max_tokens=16)
    assert a.choices[0].text == b.choices[0].text


@pytest.mark.parametrize(
    "extra, named",
    [
        ({"suffix": "!"}, "suffix"),
        ({"best_of": 2}, "best_of"),
    ],
)
def test_refused_completion_parameters(client, model, extra, named):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=model, prompt=PROMPT, max_tokens=2, **extra)
    assert e.value.status_code == 400
    assert e.value.code == "unsupported_parameter"
    assert e.value.param == named and named in e.value.message


def test_neutral_completion_values_are_accepted(client, model):
    r = client.completions.create(
        model=model, prompt=PROMPT, max_tokens=2, echo=False, best_of=1, n=1, logprobs=None, user="u"
    )
    assert r.usage.completion_tokens == 2
