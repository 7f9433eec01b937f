#!/bin/sh
# Builds the llama.cpp that made Tests/Fixtures/reference/gemma3 (commit 0c1e57098, vendored in the
# sdist of PyPI's llama-cpp-python 0.3.36) and scripts/llama-cpp-tensors.cpp against it, for
# comparing inferd's pass with llama.cpp's tensor by tensor (README, "Models", exactness).
# Also builds llama-quantize, llama-perplexity and llama-bench (in the build's bin/) and
# scripts/llama-cpp-score.cpp, and DIR/build-noamx/bin/libggml-cpu.so: the CPU backend again without its
# AMX kernels (-U__AMX_INT8__; repacked layouts kept), for CPUs that advertise AMX but fault on it
# (scripts/big-model-bench.py runs llama-bench against it through LD_LIBRARY_PATH there).
# Not used by the tests. About 12 minutes on 2 cores.
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
ninja -C "$src/build" llama-server llama-common llama-quantize llama-perplexity llama-bench >/dev/null
# -march=native defines __AMX_INT8__ on an AMX CPU whatever -mno-amx-* comes before it; undefining
# the macro leaves the AMX buffer type out of ggml-cpu (ggml-cpu.cpp, amx/amx.cpp).
cmake -S "$src" -B "$dir/build-noamx" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DGGML_NATIVE=ON -DCMAKE_C_FLAGS=-U__AMX_INT8__ -DCMAKE_CXX_FLAGS=-U__AMX_INT8__ >/dev/null
ninja -C "$dir/build-noamx" ggml-cpu >/dev/null
# An AVX2-only ggml-cpu (what an AMD Zen 3 runs: no AVX-512, no VNNI), for big-model-bench.py
# --isa avx2 on any x86 machine through LD_LIBRARY_PATH.
cmake -S "$src" -B "$dir/build-avx2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_BMI2=ON -DGGML_AVX512=OFF >/dev/null
ninja -C "$dir/build-avx2" ggml-cpu >/dev/null
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
