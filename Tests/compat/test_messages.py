"""Anthropic's Messages API (/v1/messages) through the official `anthropic` Python client: answers,
stop reasons, streams the client's helpers assemble, tools with every tool_choice, a tool loop,
count_tokens, sessions, a disconnect, and refusals naming their field."""

import json
import time

import anthropic
import jsonschema
import pytest

from conftest import metric

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                     "additionalProperties": False},
}
TIME = {
    "name": "get_time",
    "description": "The local time in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "utc_offset": {"type": "integer"}},
                     "required": ["city", "utc_offset"]},
}
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def claude(base_url: str) -> anthropic.Anthropic:
    # No retries: a retried request would hide a server that fails.
    return anthropic.Anthropic(base_url=base_url, api_key="not-needed", max_retries=0, timeout=120)


def text_of(message) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def test_create_with_string_and_block_content(claude, model):
    a = claude.messages.create(model=model, max_tokens=24, system="You are terse.", extra_body=GREEDY,
                               messages=[{"role": "user", "content": "Name a colour."}])
    assert a.type == "message" and a.role == "assistant" and a.id.startswith("msg_")
    assert a.stop_reason in ("end_turn", "max_tokens") and text_of(a)
    assert a.usage.input_tokens + a.usage.cache_read_input_tokens > 0 and 0 < a.usage.output_tokens <= 24
    b = claude.messages.create(
        model=model, max_tokens=24, extra_body=GREEDY,
        system=[{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "Name a colour."}]}])
    # The same conversation in blocks: the same prompt, so the same greedy answer.
    assert text_of(b) == text_of(a)
    assert b.usage.input_tokens + b.usage.cache_read_input_tokens == a.usage.input_tokens + a.usage.cache_read_input_tokens


def test_stop_sequence_and_max_tokens(claude, model):
    a = claude.messages.create(model=model, max_tokens=64, stop_sequences=[" "], extra_body=GREEDY,
                               messages=[{"role": "user", "content": "Write a sentence about the sea."}])
    assert a.stop_reason == "stop_sequence" and a.stop_sequence == " "
    assert " " not in text_of(a)
    b = claude.messages.create(model=model, max_tokens=5, extra_body=GREEDY,
                               messages=[{"role": "user", "content": "Write a long story about a dragon."}])
    assert b.stop_reason == "max_tokens" and b.stop_sequence is None and b.usage.output_tokens == 5


def test_stream_text_and_final_message(claude, model):
    events = []
    with claude.messages.stream(model=model, max_tokens=40, extra_body=GREEDY,
                                messages=[{"role": "user", "content": "Count from one to ten in words."}]) as s:
        pieces = list(s.text_stream)
        final = s.get_final_message()
    assert len(pieces) > 3 and "".join(pieces) == text_of(final)
    plain = claude.messages.create(model=model, max_tokens=40, extra_body=GREEDY,
                                   messages=[{"role": "user", "content": "Count from one to ten in words."}])
    assert text_of(plain) == text_of(final) and plain.stop_reason == final.stop_reason
    # The raw events in Anthropic's order.
    raw = claude.messages.create(model=model, max_tokens=12, stream=True, extra_body=GREEDY,
                                 messages=[{"role": "user", "content": "Say hi."}])
    events = [e.type for e in raw]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert events.count("content_block_start") == events.count("content_block_stop") == 1
    assert all(e == "content_block_delta" for e in events[2:events.index("content_block_stop")])


def test_stop_sequence_never_shows_in_a_stream(claude, model):
    with claude.messages.stream(model=model, max_tokens=64, stop_sequences=[" the"], extra_body=GREEDY,
                                messages=[{"role": "user", "content": "Describe the sea and the sky."}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    if final.stop_reason == "stop_sequence":
        assert final.stop_sequence == " the"
    assert " the" not in text and text == text_of(final)


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_time"}])
def test_forced_tool_call_matches_its_schema(claude, model, choice):
    a = claude.messages.create(model=model, max_tokens=80, tools=[WEATHER, TIME],
                               tool_choice={**choice, "disable_parallel_tool_use": True},
                               messages=[{"role": "user", "content": "What about Paris?"}])
    calls = [b for b in a.content if b.type == "tool_use"]
    assert a.stop_reason == "tool_use" and len(calls) == 1
    call = calls[0]
    assert call.id.startswith("toolu_")
    if choice["type"] == "tool":
        assert call.name == "get_time"
    schema = {"get_weather": WEATHER, "get_time": TIME}[call.name]["input_schema"]
    jsonschema.validate(call.input, schema)


def test_tool_choice_none_never_calls(claude, model):
    a = claude.messages.create(model=model, max_tokens=40, tools=[WEATHER], tool_choice={"type": "none"},
                               messages=[{"role": "user", "content": "Weather in Paris? Use the tool."}])
    assert all(b.type == "text" for b in a.content) and a.stop_reason != "tool_use"


def test_streamed_input_json_deltas_make_the_final_input(claude, model):
    partial = []
    with claude.messages.stream(model=model, max_tokens=80, tools=[WEATHER],
                                tool_choice={"type": "tool", "name": "get_weather"},
                                messages=[{"role": "user", "content": "Weather in Oslo?"}]) as s:
        for event in s:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                partial.append(event.delta.partial_json)
        final = s.get_final_message()
    call = [b for b in final.content if b.type == "tool_use"][0]
    assert len(partial) > 1 and json.loads("".join(partial)) == call.input
    assert final.stop_reason == "tool_use"


def test_a_tool_loop(claude, model):
    history = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = claude.messages.create(model=model, max_tokens=80, tools=[WEATHER],
                                   tool_choice={"type": "any", "disable_parallel_tool_use": True}, messages=history)
    call = [b for b in first.content if b.type == "tool_use"][0]
    history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    history.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 24 degrees."}]})
    second = claude.messages.create(model=model, max_tokens=40, tools=[WEATHER], tool_choice={"type": "none"},
                                    messages=history, extra_body=GREEDY)
    assert second.stop_reason in ("end_turn", "max_tokens") and text_of(second)
    # An error result is taken too; a result answering no call is refused naming it.
    history[-1]["content"][0]["is_error"] = True
    third = claude.messages.create(model=model, max_tokens=8, tools=[WEATHER], messages=history)
    assert third.type == "message"
    history[-1]["content"][0]["tool_use_id"] = "toolu_unknown"
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=model, max_tokens=8, tools=[WEATHER], messages=history)
    assert e.value.body["error"]["message"].startswith("messages.2.content.0.tool_use_id:")


def test_count_tokens_is_the_prompt_create_uses(claude, model):
    body = dict(model=model, system="Be brief.", tools=[WEATHER],
                messages=[{"role": "user", "content": "Weather in Rome?"}])
    counted = claude.messages.count_tokens(**body)
    answered = claude.messages.create(max_tokens=4, **body)
    assert counted.input_tokens == answered.usage.input_tokens + answered.usage.cache_read_input_tokens
    assert claude.messages.count_tokens(model=model, messages=[{"role": "user", "content": "Hi"}]).input_tokens \
        < counted.input_tokens


def test_structured_output_by_output_config(claude, model):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}}, "required": ["answer"],
              "additionalProperties": False}
    a = claude.messages.create(model=model, max_tokens=60, extra_body={"output_config": {
        "format": {"type": "json_schema", "schema": schema}}},
        messages=[{"role": "user", "content": "Capital of Italy?"}])
    jsonschema.validate(json.loads(text_of(a)), schema)


def test_a_session_turn(claude, model, raw):
    status, session = raw.json("POST", "/v1/sessions", {"instructions": "You are terse."})
    assert status == 201
    sid = session["id"]
    first = claude.messages.create(model=model, max_tokens=16, extra_body={"session_id": sid, **GREEDY},
                                   messages=[{"role": "user", "content": "Name a fruit."}])
    second = claude.messages.create(model=model, max_tokens=16, extra_body={"session_id": sid, **GREEDY},
                                    messages=[{"role": "user", "content": "And a vegetable?"}])
    assert second.usage.cache_read_input_tokens > 0
    _, got = raw.json("GET", f"/v1/sessions/{sid}")
    prompts = [e["content"] for e in got["transcript"] if e["type"] == "prompt"]
    answers = [e["content"] for e in got["transcript"] if e["type"] == "response"]
    assert prompts == ["Name a fruit.", "And a vegetable?"] and answers == [text_of(first), text_of(second)]
    # A session's turn says which stop sequence ended it, as a stateless request does.
    third = claude.messages.create(model=model, max_tokens=32, stop_sequences=[" "],
                                   extra_body={"session_id": sid, **GREEDY},
                                   messages=[{"role": "user", "content": "Describe a tree in a sentence."}])
    assert third.stop_reason == "stop_sequence" and third.stop_sequence == " " and " " not in text_of(third)
    with pytest.raises(anthropic.NotFoundError) as e:
        claude.messages.create(model=model, max_tokens=4, extra_body={"session_id": "sess_000000000000000000000000"},
                               messages=[{"role": "user", "content": "Hi"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "not_found_error"
    assert e.value.body["error"]["message"].startswith("session_id:")


def test_a_disconnect_cancels_within_a_step(claude, model, raw):
    before = metric(raw, "inferd_cancellations_total", 'reason="client_disconnected"')
    steps = metric(raw, "inferd_generation_steps_after_cancel_total")
    tokens = metric(raw, "inferd_completion_tokens_total")
    with claude.messages.stream(model=model, max_tokens=3000, extra_body=GREEDY,
                                messages=[{"role": "user", "content": "Write a long story about a dragon."}]) as s:
        seen = 0
        for _ in s.text_stream:
            seen += 1
            if seen == 5:
                break
    deadline = time.time() + 10
    while time.time() < deadline and metric(raw, "inferd_cancellations_total", 'reason="client_disconnected"') == before:
        time.sleep(0.05)
    assert metric(raw, "inferd_cancellations_total", 'reason="client_disconnected"') == before + 1
    assert metric(raw, "inferd_generation_steps_after_cancel_total") - steps <= 1
    assert metric(raw, "inferd_completion_tokens_total") - tokens < 400


@pytest.mark.parametrize("body, field", [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "max_tokens"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": "AA=="}}]}]}, "messages.0.content.0.type"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}],
      "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools.0.type"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "temperature": 1.5}, "temperature"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "tools": [WEATHER],
      "tool_choice": {"type": "tool", "name": "nope"}}, "tool_choice.name"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}],
      "thinking": {"type": "enabled", "budget_tokens": 4}}, "thinking"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hel"}]},
     "messages.1.role"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "container": "c"}, "container"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "output_config": {"effort": "high"}},
     "output_config.effort"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "bogus": 1}, "bogus"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "stop_sequences": [""]}, "stop_sequences.0"),
])
def test_refusals_name_their_field(raw, model, body, field):
    status, headers, data = raw.request("POST", "/v1/messages", {"model": model, **body})
    payload = json.loads(data)
    assert status == 400, payload
    assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["message"].startswith(field + ":"), payload


def test_unknown_model_is_not_found(claude):
    with pytest.raises(anthropic.NotFoundError) as e:
        claude.messages.create(model="claude-nope", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    assert e.value.body["error"]["type"] == "not_found_error"


def test_thinking_passed_back_user_id_and_top_k_are_accepted(claude, model):
    history = [{"role": "user", "content": "Hi"},
               {"role": "assistant", "content": [{"type": "thinking", "thinking": "Greet back.", "signature": "x"},
                                                 {"type": "text", "text": "Hello!"}]},
               {"role": "user", "content": "Name a colour."}]
    a = claude.messages.create(model=model, max_tokens=8, messages=history, metadata={"user_id": "u-1"},
                               extra_body={"top_k": 1})
    assert a.type == "message" and a.usage.output_tokens > 0
    # top_k 1 is greedy: the same answer again.
    b = claude.messages.create(model=model, max_tokens=8, messages=history, extra_body={"top_k": 1})
    assert text_of(a) == text_of(b)
    counted = claude.messages.count_tokens(model=model, messages=history)
    assert counted.input_tokens == a.usage.input_tokens + a.usage.cache_read_input_tokens
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=model, max_tokens=8, messages=history, metadata={"user_id": "u" * 257})
    assert e.value.body["error"]["message"].startswith("metadata.user_id:")
