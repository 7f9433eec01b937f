// Shared between the C files of CKernels; not part of the public header.
#ifndef INFERD_CKERNELS_INTERNAL_H
#define INFERD_CKERNELS_INTERNAL_H
#include <math.h>
#include <string.h>
#include <stdatomic.h>
#include <string.h>
#include "ckernels.h"

#if defined(__x86_64__) || defined(__i386__)
#define CK_X86 1
#include <immintrin.h>
#define CK_FAST __attribute__((target("avx2,fma,f16c")))
#else
#define CK_X86 0
#endif

// Software prefetch distance of the interleaved forms' kernels (blocks ahead of the one read):
// their tuned distance, or 0 (the block being read, its lines asked for at once) where
// ck_prefetch_near is set: on AMD CPUs, whose hardware prefetchers the far requests defeat (a
// Q6_K decode walk read 7.8 GB/s with 2 super-blocks ahead and 15 GB/s with 0 on Zen 4; on an
// Intel Xeon the far distance was worth 1.3-1.5x). INFERD_PREFETCH=near|far overrides the
// choice (cpu.c), to measure it on another machine.
extern int ck_prefetch_near;
// What the CPU has, read when the library loads (cpu.c): AVX-512 BW; AVX-512 F, VL and VNNI;
// AVX-512 F, VL and BF16.
extern int ck_cpu_avx512bw;
extern int ck_cpu_vnni512;
extern int ck_cpu_bf16_pairs;
#define CK_AHEAD(blocks) (ck_prefetch_near ? 0 : (blocks))

#if CK_X86
// exp(x) on 8 lanes with the algorithm and constants of the Arm optimized-routines expf, as
// ggml evaluates it on AVX-512 (polynomial including the constant term, then x 2^n with one
// rounding): results match llama.cpp's softmax and SiLU bit for bit. Max error ~1.5 ulp.
__attribute__((target("avx2,fma,f16c"))) static inline __m256 ck_v_expf(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 p45 = _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f));
    const __m256 p23 = _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f));
    const __m256 p01 = _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f));
    const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(p45, u, p23), u, p01);
    // j * 2^n as two exact power-of-two scalings (|n| <= 192 keeps both factors normal), so the
    // only rounding is in the second product, as with a single scalef.
    const __m256 lim = _mm256_set1_ps(192.0f);
    const __m256 nc = _mm256_max_ps(_mm256_min_ps(n, lim), _mm256_sub_ps(_mm256_setzero_ps(), lim));
    const __m256i ni = _mm256_cvtps_epi32(nc);
    const __m256i na = _mm256_srai_epi32(ni, 1);
    const __m256i nb = _mm256_sub_epi32(ni, na);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 sa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(na, bias), 23));
    const __m256 sb = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(nb, bias), 23));
    const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, sa), sb);
    // |n| > 192: 0 for large negative inputs (including -inf), inf for large positive ones.
    const __m256 big = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), lim, _CMP_GT_OQ);
    const __m256 alt = _mm256_and_ps(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_set1_ps(INFINITY));
    return _mm256_blendv_ps(res, alt, big);
}
// Sum of 8 lanes: (hi + lo halves), then pairs, as ggml reduces its vectors (the order matters
// to the rounding).
__attribute__((target("avx2,fma,f16c"))) static inline float ck_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

// 2^e for -126 <= e <= 127, from its bits.
static inline __attribute__((always_inline)) float ck_pow2i(int e) {
    const uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// ggml_v_expf (AVX-512 form), one lane (flash attention's tiles, the experts' router). fnmadd(a, b, c) is fmaf(-a, b, c); scalef(j, n) is
// j * 2^n for the integral n it gets here.
static inline __attribute__((always_inline)) float ck_expf_ggml512(float x) {
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    if (!(fabsf(n) <= 192.0f)) return n <= 0.0f ? 0.0f : INFINITY;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    // j * 2^n in two power-of-two products, the first exact (|n| <= 192 keeps both factors
    // normal), so only the second rounds, as scalef rounds once.
    const int ni = (int)n, na = ni / 2, nb = ni - na;
    const float sa = ck_pow2i(na), sb = ck_pow2i(nb);
    const float half = j * sa;
    return half * sb;
}

// _mm512_reduce_add_ps of 16 values: high 8 + low 8, high 4 + low 4, then (0 + 2) + (1 + 3).
static inline __attribute__((always_inline)) float ck_reduce16(const float *v) {
    float t3[8], t6[4];
    for (int l = 0; l < 8; l++) t3[l] = v[l + 8] + v[l];
    for (int l = 0; l < 4; l++) t6[l] = t3[l + 4] + t3[l];
    const float a = t6[0] + t6[2];
    const float b = t6[1] + t6[3];
    return a + b;
}

/// Slice `j` of `slices` of the `bytes` at `next` prefetched into the caches: a prompt's product
/// walks each panel (or pass) of weight rows over every token tile, and the first tile of the next
/// one would wait on memory; a slice per tile of the current one hides it. Never faults.
static inline __attribute__((always_inline)) void ck_prefetch_slice(const void *next, size_t bytes, size_t j,
                                                                    size_t slices) {
    const char *at = (const char *)next;
    const size_t lines = bytes / 64;
    for (size_t l = j * lines / slices; l < (j + 1) * lines / slices; l++) __builtin_prefetch(at + l * 64, 0, 3);
}

/// The calling thread's path override (-1: none, else ck_fast_paths_enabled's answer), read and
/// set around a pool chunk so a worker computes with the choice of the thread that started the
/// task (rows.c).
int ck_fast_paths_override(void);
void ck_set_fast_paths_override(int value);

/// ck_rope_ext in its two halves: a position's cosines and sines (cs[i], cs[i + 1] for pair
/// i / 2; n_rot floats), and their rotation of n_heads heads. rows.c builds the table once for a
/// row's queries and keys.
void ck_rope_angles(float *cs, int n_rot, int pos, float base, float freq_scale, const float *freq_factors,
                    const ck_rope_yarn *yarn);
void ck_rope_apply(float *x, int n_heads, int head_dim, int n_rot, const float *cs, int halves);

/// Kernels for the interleaved forms: portable, AVX2 (Q4_0, Q4_1 and Q8_0 only), AVX-512 VNNI.
enum { CK_INTERLEAVED_PORTABLE = 0, CK_INTERLEAVED_AVX2 = 1, CK_INTERLEAVED_VNNI = 2 };

/// Rows r0..<r1 (multiples of 8) of a matrix in an interleaved form; `fast` (a
/// CK_INTERLEAVED_*) picks the kernels (the caller checked the CPU and the thread's switches).
void ck_matmul_interleaved_rows(const ck_matmul_args *p, int r0, int r1, int fast);

// MARK: Matrix products (dot.c picks the kernels, matmul.c runs them)

typedef float (*ck_dot_fn)(int k, const void *w, const void *x);

typedef void (*ck_dot4_fn)(int k, const void *w, size_t w_row_blocks, const void *x, float *out);
typedef void (*ck_dot4x2_fn)(int k, const void *w, size_t w_row_blocks, const void *x0, const void *x1, float *out0,
                             float *out1);

typedef void (*ck_dot4x4_fn)(int k, const void *w, size_t w_row_blocks, const void *const *x, float *const *out);

/// One weight row against four activation rows: out[t] = dot(w, x[t]), each with exactly the
/// arithmetic of the single dot kernel (the weights are unpacked once for the four), but for
/// Q4_K, whose four-row kernel has llama.cpp's four-row order (CK_ORDER_GROUP4).
typedef void (*ck_dot1x4_fn)(int k, const void *w, const void *const *x, float *out);

/// `rows` weight rows (w_row_bytes apart) against `n` activation rows: y[t * ldy + r], each
/// output in one fixed order of its row and token (dot_float16.c, dot_bf16_pairs.c).
typedef void (*ck_dot_rows_fn)(int k, const void *w, size_t w_row_bytes, int rows, const void *x, size_t x_row_bytes,
                               int n, float *y, int ldy);

typedef struct {
    ck_dot_fn dot;
    ck_dot1x4_fn dot1x4;
    ck_dot4_fn dot4;
    ck_dot4x2_fn dot4x2;
    ck_dot4x4_fn dot4x4;
    ck_dot_fn dot_tiled;   // the CK_ORDER_TILED kernel, or NULL
    ck_dot1x4_fn dot1x4_tiled;  // ... for four activation rows, or NULL
    ck_dot_fn dot_pairs;   // one row in the CK_ORDER_GROUP4 order, or NULL
    int interleaved;       // the weights are in an interleaved form
    int interleaved_fast;  // ... and the kernels for it on this thread (a CK_INTERLEAVED_*)
    ck_dot_rows_fn dot_rows;  // several weight rows x several tokens at once, or NULL
    // Rows of a micro-batch (CK_ORDER_BATCH) in llama.cpp's GEMM order where it differs from
    // the single row's (BF16 on AVX512-BF16: tinyBLAS), or NULL. Where it is set, dot_rows takes
    // every other token, a lone one too (matmul_rows_gemm).
    ck_dot_rows_fn dot_gemm;
    int gemm_k;  // dot_gemm's k must be a multiple of this (tinyBLAS's step), or 0
} ck_kernels;

/// The kernels for a matrix of `type` (a CK_TYPE_*), fast ones when `fast`.
ck_kernels ck_pick_kernels(int type, int fast);

// MARK: More weight types (quants.c, dot_legacy.c, dot_kquants.c)

/// Dequantizes a row of the types quants.c knows (BF16, Q4_0, Q5_0, Q5_1, Q2_K...Q6_K); 0 for others.
int ck_dequantize_row_more(int type, const void *src, float *dst, int k);
void ck_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m);
/// Q3_K's sixteen 6-bit scales (12 bytes: the low nibbles of scales 0-7 and, above them, of 8-15,
/// then the top two bits of scale j at bits 2 * (j / 4) of byte 8 + j % 4), minus 32. Inline and
/// four bytes at a time: called per super-block, row and four tokens by the Q3_K kernels, the
/// byte-by-byte loop out of line was 18 % of a Q3_K_M prompt (perf, 1.7B shape, one thread).
static inline void ck_q3_k_scales(const uint8_t *packed, int8_t *out) {
    uint32_t a[3], s[4];
    memcpy(a, packed, 12);
    const uint32_t low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
    s[0] = (a[0] & low4) | ((a[2] & low2) << 4);         // scales 0-3
    s[1] = (a[1] & low4) | (((a[2] >> 2) & low2) << 4);  // 4-7
    s[2] = ((a[0] >> 4) & low4) | (((a[2] >> 4) & low2) << 4);  // 8-11
    s[3] = ((a[1] >> 4) & low4) | (((a[2] >> 6) & low2) << 4);  // 12-15
    uint8_t u[16];
    memcpy(u, s, 16);
    for (int j = 0; j < 16; j++) out[j] = (int8_t)(u[j] - 32);
}
int ck_q6_k_value(const ck_block_q6_K *b, int e);
/// Dot kernels of Q4_0, Q5_0, Q5_1 and BF16 (dot_legacy.c), and of the K-quants (dot_kquants.c,
/// dot_kquants_low.c);
/// NULL for other types.
ck_dot_fn ck_pick_dot_legacy(int type, int fast);
ck_dot_fn ck_pick_dot_kquants(int type, int fast);
ck_dot_fn ck_pick_dot_kquants_low(int type, int fast);
ck_dot1x4_fn ck_pick_dot1x4_legacy(int type, int fast);
ck_dot4_fn ck_pick_dot4_legacy(int type, int fast);
ck_dot1x4_fn ck_pick_dot1x4_kquants(int type, int fast);
/// The single-row kernels of llama.cpp's batched orders (CK_ORDER_*): Q6_K's tiled one, Q4_K's
/// four-row GEMM order one row at a time; NULL for types whose arithmetic has no such order.
ck_dot_fn ck_pick_dot_tiled_kquants(int type, int fast);
ck_dot_fn ck_pick_dot_pairs_kquants(int type, int fast);
/// Q2_K, Q3_K and Q5_K in llama.cpp's tiled order (dot_kquants_tiled.c); NULL for other types.
ck_dot_fn ck_pick_dot_tiled_kquants_more(int type, int fast);
ck_dot1x4_fn ck_pick_dot1x4_tiled_kquants(int type, int fast);
/// Their four-row kernels (dot_kquants_tiled.c); NULL for other types and the portable path.
ck_dot1x4_fn ck_pick_dot1x4_tiled_kquants_more(int type, int fast);
int ck_cpu_has_vnni(void);
/// MXFP4's dot kernel against Q8_0 (dot_mxfp4.c) and its dequantizer; NULL for other types.
ck_dot_fn ck_pick_dot_mxfp4(int type, int fast);
void ck_dequantize_row_mxfp4(const ck_block_mxfp4 *x, float *y, int k);
/// Tokens per sweep of the multi-token float kernels: as many as 2 MB of f32 activations, so
/// the weights are read from memory few times (dot_float16.c).
int ck_rows_token_block(int k);
/// BF16 on AVX512-BF16 in llama.cpp's orders there (dot_bf16_pairs.c): one row as
/// ggml_vec_dot_bf16, several tokens as tinyBLAS; NULL for other types, paths or CPUs.
ck_dot_fn ck_pick_dot_bf16_pairs(int type, int fast);
ck_dot_rows_fn ck_pick_gemm_bf16_pairs(int type, int fast);
/// ... and several rows (and tokens) in ggml_vec_dot_bf16's order, each output the single row's.
ck_dot_rows_fn ck_pick_rows_bf16_pairs(int type, int fast);
/// F16, and BF16 without AVX512-BF16, in llama.cpp's orders for the width of the fast kernels
/// (dot_float16.c): one row alone (ggml_vec_dot_*), several rows each in that order, and rows of
/// micro-batches (tinyBLAS, k a multiple of gemm_k). All NULL on portable paths.
typedef struct {
    ck_dot_fn dot;
    ck_dot_rows_fn rows;
    ck_dot_rows_fn gemm;
    int gemm_k;
} ck_float16_kernels;
ck_float16_kernels ck_pick_float16(int type, int fast);
/// A buffer of at least `bytes` (64-byte aligned) for the calling thread, kept for its next calls
/// and grown as needed, where the 16-bit float kernels round activation rows; NULL without memory.
void *ck_thread_scratch(size_t bytes);
/// An activation rounded to f16 (bf = 0) or bf16 (1), nearest even, as llama.cpp converts it to
/// its vec_dot_type: the identity on the values a pass gives (ck_rows_quantize rounded them
/// already), vcvtps2ph's and vcvtne2ps2bf16's rounding for any others (dot_float16.c).
float ck_round_half(int bf, float x);

// MARK: Attention (attention.c schedules units; attention_head.c, attention_group.c compute them)

#define CK_MAX_HEAD_DIM 256
// Most query heads per KV head the grouped kernel takes; larger groups go head by head.
#define CK_MAX_GROUP 8

/// Whether the fast kernels take p's shape on this CPU and thread (head_dim a multiple of 8,
/// at most CK_MAX_HEAD_DIM).
int ck_attention_fast_shape(const ck_attention_args *p);
/// Token t, query head h, alone: the fast per-head kernel when `fast`, else the portable one.
/// acc: a scratch row (64 * head_dim floats, then the scores).
void ck_attention_head(const ck_attention_args *p, int t, int h, int fast, float *acc);
/// With a sliding window, the scores of the keys token t no longer sees (positions up to
/// pos0 + t - window) become -inf, so the softmax gives them exactly 0, as llama.cpp's mask does.
static inline void ck_attention_mask_window(const ck_attention_args *p, int t, float *scores) {
    if (p->window <= 0) return;
    const int first = p->pos0 + t + 1 - p->window;
    for (int j = 0; j < first; j++) scores[j] = -INFINITY;
}
/// Query head h's sink logit (gpt-oss: `attn_sinks`, one per head, joining the softmax's
/// denominator and weighing no value), or -inf without sinks: a -inf sink leaves the maximum as
/// it is and adds exp(-inf) = 0 to the sum, so the kernels compute exactly what they did before.
static inline float ck_attention_sink(const ck_attention_args *p, int h) {
    return p->sinks ? p->sinks[h] : -INFINITY;
}
#if CK_X86
/// Token t with every query head of KV head g (at most CK_MAX_GROUP of them, head_dim as
/// ck_attention_fast_shape wants), in one scratch row large enough for the group.
void ck_attention_group_fast(const ck_attention_args *p, int t, int g, float *scratch);
/// Tokens per tile (attention_tile.c) for `ratio` query heads per KV head: about 24 query heads.
int ck_attention_tile_tokens(int ratio);
/// Floats of scratch a tile of p's shape needs.
size_t ck_attention_tile_scratch_floats(const ck_attention_args *p);
/// Tokens t0..<t0 + nt of a batch with every query head of KV head g (head_dim a multiple of 16),
/// bit for bit the per-token kernel's outputs; avx512: the build for AVX-512VL's 32 registers.
void ck_attention_tile_avx2(const ck_attention_args *p, int t0, int nt, int g, float *scratch);
void ck_attention_tile_avx512(const ck_attention_args *p, int t0, int nt, int g, float *scratch);
#endif

static inline void ck_cpu_relax(void) {
#if CK_X86
    __builtin_ia32_pause();
#endif
}


// Whether these attention rows take the batch's arithmetic (llama.cpp computes a micro-batch of
// 2+ rows with llamafile's GEMM, a single row with ggml_vec_dot_f16): by the call they belong to
// (call_rows), which can be longer than n_tokens (a prompt's lone last row) or one row each
// (decode steps verified together); 0 leaves it to n_tokens.
static inline int ck_attention_batched(const ck_attention_args *p) {
    return p->call_rows == 0 ? p->n_tokens >= 2 : p->call_rows >= 2;
}

/// Bytes of weights one pass of a prompt's product covers (the forms' walks of a few tokens,
/// BF16's tiles of six): each walk or tile reads the pass from L2, not the thread's whole share
/// of the matrix from memory (at one thread the whole matrix: Q5_K 8192 × 2048 by 64 tokens,
/// weights not in cache, 126 -> 150 GMAC/s).
#define CK_TOKEN_PASS_BYTES (256 * 1024)

#endif
