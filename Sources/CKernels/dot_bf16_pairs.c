// BF16 weights on CPUs with AVX512-BF16, whose vdpbf16ps adds two bf16 products per f32 lane,
// in the two orders llama.cpp's CPU backend takes there (built for the CPU it runs on). Its
// activations are the f32 ones rounded to bf16 first (its BF16 vec_dot_type; ck_round_row_bf16
// does it once per pass here, so `a` below holds f32 values that are exact bf16 ones; any others
// are rounded the same way as they are narrowed).
// - ggml_vec_dot_bf16 (one activation row; any product tinyBLAS refuses): two 16-lane
//   accumulators over steps of 64 values (the first on values 0-31 of a step, the second on
//   32-63), each reduced, their sum in double, then the values past the last whole step one by
//   one in double.
// - llamafile's tinyBLAS (two or more activation rows, k a multiple of 32, rows of the whole
//   matrix a multiple of 4): one 16-lane accumulator per output over steps of 32, reduced.
// A lane of vdpbf16ps adds the product of its odd pair and rounds, then that of its even pair and
// rounds (each product is exact in f32); subnormal inputs count as zero and a subnormal result is
// flushed. Reductions halve: 16 lanes to 8 (lane i + lane i + 8), to 4, then (0 + 2) + (1 + 3),
// as _mm512_reduce_add_ps and ck_hsum8 both do.
#include <float.h>

#include "internal.h"

// MARK: - Portable reference (tests; every CPU)

static float flush(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

static float widen(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// One vdpbf16ps over 32 values at w and a into 16 lanes.
static void pairs_step(float *lanes, const uint16_t *w, const float *a) {
    for (int j = 0; j < 16; j++) {
        const float w1 = flush(widen(w[2 * j + 1])), a1 = flush(ck_round_half(1, a[2 * j + 1]));
        const float w0 = flush(widen(w[2 * j])), a0 = flush(ck_round_half(1, a[2 * j]));
        lanes[j] = flush(fmaf(w1, a1, lanes[j]));
        lanes[j] = flush(fmaf(w0, a0, lanes[j]));
    }
}

static float reduce16(const float *v) {
    float h8[8], h4[4];
    for (int i = 0; i < 8; i++) h8[i] = v[i] + v[i + 8];
    for (int i = 0; i < 4; i++) h4[i] = h8[i] + h8[i + 4];
    return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

float ck_dot_bf16_pairs_reference(int k, const uint16_t *w, const float *a, int gemm) {
    if (gemm && k % 32 == 0) {
        float lanes[16] = {0};
        for (int i = 0; i < k; i += 32) pairs_step(lanes, w + i, a + i);
        return reduce16(lanes);
    }
    float c1[16] = {0}, c2[16] = {0};
    int i = 0;
    for (; i + 64 <= k; i += 64) {
        pairs_step(c1, w + i, a + i);
        pairs_step(c2, w + i + 32, a + i + 32);
    }
    double s = (double)reduce16(c1);
    s += (double)reduce16(c2);
    for (; i < k; i++) s += (double)(widen(w[i]) * ck_round_half(1, a[i]));
    return (float)s;
}

// MARK: - AVX512-BF16

#if CK_X86

#define CK_BF16 __attribute__((target("avx512f,avx512vl,avx512bf16,avx2,fma,f16c")))
#define CK_INLINE __attribute__((always_inline)) static inline

// 32 activations (exact bf16 values in f32) as bf16: the low 16 from the first vector.
CK_BF16 CK_INLINE __m512bh load_a(const float *a) {
    return _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + 16), _mm512_loadu_ps(a));
}

CK_BF16 CK_INLINE __m512bh load_w(const uint16_t *w) { return (__m512bh)_mm512_loadu_si512((const void *)w); }

CK_BF16 CK_INLINE float hsum16(__m512 v) {
    const __m256 lo = _mm512_castps512_ps256(v);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return ck_hsum8(_mm256_add_ps(lo, hi));
}

// ggml_vec_dot_bf16's order for one weight row.
CK_BF16 static float dot_bf16_pairs(int k, const void *wv, const void *av) {
    const uint16_t *w = (const uint16_t *)wv;
    const float *a = (const float *)av;
    __m512 c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= k; i += 64) {
        c1 = _mm512_dpbf16_ps(c1, load_w(w + i), load_a(a + i));
        c2 = _mm512_dpbf16_ps(c2, load_w(w + i + 32), load_a(a + i + 32));
    }
    double s = (double)hsum16(c1);
    s += (double)hsum16(c2);
    for (; i < k; i++) s += (double)(widen(w[i]) * ck_round_half(1, a[i]));
    return (float)s;
}

// Activation rows narrowed to bf16 once per call (tokens x k values), into the calling thread's
// buffer: the kernels then load both operands as they are.
CK_BF16 static const uint16_t *narrow_rows(const float *x, size_t xs, int k, int n) {
    uint16_t *narrowed = (uint16_t *)ck_thread_scratch((size_t)n * k * 2);
    if (!narrowed) return 0;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i + 32 <= k; i += 32) {
            _mm512_storeu_si512((void *)(narrowed + (size_t)t * k + i), (__m512i)load_a(x + t * xs + i));
        }
    }
    return narrowed;
}

// A lone token in ggml_vec_dot_bf16's order over narrowed activations, one weight row at a time
// (each read as one stream: on Zen 4 two or four rows side by side read 30-45 % slower), two steps
// per iteration (the same order; a 1 GiB walk read 22.5 GB/s with one step, 24.5 with two).
CK_BF16 static void vec_rows_narrowed(int k, const uint16_t *w, size_t ws, int rows, const uint16_t *a,
                                      const float *af, float *y) {
    for (int r = 0; r < rows; r++) {
        const uint16_t *wr = w + (size_t)r * ws;
        __m512 c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();
        int i = 0;
        for (; i + 128 <= k; i += 128) {
            c1 = _mm512_dpbf16_ps(c1, load_w(wr + i), load_w(a + i));
            c2 = _mm512_dpbf16_ps(c2, load_w(wr + i + 32), load_w(a + i + 32));
            c1 = _mm512_dpbf16_ps(c1, load_w(wr + i + 64), load_w(a + i + 64));
            c2 = _mm512_dpbf16_ps(c2, load_w(wr + i + 96), load_w(a + i + 96));
        }
        for (; i + 64 <= k; i += 64) {
            c1 = _mm512_dpbf16_ps(c1, load_w(wr + i), load_w(a + i));
            c2 = _mm512_dpbf16_ps(c2, load_w(wr + i + 32), load_w(a + i + 32));
        }
        double s = (double)hsum16(c1);
        s += (double)hsum16(c2);
        for (; i < k; i++) s += (double)(widen(wr[i]) * ck_round_half(1, af[i]));
        y[r] = (float)s;
    }
}

// ggml_vec_dot_bf16's order for R weight rows x T narrowed tokens (xs elements apart; two
// accumulators per output, R * T * 2 <= 16): several tokens of a product llama.cpp runs row by
// row (the experts' products; shapes tinyBLAS refuses), each weight vector loaded once for them.
CK_BF16 CK_INLINE void tile_vec(int R, int T, int k, const uint16_t *w, size_t ws, const uint16_t *x, size_t xs,
                                const float *xf, size_t xfs, float *y, int ldy) {
    __m512 c1[4][2], c2[4][2];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) c1[r][t] = c2[r][t] = _mm512_setzero_ps();
    }
    int i = 0;
    for (; i + 64 <= k; i += 64) {
        for (int r = 0; r < R; r++) {
            const __m512bh w1 = load_w(w + r * ws + i), w2 = load_w(w + r * ws + i + 32);
            for (int t = 0; t < T; t++) {
                c1[r][t] = _mm512_dpbf16_ps(c1[r][t], w1, load_w(x + t * xs + i));
                c2[r][t] = _mm512_dpbf16_ps(c2[r][t], w2, load_w(x + t * xs + i + 32));
            }
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) {
            double s = (double)hsum16(c1[r][t]);
            s += (double)hsum16(c2[r][t]);
            for (int j = i; j < k; j++) s += (double)(widen(w[r * ws + j]) * ck_round_half(1, xf[t * xfs + j]));
            y[(size_t)t * ldy + r] = (float)s;
        }
    }
}

#define CK_VEC_CASE(RR, TT)                                                                             \
    case (RR) * 8 + (TT):                                                                               \
        tile_vec(RR, TT, k, w + (size_t)r * ws, ws, a + (size_t)(t - t0) * k, k, x + (size_t)t * xs, xs, \
                 y + (size_t)t * ldy + r, ldy);                                                         \
        break;

// One token block t0..<t1 (narrowed into `a`, k apart) in ggml_vec_dot_bf16's order, every
// output the single row's bits: a lone token row by row, several four rows by two tokens.
CK_BF16 static void vec_block(int k, const uint16_t *w, size_t ws, int rows, const uint16_t *a, const float *x,
                              size_t xs, int t0, int t1, float *y, int ldy) {
    if (t1 - t0 == 1) {
        vec_rows_narrowed(k, w, ws, rows, a, x + (size_t)t0 * xs, y + (size_t)t0 * ldy);
        return;
    }
    for (int r = 0; r < rows; r += 4) {
        const int R = rows - r < 4 ? rows - r : 4;
        for (int t = t0; t < t1; t += 2) {
            const int T = t1 - t < 2 ? t1 - t : 2;
            switch (R * 8 + T) {
                CK_VEC_CASE(1, 1)
                CK_VEC_CASE(2, 1)
                CK_VEC_CASE(3, 1)
                CK_VEC_CASE(4, 1)
                CK_VEC_CASE(1, 2)
                CK_VEC_CASE(2, 2)
                CK_VEC_CASE(3, 2)
                CK_VEC_CASE(4, 2)
            default: break;
            }
        }
    }
}

// tinyBLAS's order: R weight rows x T narrowed tokens (xs elements apart), one accumulator each
// (R * T <= 24 of the 32 registers), every vector loaded once per tile.
CK_BF16 CK_INLINE void tile(int R, int T, int k, const uint16_t *w, size_t ws, const uint16_t *x, size_t xs, float *y,
                            int ldy) {
    __m512 acc[4][6];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    }
    for (int i = 0; i < k; i += 32) {
        __m512bh wv[4];
        for (int r = 0; r < R; r++) wv[r] = load_w(w + r * ws + i);
        for (int t = 0; t < T; t++) {
            const __m512bh av = load_w(x + t * xs + i);
            for (int r = 0; r < R; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], av);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) y[(size_t)t * ldy + r] = hsum16(acc[r][t]);
    }
}

#define CK_PAIRS_CASE(RR, TT)                                                                          \
    case (RR) * 8 + (TT):                                                                              \
        tile(RR, TT, k, w + (size_t)r * ws, ws, a + (size_t)(t - t0) * k, k, y + (size_t)t * ldy + r, ldy); \
        break;

// One token block t0..<t1 (narrowed into `a`, k apart) in tinyBLAS's order. k % 32 == 0.
CK_BF16 static void gemm_block(int k, const uint16_t *w, size_t ws, int rows, const uint16_t *a, const float *x,
                               size_t xs, int t0, int t1, float *y, int ldy) {
    (void)x;
    (void)xs;
    // Rows in passes of about CK_TOKEN_PASS_BYTES (in L2), each tile of six tokens (in L1 for k up
    // to 2,048) over every row of the pass: the tiles' activations were read from L2 once per four
    // rows. Each output's accumulation is the tile's alone, so the bits are the same.
    int per = (int)(CK_TOKEN_PASS_BYTES / ((size_t)k * 2)) & ~3;
    per = per < 4 ? 4 : per;
    for (int p0 = 0; p0 < rows; p0 += per) {
        const int p1 = p0 + per < rows ? p0 + per : rows;
        for (int t = t0; t < t1; t += 6) {
            const int T = t1 - t < 6 ? t1 - t : 6;
            for (int r = p0; r < p1; r += 4) {
                const int R = p1 - r < 4 ? p1 - r : 4;
                switch (R * 8 + T) {
                CK_PAIRS_CASE(1, 1)
                CK_PAIRS_CASE(1, 2)
                CK_PAIRS_CASE(1, 3)
                CK_PAIRS_CASE(1, 4)
                CK_PAIRS_CASE(1, 5)
                CK_PAIRS_CASE(1, 6)
                CK_PAIRS_CASE(2, 1)
                CK_PAIRS_CASE(2, 2)
                CK_PAIRS_CASE(2, 3)
                CK_PAIRS_CASE(2, 4)
                CK_PAIRS_CASE(2, 5)
                CK_PAIRS_CASE(2, 6)
                CK_PAIRS_CASE(3, 1)
                CK_PAIRS_CASE(3, 2)
                CK_PAIRS_CASE(3, 3)
                CK_PAIRS_CASE(3, 4)
                CK_PAIRS_CASE(3, 5)
                CK_PAIRS_CASE(3, 6)
                CK_PAIRS_CASE(4, 1)
                CK_PAIRS_CASE(4, 2)
                CK_PAIRS_CASE(4, 3)
                CK_PAIRS_CASE(4, 4)
                CK_PAIRS_CASE(4, 5)
                CK_PAIRS_CASE(4, 6)
                default: break;
                }
            }
        }
    }
}

// Rows x tokens in sweeps of tokens (ck_rows_token_block; strides in elements:
// weight rows of uint16_t, activation rows of floats), in either order.
CK_BF16 static void by_token_blocks(int gemm, int k, const void *wv, size_t wrb, int rows, const void *xv, size_t xrb,
                                    int n, float *y, int ldy) {
    const uint16_t *w = (const uint16_t *)wv;
    const float *x = (const float *)xv;
    const size_t ws = wrb / 2, xs = xrb / 4;
    const int tb = ck_rows_token_block(k);
    for (int t0 = 0; t0 < n; t0 += tb) {
        const int t1 = t0 + tb < n ? t0 + tb : n;
        const uint16_t *a = narrow_rows(x + (size_t)t0 * xs, xs, k, t1 - t0);
        if (!a) {  // no memory for the narrowed rows: the same bits output by output
            for (int t = t0; t < t1; t++) {
                for (int r = 0; r < rows; r++) {
                    const uint16_t *wr = w + (size_t)r * ws;
                    const float *xt = x + (size_t)t * xs;
                    y[(size_t)t * ldy + r] = gemm ? ck_dot_bf16_pairs_reference(k, wr, xt, 1) : dot_bf16_pairs(k, wr, xt);
                }
            }
            continue;
        }
        (gemm ? gemm_block : vec_block)(k, w, ws, rows, a, x, xs, t0, t1, y, ldy);
    }
}

CK_BF16 static void rows_bf16_pairs(int k, const void *w, size_t wrb, int rows, const void *x, size_t xrb, int n,
                                    float *y, int ldy) {
    by_token_blocks(0, k, w, wrb, rows, x, xrb, n, y, ldy);
}

CK_BF16 static void gemm_bf16_pairs(int k, const void *w, size_t wrb, int rows, const void *x, size_t xrb, int n,
                                    float *y, int ldy) {
    by_token_blocks(1, k, w, wrb, rows, x, xrb, n, y, ldy);
}

#endif

static _Thread_local int pairs_allowed = 1;

void ck_set_bf16_pairs(int enabled) { pairs_allowed = enabled != 0; }

// BF16 weights, fast paths, AVX-512 not turned off by ck_set_vnni(0) nor these kernels by
// ck_set_bf16_pairs(0) (tests: the f32-lane kernels of both widths stay covered here) and a CPU
// with AVX512-BF16.
static int pairs_on(int type, int fast) {
#if CK_X86
    return fast && type == CK_TYPE_BF16 && pairs_allowed && ck_cpu_has_vnni() && ck_cpu_bf16_pairs;
#else
    (void)type;
    (void)fast;
    return 0;
#endif
}

int ck_bf16_pairs_enabled(void) { return pairs_on(CK_TYPE_BF16, ck_fast_paths_enabled()); }

#if CK_X86
ck_dot_fn ck_pick_dot_bf16_pairs(int type, int fast) { return pairs_on(type, fast) ? (ck_dot_fn)dot_bf16_pairs : 0; }

ck_dot_rows_fn ck_pick_rows_bf16_pairs(int type, int fast) { return pairs_on(type, fast) ? rows_bf16_pairs : 0; }

ck_dot_rows_fn ck_pick_gemm_bf16_pairs(int type, int fast) { return pairs_on(type, fast) ? gemm_bf16_pairs : 0; }
#else  // no AVX512-BF16 kernels elsewhere
ck_dot_fn ck_pick_dot_bf16_pairs(int type, int fast) { return (void)type, (void)fast, (ck_dot_fn)0; }

ck_dot_rows_fn ck_pick_rows_bf16_pairs(int type, int fast) { return (void)type, (void)fast, (ck_dot_rows_fn)0; }

ck_dot_rows_fn ck_pick_gemm_bf16_pairs(int type, int fast) { return (void)type, (void)fast, (ck_dot_rows_fn)0; }
#endif
