#!/usr/bin/env python3
"""The reference deployment on loopback (issue #15): a throwaway PostgreSQL cluster, three
inferd replicas sharing it, and HAProxy in front hashing each session to one replica. Checks
what a user of that deployment relies on, then stops everything it started, pass or fail.

    scripts/cluster-test.py BINARY MODEL

Routing key: HAProxy copies the session id from the path (/v1/sessions/{id}/...) into
X-Session-Id and balances on that header with consistent hashing; a client of the OpenAI routes
that names a session in the body sends X-Session-Id itself. Requests without a key go round
robin. Stored responses (/v1/responses) live in the same PostgreSQL database, so a response, its
input items and a previous_response_id chain are found on any replica; a chain keeps its KV cache
only where it is routed by the X-Session-Id the client sends with it (else it is rebuilt)."""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadtools import read_all, report, start_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request(port, method, path, body=None, headers=None, timeout=120):
    """(status, headers dict lower-cased, parsed JSON body or text)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    s.sendall(head.encode() + b"\r\n" + data)
    raw = read_all(s)
    s.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding") == "chunked":
        out, buf = b"", rest
        while buf:
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            out, buf = out + buf[:size], buf[size + 2:]
        rest = out
    try:
        return status, hdrs, json.loads(rest)
    except ValueError:
        return status, hdrs, rest.decode(errors="replace")


class Stream:
    """A streamed turn over HTTP/1.0 (close-delimited, so no chunk framing): the socket, the
    events seen so far, the replica that answered."""

    def __init__(self, port, path, body):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        data = json.dumps(body).encode()
        self.sock.sendall(
            f"POST {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        self.head_done, self.buf, self.events, self.replica, self.closed = False, b"", [], None, False

    def read_until(self, pred, timeout=60):
        """Reads events until pred(events) holds or the stream ends; returns pred's value."""
        end = time.monotonic() + timeout
        while not pred(self.events) and not self.closed and time.monotonic() < end:
            try:
                self.sock.settimeout(max(0.05, end - time.monotonic()))
                chunk = self.sock.recv(65536)
            except socket.timeout:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self.buf += chunk
            if not self.head_done and b"\r\n\r\n" in self.buf:
                head, _, self.buf = self.buf.partition(b"\r\n\r\n")
                self.head_done = True
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("x-inferd-replica:"):
                        self.replica = line.split(":", 1)[1].strip()
            while self.head_done and b"\n\n" in self.buf:
                block, _, self.buf = self.buf.partition(b"\n\n")
                lines = block.decode(errors="replace").split("\n")
                name = next((l[7:] for l in lines if l.startswith("event: ")), None)
                data = next((l[6:] for l in lines if l.startswith("data: ")), None)
                if name and data:
                    try:
                        self.events.append((name, json.loads(data)))
                    except ValueError:
                        pass
        return pred(self.events)

    def close(self):
        self.sock.close()


def names(events):
    return [n for n, _ in events]


def haproxy_config(port, replicas, no_delay=True):
    """no_delay=False leaves out option http-no-delay (scripts/haproxy-overhead.py compares)."""
    servers = "\n".join(
        f"    server {name} 127.0.0.1:{p} check inter 300ms fall 2 rise 2" for name, p in replicas)
    return f"""global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 2s
frontend inferd
    bind 127.0.0.1:{port}
    # The session id in the path is the routing key; OpenAI-route clients send X-Session-Id.
    http-request set-header X-Session-Id %[path,field(4,/)] if {{ path_reg ^/v1/sessions/[^/]+/ }}
    default_backend replicas
backend replicas
    balance hdr(X-Session-Id)
    hash-type consistent
{"    option http-no-delay" + chr(10) if no_delay else ""}    option httpchk GET /health
    http-check expect status 200
{servers}
"""


def responses_checks(replicas, checks, binary, model, url, root, started):
    """A stored response created on r1 is read, listed and deleted through r2; a chain continues
    on r2 with its history; a background response on r1 is polled through r2, survives another
    replica's start-up, and is cancelled through r2 (the cancel reaches r1 through the store)."""
    p1, p2 = replicas["r1"][1], replicas["r2"][1]
    model_name = request(p1, "GET", "/v1/models")[2]["data"][0]["id"]

    def create(port, **fields):
        return request(port, "POST", "/v1/responses", {"model": model_name, "temperature": 0, **fields})

    s, h, first = create(p1, input="What is the capital of France?", max_output_tokens=12)
    rid = first.get("id") if s == 200 else None
    s2, h2, got = request(p2, "GET", f"/v1/responses/{rid}")
    checks.append((f"a response stored on {h.get('x-inferd-replica')} is retrieved through "
                   f"{h2.get('x-inferd-replica')} with the same output",
                   s == 200 and s2 == 200 and h2.get("x-inferd-replica") == "r2"
                   and got.get("output") == first.get("output") and got.get("status") == first.get("status")))
    s2, _, items = request(p2, "GET", f"/v1/responses/{rid}/input_items?order=asc")
    texts = [c.get("text") for i in items.get("data", []) for c in i.get("content", [])] if s2 == 200 else []
    checks.append((f"its input items are listed through r2 {texts}", texts == ["What is the capital of France?"]))

    # The chain's second turn goes straight to r2, which never saw the first: the history comes
    # from the store and only the KV cache is rebuilt (cached_tokens 0).
    s3, h3, second = create(p2, input="And of Italy?", previous_response_id=rid, max_output_tokens=12)
    u1, u2 = first.get("usage", {}), second.get("usage", {}) if s3 == 200 else {}
    history = u2.get("input_tokens", 0) > u1.get("input_tokens", 0) + u1.get("output_tokens", 0)
    checks.append((f"a previous_response_id chain continues on r2 with its history (input_tokens "
                   f"{u1.get('input_tokens')} then {u2.get('input_tokens')}, cached_tokens "
                   f"{(u2.get('input_tokens_details') or {}).get('cached_tokens')})",
                   s3 == 200 and second.get("status") in ("completed", "incomplete") and history
                   and (u2.get("input_tokens_details") or {}).get("cached_tokens") == 0
                   and second.get("previous_response_id") == rid))
    s4, _, deleted = request(p2, "DELETE", f"/v1/responses/{rid}")
    s5 = request(p1, "GET", f"/v1/responses/{rid}")[0]
    checks.append((f"deleted through r2 ({s4}), gone on r1 ({s5})", s4 == 200 and deleted.get("deleted") is True
                   and s5 == 404))

    # A background response on r1, polled through r2 until it ends.
    s, _, bg = create(p1, input="Name three colours.", background=True, max_output_tokens=24)
    # Meanwhile a client streams it through r2, which sends the events once r1 has finished it.
    streamed = {}
    reader = threading.Thread(target=lambda: streamed.update(
        r=request(p2, "GET", f"/v1/responses/{bg.get('id')}?stream=true")))
    reader.start()
    seen, end = [], time.monotonic() + 60
    while time.monotonic() < end:
        st, hh, polled = request(p2, "GET", f"/v1/responses/{bg.get('id')}")
        seen.append(polled.get("status") if st == 200 else st)
        if seen[-1] not in ("queued", "in_progress"):
            break
        time.sleep(0.1)
    final_r1 = request(p1, "GET", f"/v1/responses/{bg.get('id')}")[2]
    reader.join(timeout=60)
    st, _, text = streamed.get("r", (0, {}, ""))
    events = [json.loads(l[6:]) for l in text.split("\n") if l.startswith("data: ")] if isinstance(text, str) else []
    deltas = "".join(e.get("delta", "") for e in events if e.get("type") == "response.output_text.delta")
    final_text = "".join(c.get("text", "") for o in final_r1.get("output", []) for c in o.get("content", []))
    checks.append((f"streamed through r2 while it ran on r1: {len(events)} events, "
                   f"{events[-1].get('type') if events else None}, deltas == final text",
                   st == 200 and events and events[-1].get("type") in ("response.completed", "response.incomplete")
                   and [e.get("sequence_number") for e in events] == list(range(len(events)))
                   and deltas == final_text and final_text != ""))
    checks.append((f"a background response on r1 is polled through r2 ({'/'.join(dict.fromkeys(map(str, seen)))})",
                   s == 200 and seen[-1] in ("completed", "incomplete") and polled.get("output") == final_r1.get("output")
                   and len(seen) > 1))

    # A long background response on r1; a fourth replica starting meanwhile must not fail it
    # (r1 is alive), and a cancel sent to r2 stops it on r1.
    s, _, long_bg = create(p1, input="Count from 1 to 500, one number per line.", background=True,
                           max_output_tokens=900)
    lid = long_bg.get("id")
    d4 = os.path.join(root, "r4")
    os.makedirs(d4)
    proc4, p4, log4, _ = start_server("r4", binary, model, d4,
                                      extra_args=("--store-url", url, "--replica-id", "r4", "--threads", "1"))
    started.append(("replica", proc4, log4))
    status4 = request(p4, "GET", f"/v1/responses/{lid}")[2].get("status")
    checks.append((f"a replica starting while r1 runs a background response leaves it running ({status4})",
                   status4 in ("queued", "in_progress")))
    # r1 writes the status it moves to (queued -> in_progress) within its 200 ms poll.
    seen_r2, end = None, time.monotonic() + 10
    while seen_r2 != "in_progress" and time.monotonic() < end:
        seen_r2 = request(p2, "GET", f"/v1/responses/{lid}")[2].get("status")
        time.sleep(0.05)
    checks.append((f"r2 reads it in_progress while r1 runs it ({seen_r2})", seen_r2 == "in_progress"))
    sd = request(p2, "DELETE", f"/v1/responses/{lid}")[0]
    checks.append((f"deleting it through r2 while it runs on r1 is refused ({sd})", sd == 409))
    t0 = time.monotonic()
    sc, hc, cancelled = request(p2, "POST", f"/v1/responses/{lid}/cancel")
    took = time.monotonic() - t0
    on_r1 = request(p1, "GET", f"/v1/responses/{lid}")[2]
    checks.append((f"a cancel sent to r2 stops r1's background response ({sc}, {cancelled.get('status')}, "
                   f"{took:.2f} s; r1 says {on_r1.get('status')})",
                   sc == 200 and cancelled.get("status") == "cancelled" and on_r1.get("status") == "cancelled"
                   and on_r1.get("output") == cancelled.get("output")))
    proc4.send_signal(signal.SIGTERM)
    proc4.wait(timeout=30)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    if not shutil.which("haproxy"):
        sys.exit("cluster-test: haproxy is not installed (scripts/install-deps.sh installs it)")
    root = tempfile.mkdtemp(prefix="inferd-cluster.")
    os.chmod(root, 0o755)  # the PostgreSQL cluster inside runs as the postgres user when we are root
    pg_dir = os.path.join(root, "pg")
    started, checks = [], []
    try:
        url = subprocess.run([os.path.join(HERE, "pg-cluster.sh"), "start", pg_dir], check=True,
                             capture_output=True, text=True).stdout.strip()
        replicas = {}
        for name in ("r1", "r2", "r3"):
            d = os.path.join(root, name)
            os.makedirs(d)
            proc, port, log, _ = start_server(
                name, binary, model, d,
                extra_args=("--store-url", url, "--replica-id", name, "--threads", "1"))
            started.append(("replica", proc, log))
            replicas[name] = (proc, port)
        lb_port = free_port()
        cfg = os.path.join(root, "haproxy.cfg")
        open(cfg, "w").write(haproxy_config(lb_port, [(n, p) for n, (_, p) in replicas.items()]))
        lb_log = open(os.path.join(root, "haproxy.log"), "w")
        lb = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=lb_log, stderr=lb_log)
        started.append(("haproxy", lb, lb_log))
        end = time.monotonic() + 15
        while time.monotonic() < end:
            try:
                if request(lb_port, "GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)

        # 1. A session's turns all go to one replica, which keeps its KV cache between them.
        status, _, body = request(lb_port, "POST", "/v1/sessions", {"instructions": "Answer briefly."})
        sid = body["id"] if status == 200 or status == 201 else None
        checks.append(("a session is created through the load balancer", sid is not None))
        served, cached = [], []
        for prompt in ("What is the capital of France?", "And of Italy?", "And of Spain?"):
            s, h, b = request(lb_port, "POST", f"/v1/sessions/{sid}/responses",
                              {"prompt": prompt, "options": {"temperature": 0, "max_tokens": 16}})
            served.append(h.get("x-inferd-replica"))
            cached.append((b.get("usage") or {}).get("cached_tokens", 0) if isinstance(b, dict) else 0)
        checks.append((f"three turns on one replica {served}", len(set(served)) == 1 and None not in served))
        checks.append((f"turns 2 and 3 reuse the kept cache (cached_tokens {cached})", cached[1] > 0 and cached[2] > 0))
        owner = served[0]

        # 2. Every replica sees the session, its owner and its transcript (one store).
        seen = []
        for name, (_, port) in replicas.items():
            s, _, b = request(port, "GET", f"/v1/sessions/{sid}")
            seen.append(s == 200 and len([e for e in b.get("transcript", []) if e.get("type") == "response"]) == 3)
        checks.append((f"each replica sees the session's three responses {seen}", all(seen)))

        # 3. A client that disconnects through HAProxy cancels the turn on its replica.
        st = Stream(lb_port, f"/v1/sessions/{sid}/responses",
                    {"prompt": "Count from 1 to 300.", "stream": True,
                     "options": {"max_tokens": 400, "ignore_eos": True}})
        st.read_until(lambda ev: names(ev).count("snapshot") >= 3)
        st.close()
        t0 = time.monotonic()
        cancelled = False
        while time.monotonic() - t0 < 5 and not cancelled:
            _, _, b = request(replicas[owner][1], "GET", f"/v1/sessions/{sid}")
            last = (b.get("transcript") or [{}])[-1]
            cancelled = last.get("status") == "cancelled" and last.get("reason") == "client_disconnected"
            time.sleep(0.05)
        checks.append((f"a disconnect through HAProxy is cancelled on {owner} "
                       f"({time.monotonic() - t0:.2f} s to the transcript)", cancelled))

        # 4. Two turns of one session sent to two replicas directly never overlap (the lease).
        others = [n for n in replicas if n != owner]
        a = Stream(replicas[owner][1], f"/v1/sessions/{sid}/responses",
                   {"prompt": "Count from 1 to 100.", "stream": True, "options": {"max_tokens": 60, "ignore_eos": True}})
        a.read_until(lambda ev: "snapshot" in names(ev))
        b = Stream(replicas[others[0]][1], f"/v1/sessions/{sid}/responses",
                   {"prompt": "Say yes.", "stream": True, "options": {"max_tokens": 4}})
        done_a = {}

        def finish_a():
            a.read_until(lambda ev: {"completed", "cancelled", "error"} & set(names(ev)))
            done_a["t"] = time.monotonic()
        ta = threading.Thread(target=finish_a)
        ta.start()
        b.read_until(lambda ev: "started" in names(ev) or "error" in names(ev))
        b_started = time.monotonic()
        ta.join()
        b.read_until(lambda ev: {"completed", "cancelled", "error"} & set(names(ev)))
        a.close()
        b.close()
        checks.append((f"a turn sent to {others[0]} starts only after {owner}'s turn ended "
                       f"(started {b_started - done_a.get('t', b_started):+.2f} s after it)",
                       "started" in names(b.events) and b_started >= done_a.get("t", float("inf")) - 0.01))

        # 5. Stored responses live in PostgreSQL: whatever replica a request lands on sees them.
        responses_checks(replicas, checks, binary, model, url, root, started)

        # 6. kill -9 of the owner mid-turn: the stream ends, the turn is on record as not
        # completed, and the next turn succeeds on another replica, rebuilding the cache; a
        # background response the dead replica ran reads failed through the others.
        st = Stream(lb_port, f"/v1/sessions/{sid}/responses",
                    {"prompt": "Count from 1 to 300.", "stream": True,
                     "options": {"max_tokens": 400, "ignore_eos": True}})
        st.read_until(lambda ev: names(ev).count("snapshot") >= 3)
        killed = st.replica
        # A background response running on the replica about to die, to read through another.
        model_name = request(replicas[killed][1], "GET", "/v1/models")[2]["data"][0]["id"]
        bg_status, _, bg = request(replicas[killed][1], "POST", "/v1/responses", {
            "model": model_name, "input": "Count from 1 to 500, one number per line.", "background": True,
            "max_output_tokens": 900})
        t_kill = time.monotonic()
        replicas[killed][0].send_signal(signal.SIGKILL)
        replicas[killed][0].wait()
        st.read_until(lambda ev: False, timeout=10)
        checks.append((f"the stream ends when its replica {killed} is killed", st.closed and "completed" not in names(st.events)))
        st.close()
        time.sleep(1.5)  # two failed health checks mark it down
        s, h, b = request(lb_port, "POST", f"/v1/sessions/{sid}/responses",
                          {"prompt": "Thank you.", "options": {"temperature": 0, "max_tokens": 8}})
        next_replica = h.get("x-inferd-replica")
        recovered = time.monotonic() - t_kill
        usage = b.get("usage", {}) if isinstance(b, dict) else {}
        # A replica that never ran this session has no cache for it: it rebuilds the whole prompt.
        # The one that ran the lease test's turn kept a cache up to that turn and reuses only that.
        cached, prompt_tokens = usage.get("cached_tokens", -1), usage.get("prompt_tokens", 0)
        rebuilt = cached == 0 if next_replica != others[0] else 0 <= cached < prompt_tokens
        checks.append((f"the next turn succeeds on another replica ({next_replica}) and rebuilds what it lacks "
                       f"(cached_tokens {cached} of {prompt_tokens}; {recovered:.2f} s from kill -9 to its answer, "
                       f"1.5 s of it waiting for two failed health checks)",
                       s == 200 and next_replica not in (None, killed) and rebuilt))
        _, _, b = request(replicas[next_replica][1], "GET", f"/v1/sessions/{sid}") if next_replica in replicas else (0, {}, {})
        statuses = [e.get("status") for e in b.get("transcript", []) if e.get("type") == "response"]
        checks.append((f"the killed turn is recorded interrupted, the transcript intact {statuses}",
                       len(statuses) >= 6 and statuses[-2] == "interrupted" and statuses[-1] == "completed"))
        # The dead replica's background response: failed (never re-run) for whoever reads it.
        alive = next(n for n in replicas if n != killed)
        _, _, orphan = request(replicas[alive][1], "GET", f"/v1/responses/{bg.get('id')}")
        checks.append((f"{killed}'s background response reads failed through {alive} "
                       f"({orphan.get('status')}, {(orphan.get('error') or {}).get('code')})",
                       bg_status == 200 and orphan.get("status") == "failed"
                       and (orphan.get("error") or {}).get("code") == "server_stopped"))
    finally:
        for kind, proc, log in reversed(started):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            log.close()
        subprocess.run([os.path.join(HERE, "pg-cluster.sh"), "stop", pg_dir])
        failed = [n for n, ok in checks if not ok]
        if failed or not checks:
            print(f"cluster-test: logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report(checks)


if __name__ == "__main__":
    main()
