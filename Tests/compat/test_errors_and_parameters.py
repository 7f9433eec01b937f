"""Errors in OpenAI's shape and codes; refused, ignored and extension parameters."""

import openai
import pytest

from conftest import error_of

HI = [{"role": "user", "content": "Say hi."}]


def test_context_overflow_is_400_with_both_token_counts(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=HI, max_tokens=9000)
    assert e.value.status_code == 400
    assert e.value.code == "context_length_exceeded"
    assert e.value.type == "invalid_request_error"
    assert "9000" in e.value.message and "8192" in e.value.message

    huge = [{"role": "user", "content": "hello " * 9000}]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=huge)
    assert e.value.code == "context_length_exceeded"
    assert "8192" in e.value.message

    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=model, prompt="hello", max_tokens=8200)
    assert e.value.code == "context_length_exceeded" and "8200" in e.value.message


def test_bad_json_is_400_invalid_request_error(client, raw):
    for path in ("/chat/completions", "/completions"):
        status, body = raw.json("POST", "/v1" + path, b'{"model": "x", "messages": [')
        assert status == 400
        assert error_of(body)["type"] == "invalid_request_error"
        # The official client raises the matching exception.
        with pytest.raises(openai.BadRequestError) as e:
            client.post(path, cast_to=object, content=b'{"model": "x", "messages": [',
                        options={"headers": {"Content-Type": "application/json"}})
        assert e.value.status_code == 400 and e.value.type == "invalid_request_error"
    status, body = raw.json("POST", "/v1/chat/completions", b"[1, 2]")
    assert status == 400 and error_of(body)["type"] == "invalid_request_error"


def test_wrong_model_is_404_model_not_found(client, raw):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-4o", messages=HI)
    assert e.value.status_code == 404
    assert e.value.code == "model_not_found" and e.value.param == "model"
    assert "gpt-4o" in e.value.message
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="hi")
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("nope")
    assert e.value.code == "model_not_found"
    # The shape, field by field.
    status, body = raw.json("POST", "/v1/chat/completions", {"model": "nope", "messages": HI})
    assert status == 404
    assert error_of(body) == {
        "message": body["error"]["message"], "type": "invalid_request_error", "param": "model",
        "code": "model_not_found",
    }


def test_the_gguf_file_name_is_an_alias(client):
    r = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=HI, max_tokens=2)
    assert r.usage.completion_tokens <= 2


@pytest.mark.parametrize(
    "extra, named",
    [
        ({"n": 2}, "n"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"functions": [{"name": "f", "parameters": {}}]}, "functions"),
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"extra_body": {"bogus_option": 1}}, "bogus_option"),
    ],
)
def test_refused_parameters_get_a_400_naming_them(client, model, extra, named):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=HI, max_tokens=2, **extra)
    assert e.value.status_code == 400
    assert e.value.code == "unsupported_parameter"
    assert e.value.param == named
    assert named in e.value.message


def test_every_refused_parameter_is_named_at_once(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=model, messages=HI, n=3, logit_bias={"1": 2}, extra_body={"foo": 1}
        )
    for name in ("n=3", "logit_bias", "foo"):
        assert name in e.value.message


def test_ignored_and_neutral_parameters_change_nothing(client, model):
    base = client.chat.completions.create(model=model, messages=HI, temperature=0, max_tokens=12)
    same = client.chat.completions.create(
        model=model, messages=HI, temperature=0, max_tokens=12,
        user="someone", metadata={"k": "v"}, store=False, service_tier="auto", parallel_tool_calls=False,
        n=1, presence_penalty=0, frequency_penalty=0, logprobs=False, tools=[], logit_bias={},
        response_format={"type": "text"},
    )
    assert same.choices[0].message.content == base.choices[0].message.content


def test_presence_and_frequency_penalties_are_openais(client, model):
    # The default model's greedy poem repeats a line; OpenAI's penalties count this answer's tokens.
    poem = [{"role": "user", "content": "Write a poem about the sea."}]
    plain = client.chat.completions.create(model=model, messages=poem, temperature=0, max_tokens=80)
    zero = client.chat.completions.create(
        model=model, messages=poem, temperature=0, max_tokens=80, frequency_penalty=0, presence_penalty=0)
    assert zero.choices[0].message.content == plain.choices[0].message.content
    penalized = client.chat.completions.create(
        model=model, messages=poem, temperature=0, max_tokens=80, frequency_penalty=0.5)
    assert penalized.choices[0].message.content != plain.choices[0].message.content
    text = client.completions.create(
        model=model, prompt="The sea", max_tokens=4, frequency_penalty=1, presence_penalty=-1)
    assert text.usage.completion_tokens <= 4
    for name in ("presence_penalty", "frequency_penalty"):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=model, messages=HI, max_tokens=2, **{name: 2.5})
        assert e.value.code == "invalid_option" and e.value.param == name
        assert "between -2 and 2" in e.value.message


def test_extensions_top_k_min_p_repeat_penalty(client, model):
    greedy = client.chat.completions.create(model=model, messages=HI, temperature=0, max_tokens=12)
    top1 = client.chat.completions.create(
        model=model, messages=HI, temperature=1.5, max_tokens=12, seed=3, extra_body={"top_k": 1}
    )
    # top_k=1 leaves only the most likely token: greedy whatever the temperature.
    assert top1.choices[0].message.content == greedy.choices[0].message.content
    r = client.chat.completions.create(
        model=model, messages=HI, max_tokens=4, extra_body={"min_p": 0.2, "repeat_penalty": 1.3}
    )
    assert r.usage.completion_tokens <= 4
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=HI, extra_body={"top_k": -1})
    assert e.value.param == "top_k"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=HI, extra_body={"repeat_penalty": 0})
    assert e.value.param == "repeat_penalty"


@pytest.mark.parametrize(
    "kw, param",
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "tool", "content": "x", "tool_call_id": "1"}]}, "messages[0].tool_call_id"),
        ({"messages": [{"role": "function", "content": "x", "name": "f"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         "messages[0].content[0].type"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"messages": HI, "temperature": -1}, "temperature"),
        ({"messages": HI, "max_tokens": 0}, "max_tokens"),
        ({"messages": HI, "stop": [""]}, "stop"),
    ],
)
def test_invalid_requests_name_the_parameter(client, model, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, **kw)
    assert e.value.param == param, e.value.message
    assert e.value.type == "invalid_request_error"
