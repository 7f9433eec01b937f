"""The `session_id` extension through the official client: turns of a server-side session."""

import openai
import pytest

from conftest import error_of


def test_chat_turns_bind_to_a_session(client, model, raw):
    status, session = raw.json("POST", "/v1/sessions", {"options": {"temperature": 0}})
    assert status == 201, session
    sid = session["id"]
    first = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "My name is Ada."}], max_tokens=16,
        extra_body={"session_id": sid},
    )
    assert first.choices[0].message.content
    # Earlier messages are ignored: the session's transcript is the history.
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "ignored"}, {"role": "user", "content": "What is my name?"}],
        max_tokens=16, stream=True, stream_options={"include_usage": True},
        extra_body={"session_id": sid},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = chunks[-1].usage
    assert usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens
    status, got = raw.json("GET", f"/v1/sessions/{sid}")
    transcript = got["transcript"]
    assert [e["type"] for e in transcript] == ["prompt", "response", "prompt", "response"]
    assert transcript[2]["content"] == "What is my name?"
    assert transcript[3]["content"] == text


def test_unknown_session_is_not_found(client, model, raw):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], extra_body={"session_id": "nope"}
        )
    assert e.value.code == "session_not_found"
    assert e.value.param == "session_id"
    status, body = raw.json(
        "POST", "/v1/chat/completions",
        {"model": model, "messages": [{"role": "user", "content": "hi"}], "session_id": "nope"},
    )
    assert status == 404
    assert error_of(body)["code"] == "session_not_found"
