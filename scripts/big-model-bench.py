#!/usr/bin/env python3
"""A real-size model beside llama.cpp (#35): inferd's engine and llama.cpp's llama-bench on a
random-weight model of SmolLM2-1.7B's shape, per weight type, in alternated rounds.

1. Writes DIR/shape1.7b-F16.gguf: the llama architecture at SmolLM2-1.7B's shape (24 layers,
   width 2048, 32 heads and 32 KV heads of 64, FFN 8192, rope base 130000, RMS epsilon 1e-5,
   context 8192, embeddings tied to the output as SmolLM2's are) with the default model's
   49,152-token vocabulary and tokenizer metadata (models/SmolLM2-135M-Instruct.Q4_1.gguf).
   Weights are seeded normals (std 0.02, as a trained model's are about; norms 1 ± 0.02), F16,
   the same bytes on every run with the same numpy. About 3.4 GB, 1-2 minutes.
2. Quantizes it with the pinned llama.cpp's llama-quantize (scripts/llama-cpp-build.sh) to
   each of --types: DIR/shape1.7b-TYPE.gguf (F16 is the written file itself). A minute or two
   per type. Files are written under a temporary name and renamed when complete; a file whose
   marker (DIR/shape1.7b-TYPE.gguf.done: seed, size) matches is not made again.
3. Benchmarks each type: per round, per thread count, `inferd bench --model FILE --threads T
   --tests pp128,tg32 --repetitions 1 --json` and `llama-bench -m FILE -t T -p 128 -n 32 -r 1
   -o json` (both warm up once first), the engine that goes first alternating from one
   measurement to the next. Prints one table per thread count (medians over rounds) and, with
   --json OUT, writes every sample.

llama.cpp on a CPU that advertises AMX: on the project's Xeon `arch_prctl` grants AMX yet the
first tile instruction raises SIGILL (docs/engine.md). The script then runs llama-bench against
the ggml-cpu library scripts/llama-cpp-build.sh builds without the AMX kernels
(LLAMA/build-noamx/bin, `-U__AMX_INT8__`: llama.cpp's repacked Q4_0/Q4_K/Q2_K layouts stay on, as
on a CPU without AMX) through LD_LIBRARY_PATH, or, when that library is missing, with `--repack
0` (no extra buffer types at all, which also turns the repacked layouts off), and says which.

--isa avx2 runs both engines' AVX2 kernels on an AVX-512 machine (what an AMD Zen 3 runs): inferd
with INFERD_CPU=avx2, llama-bench against the AVX2-only ggml-cpu the build script makes
(LLAMA/build-avx2/bin) through LD_LIBRARY_PATH.

--shape a3b writes Qwen3-30B-A3B's layers instead (#38: qwen3moe, width 2048, 32 query and 4 KV
heads of 128, per-head Q/K norms, 128 experts of FFN 768 with 8 used per token, an untied output
head), --layers of them (default 8 of the real 48, so the F16 source, ~10 GB, fits the disk):
DIR/shape-a3b-L8-TYPE.gguf. The tables' "active GB" is what one decoded token reads (the matrices
but the embedding, the experts' tensors at 8/128), the size the memory probe is compared with.

--shape smollm3-3b, phi3-mini, ministral3-3b: the dense families of #38 at their real layer
shapes (SmolLM3-3B: smollm3, every fourth layer without RoPE; Phi-3-mini: phi3, fused QKV and
gate/up, untied head; Ministral 3 3B: mistral3 with YaRN and the attention temperature), 12
layers each by default and the default model's vocabulary.

--shape gpt-oss-20b writes gpt-oss-20b's layers (#38: gpt-oss, width 2880, 64 query and 8 KV heads
of 64 with Q/K/V/O biases and attention sinks, a 128-token sliding window on alternate layers,
YaRN factor 32 over 4096 positions, 32 experts of FFN 2880 with 4 used per token and biases, an
untied output head; the default model's vocabulary, not o200k's), --layers of them (default 4 of
24: the F16 source is 7.2 GB): DIR/shape-gpt-oss-20b-L4-TYPE.gguf, made for MXFP4_MOE (experts
MXFP4, the other matrices Q8_0). --delete-source removes the F16 once the types are made; a
type whose file is complete does not need it again.

Usage (from the package root; needs PyPI's gguf and numpy):
    python3 scripts/big-model-bench.py [--shape 1.7b|a3b|gpt-oss-20b|smollm3-3b|phi3-mini|ministral3-3b] [--layers N] [--delete-source] [--dir /work/bigmodels] [--types Q4_0,Q5_K_M,...]
        [--threads 1,2] [--rounds 3] [--inferd .build/release/inferd] [--llama /tmp/llama-cpp]
        [--json OUT] [--quiet-wait 10] [--timeout 900] [--seed 20261206] [--files-only] [--isa avx2]
    python3 scripts/big-model-bench.py --report OUT [OUT...]   (the tables again, runs merged)

Figures and how long it takes: docs/performance.md ("A real-size model beside llama.cpp").
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

SEED = 20261206
SOURCE_MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_TYPES = "Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K_M,Q4_K_M,Q5_K_M,Q6_K,F16,BF16"
# Marker version: bump when the generator's output changes.
GENERATOR = 1


class Shape:
    """One benchmark model's architecture and dimensions."""

    def __init__(self, name, arch, layers, width, heads, kv_heads, head, ffn, rope_base, rms_eps, context,
                 description, experts=0, experts_used=0, expert_ffn=0, tied=True, qk_norm=False, gptoss=None,
                 fused=False, extra=None):
        self.name, self.arch, self.layers, self.width = name, arch, layers, width
        self.heads, self.kv_heads, self.head, self.ffn = heads, kv_heads, head, ffn
        self.rope_base, self.rms_eps, self.context, self.description = rope_base, rms_eps, context, description
        self.experts, self.experts_used, self.expert_ffn = experts, experts_used, expert_ffn
        self.tied, self.qk_norm = tied, qk_norm
        # fused: phi3's one attn_qkv and one ffn_up holding gate and up; extra: GGUFWriter
        # method name -> value, the family's own keys (rope scaling and the like).
        self.fused, self.extra = fused, extra or {}
        # gpt-oss's extras (GptOss below), or None for the llama and qwen3moe layouts.
        self.gptoss = gptoss


class GptOss:
    """What gpt-oss's layers add to a Shape: Q/K/V/O and router and expert biases, one attention
    sink logit per head, post_attention_norm in place of ffn_norm, a sliding window on alternate
    layers, YaRN scaling (factor over an original context)."""

    def __init__(self, window, yarn_factor, yarn_original):
        self.window, self.yarn_factor, self.yarn_original = window, yarn_factor, yarn_original


def shape_named(name, layers=None):
    if name == "1.7b":
        # SmolLM2-1.7B's config: 24 layers, hidden 2048, 32 heads of 64, 32 KV heads, intermediate
        # 8192, rope_theta 130000, rms_norm_eps 1e-5, max_position_embeddings 8192, tied embeddings.
        return Shape("shape1.7b", "llama", layers or 24, 2048, 32, 32, 64, 8192, 130000.0, 1e-5, 8192,
                     "SmolLM2-1.7B's shape")
    if name == "a3b":
        # Qwen3-30B-A3B's config: hidden 2048, 32 query heads and 4 KV heads of 128, 128 experts of
        # 768 with 8 used per token, per-head Q/K norms, rope_theta 1e6, rms_norm_eps 1e-6, an
        # untied output head; 48 layers, fewer here (--layers, default 8) so that the F16 source
        # fits this machine's disk: the per-token work of a layer is the real model's.
        n = layers or 8
        return Shape(f"shape-a3b-L{n}", "qwen3moe", n, 2048, 32, 4, 128, 6144, 1000000.0, 1e-6, 8192,
                     f"Qwen3-30B-A3B's layer shape, {n} layers", experts=128, experts_used=8, expert_ffn=768,
                     tied=False, qk_norm=True)
    if name == "gpt-oss-20b":
        # gpt-oss-20b's config (and its GGUF metadata): hidden 2880, 64 query heads and 8 KV heads
        # of 64, 32 experts of 2880 with 4 used per token, a 128-token sliding window on alternate
        # layers, attention sinks, rope_theta 150000 with YaRN (factor 32 over 4096 positions),
        # rms_norm_eps 1e-5, context 131072; 24 layers, fewer here (--layers, default 4) so the
        # F16 source (~1.6 GB a layer) fits the disk. The vocabulary is the default model's
        # 49,152 tokens, not o200k's 201,088: the benchmark feeds token ids only, and with 4 of 24
        # layers the real output head (201,088 x 2880, 0.6 GB in Q8_0) would be most of what a
        # decoded token reads instead of about a fifth as in the real model.
        n = layers or 4
        return Shape(f"shape-gpt-oss-20b-L{n}", "gpt-oss", n, 2880, 64, 8, 64, 2880, 150000.0, 1e-5, 131072,
                     f"gpt-oss-20b's layer shape, {n} layers", experts=32, experts_used=4, expert_ffn=2880,
                     tied=False, gptoss=GptOss(window=128, yarn_factor=32.0, yarn_original=4096))
    # The dense families of #38 at their real layer shapes, 12 layers each (the per-token work of
    # a layer is the real model's; the full depth would not fit the disk beside the other files)
    # and the default model's vocabulary (a smaller head than the real models').
    if name == "smollm3-3b":
        # SmolLM3-3B's config: hidden 2048, 16 query and 4 KV heads of 128, intermediate 11008,
        # rope_theta 5e6, every fourth layer without RoPE (the architecture's rule), tied; 36 layers.
        n = layers or 12
        return Shape(f"shape-smollm3-3b-L{n}", "smollm3", n, 2048, 16, 4, 128, 11008, 5000000.0, 1e-6, 8192,
                     f"SmolLM3-3B's layer shape, {n} layers")
    if name == "phi3-mini":
        # Phi-3-mini-4k's config: hidden 3072, 32 heads of 96 (no GQA), intermediate 8192, fused
        # QKV and gate/up, rope_theta 10000, rms 1e-5, context 4096, an untied head; 32 layers.
        n = layers or 12
        return Shape(f"shape-phi3-mini-L{n}", "phi3", n, 3072, 32, 32, 96, 8192, 10000.0, 1e-5, 4096,
                     f"Phi-3-mini's layer shape, {n} layers", tied=False, fused=True)
    if name == "ministral3-3b":
        # Ministral 3 3B's text config: hidden 3072, 32 query and 8 KV heads of 128, intermediate
        # 9216, rope_theta 1e9 with YaRN (factor 16 over 16384, betas 32/1) and the attention
        # temperature (0.1), tied; 26 layers.
        n = layers or 12
        return Shape(f"shape-ministral3-3b-L{n}", "mistral3", n, 3072, 32, 8, 128, 9216, 1000000000.0, 1e-5, 16384,
                     f"Ministral 3 3B's layer shape, {n} layers",
                     extra={"add_rope_scaling_type": "yarn", "add_rope_scaling_factor": 16.0,
                            "add_rope_scaling_orig_ctx_len": 16384, "add_rope_scaling_yarn_log_mul": 1.0,
                            "add_rope_scaling_yarn_beta_fast": 32.0, "add_rope_scaling_yarn_beta_slow": 1.0,
                            "add_attn_temperature_scale": 0.1})
    sys.exit(f"unknown --shape {name} (1.7b, a3b, gpt-oss-20b, smollm3-3b, phi3-mini or ministral3-3b)")


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def marker_ok(path, seed):
    """The file exists, is complete and was made with this seed by this generator version."""
    try:
        with open(path + ".done") as f:
            mark = json.load(f)
        return (mark.get("seed") == seed and mark.get("generator") == GENERATOR
                and os.path.getsize(path) == mark.get("bytes"))
    except (OSError, ValueError):
        return False


def write_marker(path, seed, **extra):
    with open(path + ".done", "w") as f:
        json.dump({"seed": seed, "generator": GENERATOR, "bytes": os.path.getsize(path), **extra}, f)
        f.write("\n")


def tensor_plan(shape, vocab):
    """(name, shape as numpy rows x columns, kind) in llama.cpp's order; kind: matrix or norm."""
    S = shape
    plan = [("token_embd.weight", (vocab, S.width), "matrix")]
    for layer in range(S.layers):
        p = f"blk.{layer}."
        plan += [
            (p + "attn_norm.weight", (S.width,), "norm"),
        ]
        if S.fused:
            plan.append((p + "attn_qkv.weight", ((S.heads + 2 * S.kv_heads) * S.head, S.width), "matrix"))
        else:
            plan += [
                (p + "attn_q.weight", (S.heads * S.head, S.width), "matrix"),
                (p + "attn_k.weight", (S.kv_heads * S.head, S.width), "matrix"),
                (p + "attn_v.weight", (S.kv_heads * S.head, S.width), "matrix"),
            ]
        if S.qk_norm:
            plan += [(p + "attn_q_norm.weight", (S.head,), "norm"), (p + "attn_k_norm.weight", (S.head,), "norm")]
        if S.gptoss:
            plan += [
                (p + "attn_q.bias", (S.heads * S.head,), "bias"),
                (p + "attn_k.bias", (S.kv_heads * S.head,), "bias"),
                (p + "attn_v.bias", (S.kv_heads * S.head,), "bias"),
                (p + "attn_output.weight", (S.width, S.heads * S.head), "matrix"),
                (p + "attn_output.bias", (S.width,), "bias"),
                (p + "attn_sinks.weight", (S.heads,), "router"),
                (p + "post_attention_norm.weight", (S.width,), "norm"),
                (p + "ffn_gate_inp.weight", (S.experts, S.width), "router"),
                (p + "ffn_gate_inp.bias", (S.experts,), "bias"),
            ]
            for kind, rows, cols in (("gate", S.expert_ffn, S.width), ("up", S.expert_ffn, S.width),
                                     ("down", S.width, S.expert_ffn)):
                plan += [(p + f"ffn_{kind}_exps.weight", (S.experts, rows, cols), "matrix"),
                         (p + f"ffn_{kind}_exps.bias", (S.experts, rows), "bias")]
            continue
        plan += [
            (p + "attn_output.weight", (S.width, S.heads * S.head), "matrix"),
            (p + "ffn_norm.weight", (S.width,), "norm"),
        ]
        if S.experts:
            plan += [
                (p + "ffn_gate_inp.weight", (S.experts, S.width), "router"),
                (p + "ffn_gate_exps.weight", (S.experts, S.expert_ffn, S.width), "matrix"),
                (p + "ffn_up_exps.weight", (S.experts, S.expert_ffn, S.width), "matrix"),
                (p + "ffn_down_exps.weight", (S.experts, S.width, S.expert_ffn), "matrix"),
            ]
        elif S.fused:
            plan += [
                (p + "ffn_up.weight", (2 * S.ffn, S.width), "matrix"),
                (p + "ffn_down.weight", (S.width, S.ffn), "matrix"),
            ]
        else:
            plan += [
                (p + "ffn_gate.weight", (S.ffn, S.width), "matrix"),
                (p + "ffn_up.weight", (S.ffn, S.width), "matrix"),
                (p + "ffn_down.weight", (S.width, S.ffn), "matrix"),
            ]
    plan.append(("output_norm.weight", (S.width,), "norm"))
    if not S.tied:
        plan.append(("output.weight", (vocab, S.width), "matrix"))
    return plan


def tensor_values(index, shape, kind, seed):
    # One generator per tensor (seed, index): a tensor's values do not depend on the others'.
    rng = np.random.default_rng([seed, index])
    values = rng.standard_normal(shape, dtype=np.float32)
    if kind == "norm":
        return values * np.float32(0.02) + np.float32(1.0)  # F32, as converted models keep norms
    if kind == "router":
        return values  # F32 as converted MoE models keep the router; std 1 spreads the choices
    if kind == "bias":
        return values * np.float32(0.02)  # F32, as converted models keep biases (and sinks)
    values *= np.float32(0.02)
    return values.astype(np.float16)


def write_source(shape, path, seed, source_model):
    import gguf
    from gguf import GGUFReader, GGUFValueType

    src = GGUFReader(source_model)
    S = shape
    w = gguf.GGUFWriter(path + ".part", S.arch)
    w.add_type("model")
    # Not "phi3" in the name: llama.cpp gives a file whose general.name says phi3 or phi-3 Phi-3's
    # token attributes, which look up tokens the borrowed vocabulary lacks.
    w.add_name(f"{S.name.replace('phi3', 'p3')} random seed {seed}")
    w.add_uint32("inferd.bench.seed", seed)
    w.add_context_length(S.context)
    w.add_embedding_length(S.width)
    w.add_block_count(S.layers)
    w.add_feed_forward_length(S.ffn)
    w.add_head_count(S.heads)
    w.add_head_count_kv(S.kv_heads)
    w.add_rope_freq_base(S.rope_base)
    w.add_layer_norm_rms_eps(S.rms_eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if S.heads * S.head != S.width:
        w.add_key_length(S.head)
        w.add_value_length(S.head)
    for method, value in S.extra.items():
        if method == "add_rope_scaling_type":
            value = gguf.RopeScalingType(value)
        getattr(w, method)(value)
    if S.experts:
        w.add_expert_count(S.experts)
        w.add_expert_used_count(S.experts_used)
        w.add_expert_feed_forward_length(S.expert_ffn)
    if S.gptoss:
        w.add_sliding_window(S.gptoss.window)
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(S.gptoss.yarn_factor)
        w.add_rope_scaling_orig_ctx_len(S.gptoss.yarn_original)
    vocab = len(src.fields["tokenizer.ggml.tokens"].data)
    w.add_vocab_size(vocab)
    if not S.gptoss:
        w.add_rope_dimension_count(S.head)
    # The tokenizer as the default model's, key by key with its value types.
    for key, field in src.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub)
    plan = tensor_plan(S, vocab)
    for name, dims, kind in plan:
        dtype = np.float16 if kind == "matrix" else np.float32
        w.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for index, (name, dims, kind) in enumerate(plan):
        w.write_tensor_data(tensor_values(index, dims, kind, seed))
    w.close()
    os.replace(path + ".part", path)
    write_marker(path, seed, source_model=os.path.basename(source_model))


def make_files(args):
    os.makedirs(args.dir, exist_ok=True)
    NAME = args.shape.name
    source = os.path.join(args.dir, f"{NAME}-F16.gguf")
    needed = [t for t in args.types if t == "F16" or not marker_ok(os.path.join(args.dir, f"{NAME}-{t}.gguf"), args.seed)]
    if not needed:
        log("every file present (the F16 source is not needed)")
    elif marker_ok(source, args.seed):
        log(f"{source}: present")
    else:
        log(f"writing {source} (seed {args.seed})")
        start = time.time()
        write_source(args.shape, source, args.seed, args.source_model)
        log(f"wrote {source}: {os.path.getsize(source) / 1e9:.2f} GB in {time.time() - start:.0f} s")
    files = {}
    for t in args.types:
        out = os.path.join(args.dir, f"{NAME}-{t}.gguf")
        files[t] = out
        if t == "F16" or marker_ok(out, args.seed):
            continue
        log(f"quantizing to {t}")
        start = time.time()
        run = subprocess.run([args.quantize, source, out + ".part", t], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"llama-quantize {t} failed ({run.returncode}):\n{run.stderr[-3000:]}")
        os.replace(out + ".part", out)
        write_marker(out, args.seed, type=t)
        log(f"wrote {out}: {os.path.getsize(out) / 1e9:.2f} GB in {time.time() - start:.0f} s")
    if args.delete_source and "F16" not in args.types and os.path.exists(source):
        os.remove(source)
        os.remove(source + ".done")
        log(f"deleted {source} (--delete-source)")
    return files


def cpu_ticks():
    """(busy ticks of the whole machine, ticks of this process's finished children)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # all but idle, iowait
    children = os.times()
    return busy, (children.children_user + children.children_system) * os.sysconf("SC_CLK_TCK")


def wait_until_quiet(threshold=0.1, limit=10.0):
    """As inferd bench before each sample: wait (at most `limit` s) until other processes use
    less than `threshold` cores over half a second."""
    hz = os.sysconf("SC_CLK_TCK")
    start = time.time()
    while True:
        a, _ = cpu_ticks()
        time.sleep(0.5)
        b, _ = cpu_ticks()
        others = (b - a) / hz / 0.5
        if others < threshold or time.time() - start > limit:
            return others


def measured(cmd, env=None, timeout=1800):
    """Runs cmd; returns (completed process, wall seconds, cores other processes used meanwhile)."""
    hz = os.sysconf("SC_CLK_TCK")
    busy0, mine0 = cpu_ticks()
    start = time.time()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        run = subprocess.CompletedProcess(cmd, -9, e.stdout or "", f"timed out after {timeout} s")
    seconds = time.time() - start
    busy1, mine1 = cpu_ticks()
    others = max(0.0, ((busy1 - busy0) - (mine1 - mine0)) / hz / max(seconds, 1e-9))
    return run, seconds, others


def run_inferd(args, path, threads):
    cmd = [args.inferd, "bench", "--model", path, "--threads", str(threads), "--tests", "pp128,tg32",
           "--repetitions", "1", "--json"]
    env = dict(os.environ)
    if args.isa == "avx2":
        env["INFERD_CPU"] = "avx2"
    run, seconds, others = measured(cmd, env, timeout=args.timeout)
    if run.returncode != 0:
        return {"error": f"exit {run.returncode}: {run.stderr[-2000:]}", "command": cmd}
    report = json.loads(run.stdout[run.stdout.index("{"):])
    rows = {r["test"]: r for r in report["results"]}
    probe = report["memory_bandwidth_by_threads_gbps"].get(str(threads), report["memory_bandwidth_gbps"])
    return {"pp128": rows["pp128"]["median"], "tg32": rows["tg32"]["median"], "probe_gbps": probe,
            "kernels": report.get("kernels"),
            "others_cores_inferd": rows["pp128"]["others_cores"] + rows["tg32"]["others_cores"],
            "model_bytes": report["model_bytes"], "seconds": seconds, "others_cores": others,
            "command": cmd}


# How llama-bench runs: AMX is avoided only once it has crashed (SIGILL) on this machine.
LLAMA_MODES = ["default", "noamx-lib", "no-repack"]


def llama_command(args, path, threads, mode):
    cmd = [args.llama_bench, "-m", path, "-t", str(threads), "-p", "128", "-n", "32", "-r", "1", "-o", "json"]
    env = dict(os.environ)
    if args.isa == "avx2":
        env["LD_LIBRARY_PATH"] = args.avx2lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    elif mode == "noamx-lib":
        env["LD_LIBRARY_PATH"] = args.noamx + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    elif mode == "no-repack":
        cmd += ["--repack", "0"]
    return cmd, env


def run_llama(args, path, threads, state):
    while True:
        mode = LLAMA_MODES[state["mode"]]
        cmd, env = llama_command(args, path, threads, mode)
        run, seconds, others = measured(cmd, env, timeout=args.timeout)
        crashed = run.returncode in (-4, 132)  # SIGILL, directly or through a shell
        if not crashed:
            break
        log(f"llama-bench ({mode}) raised SIGILL")
        state["mode"] += 1
        while state["mode"] < len(LLAMA_MODES) and LLAMA_MODES[state["mode"]] == "noamx-lib" and not os.path.exists(
                os.path.join(args.noamx, "libggml-cpu.so")):
            state["mode"] += 1
        if state["mode"] >= len(LLAMA_MODES):
            return {"error": "llama-bench raised SIGILL in every mode", "command": cmd}
        state.setdefault("crashed", []).append(mode)
    if run.returncode != 0:
        return {"error": f"exit {run.returncode}: {run.stderr[-2000:]}", "command": cmd, "mode": mode}
    rows = json.loads(run.stdout[run.stdout.index("["):])
    pp = next(r for r in rows if r["n_prompt"] == 128 and r["n_gen"] == 0)
    tg = next(r for r in rows if r["n_gen"] == 32 and r["n_prompt"] == 0)
    return {"pp128": pp["avg_ts"], "tg32": tg["avg_ts"], "mode": mode, "seconds": seconds, "others_cores": others,
            "model_bytes": pp["model_size"], "command": cmd,
            "env": {"LD_LIBRARY_PATH": env["LD_LIBRARY_PATH"]} if "LD_LIBRARY_PATH" in env else {}}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "unknown CPU"
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    flags = set(flags.group(1).split()) if flags else set()
    features = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8") if f in flags]
    return f"{name.group(1) if name else 'unknown CPU'}, {os.cpu_count()} CPUs ({' '.join(features)})"


def git_commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %cs %s"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip()[:100] + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def active_bytes(path):
    """Bytes of weights one decoded token reads: every matrix but the token embedding (one row of
    it), and of each expert tensor the share of the experts a token uses (`expert_used_count` of
    `expert_count`). For a dense model that is the file's weights."""
    from gguf import GGUFReader

    r = GGUFReader(path)
    arch = str(bytes(r.fields["general.architecture"].parts[-1]), "utf-8")

    def number(key):
        f = r.fields.get(f"{arch}.{key}")
        return int(f.parts[-1][0]) if f else 0

    experts, used = number("expert_count"), number("expert_used_count")
    total = 0
    for t in r.tensors:
        n = int(t.n_bytes)
        if t.name == "token_embd.weight":
            n //= int(t.shape[-1])
        elif "_exps." in t.name and experts:
            n = n * used // experts
        total += n
    return total


def bench(args, files):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    header = {"started": started, "cpu": cpu_model(), "inferd": args.inferd, "inferd_commit": git_commit(root),
              "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]), "seed": args.seed,
              "rounds": args.rounds, "threads": args.threads, "types": args.types, "dir": args.dir, "cores": os.cpu_count(),
              "noamx": args.noamx, "isa": args.isa, "avx2lib": args.avx2lib, "shape": args.shape.name, "shape_description": args.shape.description,
              "active_bytes": {t: active_bytes(files[t]) for t in args.types}}
    print(f"# {started}; {header['cpu']}; inferd {header['inferd_commit']}", flush=True)
    samples = []
    state = {"mode": 0}
    for r in range(args.rounds):
        for ti, t in enumerate(args.types):
            for threads in args.threads:
                first_inferd = (r + ti) % 2 == 0
                order = ["inferd", "llama.cpp"] if first_inferd else ["llama.cpp", "inferd"]
                for engine in order:
                    quiet = wait_until_quiet(limit=args.quiet_wait)
                    if engine == "inferd":
                        s = run_inferd(args, files[t], threads)
                    else:
                        s = run_llama(args, files[t], threads, state)
                    s.update({"engine": engine, "type": t, "threads": threads, "round": r + 1,
                              "first": engine == order[0], "others_cores_before": quiet,
                              "loadavg": open("/proc/loadavg").read().split()[:3]})
                    samples.append(s)
                    log(f"round {r + 1} {t} t{threads} {engine}: pp128 {fmt(s.get('pp128'))} tg32 "
                        f"{fmt(s.get('tg32'))} tok/s, others {fmt(s.get('others_cores'))} cores"
                        + (f" ERROR {s['error'][:300]}" if "error" in s else ""))
                    if args.json:
                        write_json(args.json, header, samples, state)
    finished = time.strftime("%H:%M:%S UTC", time.gmtime())
    print_tables(with_mode(header, state), samples, finished)
    print_errors(samples)
    if args.json:
        write_json(args.json, header, samples, state)


def with_mode(header, state):
    return {**header, "llama_mode": LLAMA_MODES[min(state["mode"], len(LLAMA_MODES) - 1)],
            "llama_crashed_modes": state.get("crashed", [])}


def write_json(path, header, samples, state):
    with open(path + ".part", "w") as f:
        json.dump({**with_mode(header, state), "samples": samples}, f, indent=1)
        f.write("\n")
    os.replace(path + ".part", path)


def print_tables(header, samples, finished):
    """Medians over rounds, one table per thread count; `header` and `samples` as --json writes them."""
    mode, crashed = header.get("llama_mode", "default"), header.get("llama_crashed_modes", [])
    print(f"# {header['started']} to {finished}; {header['cpu']}; inferd {header['inferd_commit']}")
    print(f"# command: {header['command']}")
    described = header.get("shape_description", "SmolLM2-1.7B's shape")
    print(f"# model: {header.get('shape', 'shape1.7b')}-TYPE.gguf in {header.get('dir', '/work/bigmodels')} "
          f"({described}, random weights, seed {header['seed']})")
    if header.get("isa") == "avx2":
        print(f"# --isa avx2: inferd with INFERD_CPU=avx2, llama-bench against the AVX2-only ggml-cpu "
              f"(LD_LIBRARY_PATH={header.get('avx2lib')}): both run what an AVX2-only CPU would")
    if mode == "noamx-lib":
        print(f"# llama-bench raised SIGILL ({', '.join(crashed)}): run against the ggml-cpu built without AMX "
              f"(LD_LIBRARY_PATH={header.get('noamx', '/tmp/llama-cpp/build-noamx/bin')}, -U__AMX_INT8__; repacked layouts on)")
    elif mode == "no-repack":
        print(f"# llama-bench raised SIGILL ({', '.join(crashed)}): run with --repack 0 (no AMX and no repacked "
              f"layouts)")
    ok = [s for s in samples if "error" not in s]
    others = [s["others_cores"] for s in ok]
    if others:
        print(f"# cores other processes used during the runs: median {median(others):.2f}, max {max(others):.2f}")
    types = list(dict.fromkeys(s["type"] for s in samples))
    cores = header.get("cores") or os.cpu_count()
    for threads in sorted({s["threads"] for s in samples}):
        active = header.get("active_bytes", {})
        print_table(types, [s for s in ok if s["threads"] == threads], threads, "", active)
        # The runs that had their cores: what other processes used fit beside the engine's threads.
        free = [s for s in ok if s["threads"] == threads and s["others_cores"] <= cores - threads + 0.25]
        if free and len(free) < len([s for s in ok if s["threads"] == threads]):
            print_table(types, free, threads, f", only the runs during which other processes used at most "
                        f"{cores - threads + 0.25:.2f} cores", active)


def print_table(types, ok, threads, which, active):
    counts = [sum(1 for s in ok if (s["type"], s["engine"]) == (t, e)) for t in types for e in ("inferd", "llama.cpp")]
    runs = "-".join(map(str, sorted({min(c for c in counts if c), max(counts)}))) if any(counts) else "0"
    print()
    print(f"threads {threads}{which}: tokens/s, median of {runs} runs each (ratio = inferd / llama.cpp); probe: "
          "inferd's memory-read probe; % probe: tg32 x the bytes a token reads (active GB) over it; others: median cores used by other "
          "processes during the runs (inferd / llama.cpp)")
    print()
    print("| type | size GB | active GB | inferd pp128 | llama.cpp pp128 | ratio | inferd tg32 | llama.cpp tg32 | ratio "
          "| probe GB/s | inferd % probe | llama.cpp % probe | others |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in types:
        mine = [s for s in ok if s["type"] == t and s["engine"] == "inferd"]
        theirs = [s for s in ok if s["type"] == t and s["engine"] == "llama.cpp"]
        if not mine and not theirs:
            continue
        ip, it = median(s["pp128"] for s in mine), median(s["tg32"] for s in mine)
        lp, lt = median(s["pp128"] for s in theirs), median(s["tg32"] for s in theirs)
        probe = median(s["probe_gbps"] for s in mine)
        size = (mine or theirs)[0]["model_bytes"]
        reads = active.get(t) or size

        def ratio(a, b):
            return None if a is None or not b else a / b

        def pct(tg):
            return None if tg is None or not probe else tg * reads / 1e9 / probe * 100

        print(f"| {t} | {size / 1e9:.2f} | {reads / 1e9:.2f} | {fmt(ip)} | {fmt(lp)} | {fmt(ratio(ip, lp))} | {fmt(it)} | {fmt(lt)} "
              f"| {fmt(ratio(it, lt))} | {fmt(probe, 1)} | {fmt(pct(it), 0)} | {fmt(pct(lt), 0)} "
              f"| {fmt(median(s['others_cores'] for s in mine), 1)} / "
              f"{fmt(median(s['others_cores'] for s in theirs), 1)} |")


def print_errors(samples):
    for s in samples:
        if "error" in s:
            print(f"# error: {s['engine']} {s['type']} t{s['threads']} round {s['round']}: {s['error'][:300]}")


def report(paths):
    """Tables from one or more --json files (several runs' samples together)."""
    header, samples = None, []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        header = header or data
        samples += data["samples"]
    print_tables(header, samples, "(from " + ", ".join(paths) + ")")
    print_errors(samples)

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default="/work/bigmodels", help="where the model files go (not the repository)")
    p.add_argument("--shape", default="1.7b", help="1.7b (SmolLM2-1.7B, llama), a3b (Qwen3-30B-A3B's layers, "
                   "qwen3moe), gpt-oss-20b (gpt-oss-20b's layers, gpt-oss), smollm3-3b, phi3-mini or ministral3-3b "
                   "(their layers)")
    p.add_argument("--layers", type=int, help="layers of the shape (default: 24 for 1.7b, 8 for a3b, 4 for gpt-oss-20b, "
                   "12 for the others)")
    p.add_argument("--types", default=DEFAULT_TYPES, help=f"llama-quantize types (default {DEFAULT_TYPES})")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--inferd", default=os.path.join(root, ".build/release/inferd"))
    p.add_argument("--llama", default="/tmp/llama-cpp", help="scripts/llama-cpp-build.sh's directory")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--isa", choices=["native", "avx2"], default="native",
                   help="avx2: both engines run their AVX2 kernels on an AVX-512 CPU (INFERD_CPU=avx2; "
                        "llama.cpp's AVX2-only ggml-cpu, LLAMA/build-avx2/bin)")
    p.add_argument("--source-model", default=os.path.join(root, SOURCE_MODEL), help="tokenizer source")
    p.add_argument("--json", metavar="OUT", help="write every sample here")
    p.add_argument("--quiet-wait", type=float, default=10,
                   help="before each run, wait up to this many seconds for other processes to use < 0.1 core")
    p.add_argument("--timeout", type=float, default=900, help="seconds one engine's run may take")
    p.add_argument("--files-only", action="store_true", help="make the files, run no benchmark")
    p.add_argument("--delete-source", action="store_true",
                   help="delete the F16 source once the --types files are made (gpt-oss-20b's is ~7 GB)")
    p.add_argument("--report", nargs="+", metavar="JSON", help="print the tables of earlier --json files and stop")
    args = p.parse_args()
    if args.report:
        report(args.report)
        return
    args.shape = shape_named(args.shape, args.layers)
    args.types = [t for t in args.types.split(",") if t]
    args.threads = [int(t) for t in args.threads.split(",") if t]
    build = os.path.join(args.llama, "llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin")
    args.quantize = os.path.join(build, "llama-quantize")
    args.llama_bench = os.path.join(build, "llama-bench")
    args.noamx = os.path.join(args.llama, "build-noamx/bin")
    args.avx2lib = os.path.join(args.llama, "build-avx2/bin")
    if args.isa == "avx2" and not os.path.exists(os.path.join(args.avx2lib, "libggml-cpu.so")):
        sys.exit(f"--isa avx2 needs {args.avx2lib}/libggml-cpu.so: run scripts/llama-cpp-build.sh")
    if os.path.realpath(args.dir).startswith(os.path.realpath(root) + os.sep):
        sys.exit(f"--dir {args.dir} is inside the repository: put the model files elsewhere")
    files = make_files(args)
    if args.files_only:
        return
    bench(args, files)


if __name__ == "__main__":
    main()
