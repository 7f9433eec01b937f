"""The chat page in a real browser (issue #36): Debian's Chromium and chromedriver, driven by
selenium, against a real `inferd serve` that these fixtures start and stop. Run by
scripts/browser-tests.sh BIN MODEL (part of make test). Screenshots go to INFERD_ARTIFACTS."""

import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.common.by import By


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`inferd serve` on a fixed port and data folder, so a restart keeps both."""

    def __init__(self, binary: str, model: str, *extra: str):
        self.binary, self.model, self.extra = binary, model, list(extra)
        self.port = free_port()
        self.data = tempfile.mkdtemp(prefix="inferd-browser-")
        self.log_path = os.path.join(self.data, "server.log")
        self.process = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--model", self.model, "--data-dir", self.data,
             "--log-format", "text", *self.extra],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the server exited:\n" + self.log())
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("/health never answered 200:\n" + self.log())

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def restart(self):
        self.stop()
        self.start()

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def request(self, method: str, path: str, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        payload = r.read()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, payload

    def json(self, method: str, path: str, body=None, headers=None):
        status, _, payload = self.request(method, path, body, headers)
        return status, (json.loads(payload) if payload else None)

    def metric(self, name: str, labels: str = "") -> float:
        """A sample of /metrics, 0 when the series does not exist yet."""
        text = self.request("GET", "/metrics")[2].decode()
        series = f"{name}{{{labels}}}" if labels else name
        for line in text.splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        return 0.0


@pytest.fixture(scope="session")
def binary() -> str:
    b = os.environ.get("INFERD_BIN")
    if not b:
        pytest.fail("INFERD_BIN is not set: run scripts/browser-tests.sh (or make test)")
    return b


@pytest.fixture(scope="session")
def model() -> str:
    return os.environ.get("INFERD_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="session")
def server(binary, model):
    s = Server(binary, model)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def artifacts() -> str:
    path = os.environ.get("INFERD_ARTIFACTS", ".build/artifacts")
    os.makedirs(path, exist_ok=True)
    return path


def make_browser(width=1200, height=800):
    options = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}",
              "--force-prefers-reduced-motion"]:
        options.add_argument(a)
    options.binary_location = os.environ.get("INFERD_CHROMIUM", "/usr/bin/chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(os.environ.get("INFERD_CHROMEDRIVER", "/usr/bin/chromedriver")),
                            options=options)


@pytest.fixture
def browser():
    d = make_browser()
    yield d
    d.quit()


def wait_for(predicate, timeout=60.0, interval=0.05, what="condition", browser=None):
    """Polls `predicate` until it is truthy. An element replaced while it was read (the page
    repaints answers) counts as not yet. With `browser`, a timeout says what the page shows."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = predicate()
        except (StaleElementReferenceException, NoAlertPresentException):
            value = None
        if value:
            return value
        time.sleep(interval)
    shown = ""
    if browser is not None:
        shown = browser.execute_script("""
            const a = [...document.querySelectorAll('#transcript article.assistant')].pop();
            return `status line: ${document.getElementById('status').textContent}; last answer: `
              + (a ? `${a.dataset.status} ${a.querySelector('.meta').textContent}` : 'none')""")
    raise AssertionError(f"timed out after {timeout} s waiting for {what}. {shown}")


def open_page(browser, url: str):
    browser.get(url)
    wait_for(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true",
             what="the page to load")
