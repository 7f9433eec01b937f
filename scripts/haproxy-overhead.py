#!/usr/bin/env python3
"""The cost of the HAProxy hop in front of an inferd replica, on loopback (issue #15's figure).

Usage: scripts/haproxy-overhead.py BINARY MODEL [--reps 30] [--rounds 5] [--streams 8] [--tokens 64]

Starts one inferd replica (its own temporary data dir) and HAProxy in front of it with the
reference deployment's settings (deploy/haproxy.cfg: consistent hashing on X-Session-Id, health
checks on /health, streaming timeouts), then runs scripts/proxy-overhead.py with the replica as
"direct" and HAProxy as "proxy": time to first token with the added time as the median of paired
differences, and the throughput of concurrent streams as the median of per-round ratios. One
replica on both sides, so only the hop differs. Stops what it started, pass or fail.
"""
import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def cluster_test():
    """scripts/cluster-test.py as a module: its HAProxy config is the reference deployment's."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("cluster_test", os.path.join(here, "cluster-test.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"haproxy-overhead: nothing healthy on port {port}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("model")
    p.add_argument("--reps", default="30")
    p.add_argument("--rounds", default="5")
    p.add_argument("--streams", default="8")
    p.add_argument("--tokens", default="64")
    p.add_argument("--without-http-no-delay", action="store_true",
                   help="leave out `option http-no-delay` (HAProxy then may hold small writes back)")
    a = p.parse_args()
    root = tempfile.mkdtemp(prefix="inferd-haproxy-")
    replica, front = free_port(), free_port()
    started = []
    try:
        log = open(os.path.join(root, "replica.log"), "w")
        started.append(subprocess.Popen(
            [a.binary, "serve", "--model", a.model, "--port", str(replica), "--data-dir", os.path.join(root, "data")],
            stdout=log, stderr=log))
        wait_healthy(replica)
        cfg = os.path.join(root, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(cluster_test().haproxy_config(front, [("r1", replica)], no_delay=not a.without_http_no_delay))
        lb_log = open(os.path.join(root, "haproxy.log"), "w")
        started.append(subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=lb_log, stderr=lb_log))
        wait_healthy(front)
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(
            [sys.executable, os.path.join(here, "proxy-overhead.py"), "--direct", f"http://127.0.0.1:{replica}",
             "--proxy", f"http://127.0.0.1:{front}", "--reps", a.reps, "--rounds", a.rounds,
             "--streams", a.streams, "--tokens", a.tokens], check=True)
    finally:
        for proc in reversed(started):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
