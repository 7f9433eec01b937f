// 16-bit float weights (F16; BF16 where the CPU has no AVX512-BF16: dot_bf16_pairs.c has that one)
// in the orders llama.cpp's CPU backend takes, built for the CPU it runs on. Its activations are
// the f32 ones rounded to the weights' type first (its vec_dot_type; ck_rows_quantize does it once
// per pass here, and the kernels again as they narrow the activations). L is the vector
// width of its build: 16 f32 lanes with AVX512F, 8 with AVX2. Every product is an FMA.
// - One activation row, and any product tinyBLAS refuses (ggml_vec_dot_f16 / _bf16):
//   F16: four L-lane accumulators over steps of 4L values (accumulator j on values jL..jL+L-1),
//        folded (0 + 2) + (1 + 3), reduced (16 lanes by halving, 8 lanes by two hadds);
//   BF16, L = 16: two accumulators over steps of 32, each reduced by halving, summed in double;
//   BF16, L = 8: four accumulators over steps of 32, folded as F16's, reduced by halving;
//   then the values past the last whole step one by one in double.
// - Two or more activation rows, k a multiple of L, rows of the whole matrix a multiple of 4:
//   llamafile's tinyBLAS<L>, one L-lane accumulator per output over steps of L, reduced by
//   halving.
// Halving: lane i + lane i + L/2 down to 4 lanes, then (0 + 2) + (1 + 3) (_mm512_reduce_add_ps,
// tinyBLAS's hsum, ck_hsum8). Two hadds: halves added, then (0 + 1) + (2 + 3).
// Four chains of 16 lanes also keep a lone token's F16 decode from waiting on FMA latency: the
// two chains of 8 lanes inferd had read a 1.7B model's weights at 0.82-0.86x llama.cpp's speed.
#include <stdlib.h>

#include "internal.h"

// MARK: - Portable reference (tests; every CPU)

static float widen(int bf, uint16_t h) {
    if (!bf) return ck_fp16_to_fp32(h);
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float ck_round_half(int bf, float x) {
    float y;
    if (bf) {
        ck_round_row_bf16(&x, &y, 1);
    } else {
        y = ck_fp16_to_fp32(ck_fp32_to_fp16(x));
    }
    return y;
}

static float halve(const float *v, int lanes) {
    float h[16];
    memcpy(h, v, sizeof(float) * (size_t)lanes);
    for (int n = lanes / 2; n >= 4; n /= 2) {
        for (int i = 0; i < n; i++) h[i] = h[i] + h[i + n];
    }
    return (h[0] + h[2]) + (h[1] + h[3]);
}

static float hadds(const float *v) {
    float h[4];
    for (int i = 0; i < 4; i++) h[i] = v[i] + v[i + 4];
    return (h[0] + h[1]) + (h[2] + h[3]);
}

// `chains` accumulators of `lanes` over steps of chains * lanes values from value 0; returns
// where the steps end.
static int accumulate(int bf, int k, const uint16_t *w, const float *a, int lanes, int chains, float acc[4][16]) {
    int i = 0;
    for (; i + chains * lanes <= k; i += chains * lanes) {
        for (int c = 0; c < chains; c++) {
            for (int j = 0; j < lanes; j++) {
                const int e = i + c * lanes + j;
                acc[c][j] = fmaf(widen(bf, w[e]), ck_round_half(bf, a[e]), acc[c][j]);
            }
        }
    }
    return i;
}

static float dot_reference(int bf, int k, const uint16_t *w, const float *a, int lanes, int gemm) {
    float acc[4][16] = {{0}};
    if (gemm && k % lanes == 0) {
        accumulate(bf, k, w, a, lanes, 1, acc);
        return halve(acc[0], lanes);
    }
    double s;
    int i;
    if (bf && lanes == 16) {
        i = accumulate(bf, k, w, a, 16, 2, acc);
        s = (double)halve(acc[0], 16);
        s += (double)halve(acc[1], 16);
    } else {
        i = accumulate(bf, k, w, a, lanes, 4, acc);
        for (int j = 0; j < lanes; j++) acc[0][j] = (acc[0][j] + acc[2][j]) + (acc[1][j] + acc[3][j]);
        s = (double)(bf || lanes == 16 ? halve(acc[0], lanes) : hadds(acc[0]));
    }
    for (; i < k; i++) s += (double)(widen(bf, w[i]) * ck_round_half(bf, a[i]));
    return (float)s;
}

float ck_dot_f16_reference(int k, const uint16_t *w, const float *a, int lanes, int gemm) {
    return dot_reference(0, k, w, a, lanes, gemm);
}

float ck_dot_bf16_reference(int k, const uint16_t *w, const float *a, int lanes, int gemm) {
    return dot_reference(1, k, w, a, lanes, gemm);
}

// Tokens per sweep: every weight row of the chunk comes from memory once per sweep, so fewer
// sweeps read less; 2 MB of f32 activations (1 MB narrowed to 16 bits) still stream from L2/L3
// fast enough. One thread, Zen 4, against sweeps of 512 KB: 2048 rows of k = 8192 by 128 tokens,
// BF16 (vdpbf16ps) 128 -> 162 GFLOP/s, F16 87 -> 103; 8192 rows of k = 2048 by 512 tokens, BF16
// 158 -> 171, F16 97 -> 105.
int ck_rows_token_block(int k) {
    int tb = (2048 * 1024 / 4) / (k > 0 ? k : 1);
    tb &= ~3;
    return tb < 4 ? 4 : tb;
}

// Activation rows rounded for the kernels go here: one buffer per thread, kept for its next calls.
static _Thread_local void *scratch;
static _Thread_local size_t scratch_capacity;

void *ck_thread_scratch(size_t bytes) {
    if (bytes > scratch_capacity) {
        free(scratch);
        scratch = aligned_alloc(64, (bytes + 63) / 64 * 64);
        scratch_capacity = scratch ? bytes : 0;
    }
    return scratch;
}

#if CK_X86

#define CK_W16 __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#define CK_INLINE __attribute__((always_inline)) static inline

CK_FAST CK_INLINE float widen1(int bf, uint16_t h) { return bf ? widen(1, h) : _cvtsh_ss(h); }

// n activation rows (xs floats apart) rounded to the type (nearest even; NaN kept quiet), k
// apart, in the thread's buffer; NULL without memory. As 16-bit values (`floats` 0) for the vec
// order, whose kernels then load activations as they load weights (on Zen 4 a lone token's F16
// rows read 28 GB/s so, 20 GB/s with f32 activations), and for AVX2's F16 tiles (gemm8); as
// floats (1) for the other tiles, which would otherwise widen each activation once per weight row
// of a tile.
CK_FAST static const void *narrow(int bf, int floats, const float *x, size_t xs, int k, int n) {
    void *buffer = ck_thread_scratch((size_t)n * k * (floats ? 4 : 2));
    if (!buffer) return 0;
    for (int t = 0; t < n; t++) {
        const float *xt = x + (size_t)t * xs;
        uint16_t *at = (uint16_t *)buffer + (size_t)t * k;
        float *ft = (float *)buffer + (size_t)t * k;
        int i = 0;
        for (; i + 8 <= k; i += 8) {
            const __m256 v = _mm256_loadu_ps(xt + i);
            __m128i h;
            if (bf) {
                const __m256i u = _mm256_castps_si256(v), one = _mm256_set1_epi32(1);
                const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
                const __m256i near = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
                const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
                const __m256i r = _mm256_blendv_epi8(near, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
                if (floats) {
                    _mm256_storeu_ps(ft + i, _mm256_castsi256_ps(_mm256_slli_epi32(r, 16)));
                    continue;
                }
                h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
            } else {
                h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                if (floats) {
                    _mm256_storeu_ps(ft + i, _mm256_cvtph_ps(h));
                    continue;
                }
            }
            _mm_storeu_si128((__m128i *)(at + i), h);
        }
        for (; i < k; i++) {
            const float r = ck_round_half(bf, xt[i]);
            uint32_t bits;
            memcpy(&bits, &r, 4);
            if (floats) {
                ft[i] = r;
            } else {
                at[i] = bf ? (uint16_t)(bits >> 16) : ck_fp32_to_fp16(r);
            }
        }
    }
    return buffer;
}

// MARK: - AVX2 (8 lanes)

CK_FAST CK_INLINE __m256 load8(int bf, const uint16_t *w) {
    const __m128i h = _mm_loadu_si128((const __m128i *)w);
    if (bf) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

CK_FAST CK_INLINE float hadds8(__m256 v) {
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}

// The vec order, one weight row by T tokens (xs floats apart): 4T accumulators, each weight
// vector widened once for the T tokens.
CK_FAST CK_INLINE void vec8(int bf, int T, int k, const uint16_t *w, const uint16_t *x, size_t xs, float *y, int ldy) {
    __m256 c[3][4];
    for (int t = 0; t < T; t++) c[t][0] = c[t][1] = c[t][2] = c[t][3] = _mm256_setzero_ps();
    int i = 0;
    for (; i + 32 <= k; i += 32) {
        for (int j = 0; j < 4; j++) {
            const __m256 wv = load8(bf, w + i + 8 * j);
            for (int t = 0; t < T; t++) c[t][j] = _mm256_fmadd_ps(wv, load8(bf, x + t * xs + i + 8 * j), c[t][j]);
        }
    }
    for (int t = 0; t < T; t++) {
        const __m256 v = _mm256_add_ps(_mm256_add_ps(c[t][0], c[t][2]), _mm256_add_ps(c[t][1], c[t][3]));
        double s = (double)(bf ? ck_hsum8(v) : hadds8(v));
        for (int e = i; e < k; e++) s += (double)(widen1(bf, w[e]) * widen1(bf, x[t * xs + e]));
        y[(size_t)t * ldy] = (float)s;
    }
}

// tinyBLAS<8>'s order: R weight rows x T tokens, one accumulator each (the tile's shape does not
// change an output's bits). k % 8 == 0. F16 takes its activations as 16-bit values, as llama.cpp
// does (vec_dot_type F16), in tiles up to 6 x 2 (15 of the 16 registers); BF16 takes them as
// floats (widening BF16 is two integer instructions) in tiles up to 4 x 2. Half-width activations
// stream past the rows from L2 at half the bytes, which is what the F16 tiles were waiting on: one
// thread, INFERD_CPU=avx2, Zen 4, k = 2048 / 8192 by 128 tokens, GFLOP/s (FMA peak 117): floats
// in 4 x 2 89 / 84, 16-bit in 4 x 2 93 / 94, 3 x 3 96 / 98, 2 x 6 95 / 103, 6 x 2 100 / 108;
// 4 x 3 and 3 x 4 spill (49). BF16 in 4 x 2: floats 69-75, 16-bit 69-73 (no gain).
CK_FAST CK_INLINE void gemm8(int bf, int R, int T, int k, const uint16_t *w, size_t ws, const void *xv, size_t xs,
                             float *y, int ldy) {
    const float *xf = (const float *)xv;
    const uint16_t *xh = (const uint16_t *)xv;
    __m256 acc[6][2];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    }
    for (int i = 0; i < k; i += 8) {
        __m256 av[2];
        for (int t = 0; t < T; t++) av[t] = bf ? _mm256_loadu_ps(xf + t * xs + i) : load8(0, xh + t * xs + i);
        for (int r = 0; r < R; r++) {
            const __m256 wv = load8(bf, w + r * ws + i);
            for (int t = 0; t < T; t++) acc[r][t] = _mm256_fmadd_ps(wv, av[t], acc[r][t]);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) y[(size_t)t * ldy + r] = ck_hsum8(acc[r][t]);
    }
}

// MARK: - AVX-512 (16 lanes)

CK_W16 CK_INLINE __m512 load16(int bf, const uint16_t *w) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)w);
    if (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

CK_W16 CK_INLINE float halve16(__m512 v) {
    const __m256 lo = _mm512_castps512_ps256(v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return ck_hsum8(_mm256_add_ps(lo, hi));
}

CK_W16 CK_INLINE void vec16(int bf, int T, int k, const uint16_t *w, const uint16_t *x, size_t xs, float *y, int ldy) {
    const int chains = bf ? 2 : 4;
    __m512 c[3][4];
    for (int t = 0; t < T; t++) c[t][0] = c[t][1] = c[t][2] = c[t][3] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 * chains <= k; i += 16 * chains) {
        for (int j = 0; j < chains; j++) {
            const __m512 wv = load16(bf, w + i + 16 * j);
            for (int t = 0; t < T; t++) c[t][j] = _mm512_fmadd_ps(wv, load16(bf, x + t * xs + i + 16 * j), c[t][j]);
        }
    }
    for (int t = 0; t < T; t++) {
        double s;
        if (bf) {
            s = (double)halve16(c[t][0]);
            s += (double)halve16(c[t][1]);
        } else {
            s = (double)halve16(_mm512_add_ps(_mm512_add_ps(c[t][0], c[t][2]), _mm512_add_ps(c[t][1], c[t][3])));
        }
        for (int e = i; e < k; e++) s += (double)(widen1(bf, w[e]) * widen1(bf, x[t * xs + e]));
        y[(size_t)t * ldy] = (float)s;
    }
}

// tinyBLAS<16>'s order: R weight rows x T tokens, one accumulator each (R * T <= 24 of the 32
// registers). k % 16 == 0.
CK_W16 CK_INLINE void gemm16(int bf, int R, int T, int k, const uint16_t *w, size_t ws, const void *xv, size_t xs,
                              float *y, int ldy) {
    const float *x = (const float *)xv;
    __m512 acc[4][6];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    }
    for (int i = 0; i < k; i += 16) {
        __m512 wv[4];
        for (int r = 0; r < R; r++) wv[r] = load16(bf, w + r * ws + i);
        for (int t = 0; t < T; t++) {
            const __m512 av = _mm512_loadu_ps(x + t * xs + i);
            for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], av, acc[r][t]);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) y[(size_t)t * ldy + r] = halve16(acc[r][t]);
    }
}

// MARK: - Drivers

// Rows x n rounded tokens (k apart; narrow's form for the order) in one order.
typedef void (*block_fn)(int k, const uint16_t *w, size_t ws, int rows, const void *a, int n, float *y, int ldy);

// The vec order, every output a row alone's: one weight row at a time (a single stream per row
// reads fastest on Zen 4, as measured for BF16), up to three tokens per widened weight.
#define CK_VEC_BLOCK(NAME, TARGET, TILE, BF)                                                                 \
    TARGET static void NAME(int k, const uint16_t *w, size_t ws, int rows, const void *a, int n, float *y,     \
                            int ldy) {                                                                       \
        for (int r = 0; r < rows; r++) {                                                                     \
            const uint16_t *wr = w + (size_t)r * ws;                                                         \
            for (int t = 0; t < n; t += 3) {                                                                 \
                const uint16_t *at = (const uint16_t *)a + (size_t)t * k;                                    \
                float *yt = y + (size_t)t * ldy + r;                                                         \
                switch (n - t) {                                                                             \
                case 1: TILE(BF, 1, k, wr, at, k, yt, ldy); break;                                           \
                case 2: TILE(BF, 2, k, wr, at, k, yt, ldy); break;                                           \
                default: TILE(BF, 3, k, wr, at, k, yt, ldy); break;                                          \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }

#define CK_GEMM_CASE(TILE, BF, RR, TT)                                                                   \
    case (RR) * 8 + (TT):                                                                               \
        TILE(BF, RR, TT, k, w + (size_t)r * ws, ws, x + (size_t)t * k * xb, k, y + (size_t)t * ldy + r, ldy); \
        break;

// tinyBLAS's order in tiles of RMAX rows x TMAX tokens, activations XB bytes each, the next panel
// of rows prefetched a slice per tile (ck_prefetch_slice; INFERD_CPU=avx2, one thread, the 1.7B
// F16 file's pp128, three alternated runs: 25.5-26.0 -> 26.1-27.5 tok/s).
#define CK_GEMM_BLOCK(NAME, TARGET, RMAX, TMAX, XB, CASES)                                                   \
    TARGET static void NAME(int k, const uint16_t *w, size_t ws, int rows, const void *a, int n, float *y,     \
                            int ldy) {                                                                       \
        const char *x = (const char *)a;                                                                     \
        const size_t xb = XB;                                                                                \
        for (int r = 0; r < rows; r += RMAX) {                                                               \
            const int R = rows - r < RMAX ? rows - r : RMAX;                                                 \
            const int next = rows - r - R < RMAX ? rows - r - R : RMAX;                                      \
            const size_t tiles = (size_t)(n + TMAX - 1) / TMAX;                                              \
            for (int t = 0; t < n; t += TMAX) {                                                              \
                const int T = n - t < TMAX ? n - t : TMAX;                                                   \
                ck_prefetch_slice(w + (size_t)(r + R) * ws, (size_t)next * ws * 2, (size_t)t / TMAX, tiles);  \
                switch (R * 8 + T) {                                                                         \
                    CASES                                                                                    \
                default: break;                                                                              \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }

#define CK_GEMM8_ROW(BF, RR) CK_GEMM_CASE(gemm8, BF, RR, 1) CK_GEMM_CASE(gemm8, BF, RR, 2)
#define CK_GEMM8_CASES(BF) CK_GEMM8_ROW(BF, 1) CK_GEMM8_ROW(BF, 2) CK_GEMM8_ROW(BF, 3) CK_GEMM8_ROW(BF, 4)
#define CK_GEMM8_CASES6(BF) CK_GEMM8_CASES(BF) CK_GEMM8_ROW(BF, 5) CK_GEMM8_ROW(BF, 6)
#define CK_GEMM16_ROW(BF, RR)                                                                                \
    CK_GEMM_CASE(gemm16, BF, RR, 1) CK_GEMM_CASE(gemm16, BF, RR, 2) CK_GEMM_CASE(gemm16, BF, RR, 3)         \
    CK_GEMM_CASE(gemm16, BF, RR, 4) CK_GEMM_CASE(gemm16, BF, RR, 5) CK_GEMM_CASE(gemm16, BF, RR, 6)
#define CK_GEMM16_CASES(BF) CK_GEMM16_ROW(BF, 1) CK_GEMM16_ROW(BF, 2) CK_GEMM16_ROW(BF, 3) CK_GEMM16_ROW(BF, 4)

CK_VEC_BLOCK(vec_f16_8, CK_FAST, vec8, 0)
CK_VEC_BLOCK(vec_bf16_8, CK_FAST, vec8, 1)
CK_VEC_BLOCK(vec_f16_16, CK_W16, vec16, 0)
CK_VEC_BLOCK(vec_bf16_16, CK_W16, vec16, 1)
CK_GEMM_BLOCK(gemm_f16_8, CK_FAST, 6, 2, 2, CK_GEMM8_CASES6(0))
CK_GEMM_BLOCK(gemm_bf16_8, CK_FAST, 4, 2, 4, CK_GEMM8_CASES(1))
CK_GEMM_BLOCK(gemm_f16_16, CK_W16, 4, 6, 4, CK_GEMM16_CASES(0))
CK_GEMM_BLOCK(gemm_bf16_16, CK_W16, 4, 6, 4, CK_GEMM16_CASES(1))

// Rows x tokens (strides in elements: weight rows of uint16_t, activation rows of floats) in
// sweeps of tokens (ck_rows_token_block), each narrowed once while every row passes over it.
static void by_blocks(int bf, int lanes, int gemm, int floats, block_fn block, int k, const void *wv, size_t wrb,
                      int rows, const void *xv, size_t xrb, int n, float *y, int ldy) {
    const uint16_t *w = (const uint16_t *)wv;
    const float *x = (const float *)xv;
    const size_t ws = wrb / 2, xs = xrb / 4;
    const int tb = ck_rows_token_block(k);
    for (int t0 = 0; t0 < n; t0 += tb) {
        const int t1 = t0 + tb < n ? t0 + tb : n;
        const void *a = narrow(bf, floats, x + (size_t)t0 * xs, xs, k, t1 - t0);
        if (!a) {  // no memory for the narrowed rows: the same bits output by output
            for (int t = t0; t < t1; t++) {
                for (int r = 0; r < rows; r++) {
                    y[(size_t)t * ldy + r] = dot_reference(bf, k, w + (size_t)r * ws, x + (size_t)t * xs, lanes, gemm);
                }
            }
            continue;
        }
        block(k, w, ws, rows, a, t1 - t0, y + (size_t)t0 * ldy, ldy);
    }
}

// FLOATS: the block takes activations rounded to the type but as floats (narrow's form).
#define CK_ENTRY(NAME, BF, LANES, GEMM, FLOATS, BLOCK)                                                      \
    static void NAME(int k, const void *w, size_t wrb, int rows, const void *x, size_t xrb, int n, float *y, \
                     int ldy) {                                                                             \
        by_blocks(BF, LANES, GEMM, FLOATS, BLOCK, k, w, wrb, rows, x, xrb, n, y, ldy);                      \
    }

// One row alone (ck_dot; the products take the entries above).
#define CK_ONE(NAME)                                               \
    static float NAME##_one(int k, const void *w, const void *x) { \
        float y;                                                   \
        NAME(k, w, 0, 1, x, 0, 1, &y, 0);                          \
        return y;                                                  \
    }

CK_ENTRY(rows_f16_8, 0, 8, 0, 0, vec_f16_8)
CK_ENTRY(rows_bf16_8, 1, 8, 0, 0, vec_bf16_8)
CK_ENTRY(rows_f16_16, 0, 16, 0, 0, vec_f16_16)
CK_ENTRY(rows_bf16_16, 1, 16, 0, 0, vec_bf16_16)
CK_ONE(rows_f16_8)
CK_ONE(rows_bf16_8)
CK_ONE(rows_f16_16)
CK_ONE(rows_bf16_16)
CK_ENTRY(batch_f16_8, 0, 8, 1, 0, gemm_f16_8)
CK_ENTRY(batch_bf16_8, 1, 8, 1, 1, gemm_bf16_8)
CK_ENTRY(batch_f16_16, 0, 16, 1, 1, gemm_f16_16)
CK_ENTRY(batch_bf16_16, 1, 16, 1, 1, gemm_bf16_16)

#endif

// The fast kernels follow the order of llama.cpp built for the same width: 16 lanes where
// inferd's AVX-512 kernels run (ck_cpu_has_vnni; ck_set_vnni(0) picks the AVX2 ones on any CPU,
// and tests run both), 8 elsewhere.
int ck_float16_lanes(void) {
#if CK_X86
    if (ck_fast_paths_enabled()) return ck_cpu_has_vnni() ? 16 : 8;
#endif
    return 0;
}

ck_float16_kernels ck_pick_float16(int type, int fast) {
    ck_float16_kernels f = {0, 0, 0, 0};
#if CK_X86
    if (fast && (type == CK_TYPE_F16 || type == CK_TYPE_BF16)) {
        const int wide = ck_cpu_has_vnni(), bf = type == CK_TYPE_BF16;
        f.dot = wide ? (bf ? rows_bf16_16_one : rows_f16_16_one) : (bf ? rows_bf16_8_one : rows_f16_8_one);
        f.rows = wide ? (bf ? rows_bf16_16 : rows_f16_16) : (bf ? rows_bf16_8 : rows_f16_8);
        f.gemm = wide ? (bf ? batch_bf16_16 : batch_f16_16) : (bf ? batch_bf16_8 : batch_f16_8);
        f.gemm_k = wide ? 16 : 8;
    }
#endif
    (void)type;
    (void)fast;
    return f;
}
