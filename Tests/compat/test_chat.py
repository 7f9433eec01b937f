"""Chat completions through the official client: answers, streams, usage, stop, seeds."""

import json

import openai

from conftest import words

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
LIST = [{"role": "user", "content": "List three fruits, numbered, one per line."}]


def greedy(client, model, messages, **kw):
    return client.chat.completions.create(model=model, messages=messages, temperature=0, **kw)


def collect(stream):
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return chunks, text


def test_models_lists_the_served_model_with_its_context_length(client, model):
    models = client.models.list().data
    assert len(models) == 1
    assert models[0].id == model and models[0].object == "model"
    assert models[0].model_extra["context_length"] == 8192
    assert client.models.retrieve(model).id == model


def test_chat_answers_once(client, model):
    r = greedy(client, model, QUESTION, max_tokens=48)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.model == model
    assert len(r.choices) == 1
    choice = r.choices[0]
    assert choice.index == 0 and choice.message.role == "assistant"
    assert "Paris" in choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_max_tokens_ends_with_length(client, model):
    for key in ("max_tokens", "max_completion_tokens"):
        r = greedy(client, model, LIST, **{key: 3})
        assert r.choices[0].finish_reason == "length"
        assert r.usage.completion_tokens == 3


def test_chat_stream_is_role_then_deltas_then_finish(client, model):
    whole = greedy(client, model, LIST, max_tokens=40)
    chunks, text = collect(greedy(client, model, LIST, max_tokens=40, stream=True))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert not chunks[0].choices[0].delta.content
    assert all(c.choices[0].delta.role is None for c in chunks[1:])
    pieces = [c.choices[0].delta.content for c in chunks[1:-1]]
    assert len(pieces) >= 5 and all(pieces), pieces
    finish = [c.choices[0].finish_reason for c in chunks]
    assert finish[:-1] == [None] * (len(chunks) - 1)
    assert finish[-1] == whole.choices[0].finish_reason
    assert text == whole.choices[0].message.content
    assert all(c.usage is None for c in chunks)


def test_include_usage_adds_a_last_chunk_with_usage_only(client, model):
    whole = greedy(client, model, QUESTION, max_tokens=24)
    chunks, text = collect(
        greedy(client, model, QUESTION, max_tokens=24, stream=True, stream_options={"include_usage": True})
    )
    last = chunks[-1]
    assert last.choices == []
    assert last.usage.prompt_tokens == whole.usage.prompt_tokens
    assert last.usage.completion_tokens == whole.usage.completion_tokens
    assert last.usage.total_tokens == whole.usage.total_tokens
    assert all(c.usage is None for c in chunks[:-1])
    assert chunks[-2].choices[0].finish_reason == whole.choices[0].finish_reason
    assert text == whole.choices[0].message.content


def test_raw_stream_is_bare_data_lines_ending_with_done(raw, model):
    body = {"model": model, "messages": QUESTION, "temperature": 0, "max_tokens": 16, "stream": True}
    status, headers, data = raw.request("POST", "/v1/chat/completions", body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    text = data.decode()
    assert text.endswith("data: [DONE]\n\n")
    blocks = [b for b in text.split("\n\n") if b and not b.startswith(":")]
    assert all(b.startswith("data: ") and "\n" not in b for b in blocks), blocks
    assert blocks.count("data: [DONE]") == 1
    chunks = [json.loads(b[len("data: "):]) for b in blocks[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(set(c["choices"][0]["delta"]) == {"content"} for c in chunks[1:-1])
    assert chunks[-1]["choices"][0]["delta"] == {} and chunks[-1]["choices"][0]["finish_reason"]


def test_stop_strings_end_the_answer_before_them(client, model):
    whole = greedy(client, model, LIST, max_tokens=48).choices[0].message.content
    candidates = words(whole)
    assert len(candidates) >= 2, whole
    stop = candidates[len(candidates) // 2]
    expected = whole[: whole.index(stop)]
    r = greedy(client, model, LIST, max_tokens=48, stop=[stop, "zzzz"])
    assert r.choices[0].message.content == expected
    assert r.choices[0].finish_reason == "stop"
    chunks, text = collect(greedy(client, model, LIST, max_tokens=48, stop=stop, stream=True))
    assert text == expected
    assert all(stop not in (c.choices[0].delta.content or "") for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_same_seed_same_answer(client, model):
    def ask(seed):
        r = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Invent a name for a cat."}],
            temperature=1.0, seed=seed, max_tokens=24,
        )
        return r.choices[0].message.content

    a = ask(42)
    assert ask(42) == a
    assert any(ask(seed) != a for seed in (1, 2, 3, 4)), "four other seeds all gave the same sampled answer"


def test_content_as_text_parts_and_system_messages(client, model):
    as_string = greedy(
        client, model, [{"role": "system", "content": "Be brief."}] + QUESTION, max_tokens=24
    ).choices[0].message.content
    parts = greedy(
        client, model,
        [
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "What is the capital of France? "},
                {"type": "text", "text": "Answer in one sentence."},
            ]},
        ],
        max_tokens=24,
    ).choices[0].message.content
    assert parts == as_string


def test_multi_turn_conversation(client, model):
    r = greedy(
        client, model,
        [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Nice to meet you, Ada."},
            {"role": "user", "content": "What is my name?"},
        ],
        max_tokens=24,
    )
    alone = greedy(client, model, [{"role": "user", "content": "What is my name?"}], max_tokens=24)
    # Every turn is in the prompt (a 135M model is not relied on to remember the name).
    assert r.usage.prompt_tokens > alone.usage.prompt_tokens + 10
    assert r.choices[0].message.content
