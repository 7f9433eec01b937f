"""What the load scripts (soak.py, churn.py) share: a server process's resources from /proc,
reading a loopback socket to its end, and the pass/fail report they end with."""
import os, re, sys


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
