#!/bin/sh
# Writes the shape sweep's models and llama.cpp's answers on them (Tests/Fixtures/reference/tiny/shapes/,
# read by ModelShapeTests): make_tiny.py's random-weight models over a 512-token vocabulary, then
# scripts/llama-cpp-shapes.cpp (built here against the llama.cpp that scripts/llama-cpp-build.sh
# built) on three token-id prompts per model, with the attention arithmetic inferd follows for
# the family. Not used by the tests; needs PyPI's `gguf` and
# the default model (for its first 512 tokens).
#
#   scripts/make-shape-references.sh [LLAMA_DIR]     (default /tmp/llama-cpp)
set -eu
dir=${1:-/tmp/llama-cpp}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
src=$dir/llama_cpp_python-0.3.36/vendor/llama.cpp
tool=$dir/llama-cpp-shapes
g++ -O2 -std=c++17 -o "$tool" "$here/llama-cpp-shapes.cpp" \
    -I"$src/include" -I"$src/ggml/include" -I"$src/common" -I"$src/vendor" \
    -L"$src/build/bin" -lllama-common -lllama -lggml -lggml-base -Wl,-rpath,"$src/build/bin"
out=$root/Tests/Fixtures/reference/tiny
cd "$out"
mkdir -p shapes
python3 make_tiny.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" shapes
for model in shapes/*.gguf; do
    name=$(basename "$model" .gguf)
    # Prompts of 5, 12 and 40 ids from 17..511 (past the special tokens), seeded by the name;
    # BOS (1) first for the llama files, which add it. Decoding over up to 32 keys sums them all
    # in ggml's double tail, from 33 keys on in its 64-wide steps: the short prompts' greedy
    # tokens take the first, the 40-id prompt's the second.
    prompts=$(python3 -c "
import random, sys, zlib
name = sys.argv[1]
rng = random.Random(zlib.crc32(name.encode()))
bos = [1] if name.startswith('llama') else []
print(';'.join(','.join(map(str, bos + [rng.randrange(17, 512) for _ in range(n)])) for n in (5, 12, 40)))
" "$name")
    # Attention as inferd computes it for the family (Architecture.flashAttentionRows): llama.cpp's
    # flash attention for Gemma 3 (its default, "auto", turns it on), its non-flash kernels for the rest.
    case $name in gemma3*) fa=auto ;; *) fa=off ;; esac
    PROMPTS=$prompts N_PREDICT=24 "$tool" -m "$model" -t 2 -c 512 -fa $fa >"shapes/$name.json" 2>"shapes/$name.log"
    rm "shapes/$name.log"
    echo "$name"
done
