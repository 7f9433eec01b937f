"""The queue extensions through the official client: timeout_seconds and priority are sent with
extra_body, and a finish_reason of "timeout" (not one of OpenAI's values) still parses."""

import openai
import pytest

COUNT = [{"role": "user", "content": "Count from one to one thousand."}]


def test_a_timeout_ends_an_answer_with_finish_reason_timeout(client, model):
    r = client.chat.completions.create(
        model=model, messages=COUNT, temperature=0, max_tokens=1000,
        extra_body={"ignore_eos": True, "timeout_seconds": 0.5, "priority": "background"})
    assert r.choices[0].finish_reason == "timeout"
    assert r.usage.completion_tokens < 1000


def test_a_streamed_timeout_ends_with_a_timeout_chunk_and_done(client, model):
    stream = client.chat.completions.create(
        model=model, messages=COUNT, temperature=0, max_tokens=1000, stream=True,
        extra_body={"ignore_eos": True, "timeout_seconds": 0.5})
    reasons = [c.choices[0].finish_reason for c in stream if c.choices and c.choices[0].finish_reason]
    assert reasons == ["timeout"]


def test_bad_timeout_seconds_is_a_bad_request_naming_it(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=model, prompt="Hi", extra_body={"timeout_seconds": -1})
    assert e.value.param == "timeout_seconds"
