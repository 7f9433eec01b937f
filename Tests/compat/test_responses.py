"""OpenAI's Responses API through the official client: create (string and item input), streams
and the stream helper, stored responses, paging, chains with a kept KV cache, background
responses with poll, cancel and resume, a client that leaves, key ownership and a restart."""

import os
import signal
import subprocess
import threading
import time
import urllib.request

import openai
import pytest

from conftest import LONG_PROMPT, metric

TERMINAL = {"response.completed", "response.incomplete", "response.failed", "response.cancelled"}


def wait_for(condition, seconds=20.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def deltas(events):
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def test_create_with_string_input(client, model):
    r = client.responses.create(model=model, input="Say hi.", max_output_tokens=24, temperature=0)
    assert r.id.startswith("resp_") and r.object == "response"
    assert r.status in ("completed", "incomplete")
    assert r.output_text and r.output_text == r.output[0].content[0].text
    assert r.output[0].role == "assistant" and r.output[0].content[0].type == "output_text"
    u = r.usage
    assert u.input_tokens > 0 and u.output_tokens > 0 and u.total_tokens == u.input_tokens + u.output_tokens
    assert u.output_tokens_details.reasoning_tokens == 0
    assert r.max_output_tokens == 24 and r.temperature == 0 and r.model == model


def test_item_input_and_instructions(client, model):
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Say hi."}]}]
    plain = client.responses.create(model=model, input=items, max_output_tokens=4, temperature=0)
    same = client.responses.create(model=model, input="Say hi.", max_output_tokens=4, temperature=0)
    # A one-item list and a string are the same prompt, so the same greedy answer.
    assert plain.output_text == same.output_text
    told = client.responses.create(
        model=model, input="Say hi.", instructions="You are a pirate. Talk like one.", max_output_tokens=4,
        temperature=0,
    )
    assert told.instructions == "You are a pirate. Talk like one."
    # SmolLM2's template puts its own default system prompt where no instructions are given.
    assert told.usage.input_tokens != plain.usage.input_tokens


def test_max_output_tokens_is_incomplete(client, model):
    r = client.responses.create(model=model, input=LONG_PROMPT, max_output_tokens=5, temperature=0)
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5


def test_stream_events_in_order(client, model):
    stream = client.responses.create(model=model, input="Name three colours.", max_output_tokens=32, temperature=0,
                                     stream=True)
    events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events if e.type != "response.output_text.delta"]
    assert kinds == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        events[-1].type,
    ]
    assert events[-1].type in ("response.completed", "response.incomplete")
    final = events[-1].response
    assert deltas(events) == final.output_text
    done = [e for e in events if e.type == "response.output_text.done"][0]
    assert done.text == final.output_text
    # The same greedy request answered at once gives the same text.
    once = client.responses.create(model=model, input="Name three colours.", max_output_tokens=32, temperature=0)
    assert once.output_text == final.output_text


def test_stream_helper_final_response(client, model):
    with client.responses.stream(model=model, input="Say hello.", max_output_tokens=24, temperature=0) as s:
        text = "".join(e.delta for e in s if e.type == "response.output_text.delta")
        final = s.get_final_response()
    assert final.output_text == text and text


def test_retrieve_then_delete(client, model):
    r = client.responses.create(model=model, input="Say hi.", max_output_tokens=8, metadata={"k": "v"})
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text and got.metadata == {"k": "v"}
    assert got.usage.total_tokens == r.usage.total_tokens
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(r.id)


def test_not_stored_is_not_retrievable(client, model):
    r = client.responses.create(model=model, input="Say hi.", max_output_tokens=2, store=False)
    assert r.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)


def test_input_items_paging(client, model):
    texts = ["one", "two", "three", "four", "five"]
    items = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
    r = client.responses.create(model=model, input=items, max_output_tokens=2)
    page = client.responses.input_items.list(r.id, limit=2)
    assert len(page.data) == 2 and page.has_more is True
    assert page.first_id == page.data[0].id and page.last_id == page.data[1].id
    # Newest first by default; the client follows `after` through every page.
    newest_first = [item.content[0].text for item in client.responses.input_items.list(r.id, limit=2)]
    assert newest_first == texts[::-1]
    oldest_first = [item.content[0].text for item in client.responses.input_items.list(r.id, limit=2, order="asc")]
    assert oldest_first == texts
    last = client.responses.input_items.list(r.id, limit=4, order="asc")
    rest = client.responses.input_items.list(r.id, limit=4, order="asc", after=last.data[-1].id)
    assert [i.content[0].text for i in rest.data] == ["five"] and rest.has_more is False


def test_three_turn_chain_reuses_the_cache(client, model):
    first = client.responses.create(model=model, input="My name is Ada.", max_output_tokens=16, temperature=0)
    second = client.responses.create(
        model=model, input="What is my name?", previous_response_id=first.id, max_output_tokens=16, temperature=0
    )
    third = client.responses.create(
        model=model, input="Say it once more.", previous_response_id=second.id, max_output_tokens=16, temperature=0
    )
    assert second.previous_response_id == first.id
    # The history is in the prompt: each turn holds the previous one's input and output.
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    assert third.usage.input_tokens > second.usage.input_tokens + second.usage.output_tokens
    assert second.usage.input_tokens_details.cached_tokens > 0
    assert third.usage.input_tokens_details.cached_tokens >= second.usage.input_tokens
    # The same conversation sent as items gives the same prompt size.
    items = [
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "What is my name?"},
    ]
    flat = client.responses.create(model=model, input=items, max_output_tokens=16, temperature=0)
    assert flat.usage.input_tokens == second.usage.input_tokens


def test_background_poll_then_cancel(client, model):
    r = client.responses.create(
        model=model, input=LONG_PROMPT, background=True, max_output_tokens=4000, extra_body={"ignore_eos": True}
    )
    assert r.status == "queued" and r.background is True
    assert wait_for(lambda: len(client.responses.retrieve(r.id).output_text) > 20)
    polled = client.responses.retrieve(r.id)
    assert polled.status == "in_progress"
    cancelled = client.responses.cancel(r.id)
    assert cancelled.status == "cancelled"
    assert cancelled.output_text.startswith(polled.output_text)
    # Stopped: nothing changes afterwards, and cancel is idempotent.
    time.sleep(0.5)
    assert client.responses.retrieve(r.id).output_text == cancelled.output_text
    again = client.responses.cancel(r.id)
    assert again.status == "cancelled" and again.output_text == cancelled.output_text


def test_background_resume_with_and_without_starting_after(client, model):
    # Ends by itself (the stream helper wants `response.completed`), after enough deltas to resume in between.
    r = client.responses.create(model=model, input="Count from one to forty in words, separated by commas.",
                                background=True, max_output_tokens=1000, temperature=0)
    head = []
    stream = client.responses.retrieve(r.id, stream=True)
    for e in stream:
        head.append(e)
        if sum(1 for x in head if x.type == "response.output_text.delta") >= 5:
            break
    stream.close()
    last = head[-1].sequence_number
    tail = list(client.responses.retrieve(r.id, stream=True, starting_after=last))
    assert tail[0].sequence_number == last + 1
    numbers = [e.sequence_number for e in head + tail]
    assert numbers == list(range(len(numbers)))
    final = client.responses.retrieve(r.id)
    assert tail[-1].type == "response.completed" and final.status == "completed"
    assert deltas(head) + deltas(tail) == final.output_text
    # The official helper resumes from the start and filters on the client side.
    with client.responses.stream(response_id=r.id) as s:
        text = "".join(e.delta for e in s if e.type == "response.output_text.delta")
        replayed = s.get_final_response()
    assert text == final.output_text and replayed.output_text == final.output_text


def test_foreground_disconnect_cancels_within_one_step(client, model, raw):
    before = metric(raw, "inferd_generations_total", 'finish_reason="cancelled"')
    steps_before = metric(raw, "inferd_generation_steps_after_cancel_total")
    stream = client.responses.create(model=model, input=LONG_PROMPT, stream=True, max_output_tokens=4000,
                                     extra_body={"ignore_eos": True})
    got = []
    for e in stream:
        got.append(e)
        if sum(1 for x in got if x.type == "response.output_text.delta") >= 3:
            break
    stream.close()
    rid = got[0].response.id
    assert wait_for(lambda: metric(raw, "inferd_generations_total", 'finish_reason="cancelled"') == before + 1)
    assert metric(raw, "inferd_generation_steps_after_cancel_total") - steps_before <= 1
    assert wait_for(lambda: client.responses.retrieve(rid).status == "cancelled")
    assert client.responses.retrieve(rid).output_text.startswith(deltas(got))


def test_refusals_name_the_field(client, model):
    cases = [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"reasoning": {"effort": "high"}}, "reasoning"),
        ({"text": {"format": {"type": "json_object", "bogus": 1}}}, "text.format.bogus"),
        ({"extra_body": {"temprature": 0}}, "temprature"),
        ({"background": True, "store": False}, "background"),
    ]
    for kwargs, param in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model=model, input="hi", **kwargs)
        assert e.value.body["param"] == param, e.value.body
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=model, input="hi", previous_response_id="resp_missing")
    assert e.value.body["param"] == "previous_response_id"
    fg = client.responses.create(model=model, input="hi", max_output_tokens=1)
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(fg.id)


def test_conversation_with_two_responses(client, model):
    conv = client.conversations.create(metadata={"topic": "names"},
                                       items=[{"role": "system", "content": "Answer in one sentence."}])
    assert conv.id.startswith("conv_") and conv.metadata == {"topic": "names"}
    first = client.responses.create(model=model, input="My name is Ada.", conversation=conv.id, max_output_tokens=16,
                                    temperature=0)
    second = client.responses.create(model=model, input="What is my name?", conversation={"id": conv.id},
                                     max_output_tokens=16, temperature=0)
    assert second.conversation.id == conv.id
    assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens
    items = list(client.conversations.items.list(conv.id, order="asc", limit=2))
    assert [i.role for i in items] == ["system", "user", "assistant", "user", "assistant"]
    assert [i.content[0].text for i in items] == [
        "Answer in one sentence.", "My name is Ada.", first.output_text, "What is my name?", second.output_text
    ]
    newest = client.conversations.items.list(conv.id, limit=1)
    assert newest.data[0].content[0].text == second.output_text
    assert client.conversations.items.retrieve(items[2].id, conversation_id=conv.id).content[0].text == first.output_text
    assert client.conversations.update(conv.id, metadata={"topic": "ada"}).metadata == {"topic": "ada"}
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=model, input="hi", conversation=conv.id, previous_response_id=first.id)
    client.conversations.delete(conv.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)


class Server:
    """An `inferd serve` of its own (same binary and model as the suite's), for restarts and keys."""

    def __init__(self, data_dir, keys):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        binary = os.environ.get("INFERD_BIN", os.path.join(root, ".build/release/inferd"))
        model = os.environ.get("INFERD_COMPAT_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf")
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", "0", "--model", model, "--data-dir", str(data_dir), "--api-keys", keys],
            cwd=root, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )
        self.lines = []
        threading.Thread(target=lambda: [self.lines.append(l) for l in self.proc.stderr], daemon=True).start()
        assert wait_for(lambda: any("server listening" in l for l in self.lines), 30), self.lines
        line = next(l for l in self.lines if "server listening" in l)
        self.port = int(line.split("port=")[1].split()[0])
        self.base = f"http://127.0.0.1:{self.port}"

        def healthy():
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    return r.status == 200
            except Exception:
                return False

        assert wait_for(healthy, 60)

    def client(self, key):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=key, max_retries=0, timeout=60)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)


def test_ownership_and_restart(tmp_path, model):
    a, b = "compat-key-a-0123456789", "compat-key-b-0123456789"
    server = Server(tmp_path, f"{a},{b}")
    try:
        ca, cb = server.client(a), server.client(b)
        done = ca.responses.create(model=model, input=[{"role": "user", "content": "Say hi."}], max_output_tokens=8,
                                   temperature=0)
        for call in (lambda: cb.responses.retrieve(done.id), lambda: cb.responses.delete(done.id),
                     lambda: cb.responses.input_items.list(done.id),
                     lambda: cb.responses.create(model=model, input="hi", previous_response_id=done.id)):
            with pytest.raises(openai.NotFoundError):
                call()
        conv = ca.conversations.create(metadata={"k": "v"})
        said = ca.responses.create(model=model, input="Say hi.", conversation=conv.id, max_output_tokens=8)
        with pytest.raises(openai.NotFoundError):
            cb.conversations.retrieve(conv.id)
        running = ca.responses.create(model=model, input=LONG_PROMPT, background=True, max_output_tokens=4000,
                                      extra_body={"ignore_eos": True})
        assert wait_for(lambda: ca.responses.retrieve(running.id).status == "in_progress")
    finally:
        server.stop()
    server = Server(tmp_path, f"{a},{b}")
    try:
        ca, cb = server.client(a), server.client(b)
        again = ca.responses.retrieve(done.id)
        assert again.output_text == done.output_text and again.status == done.status
        assert [i.content[0].text for i in ca.responses.input_items.list(done.id)] == ["Say hi."]
        with pytest.raises(openai.NotFoundError):
            cb.responses.retrieve(done.id)
        # Running when the server stopped: failed with a clear error, never run again.
        failed = ca.responses.retrieve(running.id)
        assert failed.status == "failed" and failed.error.code == "server_stopped"
        time.sleep(0.5)
        assert ca.responses.retrieve(running.id).status == "failed"
        assert ca.responses.cancel(running.id).status == "failed"
        # The conversation survives with its metadata and items, and goes on.
        assert ca.conversations.retrieve(conv.id).metadata == {"k": "v"}
        assert [i.content[0].text for i in ca.conversations.items.list(conv.id, order="asc")] == [
            "Say hi.", said.output_text
        ]
        more = ca.responses.create(model=model, input="Again.", conversation=conv.id, max_output_tokens=4)
        assert more.usage.input_tokens > said.usage.input_tokens + said.usage.output_tokens
        # A chain continues across the restart.
        follow = ca.responses.create(model=model, input="And again.", previous_response_id=done.id,
                                     max_output_tokens=4)
        assert follow.usage.input_tokens > done.usage.input_tokens + done.usage.output_tokens
    finally:
        server.stop()
