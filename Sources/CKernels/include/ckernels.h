// Hot loops for the engine. Each fast kernel has a plain Swift reference beside it
// (Sources/Engine/Kernels) and a test comparing the two on random data.
//
// Every kernel has a portable C path and, where it pays, an AVX2/FMA/F16C path compiled with
// `__attribute__((target(...)))` and chosen at run time, so a CPU without AVX2 never sees those
// instructions.
#ifndef INFERD_CKERNELS_H
#define INFERD_CKERNELS_H
#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU runs the AVX2/FMA/F16C paths, 0 when the portable paths must be used.
int ck_cpu_has_avx2_fma(void);

/// The kernels this process runs: "avx512-vnni-bf16", "avx512-vnni", "avx2" or "portable"
/// (INFERD_CPU=avx2 makes an AVX-512 CPU run the AVX2 ones, cpu.c).
const char *ck_cpu_kernels(void);

/// 1 when the fast paths are in use (CPU supports them and they were not turned off).
int ck_fast_paths_enabled(void);
/// Turns the fast paths off (0) or back on (1, only if the CPU supports them) for the calling
/// thread and the pool tasks it starts. For tests.
void ck_set_fast_paths(int enabled);

/// Turns the AVX-512 VNNI variants of the fast kernels off (0) or back on (1, if supported) for
/// the calling thread. For tests: the AVX2-only variants must stay correct.
void ck_set_vnni(int enabled);

/// Turns the 16-lane AVX-512 kernels of the interleaved Q4_1, Q5_1 and Q8_0 forms off (0: the
/// eight-lane VNNI ones) or back on (1), for every thread. For tests and speed comparisons: both
/// give the same bits.
void ck_set_wide_groups(int enabled);
int ck_wide_groups_enabled(void);

// MARK: - Formats (ggml layouts)

enum {
    CK_TYPE_F32 = 0,
    CK_TYPE_F16 = 1,
    CK_TYPE_Q4_1 = 3,
    CK_TYPE_Q8_0 = 8,
};

#define CK_QK 32
/// 32 weights: value = d * q + m, q in 0...15; element j < 16 is the low nibble of qs[j],
/// element j + 16 its high nibble.
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qs[16];
} ck_block_q4_1;
/// 32 values: value = d * q.
typedef struct {
    uint16_t d;
    int8_t qs[32];
} ck_block_q8_0;
/// 32 activations: value = d * q; s = fp16(d * sum(q)).
typedef struct {
    uint16_t d;
    uint16_t s;
    int8_t qs[32];
} ck_block_q8_1;

// MARK: - Conversions and quantization

float ck_fp16_to_fp32(uint16_t h);
uint16_t ck_fp32_to_fp16(float f);
void ck_fp16_to_fp32_row(const uint16_t *x, float *y, size_t n);
void ck_fp32_to_fp16_row(const float *x, uint16_t *y, size_t n);

/// k must be a multiple of 32.
void ck_quantize_row_q8_1(const float *x, ck_block_q8_1 *y, int k);
void ck_quantize_row_q8_0(const float *x, ck_block_q8_0 *y, int k);

/// Dequantizes one row of k elements of a CK_TYPE_* tensor into f32.
void ck_dequantize_row(int type, const void *src, float *dst, int k);

// MARK: - Dot products (k elements)

float ck_dot_q4_1_q8_1(int k, const ck_block_q4_1 *w, const ck_block_q8_1 *a);
float ck_dot_q8_0_q8_0(int k, const ck_block_q8_0 *w, const ck_block_q8_0 *a);
float ck_dot_f32(int k, const float *w, const float *a);
float ck_dot_f16_f32(int k, const uint16_t *w, const float *a);

// MARK: - Thread scheduling

/// Asks the scheduler for a time slice of `microseconds` for the calling thread (SCHED_OTHER
/// threads only; Linux 6.12+ honours it, older kernels ignore it). 0 or an errno.
int ck_thread_set_slice_us(int64_t microseconds);
/// The calling thread's requested slice in µs as the kernel reports it (0: the default), -1 when
/// it cannot be read.
int64_t ck_thread_slice_us(void);
/// The slice the engine's threads ask for: `INFERD_COMPUTE_SLICE_US` if set (0 turns it off),
/// else 10,000 µs.
int64_t ck_compute_slice_us(void);
/// Applies `ck_compute_slice_us()` to the calling thread: for threads that compute tokens, so that
/// the server's I/O threads preempt them when they wake (see thread_slice.c). 0 or an errno.
int ck_thread_prefer_throughput(void);

// MARK: - Thread pool

typedef struct ck_pool ck_pool;
/// One chunk of a task; `thread` (0..<pool size, 0 = caller) identifies per-thread scratch.
typedef void (*ck_chunk_fn)(void *ctx, int chunk, int thread);
/// A pool of `n_threads` workers in total, the calling thread included (n_threads - 1 are spawned).
ck_pool *ck_pool_create(int n_threads);
void ck_pool_destroy(ck_pool *pool);
int ck_pool_size(const ck_pool *pool);
/// Runs fn(ctx, c, thread) for every chunk c in 0..<n_chunks, each exactly once, on whichever
/// threads are free (the caller works too), and returns when all chunks are done. A descheduled
/// worker never holds the caller up unless it is inside a chunk. One caller at a time.
void ck_pool_run_chunks(ck_pool *pool, ck_chunk_fn fn, void *ctx, int n_chunks);

// MARK: - Matrix multiplication

/// Y[t * ldy + r] = dot(W row r, X row t) for r in 0..<rows, t in 0..<n.
/// X rows hold activations in the form the weight type wants (ggml's vec_dot_type): Q8_0 blocks
/// for Q4_0, Q5_0 and Q8_0 weights, Q8_1 blocks for Q4_1 and Q5_1, Q8_K blocks for Q2_K...Q6_K,
/// f32 for F32, F16 and BF16.
typedef struct {
    int type;
    const void *w;
    size_t w_row_bytes;
    int rows;
    int k;
    const void *x;
    size_t x_row_bytes;
    int n;
    float *y;
    int ldy;
    /// Per token row (n entries), which of llama.cpp's arithmetics its product follows: 0 that
    /// of a row alone, or CK_ORDER_* flags for the rows of a larger micro-batch (see below).
    /// NULL: rows in whole groups of four from the first take CK_ORDER_GROUP4, none TILED.
    const unsigned char *orders;
} ck_matmul_args;

/// A row in a whole group of four of its micro-batch: llama.cpp's repacked Q4_K runs those
/// through its four-row GEMM (one FMA per 64 values), the rest through its GEMV (per 256).
#define CK_ORDER_GROUP4 1
/// A row of a micro-batch of 8 rows or more: llama.cpp's tiled K-quant product takes Q6_K there
/// (per super-block: the exact integer sum, times fp16(d_w), then one FMA with d_a).
#define CK_ORDER_TILED 2
/// A row of a micro-batch of two or more rows: llama.cpp's MUL_MAT takes its GEMM there for the
/// float types (BF16 on AVX512-BF16: tinyBLAS's order, not ggml_vec_dot_bf16's). A row without
/// it has a row alone's product: a decode step, a verified draft, the experts' products (its
/// MUL_MAT_ID runs vec_dot row by row). NULL orders: every row, when there are two or more.
#define CK_ORDER_BATCH 4

/// dot() of one row under `order` (CK_ORDER_* flags): what a matrix product gives that row.
float ck_dot_ordered(int type, int k, const void *w, const void *x, int order);
/// The same with the portable kernels.
float ck_dot_ordered_portable(int type, int k, const void *w, const void *x, int order);

/// Rows r0..<r1, every token, on the calling thread.
void ck_matmul_rows(const ck_matmul_args *args, int r0, int r1);
/// All rows, split over the pool (pool may be NULL: caller only).
void ck_matmul(ck_pool *pool, const ck_matmul_args *args);
/// Several independent products (at most 8; more run one by one) in one pool task: one wait
/// for all of them instead of one each (the Q, K and V projections; the gate and up ones).
void ck_matmul_many(ck_pool *pool, const ck_matmul_args *args, int count);

// MARK: - Interleaved weights

/// Weight forms made at load time (see interleave.c): eight rows interleaved per 32-column
/// block. In `ck_matmul_args` their `w_row_bytes` is the bytes of one group of eight rows, and
/// `rows` must be a multiple of 8.
enum {
    CK_TYPE_Q4_0_X8 = 1002,
    CK_TYPE_Q4_1_X8 = 1003,
    CK_TYPE_Q5_0_X8 = 1006,
    CK_TYPE_Q5_1_X8 = 1007,
    CK_TYPE_Q8_0_X8 = 1008,
    CK_TYPE_Q2_K_X8 = 1010,
    CK_TYPE_Q3_K_X8 = 1011,
    CK_TYPE_Q4_K_X8 = 1012,
    CK_TYPE_Q5_K_X8 = 1013,
    CK_TYPE_Q6_K_X8 = 1014,
    CK_TYPE_MXFP4_X8 = 1039,
};
/// 1 when this CPU has kernels that make the interleaved form of `type` (a CK_TYPE_*) pay:
/// AVX-512 VNNI or AVX2 ones for Q4_0, Q4_1, Q5_0, Q8_0, Q2_K, Q3_K, Q5_K and MXFP4; AVX-512 VNNI
/// ones for Q4_K and Q6_K; AVX-512 VNNI and BW ones for Q5_1.
int ck_interleaving_pays(int type);
/// Bytes of one group of eight rows of k columns in the interleaved form of `type` (Q4_0, Q4_1,
/// Q5_0, Q5_1, Q8_0 or MXFP4 with k a multiple of 32; Q2_K...Q6_K with k a multiple of 256), or 0
/// when it has none. Q5_0's form depends on the
/// kernels picked now: packed (CK_TYPE_Q5_0_X8) with AVX-512 BW and VNNI, else widened into
/// CK_TYPE_Q8_0_X8 (exact: the same products, 34 bytes per block instead of 22).
size_t ck_interleaved_group_bytes(int type, int k);
/// Writes rows (a multiple of 8) × k weights of `type` from the file layout into `dst`
/// (rows / 8 × ck_interleaved_group_bytes bytes); returns the interleaved type, or -1.
int ck_interleave(int type, const void *src, size_t src_row_bytes, int rows, int k, void *dst);

// MARK: - More weight types (ggml layouts; quants.c, dot_legacy.c, dot_kquants.c)

enum {
    CK_TYPE_Q4_0 = 2,
    CK_TYPE_Q5_0 = 6,
    CK_TYPE_Q5_1 = 7,
    CK_TYPE_Q8_1 = 9,
    CK_TYPE_Q2_K = 10,
    CK_TYPE_Q3_K = 11,
    CK_TYPE_Q4_K = 12,
    CK_TYPE_Q5_K = 13,
    CK_TYPE_Q6_K = 14,
    CK_TYPE_Q8_K = 15,
    CK_TYPE_BF16 = 30,
    CK_TYPE_MXFP4 = 39,
};

/// 32 weights: value = kvalues_mxfp4[q] · 2^(e − 128) (ggml's doubled E2M1 table 0, ±1, ±2, ±3,
/// ±4, ±6, ±8, ±12 and the E8M0 scale halved, as ggml_e8m0_to_fp32_half: e < 2 subnormal);
/// element j < 16 is the low nibble of qs[j], element j + 16 its high nibble. 17 bytes.
typedef struct {
    uint8_t e;
    uint8_t qs[16];
} ck_block_mxfp4;
/// 2^(e − 128) as ggml_e8m0_to_fp32_half builds it (the scale of an MXFP4 block).
float ck_e8m0_to_fp32_half(uint8_t e);

/// 32 weights: value = d * (q - 8), q in 0...15 (nibbles as in Q4_1).
typedef struct {
    uint16_t d;
    uint8_t qs[16];
} ck_block_q4_0;
/// 32 weights: value = d * (q - 16), q in 0...31: nibbles as in Q4_1, bit 4 of element j is
/// bit j of qh (little-endian).
typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
} ck_block_q5_0;
/// 32 weights: value = d * q + m, q as in Q5_0.
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[16];
} ck_block_q5_1;

#define CK_QK_K 256
/// 256 weights in 16 groups of 16: value = d * (scale & 15) * q - dmin * (scale >> 4), q 2 bits.
typedef struct {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;
    uint16_t dmin;
} ck_block_q2_K;
/// 256 weights in 16 groups of 16: value = d * (scale - 32) * (q - (high bit ? 0 : 4)), q 2 bits
/// plus a high bit in hmask; 6-bit scales packed in 12 bytes.
typedef struct {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;
} ck_block_q3_K;
/// 256 weights in 8 groups of 32: value = d * scale * q - dmin * min, q 4 bits; 6-bit scales
/// and mins packed in 12 bytes.
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[128];
} ck_block_q4_K;
/// As Q4_K with a fifth bit per weight in qh.
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} ck_block_q5_K;
/// 256 weights in 16 groups of 16: value = d * scale * (q - 32), q 6 bits (4 in ql, 2 in qh),
/// int8 scales.
typedef struct {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
} ck_block_q6_K;
/// 256 activations: value = d * q; bsums[g] = sum of q over group g of 16.
typedef struct {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} ck_block_q8_K;

/// Q8_K with ggml's rounding: per 256 values, max = the first value of largest magnitude,
/// iscale = -127 / max, q = min(127, round-to-nearest-even(iscale * x)), d = 1 / iscale.
/// k must be a multiple of 256.
void ck_quantize_row_q8_K(const float *x, ck_block_q8_K *y, int k);

/// dot(weight row of `type`, activation row in the form that type wants: Q8_0 for Q4_0, Q5_0 and
/// Q8_0; Q8_1 for Q4_1 and Q5_1; Q8_K for Q2_K...Q6_K; f32 for F32, F16 and BF16), with the
/// calling thread's path choice (portable, AVX2, VNNI). 0 for a type without kernels.
float ck_dot(int type, int k, const void *w, const void *x);
/// The same with the portable (scalar reference) kernel.
float ck_dot_portable(int type, int k, const void *w, const void *x);

/// Q4_K in ggml's four-token order (its repacked GEMM: one FMA per 64 values, where its
/// one-token order and ck_dot have one per 256). Matrix products take it for every token in a
/// whole group of four; the reference for the kernel tests.
float ck_dot_q4_k_pairs_portable(int k, const ck_block_q4_K *w, const ck_block_q8_K *a);

// MARK: - Attention

/// Causal attention with an f16 KV cache laid out [position][kv_head][head_dim].
/// Token t (0..<n_tokens) sits at position pos0 + t and attends positions 0...pos0 + t, or with a
/// sliding `window` > 0 only the last `window` of them (earlier keys are masked to -inf before
/// the softmax, as llama.cpp masks them, so they weigh exactly 0).
/// q: [n_tokens][n_head * head_dim] f32; out: same shape.
/// The query is rounded to f16, scores accumulate in f32 and are scaled, softmax in f32,
/// then the weights are rounded to f16 before the weighted sum of V.
/// The fast path sums in the orders of llama.cpp's CPU kernels: for one token (decode) like
/// ggml_vec_dot_f16 over the key range padded to 32; for a batch like llamafile's f16 GEMM.
/// Work is split in units of one token and one KV head: the n_head / n_kv_head query heads
/// that share it are done together, each K and V row converted from f16 once for all of them,
/// with every head's arithmetic (and so every bit of its output) that of one head on its own.
/// A batch (n_tokens >= 2, head_dim a multiple of 16) goes in tiles of several tokens with the
/// heads of one KV head instead when scratch_stride is ck_attention_scratch_floats' size: each
/// K and V row is read once per tile, not once per token, with the same bits out.
/// scratch: n_threads * scratch_stride floats. A unit needs, per query head of its group,
/// 64 * head_dim + pos0 + n_tokens + 16 floats (grouping takes up to 8 heads per KV head); with
/// a scratch_stride >= 64 * head_dim + pos0 + n_tokens + 16 but less, or more heads per group,
/// units run their heads one by one (same results, slower).
typedef struct {
    const float *q;
    int q_stride;
    const uint16_t *k_cache;
    const uint16_t *v_cache;
    int kv_stride;  // elements between positions (n_kv_head * head_dim)
    int n_head;
    int n_kv_head;
    int head_dim;
    int n_tokens;
    int pos0;
    float scale;
    float *out;
    int out_stride;
    float *scratch;
    int scratch_stride;
    int window;  // > 0: token t attends only positions > pos0 + t - window (sliding window)
    // Rows of the call (llama.cpp's micro-batch) these rows belong to: 2 or more takes the
    // batch arithmetic (tiles) even for a lone row, which a prompt's last piece can be; 1 makes
    // every row a decode step's (token by token, as when decoding drafted tokens verified in
    // one pass); 0: the n_tokens rows are the call.
    int call_rows;
    // n_head sink logits (gpt-oss's attn_sinks), or NULL: head h's softmax takes exp(sinks[h])
    // into its denominator as llama.cpp's soft_max with sinks does (the maximum taken over the
    // scores and the sink, the sink's expf added to the double sum). The non-flash and q8_0
    // kernels take them; the flash kernels (ck_attention_flash_*) do not.
    const float *sinks;
} ck_attention_args;

/// The same attention with the arithmetic of llama.cpp's CPU flash attention taken row by row
/// (ggml's one-chunk kernel: query rounded to f16 after `scale`, ggml_vec_dot_f16 scores, online
/// softmax, V summed in an f16 accumulator), which a current llama.cpp runs for batches under
/// 64 rows and single rows over at most 256 positions. One thread; head_dim <= 256; scratch
/// unused. See attention_flash.c.
void ck_attention_flash_rows(const ck_attention_args *args);

/// One query row's flash attention as llama.cpp runs it when its KV view has 512 cells or more
/// (more than 256 positions; the view is padded to 256): the view split in `n_chunks` equal
/// ranges (its threads), each range's online softmax as ck_attention_flash_rows, the partial
/// results merged in order. Rows one after another; scratch unused.
void ck_attention_flash_split(const ck_attention_args *args, int n_chunks);

/// The same attention with the arithmetic of llama.cpp's tiled CPU flash attention, which it
/// runs for micro-batches of 64 rows or more: f32 query (after `scale`) and keys, scores and
/// outputs as in-order FMA chains, an online softmax per tile of 64 cache positions with
/// ggml's AVX-512 exp approximation. Rows split over the pool (may be NULL); head_dim <= 256;
/// scratch unused. See attention_flash_tiled.c.
void ck_attention_flash_tiled(ck_pool *pool, const ck_attention_args *args);

/// Floats of scratch per thread (scratch_stride) with which every unit runs its fastest kernel,
/// for sequences of at most max_keys positions: a batch goes in tiles of about 24 query heads
/// (their queries, all their scores and weights), one token in 64 lane sums per head.
size_t ck_attention_scratch_floats(int n_head, int n_kv_head, int head_dim, int max_keys);
/// Tokens per tile with which ck_attention would run these args on this thread (0: token by
/// token). For tests and benchmarks.
int ck_attention_tile_size(const ck_attention_args *args);
/// Units u in u0..<u1 (u = t * n_kv_head + g: token t, KV head g) using scratch row `slot`.
void ck_attention_units(const ck_attention_args *args, int u0, int u1, int slot);
/// Units u in u0..<u1 (u = t * n_head + h) one query head at a time, the kernel before heads
/// were grouped. For tests: the grouped kernel must match it bit for bit.
void ck_attention_units_per_head(const ck_attention_args *args, int u0, int u1, int slot);
void ck_attention(ck_pool *pool, const ck_attention_args *args);
/// Whether ck_attention runs these args (one decoding token) split over the pool by keys and by
/// lanes (attention_group.c): a KV head count the pool's threads cannot share evenly, at least
/// 256 keys, and scratch for every head's scores and lane sums. For tests and benchmarks.
int ck_attention_decode_split_applies(ck_pool *pool, const ck_attention_args *args);
/// That split, bit for bit the unsplit kernel's outputs; only where it applies.
void ck_attention_decode_split(ck_pool *pool, const ck_attention_args *args);
/// Several sequences' attention (at most 16; more run one by one) in one pool task: a batched
/// pass waits once per layer instead of once per sequence. They must share `scratch`.
void ck_attention_many(ck_pool *pool, const ck_attention_args *args, int count);

/// Causal attention (as ck_attention_many, count sequences in one pool task) over q8_0 caches:
/// k_cache and v_cache point at one row of kv_stride / 32 ck_block_q8_0 per position;
/// head_dim a multiple of 32 and at most 256; scratch_stride at least pos0 + n_tokens floats.
/// The arithmetic is described in attention_q8.c.
void ck_attention_q8_0_many(ck_pool *pool, const ck_attention_args *args, int count);
/// Rows 0..<rows of a q8_0 cache (kv_dim values per row, kv_dim <= 16 * 256) as f16: each value
/// d * q in f32, rounded to f16.
void ck_kv_q8_0_to_f16(const uint16_t *cache, uint16_t *dst, int rows, int kv_dim);

// MARK: - Element-wise

/// y = x / sqrt(mean(x^2) + eps) * w
void ck_rmsnorm(const float *x, const float *w, float *y, int n, float eps);
/// In place, "normal" (adjacent pairs) RoPE on n_heads heads of head_dim at position pos,
/// rotating the first n_rot dims: theta_i = pos * base^(-2i/n_rot).
void ck_rope(float *x, int n_heads, int head_dim, int n_rot, int pos, float base);
/// RoPE as ggml's rope_ext without YaRN: pair i's angle is freq_scale * pos * base^(-2i/n_rot)
/// / freq_factors[i] (freq_factors may be NULL: all 1). halves = 0 rotates adjacent pairs
/// (2i, 2i + 1) (llama.cpp's normal mode), 1 rotates (i, i + n_rot / 2) (its NEOX mode).
void ck_rope_ext(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                 const float *freq_factors, int halves);
/// YaRN's parameters as ggml's rope_ext takes them (llama.cpp's cparams): ext_factor (1 with
/// `rope.scaling.type = yarn`, else 0), attn_factor (its yarn_attn_factor: the cosines and
/// sines are multiplied by it, and with YaRN by 1 + 0.1 ln(1 / freq_scale) too), the original
/// context and the betas that place the correction dimensions (32 and 1 by default).
typedef struct {
    float ext_factor;
    float attn_factor;
    float beta_fast;
    float beta_slow;
    int n_ctx_orig;
} ck_rope_yarn;
/// ggml_rope_yarn_corr_dims: the rotary dimensions (of n_dims) between which YaRN's ramp runs.
void ck_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float base, float beta_fast, float beta_slow, float dims[2]);
/// ck_rope_ext with YaRN (yarn NULL: none, ck_rope_ext's bits).
void ck_rope_ext_yarn(float *x, int n_heads, int head_dim, int n_rot, int pos, float base, float freq_scale,
                      const float *freq_factors, int halves, const ck_rope_yarn *yarn);
/// In place softmax over n values.
void ck_softmax(float *x, int n);
/// log Σ exp(x[i]) over n values, NaN and -inf weighing 0 (-inf when nothing else is left):
/// the normalizer of a row's log-probabilities. Fast path: 8 lanes of ck_v_expf, float sums.
float ck_logsumexp(const float *x, int n);
/// The reference: max, then the sum in double with libm's exp.
float ck_logsumexp_ref(const float *x, int n);
/// out = silu(gate) * up
void ck_silu_mul(const float *gate, const float *up, float *out, int n);
/// GELU (tanh approximation) as ggml's CPU backend evaluates it: through an f16 table, 0 at or
/// below -10, the identity at or above 10.
float ck_gelu(float x);
/// out = gelu(gate) * up, with ck_gelu.
void ck_gelu_mul(const float *gate, const float *up, float *out, int n);
/// gpt-oss's gated activation as ggml's CPU swiglu_oai computes it: g = min(gate, limit),
/// u = clamp(up, -limit, limit), out = g / (1 + expf(alpha * -g)) * (u + 1), in that order of
/// float operations (no fused multiply-add).
void ck_swiglu_oai_mul(const float *gate, const float *up, float *out, int n, float alpha, float limit);
/// x *= s
void ck_scale(float *x, float s, int n);
/// y += x
void ck_add(float *y, const float *x, int n);

// MARK: - Row-parallel steps (rows.c)
//
// The steps between a pass's products over n rows, split over the pool by rows (pool may be
// NULL; small jobs stay on the caller). Each row runs the one-row function named, so results
// are bit for bit those of a loop over the rows on one thread.

/// out[r] = ck_logsumexp(row r of x) for n rows of width (a scored prompt's normalizers).
void ck_rows_logsumexp(ck_pool *pool, const float *x, float *out, int n, int width);
/// Row r of y (n × width) = ck_rmsnorm(row r of x, w). x and y may be the same.
void ck_rows_rmsnorm(ck_pool *pool, const float *x, const float *w, float *y, int n, int width, float eps);
/// Row r of x (n × width floats) quantized into y + r * y_row_bytes in `type` (CK_TYPE_Q8_0,
/// CK_TYPE_Q8_1 or CK_TYPE_Q8_K, with ck_quantize_row_*; CK_TYPE_F16 / CK_TYPE_BF16: width floats
/// rounded to f16 / bf16 precision with ck_round_row_f16 / _bf16, still f32). -1 for another type
/// (nothing written).
int ck_rows_quantize(ck_pool *pool, int type, const float *x, int width, void *y, size_t y_row_bytes, int n);
/// y = x rounded to f16 (nearest even) and back, n values: the activations of a product with F16
/// weights, as llama.cpp converts them to its F16 vec_dot_type first.
void ck_round_row_f16(const float *x, float *y, int n);
/// y = x rounded to bf16 (nearest even, NaN kept quiet) and back: the activations of a product
/// with BF16 weights, as llama.cpp converts them to its BF16 vec_dot_type first.
void ck_round_row_bf16(const float *x, float *y, int n);
/// One output of llama.cpp's BF16 product on a CPU with AVX512-BF16 (vdpbf16ps), in portable C
/// (dot_bf16_pairs.c): `a` holds k activations already rounded by ck_round_row_bf16. gemm = 0:
/// ggml_vec_dot_bf16's order (one activation row); 1: tinyBLAS's (several rows; k a multiple of
/// 32, otherwise the vec_dot order). The reference of the AVX512-BF16 kernels.
float ck_dot_bf16_pairs_reference(int k, const uint16_t *w, const float *a, int gemm);
/// One output of llama.cpp's F16 product, in portable C (dot_float16.c): `a` holds k activations
/// already rounded by ck_round_row_f16; lanes = 16 as built for AVX512F, 8 for AVX2. gemm = 0:
/// ggml_vec_dot_f16's order (one activation row); 1: tinyBLAS's (several rows; k a multiple of
/// lanes, otherwise the vec_dot order). The reference of the F16 kernels.
float ck_dot_f16_reference(int k, const uint16_t *w, const float *a, int lanes, int gemm);
/// The same for BF16 where the CPU has no AVX512-BF16 (f32 lanes; ck_round_row_bf16).
float ck_dot_bf16_reference(int k, const uint16_t *w, const float *a, int lanes, int gemm);
/// The width whose order F16 products (and BF16 ones without AVX512-BF16) on this thread follow:
/// 16 (AVX-512 kernels), 8 (AVX2), or 0 (portable paths: a plain sum, no llama.cpp order).
int ck_float16_lanes(void);
/// One output of llama.cpp's repacked Q2_K product (AVX-512 CPUs: q2_K_8x8_q8_K), from a row in
/// the file's layout and a Q8_K activation row: halves = 1 as its GEMM (a micro-batch's rows in
/// whole groups of four), 0 as its GEMV (interleave_q2_k.c). The reference of the kernels.
float ck_dot_q2_k_repacked_reference(int k, const void *w, const void *x, int halves);
/// 1 when BF16 products on this thread take the AVX512-BF16 kernels (llama.cpp's orders there):
/// fast paths on, the CPU has AVX512-BF16 and neither ck_set_vnni nor ck_set_bf16_pairs turned
/// them off.
int ck_bf16_pairs_enabled(void);
/// Turns the AVX512-BF16 kernels off (0: BF16 takes the f32-lane ones of dot_float16.c, as on a
/// CPU without AVX512-BF16) or back on (1, if supported) for the calling thread. For tests.
void ck_set_bf16_pairs(int enabled);
/// The gated feed-forward's activations (ck_rows_glu's kind).
enum { CK_GLU_SILU = 0, CK_GLU_GELU = 1, CK_GLU_SWIGLU_OAI = 2 };
/// gpt-oss's constants for ck_swiglu_oai_mul, as llama.cpp passes them (build_moe_ffn).
#define CK_SWIGLU_OAI_ALPHA 1.702f
#define CK_SWIGLU_OAI_LIMIT 7.0f
/// out = ck_silu_mul, ck_gelu_mul or ck_swiglu_oai_mul (gpt-oss's constants) of gate and up, n
/// rows of width, by kind (a CK_GLU_*).
void ck_rows_glu(ck_pool *pool, int kind, const float *gate, const float *up, float *out, int n, int width);
/// y += x over n rows of width.
void ck_rows_add(ck_pool *pool, float *y, const float *x, int n, int width);

// MARK: - Mixture of experts (experts.c)

enum { CK_GATING_SOFTMAX = 0, CK_GATING_SIGMOID = 1, CK_GATING_SOFTMAX_WEIGHT = 2 };
/// For each of n tokens, its router logits ([n × n_expert]) to the k experts it uses: ids
/// ([n × k], the most probable first) and their weights ([n × k]), the probabilities (softmax as
/// ggml computes it, or sigmoid: `gating`), divided by their sum when `normalize`. probs: scratch
/// of n_expert floats.
void ck_moe_route(const float *logits, int n, int n_expert, int k, int gating, int normalize, float *probs,
                  int32_t *ids, float *weights);
/// out[t] = Σ_j expert_out[t][j] · weights[t][j] over j = 0..<k in that order (each product
/// rounded, then added: llama.cpp's mul by the weights and its chain of adds). expert_out:
/// [n × k × width], out: [n × width].
void ck_moe_combine(const float *expert_out, const float *weights, int n, int k, int width, float *out);

/// One sequence's new rows: RoPE (ck_rope_ext) on the query and key heads of each row t at
/// position pos0 + t, then its keys and values as fp16 into the caches' rows pos0 + t.
typedef struct {
    float *q;
    int q_stride;
    int n_head;
    float *k;
    const float *v;
    /// Floats (and halves in the caches) per key or value row: n_kv_head * head_dim.
    int kv_stride;
    int n_kv_head;
    int head_dim;
    int n_rot;
    int pos0;
    int n_tokens;
    float base;
    float freq_scale;
    /// n_rot / 2 factors, or NULL.
    const float *freq_factors;
    /// 1: pairs (i, i + n_rot / 2) (NEOX); 0: adjacent pairs.
    int halves;
    uint16_t *k_cache;
    uint16_t *v_cache;
    /// YaRN and the attention factor (ck_rope_ext_yarn; the correction dimensions from this
    /// call's base, so a layer with its own base gets its own), or NULL: none.
    const ck_rope_yarn *yarn;
    /// n_tokens factors each row's query is multiplied by after RoPE (an attention temperature,
    /// or the attention scale applied before the products), or NULL. n_rot 0 rotates nothing (a
    /// layer without rotary positions).
    const float *q_scale;
} ck_rope_kv_args;
void ck_rows_rope_kv(ck_pool *pool, const ck_rope_kv_args *args);
/// The same, with k_cache and v_cache pointing at q8_0 caches (kv_cache_type q8_0): each
/// position's kv_stride values are one row of ck_block_q8_0 (kv_stride a multiple of 32),
/// quantized with ck_quantize_row_q8_0. See attention_q8.c.
void ck_rows_rope_kv_q8_0(ck_pool *pool, const ck_rope_kv_args *args);

#endif
