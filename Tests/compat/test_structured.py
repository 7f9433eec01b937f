"""Structured output through the official client: `chat.completions.parse` with a Pydantic
model, JSON Schemas whose answers PyPI's `jsonschema` validates, JSON mode, and the 400 that
names an unsupported keyword."""

import json
from typing import Annotated

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field


class Person(BaseModel):
    # Bounded, so this small model's greedy answer ends within the token budget.
    name: str = Field(max_length=20)
    age: int = Field(ge=0, le=120)
    hobbies: list[Annotated[str, Field(max_length=20)]] = Field(max_length=2)


def test_parse_with_a_pydantic_model(client, model):
    completion = client.chat.completions.parse(
        model=model,
        messages=[{"role": "user", "content": "Invent a person with two hobbies."}],
        response_format=Person,
        temperature=0,
        max_tokens=200,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    person = choice.message.parsed
    assert isinstance(person, Person)
    assert json.loads(choice.message.content) == person.model_dump()


def test_responses_parse_with_a_pydantic_model(client, model):
    """The Responses API's `text.format` is the same constrained decoding."""
    response = client.responses.parse(
        model=model,
        input="Invent a person with two hobbies.",
        text_format=Person,
        temperature=0,
        max_output_tokens=200,
    )
    assert response.status == "completed"
    person = response.output_parsed
    assert isinstance(person, Person)
    assert json.loads(response.output_text) == person.model_dump()
    jsonschema.validate(json.loads(response.output_text), Person.model_json_schema())


SCHEMAS = {
    "weather_arguments": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City and country"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
        "required": ["location", "unit", "days"],
        "additionalProperties": False,
    },
    "event": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "date": {"type": "string", "format": "date"},
            "attendees": {
                "type": "array",
                "items": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                          "required": ["email"], "additionalProperties": False},
                "minItems": 1, "maxItems": 2,
            },
            "public": {"type": "boolean"},
        },
        "required": ["title", "date", "attendees", "public"],
        "additionalProperties": False,
    },
    "nullable_and_anyof": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "score": {"anyOf": [{"type": "number", "minimum": 0, "maximum": 10}, {"type": "null"}]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
        },
        "required": ["id", "score", "code"],
        "additionalProperties": False,
    },
    # Recursive through anyOf: an expression is a number or an operation on two expressions.
    "recursive_expression": {
        "$defs": {
            "expr": {
                "anyOf": [
                    {"type": "integer", "minimum": 0, "maximum": 99},
                    {
                        "type": "object",
                        "properties": {"op": {"enum": ["+", "*"]},
                                       "args": {"type": "array", "items": {"$ref": "#/$defs/expr"},
                                                "minItems": 2, "maxItems": 2}},
                        "required": ["op", "args"],
                        "additionalProperties": False,
                    },
                ]
            }
        },
        "$ref": "#/$defs/expr",
    },
}


# What to ask for each schema (default: an example of it).
PROMPTS = {"recursive_expression": "Write the expression 2 + 3 as a JSON expression tree."}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_answers_validate_against_their_schema(client, model, name):
    schema = SCHEMAS[name]
    completion = client.chat.completions.create(
        model=model,
        messages=[{"role": "user",
                   "content": PROMPTS.get(name, f"Produce an example {name.replace('_', ' ')} as JSON.")}],
        response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
        temperature=0,
        max_tokens=400,
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    # The draft's own checker: a bare FormatChecker() checks `time` as draft 3 did.
    checker = jsonschema.validators.validator_for(schema).FORMAT_CHECKER
    jsonschema.validate(json.loads(choice.message.content), schema, format_checker=checker)


def test_json_mode_answers_an_object(client, model):
    completion = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Return a JSON object with one key, ok, set to true."}],
        response_format={"type": "json_object"},
        temperature=0,
        max_tokens=150,
    )
    assert isinstance(json.loads(completion.choices[0].message.content), dict)


def test_an_unsupported_keyword_is_a_400_naming_it(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_schema", "json_schema": {
                "name": "x", "schema": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
            max_tokens=5,
        )
    assert e.value.status_code == 400
    assert "uniqueItems" in e.value.message
    assert e.value.param == "response_format.json_schema.schema"
