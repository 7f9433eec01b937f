# Sourced by the make-*-references.sh scripts: the one way the shape sweep's llama.cpp answers
# are made, so every family's references share their prompts and tool.
#
#   . scripts/shape-references-common.sh; shapes_setup LLAMA_DIR; shapes_reference NAME FA [LIBDIR]

# Sets $src, $tool, $root and $out, builds scripts/llama-cpp-shapes.cpp against the llama.cpp in
# LLAMA_DIR (scripts/llama-cpp-build.sh) and enters Tests/Fixtures/reference/tiny.
shapes_setup() {
    dir=$1
    root=$(cd "$(dirname "$0")/.." && pwd)
    src=$dir/llama_cpp_python-0.3.36/vendor/llama.cpp
    tool=$dir/llama-cpp-shapes
    link="-I$src/include -I$src/ggml/include -I$src/common -I$src/vendor -L$src/build/bin"
    link="$link -lllama-common -lllama -lggml -lggml-base -Wl,-rpath,$src/build/bin"
    # shellcheck disable=SC2086
    g++ -O2 -std=c++17 -o "$tool" "$root/scripts/llama-cpp-shapes.cpp" $link
    out=$root/Tests/Fixtures/reference/tiny
    cd "$out"
    mkdir -p shapes
}

# llama.cpp's answers on shapes/NAME.gguf into shapes/NAME.json: three prompts of 5, 12 and 40
# ids from 17..511 seeded by the name (BOS, id 1, first for the llama files, which add it), the
# top-10 log-probabilities after each, then 24 greedy tokens. FA: llama.cpp's -fa (auto for
# Gemma 3, whose arithmetic inferd follows with flash attention; off for the others). LIBDIR:
# another ggml CPU library (the no-AMX build, for types whose AMX path faults on this CPU).
# Decoding over up to 32 keys sums them all in ggml's double tail, from 33 keys on in its
# 64-wide steps: the short prompts' greedy tokens take the first, the 40-id prompt's the second.
shapes_reference() {
    name=$1
    fa=$2
    prompts=$(python3 -c "
import random, sys, zlib
name = sys.argv[1]
rng = random.Random(zlib.crc32(name.encode()))
bos = [1] if name.startswith('llama') else []
print(';'.join(','.join(map(str, bos + [rng.randrange(17, 512) for _ in range(n)])) for n in (5, 12, 40)))
" "$name")
    LD_LIBRARY_PATH=${3:-${LD_LIBRARY_PATH:-}} PROMPTS=$prompts N_PREDICT=24 "$tool" -m "shapes/$name.gguf" -t 2 -c 512 \
        -fa "$fa" >"shapes/$name.json" 2>"shapes/$name.log"
    rm "shapes/$name.log"
    echo "$name"
}
