#!/usr/bin/env python3
"""Where a proxying inferd's added time to first token goes, read from packet timestamps.

Usage: tcpdump -i lo -tt -nn -s 300 -A 'tcp port 18311 or tcp port 18312' > cap.txt &
       (send streamed chat completions to the proxy, one at a time, e.g. scripts/proxy-overhead.py)
       scripts/proxy-hops.py cap.txt --proxy-port 18312 --upstream-port 18311 [--each]

For each streamed request to the proxy, pairs it with the upstream connection the proxy opened
for it (the first one opened after the request arrived) and prints, in ms, the medians of:
  - the client's last request byte -> the proxy's SYN to the upstream;
  - the client's last request byte -> the proxy's request to the upstream sent;
  - the upstream's first content chunk -> the proxy's first content chunk to the client (relay);
  - the sum of the second and third per request: the proxy's own share of the time to first
    token (what the client waits for beyond what the upstream itself takes).
Timestamps are the kernel's, taken on loopback, so neither process is slowed by measuring it.
Requests must not overlap (the pairing is by time); health checks are told apart by having no body.
"""
import argparse
import re
import statistics

HEADER = re.compile(r"^(\d+\.\d+) IP [\d.]+\.(\d+) > [\d.]+\.(\d+): Flags \[[^\]]*\].*length (\d+)")


def packets(path):
    out, current = [], None
    for line in open(path, errors="replace"):
        m = HEADER.match(line)
        if m:
            current = [float(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), ""]
            out.append(current)
        elif current is not None:
            current[4] += line.strip()
    return out


def connections(pk, port):
    by = {}
    for p in pk:
        if p[2] == port:
            by.setdefault(p[1], []).append(p)
        elif p[1] == port:
            by.setdefault(p[2], []).append(p)
    return sorted(by.values(), key=lambda ps: ps[0][0])


def first(ps, cond):
    return next((p[0] for p in ps if cond(p)), None)


def content(p):
    return '"content":"' in p[4] and '"content":""' not in p[4]


def main():
    a = argparse.ArgumentParser()
    a.add_argument("capture")
    a.add_argument("--proxy-port", type=int, default=18312)
    a.add_argument("--upstream-port", type=int, default=18311)
    a.add_argument("--each", action="store_true", help="print every request's figures too")
    o = a.parse_args()
    pk = packets(o.capture)
    upstream = connections(pk, o.upstream_port)
    rows = []
    for ps in connections(pk, o.proxy_port):
        sent = [p[0] for p in ps if p[2] == o.proxy_port and p[3] > 0]
        out = first(ps, lambda p: p[1] == o.proxy_port and content(p))
        if not sent or out is None:
            continue
        arrived = sent[-1]
        u = next((c for c in upstream if arrived - 0.001 <= c[0][0] < out), None)
        if u is None:
            continue
        post = first(u, lambda p: p[2] == o.upstream_port and p[3] > 0)
        came = first(u, lambda p: p[1] == o.upstream_port and content(p))
        if post is None or came is None:
            continue
        row = ((u[0][0] - arrived) * 1000, (post - arrived) * 1000, (out - came) * 1000)
        rows.append(row)
        if o.each:
            print("request->SYN %.3f  request->upstream request %.3f  relay %.3f" % row)
    if not rows:
        raise SystemExit("no proxied streamed request found in the capture")
    med = [statistics.median(r[i] for r in rows) for i in range(3)]
    own = statistics.median(r[1] + r[2] for r in rows)
    print("%d requests, medians: client request -> upstream SYN %.3f ms, -> upstream request sent %.3f ms; "
          "upstream first content -> proxy first content %.3f ms; the proxy's own share %.3f ms"
          % (len(rows), *med, own))


if __name__ == "__main__":
    main()
