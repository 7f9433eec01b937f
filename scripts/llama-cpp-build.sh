#!/bin/sh
# Builds the llama.cpp that made Tests/Fixtures/reference/gemma3 (commit 0c1e57098, vendored in the
# sdist of PyPI's llama-cpp-python 0.3.36) and scripts/llama-cpp-tensors.cpp against it, for
# comparing inferd's pass with llama.cpp's tensor by tensor (README, "Models", exactness).
# Also builds llama-quantize and llama-perplexity (in the build's bin/) and scripts/llama-cpp-score.cpp.
# Not used by the tests. About 10 minutes on 2 cores.
#
#   scripts/llama-cpp-build.sh [DIR]     (default /tmp/llama-cpp; prints the tools' paths)
set -eu
dir=${1:-/tmp/llama-cpp}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
cd "$dir"
# cmake and ninja first: reading the sdist's metadata (scikit-build-core) already needs cmake.
command -v cmake >/dev/null && command -v ninja >/dev/null || python3 -m pip install -q cmake ninja
if [ ! -d llama_cpp_python-0.3.36 ]; then
    # pip fetches the sdist from the index it is configured with. Without build isolation and with
    # scikit-build-core present, it reads the metadata without building the package.
    python3 -m pip install -q scikit-build-core
    python3 -m pip download -q --no-deps --no-binary :all: --no-build-isolation -d . llama-cpp-python==0.3.36
    tar xzf llama_cpp_python-0.3.36.tar.gz
fi
src=$dir/llama_cpp_python-0.3.36/vendor/llama.cpp
cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DGGML_NATIVE=ON >/dev/null
ninja -C "$src/build" llama-server llama-common llama-quantize llama-perplexity >/dev/null
g++ -O2 -std=c++17 -o "$dir/llama-cpp-tensors" "$here/llama-cpp-tensors.cpp" \
    -I"$src/include" -I"$src/ggml/include" -I"$src/common" -I"$src/vendor" \
    -L"$src/build/bin" -lllama-common -lllama -lggml -lggml-base -Wl,-rpath,"$src/build/bin"
# The scorer (every position's log-probability, top K, perplexity): Tests/Fixtures/reference/score.json
# and scripts/logprob-exactness.py.
g++ -O2 -std=c++17 -o "$dir/llama-cpp-score" "$here/llama-cpp-score.cpp" \
    -I"$src/include" -I"$src/ggml/include" -I"$src/vendor" \
    -L"$src/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$src/build/bin"
echo "$dir/llama-cpp-tensors"
echo "$dir/llama-cpp-score"
