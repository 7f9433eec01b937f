#!/usr/bin/env python3
"""Session figures against a running server: per-turn first-snapshot latency and cached tokens
over a 6-turn conversation, cancel-endpoint latency (it answers only once the engine stopped),
and a burst of 50 replace requests. Usage: scripts/session-figures.py PORT (standard library only)."""
import http.client, json, time, sys, threading
P=int(sys.argv[1])
def req(method, path, body=None):
    c=http.client.HTTPConnection("127.0.0.1",P,timeout=120)
    c.request(method,path,body=json.dumps(body) if body is not None else None,headers={"Content-Type":"application/json"})
    r=c.getresponse(); d=r.read(); c.close()
    return r.status, (json.loads(d) if d else None)
def stream(path, body, stop_after=None):
    c=http.client.HTTPConnection("127.0.0.1",P,timeout=120)
    t0=time.time()
    c.request("POST",path,body=json.dumps(body),headers={"Content-Type":"application/json"})
    r=c.getresponse()
    first=None; events=[]; buf=b""
    while True:
        line=r.fp.readline()
        if not line: break
        if line.startswith(b"event: "):
            name=line[7:].strip().decode(); events.append([name,None])
            if name=="snapshot" and first is None: first=time.time()-t0
        if line.startswith(b"data: ") and events: events[-1][1]=json.loads(line[6:])
        if events and events[-1][1] is not None and events[-1][0] in ("completed","cancelled","error"): break
        if stop_after and events and events[-1][1] is not None and stop_after(events): return c, events, first, t0
    c.close()
    return None, events, first, t0
_,s=req("POST","/v1/sessions",{"instructions":"You are a helpful assistant.","options":{"temperature":0,"max_tokens":32}})
sid=s["id"]
print("turn  prompt_tokens  cached_tokens  first_snapshot_ms")
for i in range(1,7):
    _,ev,first,_=stream(f"/v1/sessions/{sid}/responses",{"prompt":f"Tell me one fact about the number {i}.","stream":True})
    st=[e for e in ev if e[0]=="started"][0][1]
    print(f"{i:4d}  {st['prompt_tokens']:13d}  {st['cached_tokens']:13d}  {first*1000:17.0f}")
# cancel latency
lat=[]
for k in range(5):
    c,ev,first,t0=stream(f"/v1/sessions/{sid}/responses",{"prompt":"Write a long essay about rivers.","stream":True,"on_cancel":"discard","options":{"max_tokens":1000,"ignore_eos":True}},stop_after=lambda e: sum(1 for x in e if x[0]=="snapshot")>=5)
    t=time.time(); st,body=req("POST",f"/v1/sessions/{sid}/cancel",{}); lat.append((time.time()-t)*1000)
    c.close()
print("cancel endpoint latency ms (answer after engine stopped):", [round(x,1) for x in lat])
# replace burst
_,s2=req("POST","/v1/sessions",{"on_busy":"replace","options":{"temperature":0,"max_tokens":6}})
res=[None]*50
def one(i):
    res[i]=req("POST",f"/v1/sessions/{s2['id']}/responses",{"prompt":f"Say {i}."})[1]
t=time.time(); ths=[threading.Thread(target=one,args=(i,)) for i in range(50)]
[x.start() for x in ths]; [x.join() for x in ths]
print("replace burst of 50: %.0f ms; completed=%d superseded=%d" % ((time.time()-t)*1000, sum(1 for r in res if r and r.get("status")=="completed"), sum(1 for r in res if r and r.get("reason")=="superseded")))
