#!/usr/bin/env python3
"""A scripted OpenAI-compatible upstream for inferd's remote-backend tests.

Serves POST /<mode>/v1/chat/completions and /<mode>/v1/completions with a streamed answer
shaped by <mode>, and GET /stats with the connections it holds open and when each one was seen
closed by the client. Prints "PORT <n>" on stdout once it listens (port 0 picks a free one).

Modes: ok (five deltas, finish_reason stop, usage with cached_tokens), echo (one delta holding the
request body it received), slow (nothing for 3 s), die (three deltas, then the socket is closed
mid-stream), busy (429 with Retry-After: 7), unavailable (503 with Retry-After: 4), reject (400
with an OpenAI error), malformed (an event whose data is not JSON), endless (a line that never
ends), stall (two deltas, then silence), hold (one delta, then ": ping" comments every 5 ms until
the client closes).

Tool modes (chat): tools (reasoning_content in two pieces, then two calls whose arguments come in
fragments, finish_reason tool_calls), onecall (one call to get_weather), textcall (a text piece,
then one call), unknowncall (a call to launch_rockets), badargs (a call whose arguments are a JSON
array), wrongtype (get_weather with a number for city), reordered (get_weather's arguments
pretty-printed, unit before city).
"""
import json
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
stats = {"open": 0, "requests": 0, "closed_at": []}


def delta_chunk(delta, finish=None):
    body = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return ("data: " + json.dumps(body) + "\n\n").encode()


def call_chunks(index, call_id, name, fragments):
    """A call as upstreams stream it: id and name with the first fragment, then the rest."""
    out = [delta_chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                        "function": {"name": name, "arguments": fragments[0]}}]})]
    for piece in fragments[1:]:
        out.append(delta_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    return out


TOOL_MODES = {
    "tools": [delta_chunk({"role": "assistant", "reasoning_content": "Let me"}),
              delta_chunk({"reasoning_content": " check."})]
    + call_chunks(0, "call_up0", "get_weather", ['{"city"', ': "Par', 'is"}'])
    + call_chunks(1, "call_up1", "get_time", ['{"zone": ', '"CET"}']),
    "onecall": call_chunks(0, "call_up0", "get_weather", ['{"city": ', '"Paris"}']),
    "textcall": [delta_chunk({"content": "Checking."})]
    + call_chunks(0, "call_up0", "get_weather", ['{"city": "Oslo"}']),
    "unknowncall": call_chunks(0, "call_up0", "launch_rockets", ['{"count": 3}']),
    "badargs": call_chunks(0, "call_up0", "get_weather", ['[1, ', '2]']),
    "wrongtype": call_chunks(0, "call_up0", "get_weather", ['{"city": 42}']),
    "reordered": call_chunks(0, "call_up0", "get_weather", ['{\n  "unit": "celsius",\n  "city": "Paris"\n}']),
}


def chunk(content=None, finish=None, usage=None):
    choices = [] if usage else [{"index": 0, "delta": {} if content is None else {"content": content},
                                  "finish_reason": finish}]
    body = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": choices}
    if usage:
        body["usage"] = usage
    return ("data: " + json.dumps(body) + "\n\n").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/stats":
            with lock:
                body = json.dumps(stats).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        mode = self.path.strip("/").split("/")[0]
        if self.path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "fake-" + mode, "max_model_len": 2048}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_error(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = self.rfile.read(length)
        mode = self.path.strip("/").split("/")[0]
        with lock:
            stats["open"] += 1
            stats["requests"] += 1
        try:
            self.serve(mode, request)
        except (BrokenPipeError, ConnectionResetError):
            with lock:
                stats["closed_at"].append(time.time())
        finally:
            self.close_connection = True
            with lock:
                stats["open"] -= 1

    def refuse(self, status, message, retry_after=None):
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": None}}).encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def send(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def closed_within(self, seconds):
        """Waits up to `seconds` for the client to close; records when it did."""
        end = time.time() + seconds
        sock = self.connection
        while time.time() < end:
            readable, _, _ = select.select([sock], [], [], min(0.005, max(0, end - time.time())))
            if readable:
                try:
                    data = sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    with lock:
                        stats["closed_at"].append(time.time())
                    return True
        return False

    def serve(self, mode, request):
        if mode == "busy":
            return self.refuse(429, "too many requests upstream", retry_after=7)
        if mode == "unavailable":
            return self.refuse(503, "upstream overloaded", retry_after=4)
        if mode == "reject":
            return self.refuse(400, "the upstream does not like this request")
        if mode == "slow":
            self.closed_within(3)
            return
        self.start_stream()
        if mode == "ok":
            for piece in ["one", " two", " three", " four", " five"]:
                self.send(chunk(piece))
            self.send(chunk(finish="stop"))
            self.send(chunk(usage={"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16,
                                   "prompt_tokens_details": {"cached_tokens": 3}}))
            self.send(b"data: [DONE]\n\n")
        elif mode in TOOL_MODES:
            for data in TOOL_MODES[mode]:
                self.send(data)
            self.send(chunk(finish="tool_calls"))
            self.send(chunk(usage={"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}))
            self.send(b"data: [DONE]\n\n")
        elif mode == "echo":
            self.send(chunk(request.decode()))
            self.send(chunk(finish="length"))
            self.send(b"data: [DONE]\n\n")
        elif mode == "die":
            for piece in ["a", "b", "c"]:
                self.send(chunk(piece))
            self.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "malformed":
            self.send(chunk("fine"))
            self.send(b"data: {this is not json\n\n")
            self.closed_within(3)
        elif mode == "endless":
            self.send(b"data: ")
            sent = 0
            while sent < (64 << 20):
                self.send(b"x" * 65536)
                sent += 65536
        elif mode == "stall":
            self.send(chunk("first"))
            self.send(chunk(" second"))
            self.closed_within(5)
        elif mode == "hold":
            self.send(chunk("held"))
            while not self.closed_within(0.005):
                self.send(b": ping\n\n")


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
