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
. "$(dirname "$0")/shape-references-common.sh"
shapes_setup "${1:-/tmp/llama-cpp}"
python3 make_tiny.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" shapes
for model in shapes/llama*.gguf shapes/qwen2-*.gguf shapes/qwen3-*.gguf shapes/gemma3-*.gguf; do
    name=$(basename "$model" .gguf)
    case $name in *-yarn-* | *-mxfp4*) continue ;; esac # make-gptoss-references.sh's
    # Attention as inferd computes it for the family (Architecture.flashAttentionRows): llama.cpp's
    # flash attention for Gemma 3 (its default, "auto", turns it on), its non-flash kernels for the rest.
    case $name in gemma3*) fa=auto ;; *) fa=off ;; esac
    shapes_reference "$name" $fa
done
