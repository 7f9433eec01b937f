"""Conversation items added and deleted by hand (`client.conversations.items.create/delete`) and
structured output (`text.format`) in conversations and `previous_response_id` chains, through the
official client."""

import json

import jsonschema
import openai
import pytest
from test_structured import Person

SYSTEM = "Answer in one sentence."


def ask(client, model, conv_id, text="What is my name?"):
    return client.responses.create(model=model, input=text, conversation=conv_id, max_output_tokens=8, temperature=0)


def test_items_added_by_hand_are_history_and_deleting_them_shrinks_the_prompt(client, model):
    control = client.conversations.create(items=[{"role": "system", "content": SYSTEM}])
    plain = ask(client, model, control.id)

    conv = client.conversations.create(items=[{"role": "system", "content": SYSTEM}])
    created = client.conversations.items.create(
        conv.id,
        items=[
            {"type": "message", "role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Nice to meet you, Ada."}]},
        ],
    )
    assert [i.role for i in created.data] == ["user", "assistant"]
    assert created.first_id == created.data[0].id and created.last_id == created.data[1].id
    assert created.has_more is False
    assert client.conversations.items.retrieve(created.data[1].id, conversation_id=conv.id).content[0].text == (
        "Nice to meet you, Ada.")

    told = ask(client, model, conv.id)
    # The two items are part of the prompt now.
    assert told.usage.input_tokens > plain.usage.input_tokens + 8

    # Delete every item but the system message: the prompt is the control's again, exactly, and
    # the kept cache still serves the system message.
    items = list(client.conversations.items.list(conv.id, order="asc"))
    assert [i.role for i in items] == ["system", "user", "assistant", "user", "assistant"]
    for item in items[1:]:
        answer = client.conversations.items.delete(item.id, conversation_id=conv.id)
        assert answer.id == conv.id and answer.object == "conversation"
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(items[1].id, conversation_id=conv.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.conversations.items.delete(items[1].id, conversation_id=conv.id)
    assert e.value.body["param"] == "item_id"
    again = ask(client, model, conv.id)
    assert again.usage.input_tokens == plain.usage.input_tokens
    assert 0 < again.usage.input_tokens_details.cached_tokens < again.usage.input_tokens
    remaining = list(client.conversations.items.list(conv.id, order="asc"))
    assert [i.role for i in remaining] == ["system", "user", "assistant"]
    assert remaining[1].id not in [i.id for i in items], "a deleted item's id is never reused"


def test_item_refusals_name_the_field(client, model):
    conv = client.conversations.create()
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.items.create(conv.id, items=[{"role": "user", "content": "x"}] * 21)
    assert e.value.body["param"] == "items"
    with pytest.raises(openai.BadRequestError) as e:
        client.conversations.items.create(conv.id, items=[{"role": "user", "content": "x"}],
                                          include=["message.output_text.logprobs"])
    assert e.value.body["param"] == "include"
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.create("conv_000000000000000000000000", items=[{"role": "user", "content": "x"}])
    assert list(client.conversations.items.list(conv.id)) == []


def test_structured_output_in_a_conversation_and_a_chain(client, model):
    # Closed, as strict mode (and the client's parse helper) closes it: no extra properties.
    schema = {**Person.model_json_schema(), "additionalProperties": False}
    conv = client.conversations.create()
    fmt = {"format": {"type": "json_schema", "name": "person", "schema": schema, "strict": True}}
    first = client.responses.create(model=model, input="Invent a person with two hobbies.", conversation=conv.id,
                                    text=fmt, temperature=0, max_output_tokens=200)
    assert first.status == "completed"
    jsonschema.validate(json.loads(first.output_text), schema)
    parsed = client.responses.parse(model=model, input="Another one.", conversation=conv.id, text_format=Person,
                                    temperature=0, max_output_tokens=200)
    assert isinstance(parsed.output_parsed, Person)
    items = list(client.conversations.items.list(conv.id, order="asc"))
    assert [i.content[0].text for i in items][1::2] == [first.output_text, parsed.output_text]
    # A previous_response_id chain takes text.format too.
    start = client.responses.create(model=model, input="Say hi.", max_output_tokens=8, temperature=0)
    chained = client.responses.parse(model=model, input="Now invent a person.", previous_response_id=start.id,
                                     text_format=Person, temperature=0, max_output_tokens=200)
    assert chained.status == "completed" and isinstance(chained.output_parsed, Person)
    assert chained.usage.input_tokens_details.cached_tokens > 0


def test_item_ids_survive_a_restart(tmp_path, model):
    from test_responses import Server

    key = "compat-key-items-0123456789"
    server = Server(tmp_path, key)
    try:
        c = server.client(key)
        conv = c.conversations.create(items=[{"role": "system", "content": SYSTEM}])
        added = c.conversations.items.create(conv.id, items=[
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Hi Ada."},
            {"role": "user", "content": "Forget this."},
        ])
        c.conversations.items.delete(added.data[2].id, conversation_id=conv.id)
        before = [(i.id, i.role, i.content[0].text) for i in c.conversations.items.list(conv.id, order="asc")]
    finally:
        server.stop()
    server = Server(tmp_path, key)
    try:
        c = server.client(key)
        after = [(i.id, i.role, i.content[0].text) for i in c.conversations.items.list(conv.id, order="asc")]
        assert after == before and len(after) == 3
        more = c.conversations.items.create(conv.id, items=[{"role": "user", "content": "Again."}])
        assert more.data[0].id not in [added.data[2].id] + [i[0] for i in before]
        answer = ask(c, model, conv.id)
        assert answer.status in ("completed", "incomplete")
    finally:
        server.stop()
