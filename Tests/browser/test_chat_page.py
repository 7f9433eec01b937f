"""The chat page at / in headless Chromium: streaming, stop, reload and restart, leaving the page,
busy policies, settings, model output that looks like markup, API keys, phone width."""

import json
import re
import time

from conftest import Server, make_browser, open_page, wait_for
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

LONG_PROMPT = "Write a long story about a dragon."


def settings(browser, **values):
    """Fills the conversation's settings (ids as in index.html) and leaves each field so it is kept."""
    details = browser.find_element(By.ID, "settings")
    if not details.get_attribute("open"):
        details.find_element(By.TAG_NAME, "summary").click()
    for field, value in values.items():
        element = browser.find_element(By.ID, field.replace("_", "-"))
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        else:
            element.clear()
            element.send_keys(str(value))
        browser.execute_script("arguments[0].dispatchEvent(new Event('change'))", element)


def send(browser, text):
    box = browser.find_element(By.ID, "prompt")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def answers(browser):
    return browser.find_elements(By.CSS_SELECTOR, "#transcript article.assistant")


def status_of(element):
    return element.get_attribute("data-status")


def text_of(element):
    return element.find_element(By.CSS_SELECTOR, ".body").text


def words(s):
    return re.sub(r"\s+", " ", s).strip()


def session_id(browser):
    return browser.execute_script("return decodeURIComponent(location.hash.slice(1))")


def reloaded_answer(browser):
    """The last answer as the page shows it after a reload, from the server's transcript."""
    browser.refresh()
    wait_for(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true"
             and answers(browser), what="the page to reload")
    return answers(browser)[-1]


def wait_streaming(browser, index=-1, chars=20):
    return wait_for(lambda: len(answers(browser)) > 0 and status_of(answers(browser)[index]) == "streaming"
                    and len(text_of(answers(browser)[index])) >= chars and answers(browser)[index],
                    what="an answer streaming", browser=browser)


def test_page_is_served_with_a_strict_policy(server):
    status, headers, body = server.request("GET", "/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    # No inline script or style: everything the page runs is a file of this server.
    html = body.decode()
    assert "<script>" not in html and "<style" not in html and "http" not in html.replace("http-equiv", "")
    for path, kind in [("/ui/app.js", "text/javascript"), ("/ui/markdown.js", "text/javascript"),
                       ("/ui/app.css", "text/css")]:
        s, h, _ = server.request("GET", path)
        assert s == 200 and h["content-type"].startswith(kind) and "content-security-policy" in h
    assert server.request("GET", "/ui/missing.js")[0] == 404
    etag = headers["etag"]
    assert server.request("GET", "/", headers={"If-None-Match": etag})[0] == 304


def test_send_streams_snapshots_and_finishes(server, browser, artifacts):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="80")
    send(browser, "Tell me about the ocean.")
    lengths = []

    def finished():
        items = answers(browser)
        if not items:
            return False
        lengths.append(len(text_of(items[-1])))
        return status_of(items[-1]) in ("completed", "stopped", "error")

    wait_for(finished, timeout=120, interval=0.02, what="the answer to finish")
    answer = answers(browser)[-1]
    assert status_of(answer) == "completed"
    grown = sorted(set(n for n in lengths if n > 0))
    assert len(grown) >= 3, f"the text did not grow while streaming: {lengths}"
    meta = answer.find_element(By.CSS_SELECTOR, ".meta").text
    assert "first token" in meta and "tokens/s" in meta and "prompt tokens cached" in meta
    # The page's conversation is the server's session, and its answer is the transcript's.
    sid = session_id(browser)
    assert sid.startswith("sess_")
    status, session = server.json("GET", f"/v1/sessions/{sid}")
    assert status == 200
    response = [e for e in session["transcript"] if e["type"] == "response"][-1]
    assert response["status"] == "completed" and len(response["content"]) > 0
    assert session["metadata"]["title"] == "Tell me about the ocean."
    assert session["metadata"]["temperature"] == "0" and session["metadata"]["max_tokens"] == "80"

    shown = text_of(answer)
    assert words(text_of(reloaded_answer(browser))) == words(shown)

    # The second turn reuses the session's KV cache, and the page says so.
    send(browser, "And about rivers?")
    wait_for(lambda: len(answers(browser)) == 2 and status_of(answers(browser)[1]) == "completed", timeout=120,
             what="the second answer")
    assert status_of(answers(browser)[0]) == "completed"
    cached = re.search(r"(\d+) of (\d+) prompt tokens cached", answers(browser)[1].text)
    assert cached and int(cached.group(1)) > 0, answers(browser)[1].text
    # The README's picture: the conversation with its settings folded.
    if browser.find_element(By.ID, "settings").get_attribute("open"):
        browser.find_element(By.CSS_SELECTOR, "#settings summary").click()
    browser.save_screenshot(f"{artifacts}/chat-page.png")


def test_stop_cancels_within_a_step_and_keeps_the_text(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="2000")
    before = server.metric("inferd_session_cancellations_total", 'reason="cancel_request"')
    steps_before = server.metric("inferd_generation_steps_after_cancel_total")
    send(browser, LONG_PROMPT)
    wait_streaming(browser)
    browser.find_element(By.ID, "stop").click()
    wait_for(lambda: status_of(answers(browser)[-1]) == "stopped", timeout=30, what="the answer to stop", browser=browser)
    answer = answers(browser)[-1]
    assert "stopped" in answer.find_element(By.CSS_SELECTOR, ".badge").text
    assert server.metric("inferd_session_cancellations_total", 'reason="cancel_request"') == before + 1
    assert server.metric("inferd_generation_steps_after_cancel_total") - steps_before <= 1
    shown = text_of(answer)
    time.sleep(0.5)
    assert text_of(answer) == shown, "text kept arriving after the stop"
    _, session = server.json("GET", f"/v1/sessions/{session_id(browser)}")
    response = [e for e in session["transcript"] if e["type"] == "response"][-1]
    assert response["status"] == "cancelled" and response["reason"] == "cancel_request"
    assert len(response["content"]) > 0 and len(shown) > 0
    assert browser.find_element(By.ID, "stop").get_attribute("disabled") is not None
    # The stopped text is what the transcript keeps: a reload shows it, still marked stopped.
    again = reloaded_answer(browser)
    assert words(text_of(again)) == words(shown)
    assert status_of(again) == "stopped" and "stopped" in again.find_element(By.CSS_SELECTOR, ".badge").text

    # Escape stops as well.
    send(browser, LONG_PROMPT)
    wait_streaming(browser)
    browser.find_element(By.ID, "prompt").send_keys(Keys.ESCAPE)
    wait_for(lambda: status_of(answers(browser)[-1]) == "stopped", timeout=30, what="Escape to stop the answer", browser=browser)
    assert server.metric("inferd_session_cancellations_total", 'reason="cancel_request"') == before + 2


def test_leaving_the_page_cancels_the_answer(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="2000")
    before = server.metric("inferd_session_cancellations_total", 'reason="client_disconnected"')
    steps_before = server.metric("inferd_generation_steps_after_cancel_total")
    send(browser, LONG_PROMPT)
    wait_streaming(browser)
    sid = session_id(browser)
    browser.get("about:blank")
    wait_for(lambda: server.metric("inferd_session_cancellations_total", 'reason="client_disconnected"') == before + 1,
             timeout=30, what="the server to count the disconnect")
    assert server.metric("inferd_generation_steps_after_cancel_total") - steps_before <= 1
    _, session = server.json("GET", f"/v1/sessions/{sid}")
    assert session["status"] == "idle"
    response = [e for e in session["transcript"] if e["type"] == "response"][-1]
    assert response["status"] == "cancelled" and response["reason"] == "client_disconnected"

    # Closing the tab: the same.
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    open_page(browser, f"{server.url}/#{sid}")
    send(browser, LONG_PROMPT)
    wait_streaming(browser)
    browser.close()
    browser.switch_to.window(first)
    wait_for(lambda: server.metric("inferd_session_cancellations_total", 'reason="client_disconnected"') == before + 2,
             timeout=30, what="the server to count the closed tab")
    assert server.metric("inferd_generation_steps_after_cancel_total") - steps_before <= 2


def test_reload_and_restart_show_the_same_conversation(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="24")
    send(browser, "Name three colours.")
    wait_for(lambda: answers(browser) and status_of(answers(browser)[-1]) == "completed", timeout=120,
             what="the answer")
    sid = session_id(browser)
    answer = words(text_of(answers(browser)[-1]))

    def same_conversation():
        open_page(browser, f"{server.url}/#{sid}")
        wait_for(lambda: answers(browser), what="the transcript")
        assert words(text_of(answers(browser)[-1])) == answer
        users = browser.find_elements(By.CSS_SELECTOR, "#transcript article.user")
        assert users[-1].find_element(By.CSS_SELECTOR, ".body").text == "Name three colours."
        current = browser.find_element(By.CSS_SELECTOR, "#chats a[aria-current='page']")
        assert current.text == "Name three colours."
        assert browser.find_element(By.ID, "temperature").get_attribute("value") == "0"
        assert browser.find_element(By.ID, "max-tokens").get_attribute("value") == "24"

    browser.refresh()
    same_conversation()
    server.restart()
    same_conversation()


def test_busy_policies_queue_and_replace(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="300", on_busy="queue")
    send(browser, LONG_PROMPT)
    wait_streaming(browser)
    send(browser, "Say hello.")
    wait_for(lambda: len(answers(browser)) == 2 and "queued" in answers(browser)[1].text, timeout=30,
             what="the second message to wait in the queue")
    wait_for(lambda: all(status_of(a) == "completed" for a in answers(browser)), timeout=180,
             what="both answers")
    _, session = server.json("GET", f"/v1/sessions/{session_id(browser)}")
    assert [e["status"] for e in session["transcript"] if e["type"] == "response"] == ["completed", "completed"]

    # Replace: the running answer stops, its turn leaves the page and the transcript, the new one runs.
    settings(browser, on_busy="replace", max_tokens="2000")
    send(browser, LONG_PROMPT)
    wait_streaming(browser, index=2)
    send(browser, "Say goodbye.")
    wait_for(lambda: len(answers(browser)) == 3 and status_of(answers(browser)[2]) == "completed", timeout=120,
             what="the replacing answer")
    prompts = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#transcript article.user .body")]
    assert prompts == [LONG_PROMPT, "Say hello.", "Say goodbye."]
    _, session = server.json("GET", f"/v1/sessions/{session_id(browser)}")
    assert [e["content"] for e in session["transcript"] if e["type"] == "prompt"] == prompts


def test_model_output_is_text_never_markup(server, browser):
    hostile = ('<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n'
               "[click](javascript:window.__pwned=3) and [home](https://example.org/a)\n\n"
               "- **bold** item\n- `code` item\n\n```js\nalert(1) // <b>not bold</b>\n```")
    status, session = server.json("POST", "/v1/sessions", {"metadata": {"title": "<b>title</b>"}})
    assert status == 201
    conv = "conv_" + session["id"][len("sess_"):]
    status, _ = server.json("POST", f"/v1/conversations/{conv}/items", {"items": [
        {"type": "message", "role": "user", "content": "<i>user</i>"},
        {"type": "message", "role": "assistant", "content": hostile},
    ]})
    assert status == 200
    open_page(browser, f"{server.url}/#{session['id']}")
    wait_for(lambda: answers(browser), what="the transcript")
    transcript = browser.find_element(By.ID, "transcript")
    assert transcript.find_elements(By.CSS_SELECTOR, "img, script, b, i") == []
    assert browser.execute_script("return window.__pwned") is None
    answer = answers(browser)[-1]
    assert '<img src=x onerror="window.__pwned=1">' in answer.text and "<script>" in answer.text
    links = answer.find_elements(By.TAG_NAME, "a")
    assert [a.get_attribute("href") for a in links] == ["https://example.org/a"]
    assert links[0].get_attribute("rel") == "noopener noreferrer nofollow"
    assert "[click](javascript:window.__pwned=3)" in answer.text
    assert [li.text for li in answer.find_elements(By.TAG_NAME, "li")] == ["bold item", "code item"]
    code = answer.find_element(By.CSS_SELECTOR, ".code pre code")
    assert code.text == "alert(1) // <b>not bold</b>"
    assert answer.find_element(By.CSS_SELECTOR, ".code button").text == "Copy"
    assert browser.find_element(By.CSS_SELECTOR, "#transcript article.user .body").text == "<i>user</i>"
    assert browser.find_element(By.CSS_SELECTOR, "#chats a[aria-current='page']").text == "<b>title</b>"

    # The same through a streamed answer: a schema whose only value is markup.
    settings(browser, format="schema",
             schema='{"type": "object", "properties": {"html": {"const": "<img src=x onerror=window.__pwned=4>"}},'
                    ' "required": ["html"]}')
    send(browser, "Answer.")
    wait_for(lambda: len(answers(browser)) == 2 and status_of(answers(browser)[1]) == "completed", timeout=120,
             what="the structured answer")
    assert transcript.find_elements(By.CSS_SELECTOR, "img, script") == []
    assert browser.execute_script("return window.__pwned") is None
    value = answers(browser)[1].find_element(By.CSS_SELECTOR, ".value")
    assert "Value" in value.text and "partial" not in value.text
    assert '"html": "<img src=x onerror=window.__pwned=4>"' in value.text


def test_rename_and_delete(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, max_tokens="8")
    send(browser, "Hi.")
    wait_for(lambda: answers(browser) and status_of(answers(browser)[-1]) == "completed", timeout=60,
             what="the answer")
    sid = session_id(browser)
    browser.find_element(By.ID, "rename").click()
    alert = wait_for(lambda: browser.switch_to.alert, what="the rename prompt")
    alert.send_keys("Greetings")
    alert.accept()
    wait_for(lambda: browser.find_element(By.ID, "chat-title").text == "Greetings", what="the new title")
    assert server.json("GET", f"/v1/sessions/{sid}")[1]["metadata"]["title"] == "Greetings"
    wait_for(lambda: "Greetings" in [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#chats a")],
             what="the sidebar to show the new title")
    browser.find_element(By.ID, "delete").click()
    wait_for(lambda: browser.switch_to.alert, what="the delete confirmation").accept()
    wait_for(lambda: server.json("GET", f"/v1/sessions/{sid}")[0] == 404, what="the session to be deleted")
    wait_for(lambda: sid not in [a.get_attribute("data-session") for a in
                                 browser.find_elements(By.CSS_SELECTOR, "#chats a")], what="the sidebar to drop it")
    assert browser.find_element(By.ID, "chat-title").text == "New conversation"


def test_api_key_is_asked_for_and_kept_in_the_tab_only(binary, model):
    key = "page-test-key-0123456789"
    server = Server(binary, model, "--api-keys", key)
    browser = make_browser()
    try:
        assert server.request("GET", "/")[0] == 200
        assert server.request("GET", "/v1/sessions")[0] == 401
        browser.get(server.url + "/")
        dialog = browser.find_element(By.ID, "key-dialog")
        wait_for(lambda: dialog.get_attribute("open") is not None, what="the key dialog")
        browser.find_element(By.ID, "key").send_keys("wrong-key-wrong-key-0000")
        browser.find_element(By.ID, "key").send_keys(Keys.ENTER)
        wait_for(lambda: "refused" in browser.find_element(By.ID, "key-error").text, what="the refusal")
        browser.find_element(By.ID, "key").send_keys(key)
        browser.find_element(By.ID, "key").send_keys(Keys.ENTER)
        wait_for(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true",
                 what="the page to load with the key")
        assert browser.execute_script("return sessionStorage.getItem('inferd.api_key')") == key
        assert browser.execute_script("return localStorage.length") == 0
        assert browser.execute_script("return document.cookie") == ""
    finally:
        browser.quit()
        server.stop()


def test_ui_can_be_turned_off(binary, model):
    server = Server(binary, model, "--ui", "false")
    try:
        assert server.request("GET", "/")[0] == 404
        assert server.request("GET", "/ui/app.js")[0] == 404
        assert server.request("GET", "/health")[0] == 200
    finally:
        server.stop()


def test_keyboard_and_phone_width(server, artifacts):
    browser = make_browser(390, 844)
    try:
        open_page(browser, server.url + "/")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        # Shift+Enter is a new line, not a send.
        box = browser.find_element(By.ID, "prompt")
        box.send_keys("line one")
        box.send_keys(Keys.SHIFT, Keys.ENTER)
        box.send_keys("line two")
        assert box.get_attribute("value") == "line one\nline two"
        assert answers(browser) == []
        # Every control has a label a screen reader can read.
        unlabeled = browser.execute_script("""
            return [...document.querySelectorAll('input, select, textarea')]
              .filter(e => !e.labels || e.labels.length === 0).map(e => e.id)""")
        assert unlabeled == []
        browser.save_screenshot(f"{artifacts}/chat-page-phone.png")
    finally:
        browser.quit()


def test_structured_value_is_partial_while_it_streams(server, browser):
    open_page(browser, server.url + "/")
    settings(browser, temperature="0", max_tokens="20", format="schema",
             schema='{"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}')
    send(browser, "Tell a story.")
    seen = set()
    read = """const a = [...document.querySelectorAll('#transcript article.assistant')].pop();
              const h = a && a.querySelector('.value h3');
              return a ? [a.dataset.status, h ? h.textContent : null] : null"""

    def finished():
        state = browser.execute_script(read)
        if not state:
            return False
        seen.add(tuple(state))
        return state[0] in ("completed", "stopped", "error")

    wait_for(finished, timeout=120, interval=0.01, what="the structured answer", browser=browser)
    assert ("streaming", "Value (partial)") in seen, seen
    answer = answers(browser)[-1]
    value = json.loads(answer.find_element(By.CSS_SELECTOR, ".value pre").text)
    meta = answer.find_element(By.CSS_SELECTOR, ".meta").text
    # Complete where the grammar allows: the value is whole; cut by max_tokens: it stays partial.
    if "max tokens reached" in meta:
        assert answer.find_element(By.CSS_SELECTOR, ".value h3").text == "Value (partial)"
    else:
        assert answer.find_element(By.CSS_SELECTOR, ".value h3").text == "Value"
        assert isinstance(value["story"], str) and "answering" not in meta


def test_tool_calls_show_as_calls(server, browser):
    status, session = server.json("POST", "/v1/sessions", {"metadata": {"title": "tools"}})
    sid = session["id"]
    status, turn = server.json("POST", f"/v1/sessions/{sid}/responses", {
        "prompt": "Weather in Paris?", "options": {"temperature": 0, "max_tokens": 64}, "tool_choice": "required",
        "tools": [{"type": "function", "name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]})
    assert status == 200 and turn["finish_reason"] == "tool_calls", turn
    call = turn["tool_calls"][0]
    open_page(browser, f"{server.url}/#{sid}")
    wait_for(lambda: answers(browser), what="the transcript")
    shown = answers(browser)[-1].find_element(By.CSS_SELECTOR, ".tool-call").text
    assert words(shown) == words(f"Tool call: get_weather({call['arguments']})")


def test_dark_and_light_follow_the_system(server, browser):
    colours = {}
    for scheme in ["light", "dark"]:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        open_page(browser, server.url + "/")
        colours[scheme] = browser.execute_script(
            "const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]")
    assert colours["light"] != colours["dark"]
    assert colours["light"][0] == "rgb(255, 255, 255)"
    # Focus is visible: a focused button gets an outline.
    browser.execute_script("document.getElementById('new-chat').focus()")
    browser.find_element(By.ID, "new-chat").send_keys(Keys.SHIFT)  # keyboard focus, so :focus-visible applies
    style = browser.execute_script("return getComputedStyle(document.activeElement).outlineStyle")
    assert style == "solid"


def test_sidebar_pages_and_lists_only_the_keys_sessions(binary, model):
    alpha, beta = "alpha-page-key-0123456789", "beta-page-key-0123456789x"
    server = Server(binary, model, "--api-keys", f"{alpha},{beta}")
    browser = make_browser()
    try:
        mine = []
        for i in range(23):
            status, s = server.json("POST", "/v1/sessions", {"metadata": {"title": f"mine {i:02d}"}},
                                    headers={"Authorization": f"Bearer {alpha}"})
            assert status == 201
            mine.append(s["id"])
        status, theirs = server.json("POST", "/v1/sessions", {"metadata": {"title": "theirs"}},
                                     headers={"Authorization": f"Bearer {beta}"})
        assert status == 201
        browser.get(server.url + "/")
        wait_for(lambda: browser.find_element(By.ID, "key-dialog").get_attribute("open") is not None,
                 what="the key dialog")
        browser.find_element(By.ID, "key").send_keys(alpha, Keys.ENTER)
        wait_for(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true",
                 what="the page to load")
        listed = lambda: [a.get_attribute("data-session") for a in browser.find_elements(By.CSS_SELECTOR, "#chats a")]
        _, page = server.json("GET", "/v1/sessions?order=desc&limit=100", headers={"Authorization": f"Bearer {alpha}"})
        newest_first = [s["id"] for s in page["data"]]
        assert sorted(newest_first) == sorted(mine)
        assert listed() == newest_first[:20]
        more = browser.find_element(By.ID, "more-chats")
        assert more.is_displayed()
        more.click()
        wait_for(lambda: len(listed()) == 23, what="the older conversations")
        assert listed() == newest_first and theirs["id"] not in listed()
        assert not more.is_displayed()
    finally:
        browser.quit()
        server.stop()
