// Q2_K re-laid out at load time for eight rows per vector (ck_block_q2_Kx8: 672 bytes per eight
// rows and super-block, the file's 84 per row: the scale bytes stay packed, since decode is bound
// by the reads and their nibbles cost two ops per group of eight rows).
//
// The codes keep the file's packing in four-byte chunks of eight rows (vector 8h + c: lane r =
// row r's qs[32h + 4c..32h + 4c + 3]), so one shift and one and per chunk give eight rows'
// codes, which vpdpbusd multiplies by four activation bytes broadcast (AVX2: vpmaddubsw's pair
// sums). A chunk's sum (|.| <= 4 * 3 * 128) and a group's (16 * 3 * 128) fit an int16, so
// vpdpwssd against the scale in the low int16 (0 in the high one) scales them exactly (AVX2:
// vpmaddwd of the pair sums by the scale in both halves).
//
// On AVX-512 (VNNI) CPUs every product takes llama.cpp's repacked order (below: its CPU backend
// repacks Q2_K there). Elsewhere (AVX2, portable) both of its plain orders are kept bit for bit
// (dot_kquants_low.c, dot_kquants_tiled.c):
// - tiled (CK_ORDER_TILED): per super-block the exact s1 = Σ_g scale_g Σ q a and s2 = Σ_g min_g
//   bsums_g, then r = s1 * fp16(d_w); r = fma(-fp16(dmin_w), s2, r); acc = fma(r, d_a, acc).
// - the one-token order (decode): eight float lanes per row; per super-block lane L first takes
//   -d_a * fp16(dmin) times the mins of groups 2L, 2L + 1 against their Q8_K sums in one FMA,
//   then d_a * fp16(d) times its integer lane (values 32m + 4L..+3 of each 32-value chunk m,
//   times their group's scale) in another; the lanes added in ck_hsum8's order at the end.
// The portable kernel (tiled, or the portable per-row kernel's order) is the reference.
#include <string.h>

#include "interleave_forms.h"

size_t ck_q2_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q2_Kx8); }

void ck_interleave_q2_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q2_Kx8 *out = (ck_block_q2_Kx8 *)((char *)dst + (size_t)g * ck_q2_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q2_K *in = (const ck_block_q2_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                out->dmin[r] = in->dmin;
                for (int s = 0; s < 16; s++) out->scales[s][r] = in->scales[s];
                for (int h = 0; h < 2; h++) {
                    for (int c = 0; c < 8; c++) memcpy(out->qs + 32 * (8 * h + c) + 4 * r, in->qs + 32 * h + 4 * c, 4);
                }
            }
        }
    }
}

// MARK: - Portable (the reference beside the fast kernels)

// Code e (0..255) of row r, 0..3.
static inline int q2_value(const ck_block_q2_Kx8 *w, int r, int e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    return (w->qs[32 * (8 * h + l / 4) + 4 * r + l % 4] >> (2 * s)) & 3;
}

// Eight rows against one activation row: in the tiled order (tiled != 0), else in the portable
// per-row kernel's (dot_q2_k_portable), written as it is so it rounds alike.
static void group_q2_kx8_portable(int nb, const ck_block_q2_Kx8 *w, const ck_block_q8_K *a, int tiled, float *y) {
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f;
        for (int b = 0; b < nb; b++) {
            int s1 = 0, s2 = 0;
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int e = 16 * g; e < 16 * g + 16; e++) s += q2_value(&w[b], r, e) * a[b].qs[e];
                s1 += (w[b].scales[g][r] & 0x0f) * s;
                s2 += (w[b].scales[g][r] >> 4) * a[b].bsums[g];
            }
            if (tiled) {
                float t = (float)s1 * ck_fp16_to_fp32(w[b].d[r]);
                t = fmaf(-ck_fp16_to_fp32(w[b].dmin[r]), (float)s2, t);
                acc = fmaf(t, a[b].d, acc);
            } else {
                const float d = a[b].d * ck_fp16_to_fp32(w[b].d[r]), dmin = a[b].d * ck_fp16_to_fp32(w[b].dmin[r]);
                acc += d * (float)s1 - dmin * (float)s2;
            }
        }
        y[r] = acc;
    }
}

// MARK: - llama.cpp's repacked order (AVX-512 CPUs)
//
// llama.cpp repacks a Q2_K matrix of a multiple of 8 rows on a CPU with AVX-512 (its
// q2_K_8x8_q8_K): per row two float accumulators, acc = fma(float(s1), fp16(d) * d_a, acc) and
// accm = fma(float(s2), fp16(dmin) * d_a, accm), the result acc - accm at the end. Its GEMV (one
// activation row; the rows past a micro-batch's whole groups of four; every expert row) takes the
// exact sums over a whole super-block; its GEMM (a micro-batch's rows in whole groups of four,
// CK_ORDER_GROUP4) over each half of 128 values, two FMAs per super-block each.

float ck_dot_q2_k_repacked_reference(int k, const void *w, const void *x, int halves) {
    const ck_block_q2_K *wb = (const ck_block_q2_K *)w;
    const ck_block_q8_K *a = (const ck_block_q8_K *)x;
    float acc = 0.0f, accm = 0.0f;
    for (int b = 0; b < k / CK_QK_K; b++) {
        int s1[2] = {0, 0}, s2[2] = {0, 0};
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                s += ((wb[b].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) * a[b].qs[e];
            }
            s1[g / 8] += (wb[b].scales[g] & 0x0f) * s;
            s2[g / 8] += (wb[b].scales[g] >> 4) * a[b].bsums[g];
        }
        const float dwa = ck_fp16_to_fp32(wb[b].d) * a[b].d, dma = ck_fp16_to_fp32(wb[b].dmin) * a[b].d;
        if (halves) {
            for (int h = 0; h < 2; h++) {
                acc = fmaf((float)s1[h], dwa, acc);
                accm = fmaf((float)s2[h], dma, accm);
            }
        } else {
            acc = fmaf((float)(s1[0] + s1[1]), dwa, acc);
            accm = fmaf((float)(s2[0] + s2[1]), dma, accm);
        }
    }
    return acc - accm;
}

#if CK_X86
#define CK_Q2K_AHEAD 2  // super-blocks of 672 bytes ahead (decode)

// Eight rows' codes of chunk (h, s) from codes vector v.
static inline __attribute__((always_inline)) CK_FAST __m256i q2_codes(__m256i v, int s) {
    return _mm256_and_si256(s ? _mm256_srli_epi16(v, 2 * s) : v, _mm256_set1_epi8(3));
}

// Eight rows' scales of group g in the low int16 of each lane (high 0), for vpdpwssd.
static inline __attribute__((always_inline)) CK_FAST __m256i q2_scale_low(const uint8_t *p) {
    return _mm256_and_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)), _mm256_set1_epi32(0x0f));
}

// ... in both int16 halves, for vpmaddwd against two pair sums.
static inline __attribute__((always_inline)) CK_FAST __m256i q2_scale_both(const uint8_t *p) {
    const __m256i s = q2_scale_low(p);
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

// Lane r: (min 2L, min 2L + 1) of row r as two int16.
static inline __attribute__((always_inline)) CK_FAST __m256i q2_min_pairs(const ck_block_q2_Kx8 *w, int L) {
    const __m128i lo = _mm_loadl_epi64((const __m128i *)w->scales[2 * L]);
    const __m128i hi = _mm_loadl_epi64((const __m128i *)w->scales[2 * L + 1]);
    const __m128i m = _mm_and_si128(_mm_srli_epi16(_mm_unpacklo_epi8(lo, hi), 4), _mm_set1_epi8(0x0f));
    return _mm256_cvtepu8_epi16(m);
}

// (bsums 2L, bsums 2L + 1) of a Q8_K block as two int16, every lane.
static inline __attribute__((always_inline)) CK_FAST __m256i q2_bsum_pair(const ck_block_q8_K *a, int L) {
    const uint16_t lo = (uint16_t)a->bsums[2 * L], hi = (uint16_t)a->bsums[2 * L + 1];
    return _mm256_set1_epi32((int32_t)((uint32_t)lo | (uint32_t)hi << 16));
}

// The tiled order, eight rows × T <= 4 tokens (a constant after inlining): the chunks' pair
// sums added in int16, then vpmaddwd by the scale. (VNNI = 1 would put each group's four chunks
// into one accumulator per token, then vpdpwssd by the scale; the VNNI path takes the repacked
// order instead, so only the AVX2 kernels are made.)
#define Q2_TILE(NAME, ATTR, VNNI)                                                                                      \
    static inline __attribute__((always_inline)) ATTR void NAME(int nb, const ck_block_q2_Kx8 *w,                      \
                                                                const ck_block_q8_K *const *x, float *const *y,        \
                                                                const int T) {                                         \
        __m256 acc[4];                                                                                                 \
        for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();                                                      \
        for (int b = 0; b < nb; b++) {                                                                                 \
            __m256i s1[4];                                                                                             \
            for (int t = 0; t < T; t++) s1[t] = _mm256_setzero_si256();                                                \
            for (int m = 0; m < 8; m++) {                                                                              \
                const int h = m / 4, s = m % 4;                                                                        \
                for (int half = 0; half < 2; half++) {                                                                 \
                    const int g = 2 * m + half;                                                                        \
                    __m256i sum[4];                                                                                    \
                    for (int t = 0; t < T; t++) sum[t] = _mm256_setzero_si256();                                       \
                    for (int c = 4 * half; c < 4 * half + 4; c++) {                                                    \
                        const __m256i q = q2_codes(_mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * h + c))), s); \
                        for (int t = 0; t < T; t++) {                                                                  \
                            const __m256i a4 = ck_bcast4(x[t][b].qs + 32 * m + 4 * c);                                 \
                            sum[t] = VNNI ? _mm256_dpbusd_epi32(sum[t], q, a4)                                         \
                                          : _mm256_add_epi16(sum[t], _mm256_maddubs_epi16(q, a4));                     \
                        }                                                                                              \
                    }                                                                                                  \
                    const __m256i sc = VNNI ? q2_scale_low(w[b].scales[g]) : q2_scale_both(w[b].scales[g]);            \
                    for (int t = 0; t < T; t++) {                                                                      \
                        s1[t] = VNNI ? _mm256_dpwssd_epi32(s1[t], sum[t], sc)                                          \
                                     : _mm256_add_epi32(s1[t], _mm256_madd_epi16(sum[t], sc));                         \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            __m256i mp[8];                                                                                             \
            for (int L = 0; L < 8; L++) mp[L] = q2_min_pairs(&w[b], L);                                                \
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));                              \
            const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));                            \
            for (int t = 0; t < T; t++) {                                                                              \
                __m256i s2 = _mm256_setzero_si256();                                                                   \
                for (int L = 0; L < 8; L++) s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(mp[L], q2_bsum_pair(&x[t][b], L))); \
                __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[t]), dw);                                               \
                r = _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(s2), r);                                                   \
                acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);                                        \
            }                                                                                                          \
        }                                                                                                              \
        for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);                                                    \
    }
Q2_TILE(tile_q2_kx8_tiled_avx2, CK_FAST, 0)

// llama.cpp's repacked order, eight rows × T <= 4 tokens, all of them GEMM rows (halves) or
// all GEMV rows: the tiled kernel's exact sums kept per half, then the two accumulators.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q2_kx8_repacked(int nb, const ck_block_q2_Kx8 *w,
                                                                                     const ck_block_q8_K *const *x,
                                                                                     float *const *y, const int T,
                                                                                     const int halves) {
    __m256 acc[4], accm[4];
    for (int t = 0; t < T; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q2_Kx8); l += 64) {
            _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q2K_AHEAD)) + l, _MM_HINT_T0);
        }
        __m256i s1[2][4], s2[2][4];
        for (int t = 0; t < T; t++) s1[0][t] = s1[1][t] = s2[0][t] = s2[1][t] = _mm256_setzero_si256();
        for (int m = 0; m < 8; m++) {
            const int h = m / 4, s = m % 4;
            for (int half = 0; half < 2; half++) {
                const int g = 2 * m + half;
                __m256i sum[4];
                for (int t = 0; t < T; t++) sum[t] = _mm256_setzero_si256();
                for (int c = 4 * half; c < 4 * half + 4; c++) {
                    const __m256i q = q2_codes(_mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * h + c))), s);
                    for (int t = 0; t < T; t++) sum[t] = _mm256_dpbusd_epi32(sum[t], q, ck_bcast4(x[t][b].qs + 32 * m + 4 * c));
                }
                const __m256i sc = q2_scale_low(w[b].scales[g]);
                for (int t = 0; t < T; t++) s1[h][t] = _mm256_dpwssd_epi32(s1[h][t], sum[t], sc);
            }
        }
        for (int L = 0; L < 8; L++) {
            const __m256i mp = q2_min_pairs(&w[b], L);
            for (int t = 0; t < T; t++) {
                s2[L / 4][t] = _mm256_add_epi32(s2[L / 4][t], _mm256_madd_epi16(mp, q2_bsum_pair(&x[t][b], L)));
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));
        for (int t = 0; t < T; t++) {
            const __m256 da = _mm256_set1_ps(x[t][b].d);
            const __m256 dwa = _mm256_mul_ps(dw, da), dma = _mm256_mul_ps(dm, da);
            if (halves) {
                for (int hh = 0; hh < 2; hh++) {
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[hh][t]), dwa, acc[t]);
                    accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s2[hh][t]), dma, accm[t]);
                }
            } else {
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s1[0][t], s1[1][t])), dwa, acc[t]);
                accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s2[0][t], s2[1][t])), dma, accm[t]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_sub_ps(acc[t], accm[t]));
}

#define Q2_REPACKED_CASE(TT)                                                                   \
    case TT: tile_q2_kx8_repacked(nb, wg, xs + t0, yg, TT, halves); break;

// Rows r0..<r1 (whole groups) against `count` tokens of one kind, four at a time.
CK_FORMS_VNNI static void groups_q2_kx8_repacked(int nb, const char *w, size_t gb, int r0, int r1,
                                                 const ck_block_q8_K *const *xs, float *const *ys, int count,
                                                 int halves) {
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q2_Kx8 *wg = (const ck_block_q2_Kx8 *)(w + (size_t)g * gb);
        for (int t0 = 0; t0 < count; t0 += 4) {
            float *yg[4];
            const int n = count - t0 < 4 ? count - t0 : 4;
            for (int t = 0; t < n; t++) yg[t] = ys[t0 + t] + 8 * g;
            switch (n) {
                Q2_REPACKED_CASE(4)
                Q2_REPACKED_CASE(3)
                Q2_REPACKED_CASE(2)
            default: tile_q2_kx8_repacked(nb, wg, xs + t0, yg, 1, halves); break;
            }
        }
    }
}

// The one-token order, eight rows: chunk c of each 32 values goes to lane c's accumulator.
// Lane c's eight steps are summed in one register before the next lane's: eight sums kept
// across the steps (as a VNNI kernel with 32 registers could) lived on the stack with AVX2's
// 16, a store and a load per step. Each accumulator takes the same FMAs in the
// same order (the mins' first, then the lane's), and the integer sums do not depend on the
// order they are added in: the same bits.
CK_FAST static void group_q2_kx8_lanes_avx2(int nb, const ck_block_q2_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int c = 0; c < 8; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        for (int l = 0; l < (int)sizeof(ck_block_q2_Kx8); l += 64) {
            _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q2K_AHEAD)) + l, _MM_HINT_T0);
        }
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(-a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin)));
        __m256i scales[16];
        for (int g = 0; g < 16; g++) scales[g] = q2_scale_both(w[b].scales[g]);
        for (int c = 0; c < 8; c++) {
            const __m256i mp = _mm256_madd_epi16(q2_min_pairs(&w[b], c), q2_bsum_pair(&a[b], c));
            acc[c] = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(mp), acc[c]);
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * c));
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 + c)));
            __m256i lane = _mm256_setzero_si256();
            // (Unrolled, so each step's shift and half are constants.)
#pragma clang loop unroll(full)
            for (int m = 0; m < 8; m++) {
                const __m256i q = q2_codes(m < 4 ? v0 : v1, m % 4);
                const __m256i a4 = ck_bcast4(a[b].qs + 32 * m + 4 * c);
                lane = _mm256_add_epi32(lane, _mm256_madd_epi16(_mm256_maddubs_epi16(q, a4), scales[2 * m + (c >= 4)]));
            }
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane), acc[c]);
        }
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

CK_KX8_TILES(groups_q2_kx8_tiled_avx2, ck_block_q2_Kx8, tile_q2_kx8_tiled_avx2, CK_FAST)
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 against `count` tokens all in one of the plain orders: tiled (up to eight) or not
// (one); AVX2 or portable kernels (the VNNI path takes q2_kx8_repacked).
static void q2_kx8_tokens(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, const ck_block_q8_K *const *xs,
                          float *const *ys, int count) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
#if CK_X86
    if (fast == CK_INTERLEAVED_AVX2) {
        if (tiled) {
            groups_q2_kx8_tiled_avx2(nb, w, gb, r0 / 8, r1 / 8, xs, ys, count);
            return;
        }
        for (int g = r0 / 8; g < r1 / 8; g++) {
            group_q2_kx8_lanes_avx2(nb, (const ck_block_q2_Kx8 *)(w + (size_t)g * gb), xs[0], ys[0] + 8 * g);
        }
        return;
    }
#endif
    (void)fast;
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q2_Kx8 *wg = (const ck_block_q2_Kx8 *)(w + (size_t)g * gb);
        for (int u = 0; u < count; u++) group_q2_kx8_portable(nb, wg, xs[u], tiled, ys[u] + 8 * g);
    }
}

#if CK_X86
// Every token in llama.cpp's repacked order: those in whole groups of four of their micro-batch
// (CK_ORDER_GROUP4; without orders the first n - n % 4) over halves, the others over whole
// super-blocks.
static void q2_kx8_repacked(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK_K;
    for (int halves = 1; halves >= 0; halves--) {
        const ck_block_q8_K *xs[4];
        float *ys[4];
        int count = 0;
        for (int t = 0; t < p->n; t++) {
            const int g4 = p->orders ? (p->orders[t] & CK_ORDER_GROUP4) != 0 : t < p->n - p->n % 4;
            if (g4 != halves) continue;
            xs[count] = (const ck_block_q8_K *)((const char *)p->x + (size_t)t * p->x_row_bytes);
            ys[count++] = p->y + (size_t)t * p->ldy;
            if (count == 4) {
                groups_q2_kx8_repacked(nb, (const char *)p->w, p->w_row_bytes, r0, r1, xs, ys, count, halves);
                count = 0;
            }
        }
        if (count > 0) groups_q2_kx8_repacked(nb, (const char *)p->w, p->w_row_bytes, r0, r1, xs, ys, count, halves);
    }
}
#endif

void ck_matmul_q2_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
#if CK_X86
    // AVX-512 CPUs: llama.cpp repacks there (ck_set_vnni(0) stands for an AVX2-only CPU).
    if (fast == CK_INTERLEAVED_VNNI) {
        q2_kx8_repacked(p, r0, r1);
        return;
    }
#endif
    ck_matmul_kx8_by_order(p, r0, r1, fast, q2_kx8_tokens);
}
