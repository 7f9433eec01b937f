#!/bin/sh
# The dense families of issue #38 (smollm3, phi3, mistral3) in the shape sweep: writes
# Tests/Fixtures/reference/tiny/make_tiny_dense.py's random-weight models into
# Tests/Fixtures/reference/tiny/shapes/ and llama.cpp's answers on them exactly as
# scripts/make-shape-references.sh makes the others' (scripts/llama-cpp-shapes.cpp, three token-id
# prompts per model seeded by its name, 24 greedy tokens, non-flash attention: `-fa off`, what
# inferd follows for these families). Not used by the tests; needs PyPI's `gguf` and the default
# model (for its first 512 tokens).
#
#   scripts/make-dense-references.sh [LLAMA_DIR]     (default /tmp/llama-cpp)
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
python3 make_tiny_dense.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" shapes
for model in shapes/smollm3-*.gguf shapes/phi3-*.gguf shapes/mistral3-*.gguf; do
    name=$(basename "$model" .gguf)
    # As make-shape-references.sh: 5, 12 and 40 ids from 17..511, seeded by the name (no BOS:
    # these files do not add one).
    prompts=$(python3 -c "
import random, sys, zlib
rng = random.Random(zlib.crc32(sys.argv[1].encode()))
print(';'.join(','.join(str(rng.randrange(17, 512)) for _ in range(n)) for n in (5, 12, 40)))
" "$name")
    PROMPTS=$prompts N_PREDICT=24 "$tool" -m "$model" -t 2 -c 512 -fa off >"shapes/$name.json" 2>"shapes/$name.log"
    rm "shapes/$name.log"
    echo "$name"
done
