#!/usr/bin/env bash
# Compatibility suite: drives a real `inferd serve` with the official `openai` and `anthropic`
# Python packages (Tests/compat). Builds nothing: pass the binary (make test/compat pass the one they
# built). The venv under .build/compat-venv is created once and reused. The server is started on
# a free port and stopped with SIGTERM whatever happens. Extra arguments go to pytest. The
# lm-evaluation-harness test runs the harness from a second venv, .build/lmeval-venv.
#   usage: scripts/compat-tests.sh [BIN] [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/inferd}
[ $# -gt 0 ] && shift
model=${INFERD_COMPAT_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
venv=.build/compat-venv

if [ ! -x "$bin" ]; then
  echo "compat: no server binary at $bin (build first: make build)" >&2
  exit 1
fi
if ! "$venv/bin/python" -c "import openai, anthropic, pytest, jsonschema, pydantic, fqdn, rfc3339_validator, rfc3986_validator; assert openai.__version__ == '3.57.0' and anthropic.__version__ == '2.17.0'" 2>/dev/null; then
  echo "compat: creating $venv (openai, anthropic, pytest from PyPI)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openai==3.57.0" "anthropic==2.17.0" "pytest==9.2.0" \
    "jsonschema==4.26.0" "pydantic==2.14.4" "fqdn==1.6.0" "rfc3339-validator==0.1.4" "rfc3986-validator==0.1.1"
fi

# lm-evaluation-harness for Tests/compat/test_lm_eval.py, in its own venv (its dependencies,
# datasets, pyarrow, pandas, scikit-learn, are ~760 MB; no torch or transformers): made once, about
# 75 s from PyPI.
lmeval_venv=.build/lmeval-venv
if ! "$lmeval_venv/bin/python" -c "import lm_eval, aiohttp, tenacity, requests; assert lm_eval.__version__ == '0.4.13'" 2>/dev/null; then
  echo "compat: creating $lmeval_venv (lm-eval[api] from PyPI)" >&2
  python3 -m venv "$lmeval_venv"
  "$lmeval_venv/bin/pip" install --quiet --disable-pip-version-check "lm-eval[api]==0.4.13"
fi
export INFERD_LMEVAL_PYTHON="$PWD/$lmeval_venv/bin/python"

log=$(mktemp)
data=$(mktemp -d)
"$bin" serve --port 0 --model "$model" --data-dir "$data" --log-format text >"$log" 2>&1 &
pid=$!
stop_server() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$log" "$data"
}
trap stop_server EXIT

port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*server listening.* port=\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
  [ -n "$port" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "compat: the server exited before listening:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "compat: no 'server listening ... port=N' line after 30 s:" >&2
  cat "$log" >&2
  exit 1
fi
base="http://127.0.0.1:$port"
if ! "$venv/bin/python" - "$base" <<'PY'; then
import sys, time, urllib.request
deadline = time.time() + 120
while time.time() < deadline:
    try:
        with urllib.request.urlopen(sys.argv[1] + "/health", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(1)
PY
  echo "compat: /health never answered 200:" >&2
  cat "$log" >&2
  exit 1
fi

echo "compat: server pid $pid on $base" >&2
status=0
INFERD_BASE_URL="$base" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -q -p no:cacheprovider Tests/compat "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "compat: failed; last server log lines:" >&2
  tail -n 40 "$log" >&2
fi
exit "$status"
