"""What the load scripts (soak.py, churn.py) share: starting the server, a server process's
resources from /proc, reading a loopback socket to its end, and the pass/fail report they end
with."""
import json, os, re, signal, socket, subprocess, sys, time


def proc_stats(pid):
    """Threads, open fds and resident memory (MB) of process `pid`."""
    status = open(f"/proc/{pid}/status").read()
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    rss_kb = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))
    return {"threads": threads, "fds": len(os.listdir(f"/proc/{pid}/fd")), "rss_mb": rss_kb / 1024}


def read_all(s, stop=None, limit=None):
    """Bytes from socket `s` until it closes, `stop(data)` holds, or `limit` bytes arrived."""
    data = b""
    while True:
        if stop and stop(data):
            return data
        if limit is not None and len(data) >= limit:
            return data
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def report(checks):
    """Prints each (name, ok) check and exits 1 if any failed, else 0."""
    bad = 0
    for name, ok in checks:
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
        bad += 0 if ok else 1
    sys.exit(1 if bad else 0)


def health_status(port):
    """The status code of GET /health (raises OSError when nothing answers)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = read_all(s)
    s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else 0


def start_server(name, binary, model, data_dir, extra_args=(), env=None, health=health_status):
    """`inferd serve` on a free port with JSON logs in data_dir/server.log and a 32 MiB session
    KV-cache budget (kept caches may legitimately fill kv_cache_mib; a small one keeps an RSS
    bound about leaks, not about that cache). Returns (process, port, log file, log path) once
    `health(port)` answers 200; exits the script when the server does not come up."""
    log_path = os.path.join(data_dir, "server.log")
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [binary, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0", "--log-format", "json",
         "--data-dir", data_dir, "--drain-seconds", "5", "--kv-cache-mib", "32",
         # Every client of these runs comes from 127.0.0.1: the per-address limit would refuse them.
         "--per-ip-connection-limit", "0", *extra_args],
        stdout=log, stderr=log, env=env)
    port, start = None, time.monotonic()
    while port is None and time.monotonic() - start < 30:
        time.sleep(0.1)
        for line in open(log_path):
            if '"server listening"' in line:
                port = int(json.loads(line)["port"])
        if proc.poll() is not None:
            sys.exit(f"{name}: the server exited at start-up; log in {log_path}")
    if port is None:
        proc.kill()
        sys.exit(f"{name}: the server did not report its port")
    while time.monotonic() - start < 120:
        try:
            if health(port) == 200:
                return proc, port, log, log_path
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit(f"{name}: the model did not load within 120 s")


def stop_server(proc, log):
    """SIGTERM, then the exit code (or "timeout" when it takes more than 30 s, after a kill)."""
    proc.send_signal(signal.SIGTERM)
    try:
        exit_code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        exit_code = "timeout"
    log.close()
    return exit_code
