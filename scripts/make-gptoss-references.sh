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
. "$(dirname "$0")/shape-references-common.sh"
shapes_setup "${1:-/tmp/llama-cpp}"
# shellcheck disable=SC2086
g++ -O2 -std=c++17 -o "$dir/llama-cpp-tokenize" "$root/scripts/llama-cpp-tokenize.cpp" $link
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" yarn
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" vocab
for model in shapes/*-yarn-*.gguf; do
    shapes_reference "$(basename "$model" .gguf)" off
done
"$dir/llama-cpp-tokenize" tiny-gpt4o-vocab.gguf "$root/scripts/gpt4o-strings.json" >tiny-gpt4o.json
echo tiny-gpt4o
# gpt-oss shapes (for the mixture-of-experts layers' tests): F32 files, and llama-quantize's
# MXFP4_MOE of one (experts MXFP4, the other matrices Q8_0). Its Q8_0 matrices would go to the
# AMX buffer, whose first tile instruction faults on this machine: it runs on the no-AMX CPU
# backend (scripts/llama-cpp-build.sh), default repacking kept.
python3 make_tiny_gptoss.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" gptoss
"$src/build/bin/llama-quantize" shapes/gptoss-e8-k2.gguf shapes/gptoss-e8-k2-mxfp4.gguf MXFP4_MOE >/dev/null 2>&1
for name in gptoss-e4-k1 gptoss-e8-k2 gptoss-e32-k4 gptoss-e8-k2-mxfp4; do
    shapes_reference "$name" off "$dir/build-noamx/bin"
done
