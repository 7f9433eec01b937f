"""Fixtures for the OpenAI compatibility suite: scripts/compat-tests.sh starts the server and
passes its address in INFERD_BASE_URL."""

import http.client
import json
import os
import re
import urllib.parse

import openai
import pytest


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("INFERD_BASE_URL")
    if not url:
        pytest.fail("INFERD_BASE_URL is not set: run scripts/compat-tests.sh (or make compat)")
    return url


@pytest.fixture(scope="session")
def client(base_url: str) -> openai.OpenAI:
    # No retries: a retried request would hide a server that fails.
    return openai.OpenAI(base_url=base_url + "/v1", api_key="not-needed", max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def model(client: openai.OpenAI) -> str:
    return client.models.list().data[0].id


class Raw:
    """Plain HTTP with the standard library, for what the official client hides: the exact
    bytes of a stream, and error bodies field by field."""

    def __init__(self, base_url: str):
        u = urllib.parse.urlparse(base_url)
        self.host, self.port = u.hostname, u.port

    def request(self, method: str, path: str, body: bytes | dict | None = None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def json(self, method: str, path: str, body: bytes | dict | None = None):
        status, _, data = self.request(method, path, body)
        return status, json.loads(data)

    def text(self, path: str) -> str:
        return self.request("GET", path)[2].decode()


@pytest.fixture(scope="session")
def raw(base_url: str) -> Raw:
    return Raw(base_url)


def metric(raw: Raw, name: str, labels: str = "") -> float:
    """A sample of the server's Prometheus text, 0 when the series does not exist yet."""
    text = raw.text("/metrics")
    series = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def error_of(body: dict) -> dict:
    """The `error` object, checked to have exactly OpenAI's four fields."""
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]


LONG_PROMPT = "Write a very long essay about the history of the Roman Empire, in great detail."


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{4,}", text)
