#!/usr/bin/env bash
# The chat page in a real browser (Tests/browser): headless Chromium and its chromedriver from
# Debian (installed here when missing), driven by PyPI's selenium from a venv made once under
# .build/browser-venv. The tests start and stop their own servers. Screenshots are written to
# .build/artifacts (chat-page.png, chat-page-phone.png). Extra arguments go to pytest.
#   usage: scripts/browser-tests.sh [BIN] [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/inferd}
[ $# -gt 0 ] && shift
venv=.build/browser-venv

if [ ! -x "$bin" ]; then
  echo "browser: no server binary at $bin (build first: make build)" >&2
  exit 1
fi
missing=()
for p in chromium chromium-driver; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "browser: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! "$venv/bin/python" -c "import selenium, pytest; assert selenium.__version__ == '4.51.0'" 2>/dev/null; then
  echo "browser: creating $venv (selenium, pytest from PyPI)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "selenium==4.51.0" "pytest==9.2.0"
fi

INFERD_BIN="$bin" INFERD_MODEL=${INFERD_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf} \
  INFERD_ARTIFACTS=${INFERD_ARTIFACTS:-.build/artifacts} PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider Tests/browser "$@"
