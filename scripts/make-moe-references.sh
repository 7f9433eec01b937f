#!/bin/sh
# Writes the mixture-of-experts sweep's models and llama.cpp's answers on them
# (Tests/Fixtures/reference/tiny/shapes/qwen3moe-*, read by MoEShapeTests), as
# make-shape-references.sh does for the dense families: make_tiny_moe.py's random-weight qwen3moe
# models over a 512-token vocabulary (F32); one of them quantized to Q8_0, and two 256-wide ones
# to Q4_K_M and Q6_K, by llama-quantize (their F32 sources, whose Q8_0 embeddings are
# requantized, are not kept); then scripts/llama-cpp-shapes.cpp on three token-id prompts per
# model with llama.cpp's non-flash attention (`-fa off`, as for the other qwen families). The CPU
# backend built without AMX kernels runs them (AMX faults on this CPU; the repacked Q4_K layout
# stays, as in llama-server). Not used by the tests; needs PyPI's `gguf`, the default model (for
# its first 512 tokens) and the tool scripts/make-shape-references.sh builds.
#
#   scripts/make-moe-references.sh [LLAMA_DIR]     (default /tmp/llama-cpp)
set -eu
. "$(dirname "$0")/shape-references-common.sh"
shapes_setup "${1:-/tmp/llama-cpp}"
noamx=$dir/build-noamx/bin
python3 make_tiny_moe.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" shapes
tmp=$(mktemp -d)
python3 make_tiny_moe.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$tmp" --sources
"$src/build/bin/llama-quantize" shapes/qwen3moe-e8-k2-hd32-gqa2.gguf shapes/qwen3moe-e8-k2-hd32-gqa2-q8_0.gguf Q8_0 >/dev/null 2>&1
"$src/build/bin/llama-quantize" --allow-requantize "$tmp/qwen3moe-e4-k2-hd64-gqa2-f32.gguf" shapes/qwen3moe-e4-k2-hd64-gqa2-q4_k_m.gguf Q4_K_M >/dev/null 2>&1
# All Q6_K: the first layer's experts take llama.cpp's tiled Q6_K product where 8 or more of a
# prompt's rows chose them (Q4_K_M puts Q6_K only in the last layer, which runs one row).
"$src/build/bin/llama-quantize" --allow-requantize "$tmp/qwen3moe-e4-k2-hd128-gqa2-f32.gguf" shapes/qwen3moe-e4-k2-hd128-gqa2-q6_k.gguf Q6_K >/dev/null 2>&1
rm -r "$tmp"
for model in shapes/qwen3moe-*.gguf; do
    shapes_reference "$(basename "$model" .gguf)" off "$noamx"
done
