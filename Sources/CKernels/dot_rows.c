// F16 and BF16 weights against several activation rows (prompts, decode steps of several
// sequences): a few weight rows are loaded and widened once per group of tokens, not once per
// token (the single-row kernel per (row, token) pair made a 5-token pass cost 2.3x a 1-token
// one). Every output keeps exactly the single-row kernel's arithmetic (dot_f16_f32_fast in
// dot.c, dot_bf16_f32_fast in dot_legacy.c): two 8-lane accumulators over steps of 16 values,
// one more step of 8 into the first, ck_hsum8 of their sum, then the scalar tail; only the
// interleaving of independent outputs changes, so the bits do not.
#include <string.h>

#include "internal.h"

// The portable reference: the per-row kernel for every (row, token) pair.
static void dot_rows_portable(ck_dot_fn dot, int k, const char *w, size_t wrb, int rows, const char *x, size_t xrb,
                              int n, float *y, int ldy) {
    for (int t = 0; t < n; t++) {
        for (int r = 0; r < rows; r++) y[(size_t)t * ldy + r] = dot(k, w + (size_t)r * wrb, x + (size_t)t * xrb);
    }
}

void ck_dot_rows_reference(int type, int k, const void *w, size_t wrb, int rows, const void *x, size_t xrb, int n,
                           float *y, int ldy) {
    const ck_kernels kern = ck_pick_kernels(type, ck_fast_paths_enabled());
    if (!kern.dot) return;
    dot_rows_portable(kern.dot, k, (const char *)w, wrb, rows, (const char *)x, xrb, n, y, ldy);
}

#if CK_X86

#define CK_ROWS_AVX512 __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#define CK_INLINE __attribute__((always_inline)) static inline

static float bf16_value(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

CK_FAST CK_INLINE __m256 load8(int bf, const uint16_t *w) {
    const __m128i h = _mm_loadu_si128((const __m128i *)w);
    if (bf) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

// The end of one output from its two accumulators at value i: the single-row kernels' last
// step of 8, reduction and scalar tail, statement for statement (same contraction of s += w * a).
CK_FAST CK_INLINE float finish(int bf, int k, int i, const uint16_t *w, const float *a, __m256 acc0, __m256 acc1) {
    for (; i + 8 <= k; i += 8) acc0 = _mm256_fmadd_ps(load8(bf, w + i), _mm256_loadu_ps(a + i), acc0);
    float s = ck_hsum8(_mm256_add_ps(acc0, acc1));
    if (bf) {
        for (; i < k; i++) s += bf16_value(w[i]) * a[i];
    } else {
        for (; i < k; i++) s += _cvtsh_ss(w[i]) * a[i];
    }
    return s;
}

// AVX2: R weight rows x T tokens, 2 accumulators each (R * T * 2 <= 12 of the 16 registers).
CK_FAST CK_INLINE void tile_avx2(int bf, int R, int T, int k, const uint16_t *w, size_t ws, const float *x, size_t xs,
                                 float *y, int ldy) {
    __m256 acc[2][3][2];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
    }
    int i = 0;
    for (; i + 16 <= k; i += 16) {
        for (int h = 0; h < 2; h++) {
            __m256 wv[2];
            for (int r = 0; r < R; r++) wv[r] = load8(bf, w + r * ws + i + 8 * h);
            for (int t = 0; t < T; t++) {
                const __m256 a = _mm256_loadu_ps(x + t * xs + i + 8 * h);
                for (int r = 0; r < R; r++) acc[r][t][h] = _mm256_fmadd_ps(wv[r], a, acc[r][t][h]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) {
            y[(size_t)t * ldy + r] = finish(bf, k, i, w + r * ws, x + t * xs, acc[r][t][0], acc[r][t][1]);
        }
    }
}

// AVX-512: one 16-lane register holds both accumulators of an output (lanes 0-7 the first,
// 8-15 the second: the lanes each sees and each FMA's rounding are the same), so R = 4 rows by
// T = 6 tokens take 24 of the 32 registers: a verification pass of up to six drafted tokens
// widens each weight once (tiles of four widened them twice for five or six tokens).
CK_ROWS_AVX512 CK_INLINE __m512 load16(int bf, const uint16_t *w) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)w);
    if (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

CK_ROWS_AVX512 CK_INLINE void tile_avx512(int bf, int R, int T, int k, const uint16_t *w, size_t ws, const float *x,
                                          size_t xs, float *y, int ldy) {
    __m512 acc[4][6];
    for (int r = 0; r < R; r++) {
        for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    }
    int i = 0;
    for (; i + 16 <= k; i += 16) {
        __m512 wv[4];
        for (int r = 0; r < R; r++) wv[r] = load16(bf, w + r * ws + i);
        for (int t = 0; t < T; t++) {
            const __m512 a = _mm512_loadu_ps(x + t * xs + i);
            for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], a, acc[r][t]);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) {
            const __m256 lo = _mm512_castps512_ps256(acc[r][t]);
            const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][t]), 1));
            y[(size_t)t * ldy + r] = finish(bf, k, i, w + r * ws, x + t * xs, lo, hi);
        }
    }
}

#endif

// Tokens per sweep: their activations (k floats each) stay in L2 (~512 KB) while every row
// group of the chunk passes over them.
int ck_rows_token_block(int k) {
    int tb = (512 * 1024 / 4) / (k > 0 ? k : 1);
    tb &= ~3;
    return tb < 4 ? 4 : tb;
}

#if CK_X86

// One tile of RR rows x TT tokens at row r, token t, with constant sizes (unrolled, in registers).
#define CK_TILE_CASE(KERNEL, RR, TT)                                                                  \
    case (RR) * 8 + (TT):                                                                            \
        KERNEL(bf, RR, TT, k, w + (size_t)r * ws, ws, x + (size_t)t * xs, xs, y + (size_t)t * ldy + r, ldy); \
        break;

CK_FAST CK_INLINE void rows_avx2(int bf, int k, const uint16_t *w, size_t ws, int rows, const float *x, size_t xs,
                                 int n, float *y, int ldy) {
    const int tb = ck_rows_token_block(k);
    for (int t0 = 0; t0 < n; t0 += tb) {
        const int t1 = t0 + tb < n ? t0 + tb : n;
        for (int r = 0; r < rows; r += 2) {
            const int R = rows - r < 2 ? rows - r : 2;
            for (int t = t0; t < t1; t += 3) {
                const int T = t1 - t < 3 ? t1 - t : 3;
                switch (R * 8 + T) {
                    CK_TILE_CASE(tile_avx2, 1, 1)
                    CK_TILE_CASE(tile_avx2, 1, 2)
                    CK_TILE_CASE(tile_avx2, 1, 3)
                    CK_TILE_CASE(tile_avx2, 2, 1)
                    CK_TILE_CASE(tile_avx2, 2, 2)
                    CK_TILE_CASE(tile_avx2, 2, 3)
                default: break;
                }
            }
        }
    }
}

CK_ROWS_AVX512 CK_INLINE void rows_avx512(int bf, int k, const uint16_t *w, size_t ws, int rows, const float *x,
                                          size_t xs, int n, float *y, int ldy) {
    const int tb = ck_rows_token_block(k);
    for (int t0 = 0; t0 < n; t0 += tb) {
        const int t1 = t0 + tb < n ? t0 + tb : n;
        for (int r = 0; r < rows; r += 4) {
            const int R = rows - r < 4 ? rows - r : 4;
            for (int t = t0; t < t1; t += 6) {
                const int T = t1 - t < 6 ? t1 - t : 6;
                switch (R * 8 + T) {
                    CK_TILE_CASE(tile_avx512, 1, 1)
                    CK_TILE_CASE(tile_avx512, 1, 2)
                    CK_TILE_CASE(tile_avx512, 1, 3)
                    CK_TILE_CASE(tile_avx512, 1, 4)
                    CK_TILE_CASE(tile_avx512, 1, 5)
                    CK_TILE_CASE(tile_avx512, 1, 6)
                    CK_TILE_CASE(tile_avx512, 2, 1)
                    CK_TILE_CASE(tile_avx512, 2, 2)
                    CK_TILE_CASE(tile_avx512, 2, 3)
                    CK_TILE_CASE(tile_avx512, 2, 4)
                    CK_TILE_CASE(tile_avx512, 2, 5)
                    CK_TILE_CASE(tile_avx512, 2, 6)
                    CK_TILE_CASE(tile_avx512, 3, 1)
                    CK_TILE_CASE(tile_avx512, 3, 2)
                    CK_TILE_CASE(tile_avx512, 3, 3)
                    CK_TILE_CASE(tile_avx512, 3, 4)
                    CK_TILE_CASE(tile_avx512, 3, 5)
                    CK_TILE_CASE(tile_avx512, 3, 6)
                    CK_TILE_CASE(tile_avx512, 4, 1)
                    CK_TILE_CASE(tile_avx512, 4, 2)
                    CK_TILE_CASE(tile_avx512, 4, 3)
                    CK_TILE_CASE(tile_avx512, 4, 4)
                    CK_TILE_CASE(tile_avx512, 4, 5)
                    CK_TILE_CASE(tile_avx512, 4, 6)
                default: break;
                }
            }
        }
    }
}

// Strides in elements: F16/BF16 rows are whole uint16_t, activation rows whole floats.
#define CK_ROWS_ENTRY(NAME, TARGET, BODY, BF)                                                                         \
    TARGET static void NAME(int k, const void *w, size_t wrb, int rows, const void *x, size_t xrb, int n, float *y,  \
                            int ldy) {                                                                               \
        BODY(BF, k, (const uint16_t *)w, wrb / 2, rows, (const float *)x, xrb / 4, n, y, ldy);                        \
    }

CK_ROWS_ENTRY(rows_f16_avx2, CK_FAST, rows_avx2, 0)
CK_ROWS_ENTRY(rows_bf16_avx2, CK_FAST, rows_avx2, 1)
CK_ROWS_ENTRY(rows_f16_avx512, CK_ROWS_AVX512, rows_avx512, 0)
CK_ROWS_ENTRY(rows_bf16_avx512, CK_ROWS_AVX512, rows_avx512, 1)

#endif

ck_dot_rows_fn ck_pick_dot_rows(int type, int fast) {
#if CK_X86
    if (fast && (type == CK_TYPE_F16 || type == CK_TYPE_BF16)) {
        // ck_cpu_has_vnni() implies AVX-512 F and VL, and ck_set_vnni(0) picks the AVX2 kernels
        // on any CPU (tests run both).
        const int wide = ck_cpu_has_vnni();
        if (type == CK_TYPE_F16) return wide ? rows_f16_avx512 : rows_f16_avx2;
        return wide ? rows_bf16_avx512 : rows_bf16_avx2;
    }
#endif
    (void)type;
    (void)fast;
    return 0;
}
