#!/usr/bin/env python3
# The session store's cost per request: one inferd serve on SQLite, then one on PostgreSQL
# (when INFERD_TEST_POSTGRES_URL is set), each timing 30 x (create a session, one 1-token turn,
# GET the session) over loopback; medians in ms. Run: scripts/with-postgres.sh python3 scripts/store-figures.py
import subprocess, json, threading, time, urllib.request, sys, re, os, statistics, tempfile, signal
binary = ".build/release/inferd"
def start(extra):
    p = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", tempfile.mkdtemp()] + extra, stderr=subprocess.PIPE, text=True)
    port=None
    for line in p.stderr:
        m = re.search(r"server listening.*port=(\d+)", line)
        if m: port=int(m.group(1))
        if "model loaded" in line and port: break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, port
def req(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={"Content-Type":"application/json"})
    with urllib.request.urlopen(r) as resp: return json.loads(resp.read() or b"{}")
def bench(extra, n=30):
    p, port = start(extra)
    c, t, g = [], [], []
    try:
        for i in range(n):
            t0=time.perf_counter(); sid=req(port,"POST","/v1/sessions",{"options":{"temperature":0}})["id"]; t1=time.perf_counter()
            req(port,"POST",f"/v1/sessions/{sid}/responses",{"prompt":"Hi.","options":{"max_tokens":1}}); t2=time.perf_counter()
            req(port,"GET",f"/v1/sessions/{sid}"); t3=time.perf_counter()
            c.append((t1-t0)*1000); t.append((t2-t1)*1000); g.append((t3-t2)*1000)
    finally:
        p.kill()
    return [round(statistics.median(x),2) for x in (c,t,g)]
print("sqlite   create/turn(1 token)/get median ms:", bench([]))
url=os.environ.get("INFERD_TEST_POSTGRES_URL")
if url: print("postgres create/turn(1 token)/get median ms:", bench(["--store-url", url]))
