#!/usr/bin/env python3
"""Verifies the container image's runtime stage without a Docker engine (issue #15, item 7).

    sudo scripts/image-test.py            # or: make image-test

1. Builds the binary as the Dockerfile's build stage does (`swift build -c release
   --static-swift-stdlib --product inferd`, in its own scratch path `.build/image` so the test
   build's flags are left alone).
2. Builds the runtime stage's root from the Dockerfile itself: its `FROM debian:<suite>-slim`
   becomes `debootstrap --variant=minbase <suite>` from the Debian archive apt is configured with (cached under
   `.build/image-root/`, keyed by the suite and the RUN lines before the first COPY), then every
   instruction of the stage runs in order: RUN in a chroot with `/bin/sh -c` (so the image's own
   `apt-get install` line installs exactly its runtime packages), COPY (build-stage paths
   `/out/inferd` and `/src/...` map to the binary of step 1 and this checkout), ENV, USER,
   WORKDIR, ENTRYPOINT/CMD, HEALTHCHECK, EXPOSE. An instruction it does not know stops the test.
3. Runs the image's ENTRYPOINT + CMD in that root as the image's USER, with its ENV and WORKDIR,
   in a network and mount namespace of its own (loopback only, /proc mounted, nothing else of
   the host visible), and checks: the binary's shared libraries all resolve inside the root, the
   HEALTHCHECK command exits 0 once the model has loaded, `GET /health` answers 200 on the
   EXPOSEd port, one chat completion answers with text, the process runs under the image's
   user id and writes its state in WORKDIR, and SIGTERM (the STOPSIGNAL) ends it with exit 0.

What it does not verify: the build stage itself (it builds with this machine's toolchain, not
inside `swift:6.3-bookworm`), and the differences between Docker's bookworm-slim image and a
minbase debootstrap of the same suite (slim also trims docs and locales). Needs root."""
import hashlib, http.client, json, os, shlex, shutil, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".build", "image-root")


def configured_mirror():
    """The Debian archive this machine's apt is configured with (deb822 `URIs:` or a one-line
    `deb URI suite` entry whose path ends in /debian), so debootstrap fetches where apt does."""
    paths = ["/etc/apt/sources.list"]
    folder = "/etc/apt/sources.list.d"
    if os.path.isdir(folder):
        paths += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith((".sources", ".list"))]
    for path in paths:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            words = line.split("#", 1)[0].split()
            uris = words[1:] if words[:1] == ["URIs:"] else words[1:2] if words[:1] == ["deb"] else []
            for uri in uris:
                if uri.rstrip("/").endswith("/debian"):
                    return uri.rstrip("/")
    sys.exit("image-test: no Debian archive found in apt's sources (set IMAGE_TEST_MIRROR)")


MIRROR = os.environ.get("IMAGE_TEST_MIRROR") or configured_mirror()
DOCKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CD_AND_EXEC = 'cd "$0" && exec "$@"'  # sh -c: WORKDIR as $0, the command after it


def fail(message):
    sys.exit(f"image-test: {message}")


def instructions(path):
    """The Dockerfile as (keyword, argument) pairs, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for line in open(path):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        pending += stripped[:-1] + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            keyword, _, arg = pending.partition(" ")
            out.append((keyword.upper(), arg.strip()))
            pending = ""
    return out


def runtime_stage(steps):
    """The last stage's base image and its instructions."""
    starts = [i for i, (k, _) in enumerate(steps) if k == "FROM"]
    if not starts:
        fail("the Dockerfile has no FROM")
    base = steps[starts[-1]][1].split()[0]
    return base, steps[starts[-1] + 1:]


def exec_form(arg):
    """["a", "b"] (exec form) or a shell-form string as argv."""
    return json.loads(arg) if arg.startswith("[") else ["/bin/sh", "-c", arg]


def parse_env(arg):
    env = {}
    for item in shlex.split(arg):
        k, sep, v = item.partition("=")
        if not sep:
            fail(f"ENV {arg!r}: only the KEY=VALUE form is supported")
        env[k] = v
    return env


def in_root(root, argv, env=None, user=None, workdir="/", check=True, **kw):
    """argv inside `root` (a mount namespace of its own, /proc mounted), as `user`."""
    env = {"PATH": DOCKER_PATH, "HOME": "/root", **(env or {})}
    inner = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]
    chroot = ["chroot"] + ([f"--userspec={user}"] if user else []) + [root]
    script = f"mount -t proc proc {shlex.quote(root)}/proc && exec " + shlex.join(
        chroot + ["/bin/sh", "-c", CD_AND_EXEC, workdir, *inner])
    return subprocess.run(["unshare", "--mount", "--fork", "/bin/sh", "-c", script], check=check, **kw)


def build_binary():
    scratch = os.path.join(ROOT, ".build", "image")
    cmd = ["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "inferd", "--scratch-path", scratch]
    print("image-test:", shlex.join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)
    bin_dir = subprocess.run(cmd[:5] + ["--scratch-path", scratch, "--show-bin-path"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
    return os.path.join(bin_dir, "inferd")


def base_root(base, leading_runs):
    """debootstrap of the base image's suite plus the stage's RUN lines before its first COPY, cached."""
    name, _, tag = base.partition(":")
    suite = tag.removesuffix("-slim")
    if name != "debian" or not suite:
        fail(f"FROM {base}: only debian:<suite>[-slim] can be rebuilt with debootstrap")
    key = hashlib.sha256(json.dumps([suite, MIRROR, leading_runs]).encode()).hexdigest()[:16]
    cached = os.path.join(CACHE, key)
    if os.path.exists(os.path.join(cached, "done")):
        print(f"image-test: base root {suite} (cached, {cached})", flush=True)
        return os.path.join(cached, "rootfs")
    shutil.rmtree(cached, ignore_errors=True)
    os.makedirs(cached)
    rootfs = os.path.join(cached, "rootfs")
    print(f"image-test: debootstrap --variant=minbase {suite} ({MIRROR})", flush=True)
    t0 = time.monotonic()
    subprocess.run(["debootstrap", "--variant=minbase", suite, rootfs, MIRROR], check=True,
                   stdout=subprocess.DEVNULL)
    shutil.copy("/etc/resolv.conf", os.path.join(rootfs, "etc/resolv.conf"))  # as Docker gives a RUN
    for arg in leading_runs:
        print(f"image-test: RUN {arg[:100]}", flush=True)
        in_root(rootfs, exec_form(arg))
    open(os.path.join(cached, "done"), "w").write(f"{time.monotonic() - t0:.0f} s\n")
    return rootfs


def copy_source(src, flags, binary):
    """Where a COPY's source is on this machine."""
    if "--from=build" in flags:
        if src == "/out/inferd":
            return binary
        if src.startswith("/src/"):
            return os.path.realpath(os.path.join(ROOT, src[len("/src/"):]))
        fail(f"COPY --from=build {src}: image-test does not know where the build stage makes it")
    if any(f.startswith("--from") for f in flags):
        fail(f"COPY {' '.join(flags)} {src}: unknown stage")
    return os.path.realpath(os.path.join(ROOT, src))


def main():
    if os.geteuid() != 0:
        fail("needs root (debootstrap, chroot and namespaces)")
    missing = [pkg for tool, pkg in (("debootstrap", "debootstrap"), ("ip", "iproute2"), ("pgrep", "procps"),
                                     ("unshare", "util-linux")) if shutil.which(tool) is None]
    if missing:
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True)
    # IMAGE_TEST_DOCKERFILE: another Dockerfile (e.g. one missing a package, to see the test fail).
    base, steps = runtime_stage(instructions(os.environ.get("IMAGE_TEST_DOCKERFILE") or os.path.join(ROOT, "Dockerfile")))
    first_copy = next((i for i, (k, _) in enumerate(steps) if k == "COPY"), len(steps))
    leading = [a for k, a in steps[:first_copy] if k == "RUN"]
    if any(k != "RUN" for k, _ in steps[:first_copy]):
        fail("only RUN may come before the runtime stage's first COPY")
    binary = build_binary()
    cached = base_root(base, leading)

    work = tempfile.mkdtemp(prefix="inferd-image.")
    root = os.path.join(work, "rootfs")
    subprocess.run(["cp", "-a", cached, root], check=True)
    env, user, workdir, entry, cmd, health, port = {}, None, "/", [], [], None, None
    for keyword, arg in steps[first_copy:]:
        if keyword == "RUN":
            in_root(root, exec_form(arg), env=env, user=user, workdir=workdir)
        elif keyword == "COPY":
            parts = arg.split()
            flags = [p for p in parts if p.startswith("--")]
            src, dest = [p for p in parts if not p.startswith("--")]
            source = copy_source(src, flags, binary)
            target = os.path.join(root, dest.lstrip("/"))
            if dest.endswith("/"):
                target = os.path.join(target, os.path.basename(src))
            if not os.path.isfile(source):
                fail(f"COPY {src}: {source} does not exist")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)
        elif keyword == "ENV":
            env.update(parse_env(arg))
        elif keyword == "USER":
            user = arg
        elif keyword == "WORKDIR":
            workdir = arg
            os.makedirs(os.path.join(root, arg.lstrip("/")), exist_ok=True)
        elif keyword == "ENTRYPOINT":
            entry = json.loads(arg)
        elif keyword == "CMD":
            cmd = json.loads(arg)
        elif keyword == "HEALTHCHECK":
            health = json.loads(arg.split(" CMD ", 1)[1])
        elif keyword == "EXPOSE":
            port = int(arg.split("/")[0])
        elif keyword in ("VOLUME", "STOPSIGNAL", "LABEL"):
            pass
        else:
            fail(f"{keyword} {arg}: not understood")
    if not (entry and user and health and port):
        fail("the runtime stage needs ENTRYPOINT, USER, HEALTHCHECK and EXPOSE")
    try:
        # The checks run inside a network namespace of their own: the image's port is free there.
        result = subprocess.run(
            ["unshare", "--net", "--fork", sys.executable, os.path.abspath(__file__), "--inside",
             json.dumps({"root": root, "env": env, "user": user, "workdir": workdir, "argv": entry + cmd,
                         "health": health, "port": port})])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(result.returncode)


def inside(plan):
    """In the test's network namespace: serve from the root and check it."""
    root, env, user, workdir = plan["root"], plan["env"], plan["user"], plan["workdir"]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    checks = []
    ldd = in_root(root, ["ldd", "/usr/local/bin/inferd"], check=False, capture_output=True, text=True)
    missing = [l.strip() for l in ldd.stdout.splitlines() if "not found" in l]
    checks.append((f"every shared library of the binary is in the root {missing or ''}", ldd.returncode == 0 and not missing))
    uid = in_root(root, ["id", "-u", user], capture_output=True, text=True).stdout.strip()
    log_path = os.path.join(os.path.dirname(root), "serve.log")
    log = open(log_path, "w")
    server = subprocess.Popen(
        ["unshare", "--mount", "--fork", "/bin/sh", "-c",
         f"mount -t proc proc {shlex.quote(root)}/proc && exec chroot --userspec={user} {shlex.quote(root)} "
         + shlex.join(["/usr/bin/env", "-i", f"PATH={DOCKER_PATH}", f"HOME={workdir}",
                       *[f"{k}={v}" for k, v in env.items()], "/bin/sh", "-c", CD_AND_EXEC, workdir,
                       *plan["argv"]])],
        stdout=log, stderr=log, start_new_session=True)
    try:
        healthy, t0 = False, time.monotonic()
        while not healthy and time.monotonic() - t0 < 120 and server.poll() is None:
            healthy = in_root(root, plan["health"], env=env, user=user, workdir=workdir, check=False,
                              capture_output=True).returncode == 0
            if not healthy:
                time.sleep(0.5)
        checks.append((f"HEALTHCHECK {' '.join(plan['health'])} exits 0 ({time.monotonic() - t0:.1f} s after start)", healthy))
        c = http.client.HTTPConnection("127.0.0.1", plan["port"], timeout=60)
        c.request("GET", "/health")
        r = c.getresponse()
        body = json.loads(r.read() or b"{}")
        checks.append((f"GET /health answers {r.status} on the EXPOSEd port {plan['port']}", r.status == 200))
        c.request("GET", "/v1/models")
        model = json.loads(c.getresponse().read())["data"][0]["id"]
        c.request("POST", "/v1/chat/completions", json.dumps({
            "model": model, "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 12, "temperature": 0}), {"Content-Type": "application/json"})
        r = c.getresponse()
        answer = json.loads(r.read() or b"{}")
        text = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content", "")
        checks.append((f"one chat completion answers {r.status}: {text!r}", r.status == 200 and text.strip() != ""))
        pids = subprocess.run(["pgrep", "-s", str(server.pid), "-x", "inferd"], capture_output=True, text=True).stdout.split()
        uids = {open(f"/proc/{p}/status").read().split("Uid:")[1].split()[0] for p in pids}
        checks.append((f"the server runs as {user} (uid {uids or '?'}, image's {uid})", uids == {uid} and uid != "0"))
        state = os.listdir(os.path.join(root, workdir.lstrip("/")))
        checks.append((f"its state is written in WORKDIR {workdir} {sorted(state)}", "inferd.sqlite" in state))
    except (OSError, ValueError, KeyError, IndexError) as e:
        checks.append((f"the server answers ({e})", False))
    finally:
        # The STOPSIGNAL to the server itself (unshare, its parent, passes its exit code on).
        for pid in subprocess.run(["pgrep", "-s", str(server.pid), "-x", "inferd"], capture_output=True,
                                  text=True).stdout.split():
            os.kill(int(pid), signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            code = "timeout"
        log.close()
    checks.append((f"SIGTERM stops it with exit code {code}", code == 0))
    for name, ok in checks:
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    failed = sum(1 for _, ok in checks if not ok)
    if failed:
        print(f"image-test: server log:\n{open(log_path).read()[-3000:]}")
    print(f"{len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inside":
        inside(json.loads(sys.argv[2]))
    else:
        main()
