// inferd's chat page. Every conversation is a server-side session (/v1/sessions): the sidebar
// lists them, a reload or a restart shows the same transcript. An answer streams as `snapshot`
// events, each the whole answer so far: the page paints the newest once per frame and skips the
// rest. The page owns each request: Stop (or Escape) asks the server to cancel and the stream
// ends with `cancelled`; closing or leaving the tab closes the connection, which cancels it too.
// Model output is rendered by markdown.js as text nodes only.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const KEY_STORAGE = "inferd.api_key";
  const PAGE_SIZE = 20;
  const METADATA_VALUE_LIMIT = 512;

  const state = {
    key: sessionStorage.getItem(KEY_STORAGE) || "",
    keyWaiters: null,
    sessionId: null,
    metadata: {},
    lastId: null,
    runs: new Map(), // request id -> run (see send)
  };

  // ---- API calls -------------------------------------------------------------------------

  class APIError extends Error {
    constructor(status, body) {
      const e = (body && body.error) || {};
      super(e.message || `HTTP ${status}`);
      this.status = status;
      this.code = e.code;
      this.param = e.param;
    }
  }

  // fetch with the key; a 401 asks for a key (once for every call waiting) and tries again.
  async function api(method, path, body, extra = {}) {
    for (;;) {
      const headers = Object.assign({}, extra.headers || {});
      if (body !== undefined) headers["Content-Type"] = "application/json";
      if (state.key) headers.Authorization = `Bearer ${state.key}`;
      const response = await fetch(path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: extra.signal,
        cache: "no-store",
      });
      if (response.status !== 401) return response;
      await askForKey(state.key ? "That key was refused." : "");
    }
  }

  async function apiJSON(method, path, body) {
    const response = await api(method, path, body);
    if (response.status === 204) return null;
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new APIError(response.status, data);
    return data;
  }

  function askForKey(message) {
    if (state.keyWaiters) return new Promise((resolve) => state.keyWaiters.push(resolve));
    state.keyWaiters = [];
    $("key-error").textContent = message;
    $("key").value = "";
    $("key-dialog").showModal();
    $("key").focus();
    return new Promise((resolve) => state.keyWaiters.push(resolve));
  }

  $("key-form").addEventListener("submit", () => {
    state.key = $("key").value.trim();
    sessionStorage.setItem(KEY_STORAGE, state.key);
    const waiters = state.keyWaiters || [];
    state.keyWaiters = null;
    waiters.forEach((resolve) => resolve());
  });
  $("key-dialog").addEventListener("cancel", (event) => event.preventDefault());

  // ---- Server-Sent Events over fetch (EventSource cannot POST) ------------------------------

  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) yield { name, data: JSON.parse(data.join("\n")) };
      }
    }
  }

  // ---- Settings (kept in the session's metadata) ------------------------------------------

  const SETTINGS = [
    ["temperature", "temperature"], ["top_p", "top-p"], ["max_tokens", "max-tokens"], ["seed", "seed"],
    ["format", "format"], ["on_busy", "on-busy"], ["schema", "schema"],
  ];

  function readSettings() {
    const out = {};
    for (const [key, id] of SETTINGS) {
      const value = $(id).value.trim();
      if (value !== "") out[key] = value;
    }
    return out;
  }

  function showSettings(metadata) {
    for (const [key, id] of SETTINGS) {
      const input = $(id);
      input.value = metadata[key] !== undefined ? metadata[key] : input.tagName === "SELECT" ? input.options[0].value : "";
    }
    showSchemaField();
  }

  function showSchemaField() {
    $("schema-label").hidden = $("format").value !== "schema";
    const long = $("schema").value.length > METADATA_VALUE_LIMIT;
    $("schema-note").textContent = long
      ? `Longer than ${METADATA_VALUE_LIMIT} characters: used, but not kept with the conversation.`
      : "";
  }

  // The turn's options, checked here so a typo is named before anything is sent.
  function turnOptions() {
    const s = readSettings();
    const options = {};
    const number = (key, name, integer) => {
      if (s[key] === undefined) return;
      const n = Number(s[key]);
      if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) throw new Error(`${name} must be a number.`);
      options[key] = n;
    };
    number("temperature", "Temperature", false);
    number("top_p", "Top-p", false);
    number("max_tokens", "Max tokens", true);
    number("seed", "Seed", true);
    if (s.format === "json") options.format = { type: "json_object" };
    if (s.format === "schema") {
      let schema;
      try {
        schema = JSON.parse(s.schema || "");
      } catch (_) {
        throw new Error("The JSON Schema is not valid JSON.");
      }
      options.format = { type: "json_schema", schema };
    }
    return options;
  }

  function metadataFor(title) {
    const m = { title };
    for (const [key, value] of Object.entries(readSettings())) {
      if (value.length <= METADATA_VALUE_LIMIT) m[key] = value;
    }
    return m;
  }

  let saveTimer = null;
  function saveSettingsSoon() {
    showSchemaField();
    if (!state.sessionId) return;
    clearTimeout(saveTimer);
    const id = state.sessionId;
    saveTimer = setTimeout(async () => {
      state.metadata = metadataFor(state.metadata.title || "Conversation");
      try {
        await apiJSON("POST", `/v1/sessions/${id}`, { metadata: state.metadata });
      } catch (e) {
        setStatus(`Settings not saved: ${e.message}`);
      }
    }, 400);
  }
  for (const [, id] of SETTINGS) $(id).addEventListener("change", saveSettingsSoon);
  $("schema").addEventListener("input", showSchemaField);

  // ---- Sidebar ----------------------------------------------------------------------------

  function titleOf(session) {
    if (session.metadata && session.metadata.title) return session.metadata.title;
    return `Conversation of ${new Date(session.created * 1000).toLocaleString()}`;
  }

  function chatItem(session) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `#${session.id}`;
    a.textContent = titleOf(session);
    a.dataset.session = session.id;
    if (session.id === state.sessionId) a.setAttribute("aria-current", "page");
    li.appendChild(a);
    return li;
  }

  async function loadChats(more = false) {
    let path = `/v1/sessions?order=desc&limit=${PAGE_SIZE}`;
    if (more && state.lastId) path += `&after=${encodeURIComponent(state.lastId)}`;
    const page = await apiJSON("GET", path);
    const list = $("chats");
    if (!more) list.replaceChildren();
    for (const session of page.data) list.appendChild(chatItem(session));
    state.lastId = page.last_id;
    $("more-chats").hidden = !page.has_more;
  }

  function markCurrent() {
    for (const a of $("chats").querySelectorAll("a")) {
      if (a.dataset.session === state.sessionId) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  // ---- Transcript -------------------------------------------------------------------------

  function setStatus(text) {
    $("status").textContent = text;
  }

  function messageNode(role, label) {
    const node = document.createElement("article");
    node.className = `message ${role}`;
    const who = document.createElement("div");
    who.className = "who";
    who.textContent = label;
    const body = document.createElement("div");
    body.className = "body";
    const meta = document.createElement("div");
    meta.className = "meta";
    node.append(who, body, meta);
    $("transcript").appendChild(node);
    return node;
  }

  function userMessage(text) {
    const node = messageNode("user", "You");
    node.querySelector(".body").textContent = text;
    return node;
  }

  function assistantMessage() {
    const node = messageNode("assistant", "Assistant");
    node.dataset.status = "waiting";
    return node;
  }

  function badge(node, text) {
    const meta = node.querySelector(".meta");
    let b = meta.querySelector(".badge");
    if (!b) {
      b = document.createElement("span");
      b.className = "badge";
      meta.prepend(b);
    }
    b.textContent = text;
  }

  function paintAnswer(node, content, extras = {}) {
    node.querySelector(".body").replaceChildren(window.InferdMarkdown.render(content));
    node.querySelectorAll(".value, .tool-call").forEach((n) => n.remove());
    if (extras.value !== undefined) {
      const box = document.createElement("div");
      box.className = "value";
      const h = document.createElement("h3");
      h.textContent = extras.partial ? "Value (partial)" : "Value";
      const pre = document.createElement("pre");
      pre.textContent = JSON.stringify(extras.value, null, 2);
      box.append(h, pre);
      node.insertBefore(box, node.querySelector(".meta"));
    }
    for (const call of extras.toolCalls || []) {
      const box = document.createElement("div");
      box.className = "tool-call";
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
      box.textContent = `Tool call: ${call.name}(${args})`;
      node.insertBefore(box, node.querySelector(".meta"));
    }
  }

  function scrollDown() {
    const t = $("transcript");
    if (t.scrollHeight - t.scrollTop - t.clientHeight < 200) t.scrollTop = t.scrollHeight;
  }

  const STATUS_LABELS = {
    completed: null, cancelled: "stopped", failed: "failed", interrupted: "interrupted",
    in_progress: "still answering",
  };

  function showTranscript(entries) {
    $("transcript").replaceChildren();
    $("instructions").value = "";
    for (const e of entries) {
      if (e.type === "instructions") {
        $("instructions").value = e.content;
      } else if (e.type === "prompt" || e.type === "user_item") {
        userMessage(e.content);
      } else if (e.type === "response" || e.type === "assistant_item") {
        const live = e.request_id && state.runs.get(e.request_id);
        if (live && live.sessionId === state.sessionId) {
          $("transcript").appendChild(live.node);
          continue;
        }
        const node = assistantMessage();
        const status = e.status || "completed";
        node.dataset.status = status === "cancelled" ? "stopped" : status;
        paintAnswer(node, e.content, { toolCalls: e.tool_calls });
        if (STATUS_LABELS[status]) badge(node, STATUS_LABELS[status]);
      } else if (e.type === "tool_result") {
        const node = messageNode("tool", `Tool result (${e.tool_call_id || "call"})`);
        node.querySelector(".body").textContent = e.content;
      } else if (e.type === "system_item" || e.type === "developer_item") {
        const node = messageNode("system", "Instructions");
        node.querySelector(".body").textContent = e.content;
      }
    }
  }

  function showChatHead() {
    const open = state.sessionId !== null;
    $("chat-title").textContent = open ? state.metadata.title || "Conversation" : "New conversation";
    $("rename").hidden = !open;
    $("delete").hidden = !open;
    $("instructions").disabled = open;
    $("instructions-note").hidden = !open;
    updateStop();
  }

  async function openChat(id) {
    const session = await apiJSON("GET", `/v1/sessions/${encodeURIComponent(id)}`);
    state.sessionId = session.id;
    state.metadata = session.metadata || {};
    showSettings(state.metadata);
    showTranscript(session.transcript || []);
    showChatHead();
    markCurrent();
    $("transcript").scrollTop = $("transcript").scrollHeight;
  }

  function newChat() {
    state.sessionId = null;
    state.metadata = {};
    if (location.hash) history.pushState(null, "", location.pathname);
    $("transcript").replaceChildren();
    $("instructions").value = "";
    showSettings({});
    showChatHead();
    markCurrent();
    $("prompt").focus();
  }

  // ---- Sending, streaming, stopping --------------------------------------------------------

  function requestId() {
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    return "ui-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function liveRuns(sessionId) {
    return [...state.runs.values()].filter((r) => r.sessionId === sessionId);
  }

  function updateStop() {
    $("stop").disabled = state.sessionId === null || liveRuns(state.sessionId).length === 0;
  }

  async function ensureSession(prompt) {
    if (state.sessionId) return state.sessionId;
    const title = prompt.replace(/\s+/g, " ").trim().slice(0, 60) || "Conversation";
    const body = { metadata: metadataFor(title) };
    const instructions = $("instructions").value.trim();
    if (instructions) body.instructions = instructions;
    const session = await apiJSON("POST", "/v1/sessions", body);
    state.sessionId = session.id;
    state.metadata = session.metadata;
    history.pushState(null, "", `#${session.id}`);
    $("chats").prepend(chatItem(session));
    showChatHead();
    markCurrent();
    return session.id;
  }

  function finishRun(run, status, label) {
    run.node.dataset.status = status;
    if (label) badge(run.node, label);
    else run.node.querySelectorAll(".meta .badge").forEach((b) => b.remove());
    state.runs.delete(run.id);
    updateStop();
    if (liveRuns(state.sessionId).length === 0) setStatus("");
  }

  function paintRun(run) {
    run.frame = 0;
    const s = run.latest;
    if (!s) return;
    paintAnswer(run.node, s.content || "", { value: s.value, partial: s.partial, toolCalls: s.tool_calls });
    scrollDown();
  }

  function stats(run, usage) {
    const meta = run.node.querySelector(".meta");
    meta.querySelectorAll(".stat").forEach((n) => n.remove());
    const parts = [];
    if (run.firstAt) parts.push(`first token ${((run.firstAt - run.sentAt) / 1000).toFixed(2)} s`);
    const n = usage ? usage.completion_tokens : run.tokens;
    if (run.firstAt && n > 1) {
      const seconds = (performance.now() - run.firstAt) / 1000;
      if (seconds > 0) parts.push(`${((n - 1) / seconds).toFixed(1)} tokens/s`);
    }
    if (n) parts.push(`${n} tokens`);
    if (usage) parts.push(`${usage.cached_tokens} of ${usage.prompt_tokens} prompt tokens cached`);
    for (const text of parts) {
      const span = document.createElement("span");
      span.className = "stat";
      span.textContent = text;
      meta.appendChild(span);
    }
  }

  async function send() {
    const prompt = $("prompt").value;
    if (!prompt.trim()) return;
    let options;
    try {
      options = turnOptions();
    } catch (e) {
      setStatus(e.message);
      $("settings").open = true;
      return;
    }
    let sessionId;
    try {
      sessionId = await ensureSession(prompt);
    } catch (e) {
      setStatus(`Could not start the conversation: ${e.message}`);
      return;
    }
    $("prompt").value = "";
    const userNode = userMessage(prompt);
    const run = {
      id: requestId(), sessionId, userNode, node: assistantMessage(), sentAt: performance.now(), firstAt: 0, tokens: 0,
      latest: null, frame: 0, controller: new AbortController(),
    };
    run.node.dataset.requestId = run.id;
    state.runs.set(run.id, run);
    updateStop();
    scrollDown();
    setStatus("Sending…");
    const body = { prompt, stream: true, options, on_busy: $("on-busy").value, on_cancel: "keep" };
    try {
      const response = await api("POST", `/v1/sessions/${sessionId}/responses`, body, {
        headers: { "X-Request-Id": run.id }, signal: run.controller.signal,
      });
      if (!response.ok) {
        const data = await response.json().catch(() => null);
        throw new APIError(response.status, data);
      }
      for await (const event of events(response)) handle(run, event);
      if (state.runs.has(run.id)) finishRun(run, "error", "the stream ended early");
    } catch (e) {
      if (!state.runs.has(run.id)) return;
      paintAnswer(run.node, run.latest ? run.latest.content || "" : "");
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = e.param ? `${e.message} (${e.param})` : e.message;
      run.node.querySelector(".body").appendChild(p);
      finishRun(run, "error", "error");
      setStatus(e.message);
    }
  }

  function handle(run, { name, data }) {
    switch (name) {
      case "queued":
        badge(run.node, `queued, position ${data.position}`);
        if (run.sessionId === state.sessionId) setStatus(`Waiting: position ${data.position}`);
        break;
      case "started":
        badge(run.node, "answering");
        run.startedAt = performance.now();
        if (run.sessionId === state.sessionId) setStatus("Answering…");
        break;
      case "snapshot":
        if (!run.firstAt) run.firstAt = performance.now();
        run.tokens = data.completion_tokens;
        run.latest = data;
        run.node.dataset.status = "streaming";
        if (!run.frame) run.frame = requestAnimationFrame(() => paintRun(run));
        break;
      case "completed":
      case "cancelled": {
        if (run.frame) cancelAnimationFrame(run.frame);
        run.latest = data;
        paintRun(run);
        stats(run, data.usage);
        const stopped = name === "cancelled";
        if (stopped && data.reason === "superseded") {
          // Replaced by a newer message: its turn left the transcript, so it leaves the page too.
          run.node.remove();
          if (run.userNode) run.userNode.remove();
          finishRun(run, "stopped", null);
          break;
        }
        finishRun(run, stopped ? "stopped" : "completed", stopped ? "stopped" : null);
        if (!stopped && data.finish_reason === "length") badge(run.node, "max tokens reached");
        break;
      }
      case "error": {
        const e = data.error || {};
        const p = document.createElement("p");
        p.className = "error";
        p.textContent = e.message || "The answer failed.";
        run.node.querySelector(".body").appendChild(p);
        finishRun(run, "error", "error");
        break;
      }
      default:
        break;
    }
  }

  async function stop() {
    if (!state.sessionId || liveRuns(state.sessionId).length === 0) return;
    setStatus("Stopping…");
    try {
      await apiJSON("POST", `/v1/sessions/${state.sessionId}/cancel`);
    } catch (e) {
      setStatus(`Stop failed: ${e.message}`);
    }
  }

  // ---- Wiring -----------------------------------------------------------------------------

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("key-dialog").open) stop();
  });
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", newChat);
  $("more-chats").addEventListener("click", () => loadChats(true).catch((e) => setStatus(e.message)));
  $("rename").addEventListener("click", async () => {
    const title = window.prompt("Name this conversation", state.metadata.title || "");
    if (title === null || !title.trim()) return;
    state.metadata = Object.assign({}, state.metadata, { title: title.trim().slice(0, METADATA_VALUE_LIMIT) });
    try {
      await apiJSON("POST", `/v1/sessions/${state.sessionId}`, { metadata: state.metadata });
      showChatHead();
      await loadChats();
    } catch (e) {
      setStatus(`Rename failed: ${e.message}`);
    }
  });
  $("delete").addEventListener("click", async () => {
    if (!window.confirm("Delete this conversation? Its transcript is removed from the server.")) return;
    try {
      await apiJSON("DELETE", `/v1/sessions/${state.sessionId}`);
      newChat();
      await loadChats();
    } catch (e) {
      setStatus(`Delete failed: ${e.message}`);
    }
  });

  async function route() {
    const id = decodeURIComponent(location.hash.slice(1));
    if (!id) {
      if (state.sessionId) newChat();
      return;
    }
    if (id === state.sessionId) return;
    try {
      await openChat(id);
    } catch (e) {
      setStatus(e.status === 404 ? "That conversation no longer exists." : e.message);
      newChat();
    }
  }
  window.addEventListener("hashchange", route);
  // Leaving the page ends its requests: closing their connections is what cancels the answers on
  // the server. Without this a browser that keeps the page in its back-forward cache would keep
  // the connection (and the generation) open until it evicts the page.
  window.addEventListener("pagehide", () => {
    for (const run of state.runs.values()) run.controller.abort();
  });
  // Back from that cache: the answers were cut there, so show the transcript as the server has it.
  window.addEventListener("pageshow", (event) => {
    if (event.persisted && state.sessionId) openChat(state.sessionId).catch((e) => setStatus(e.message));
  });
  window.addEventListener("popstate", route);

  async function start() {
    showSettings({});
    showChatHead();
    try {
      const models = await apiJSON("GET", "/v1/models");
      $("model").textContent = models.data.length ? models.data[0].id : "no model";
      await loadChats();
      await route();
      document.body.dataset.ready = "true";
    } catch (e) {
      $("model").textContent = "not connected";
      setStatus(e.message);
    }
  }
  start();
})();
