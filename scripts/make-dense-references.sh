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
. "$(dirname "$0")/shape-references-common.sh"
shapes_setup "${1:-/tmp/llama-cpp}"
python3 make_tiny_dense.py "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" shapes
for model in shapes/smollm3-*.gguf shapes/phi3-*.gguf shapes/mistral3-*.gguf; do
    shapes_reference "$(basename "$model" .gguf)" off
done
