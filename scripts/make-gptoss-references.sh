#!/bin/sh
# Writes issue #38's tiny files (Tests/Fixtures/reference/tiny/make_tiny_gptoss.py) and llama.cpp's
# answers on them: the YaRN shape models' references exactly as scripts/make-shape-references.sh
# writes the sweep's (same prompts, same tool, `-fa off` as for every non-Gemma family), and
# llama.cpp's tokenizations of a string set under the `gpt-4o` pre-tokenizer
# (scripts/llama-cpp-tokenize.cpp on tiny-gpt4o-vocab.gguf). Not used by the tests; needs PyPI's
# `gguf`, the default model and the llama.cpp scripts/llama-cpp-build.sh built.
#
#   scripts/make-gptoss-references.sh [LLAMA_DIR]     (default /tmp/llama-cpp)
set -eu
dir=${1:-/tmp/llama-cpp}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
src=$dir/llama_cpp_python-0.3.36/vendor/llama.cpp
link="-I$src/include -I$src/ggml/include -I$src/common -I$src/vendor -L$src/build/bin -lllama-common -lllama -lggml -lggml-base -Wl,-rpath,$src/build/bin"
g++ -O2 -std=c++17 -o "$dir/llama-cpp-shapes" "$here/llama-cpp-shapes.cpp" $link
g++ -O2 -std=c++17 -o "$dir/llama-cpp-tokenize" "$here/llama-cpp-tokenize.cpp" $link
out=$root/Tests/Fixtures/reference/tiny
cd "$out"
mkdir -p shapes
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" yarn
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" vocab
for model in shapes/*-yarn-*.gguf; do
    name=$(basename "$model" .gguf)
    prompts=$(python3 -c "
import random, sys, zlib
name = sys.argv[1]
rng = random.Random(zlib.crc32(name.encode()))
bos = [1] if name.startswith('llama') else []
print(';'.join(','.join(map(str, bos + [rng.randrange(17, 512) for _ in range(n)])) for n in (5, 12, 40)))
" "$name")
    PROMPTS=$prompts N_PREDICT=24 "$dir/llama-cpp-shapes" -m "$model" -t 2 -c 512 -fa off >"shapes/$name.json" 2>"shapes/$name.log"
    rm "shapes/$name.log"
    echo "$name"
done
"$dir/llama-cpp-tokenize" tiny-gpt4o-vocab.gguf "$here/gpt4o-strings.json" >tiny-gpt4o.json
echo tiny-gpt4o
# gpt-oss shapes (for the mixture-of-experts layers' tests): F32 files, and llama-quantize's
# MXFP4_MOE of one (experts MXFP4, the other matrices Q8_0). Its Q8_0 matrices would go to the
# AMX buffer, whose first tile instruction faults on this machine: it runs on the no-AMX CPU
# backend (scripts/llama-cpp-build.sh), default repacking kept.
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" gptoss
"$src/build/bin/llama-quantize" shapes/gptoss-e8-k2.gguf shapes/gptoss-e8-k2-mxfp4.gguf MXFP4_MOE >/dev/null 2>&1
for name in gptoss-e4-k1 gptoss-e8-k2 gptoss-e32-k4 gptoss-e8-k2-mxfp4; do
    prompts=$(python3 -c "
import random, sys, zlib
rng = random.Random(zlib.crc32(sys.argv[1].encode()))
print(';'.join(','.join(map(str, [rng.randrange(17, 512) for _ in range(n)])) for n in (5, 12, 40)))
" "$name")
    LD_LIBRARY_PATH=$dir/build-noamx/bin PROMPTS=$prompts N_PREDICT=24 "$dir/llama-cpp-shapes" -m "shapes/$name.gguf" \
        -t 2 -c 512 -fa off >"shapes/$name.json" 2>"shapes/$name.log"
    rm "shapes/$name.log"
    echo "$name"
done
