"""A stream the client abandons stops the generation, and the metrics show it."""

import time

from conftest import LONG_PROMPT, metric

CANCELLED = 'finish_reason="cancelled"'


def wait_for(condition, seconds=10.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def abandon(stream, after_chunks):
    got = 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
            got += 1
        if got >= after_chunks:
            break
    stream.close()
    return got


def test_abandoned_chat_stream_is_cancelled(client, model, raw):
    before = metric(raw, "inferd_generations_total", CANCELLED)
    tokens_before = metric(raw, "inferd_completion_tokens_total")
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": LONG_PROMPT}], max_tokens=4000, stream=True,
        temperature=0, extra_body={"ignore_eos": True},
    )
    assert abandon(stream, 5) == 5
    assert wait_for(lambda: metric(raw, "inferd_generations_total", CANCELLED) == before + 1)
    # It stopped soon after the client left, far short of the 4000 tokens asked for.
    assert metric(raw, "inferd_completion_tokens_total") - tokens_before < 400


def test_abandoned_completion_stream_is_cancelled(client, model, raw):
    before = metric(raw, "inferd_generations_total", CANCELLED)
    stream = client.completions.create(
        model=model, prompt=LONG_PROMPT, max_tokens=4000, stream=True, extra_body={"ignore_eos": True}
    )
    got = 0
    for chunk in stream:
        got += 1
        if got >= 5:
            break
    stream.close()
    assert wait_for(lambda: metric(raw, "inferd_generations_total", CANCELLED) == before + 1)
    # The server still answers afterwards.
    r = client.completions.create(model=model, prompt="Hello", max_tokens=2)
    assert r.usage.completion_tokens <= 2
