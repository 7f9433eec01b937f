"""Log-probabilities through the official client (#34), on the default model: chat's
`logprobs.content` spells the answer, its stream carries the same entries, completions' legacy
object takes a token-id prompt, echo scores token-id prompts (lists of them, one choice each),
`n` draws reproducibly with a seed, and values out of range are refused naming the field."""

import math

import openai
import pytest

ASK = [{"role": "user", "content": "Name three colours."}]


def test_chat_logprobs_plain_and_streamed_agree(client, model):
    r = client.chat.completions.create(
        model=model, messages=ASK, temperature=0, max_tokens=20, logprobs=True, top_logprobs=3
    )
    content = r.choices[0].logprobs.content
    assert bytes(b for e in content for b in e.bytes).decode() == r.choices[0].message.content
    for e in content:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3
        assert e.top_logprobs[0].token == e.token  # greedy: the most likely token
        assert sum(math.exp(t.logprob) for t in e.top_logprobs) <= 1 + 1e-5
    streamed = [
        e
        for chunk in client.chat.completions.create(
            model=model, messages=ASK, temperature=0, max_tokens=20, logprobs=True, top_logprobs=3, stream=True
        )
        if chunk.choices and chunk.choices[0].logprobs
        for e in chunk.choices[0].logprobs.content
    ]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]


def test_completion_logprobs_for_a_token_prompt(client, model):
    ids = [1, 9690, 198, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
    r = client.completions.create(model=model, prompt=ids, temperature=0, max_tokens=6, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text
    assert len(lp.token_logprobs) == len(lp.tokens) == len(lp.top_logprobs) == len(lp.text_offset)
    assert all(len(top) <= 2 and max(top.values()) >= v for top, v in zip(lp.top_logprobs, lp.token_logprobs))


def test_completion_echo_scores_token_prompts(client, model):
    prompts = [client.post("/tokenize", body={"prompt": t}, cast_to=object)["tokens"] for t in ("Paris is in France.", "Rome is in Italy.")]
    r = client.completions.create(model=model, prompt=prompts, echo=True, max_tokens=0, logprobs=1)
    assert [c.index for c in r.choices] == [0, 1]
    for ids, choice in zip(prompts, r.choices):
        lp = choice.logprobs
        assert len(lp.tokens) == len(ids) and lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
        assert all(v <= 0 for v in lp.token_logprobs[1:])
        assert "".join(lp.tokens) == choice.text
    assert r.choices[0].text == "Paris is in France." and r.usage.completion_tokens == 0
    # The same prompt alone scores the same: choices do not disturb each other.
    alone = client.completions.create(model=model, prompt=prompts[1], echo=True, max_tokens=0, logprobs=1)
    assert alone.choices[0].logprobs.token_logprobs == r.choices[1].logprobs.token_logprobs


def test_n_with_a_seed(client, model):
    def draw():
        r = client.completions.create(model=model, prompt="My favourite food is", n=3, seed=4, temperature=1.2, max_tokens=10)
        return [c.text for c in sorted(r.choices, key=lambda c: c.index)]

    first = draw()
    assert len(first) == 3 and first == draw()
    assert len(set(first)) >= 2


@pytest.mark.parametrize(
    "call, extra, param",
    [
        ("chat", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ("chat", {"top_logprobs": 2}, "top_logprobs"),
        ("completion", {"logprobs": 21}, "logprobs"),
    ],
)
def test_out_of_range_values_name_their_field(client, model, call, extra, param):
    with pytest.raises(openai.BadRequestError) as e:
        if call == "chat":
            client.chat.completions.create(model=model, messages=ASK, max_tokens=2, **extra)
        else:
            client.completions.create(model=model, prompt="x", max_tokens=2, **extra)
    assert e.value.status_code == 400 and e.value.param == param, e.value.body


def test_responses_output_text_logprobs(client, model):
    r = client.responses.create(
        model=model, input="Name three colours.", temperature=0, max_output_tokens=16,
        include=["message.output_text.logprobs"], top_logprobs=2,
    )
    part = r.output[0].content[0]
    assert part.logprobs and "".join(e.token for e in part.logprobs) == part.text
    assert all(len(e.top_logprobs) == 2 and e.logprob <= 0 for e in part.logprobs)
    with client.responses.stream(
        model=model, input="Name three colours.", temperature=0, max_output_tokens=16,
        include=["message.output_text.logprobs"], top_logprobs=2,
    ) as stream:
        streamed = [e for event in stream if event.type == "response.output_text.delta" for e in event.logprobs]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in part.logprobs]
