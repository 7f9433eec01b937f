// Q6_K re-laid out at load time for eight rows per VNNI instruction (see interleave_q4_k.c).
//
// Its values are unpacked into bytes (0..63; 274 bytes per row and super-block instead of 210)
// and interleaved four at a time: vector ch, lane r = row r's values 4ch..4ch+3. Both of ggml's
// orders are kept bit for bit (dot_kquants.c):
// - tiled (micro-batches of 8+ rows, CK_ORDER_TILED): per super-block the exact integer sum of
//   scale * (q - 32) * a, times fp16(d_w), one FMA with d_a. With rows in lanes this is
//   vpdpbusd per chunk, one multiply by the group's scales per 16 values, and the FMA on eight
//   rows at once: the time goes from ~9 % of a Gemma 3 prompt to a third of that.
// - its AVX2 one-token order: eight integer lanes per row (lane L: bytes 4L..4L+3 of each
//   32-value quarter, each scaled by its group's scale, less 32 * its two groups' sums), one
//   FMA per lane and super-block, the lanes added in ck_hsum8's order. Here lane L of a row is
//   accumulator L's lane r; each chunk's sum is multiplied by its scale in a vpdpwssd. That
//   serves decode and rows alone.
#include <string.h>

#include "interleave_forms.h"

size_t ck_q6_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q6_Kx8); }

void ck_interleave_q6_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q6_Kx8 *out = (ck_block_q6_Kx8 *)((char *)dst + (size_t)g * ck_q6_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q6_K *in = (const ck_block_q6_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                for (int s = 0; s < 16; s++) out->scales[s][r] = in->scales[s];
                for (int e = 0; e < CK_QK_K; e++) out->q[32 * (e / 4) + 4 * r + e % 4] = (uint8_t)(ck_q6_k_value(in, e) + 32);
            }
        }
    }
}

// MARK: - Portable (the reference beside the VNNI kernel)

// Eight rows against one activation row in `order`: Q6_ORDER_TILED, Q6_ORDER_LANES (ggml's
// AVX2 one-token order, what the fast per-row kernels give) or Q6_ORDER_SCALAR (the portable
// per-row kernel's: the super-block's exact sum times d_a * fp16(d_w), added up).
enum { Q6_ORDER_TILED, Q6_ORDER_LANES, Q6_ORDER_SCALAR };

static inline int q6_value(const ck_block_q6_Kx8 *w, int r, int e) { return w->q[32 * (e / 4) + 4 * r + e % 4]; }

static void group_q6_kx8_portable(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, int order, float *y) {
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f, sum = 0.0f, lanes[8] = {0};
        for (int b = 0; b < nb; b++) {
            const float dw = ck_fp16_to_fp32(w[b].d[r]);
            if (order != Q6_ORDER_LANES) {
                int sumi = 0;
                for (int s = 0; s < 16; s++) {
                    int part = 0;
                    for (int e = 16 * s; e < 16 * s + 16; e++) part += (q6_value(&w[b], r, e) - 32) * a[b].qs[e];
                    sumi += w[b].scales[s][r] * part;
                }
                if (order == Q6_ORDER_TILED) {
                    acc = fmaf((float)sumi * dw, a[b].d, acc);
                } else {
                    sum += a[b].d * dw * (float)sumi;
                }
                continue;
            }
            const float d = a[b].d * dw;
            for (int L = 0; L < 8; L++) {
                int lane = 0;
                for (int quarter = 0; quarter < 8; quarter++) {
                    const int e0 = 32 * quarter + 4 * L;
                    int part = 0;
                    for (int e = e0; e < e0 + 4; e++) part += q6_value(&w[b], r, e) * a[b].qs[e];
                    lane += w[b].scales[e0 / 16][r] * part;
                }
                lane -= 32 * (a[b].bsums[2 * L] * w[b].scales[2 * L][r] + a[b].bsums[2 * L + 1] * w[b].scales[2 * L + 1][r]);
                lanes[L] = fmaf(d, (float)lane, lanes[L]);
            }
        }
        y[r] = order == Q6_ORDER_TILED    ? acc
               : order == Q6_ORDER_SCALAR ? sum
                                          : ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                                                ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    }
}

// MARK: - VNNI

#ifndef CK_Q6K_AHEAD
#define CK_Q6K_AHEAD 2  // super-blocks of 2,192 bytes ahead (decode: 1, 3 and 4 measured within noise of it)
#endif

#if CK_X86
// Eight rows' scales of group s as eight int32 lanes.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i scale_lanes(const ck_block_q6_Kx8 *w, int s) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)w->scales[s]));
}

// The tiled order, eight rows × T tokens (a constant after inlining).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q6_kx8_tiled(int nb, const ck_block_q6_Kx8 *w,
                                                                                 const ck_block_q8_K *const *x,
                                                                                 float *const *y, const int T) {
    __m256 acc[4];
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i sumi[4];
        for (int t = 0; t < T; t++) sumi[t] = _mm256_setzero_si256();
        for (int s = 0; s < 16; s++) {
            __m256i g[4];
            for (int t = 0; t < T; t++) g[t] = _mm256_set1_epi32(-32 * x[t][b].bsums[s]);
            for (int c = 0; c < 4; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].q + 32 * (4 * s + c)));
                for (int t = 0; t < T; t++) g[t] = _mm256_dpbusd_epi32(g[t], v, ck_bcast4(x[t][b].qs + 16 * s + 4 * c));
            }
            const __m256i sc = scale_lanes(&w[b], s);
            for (int t = 0; t < T; t++) sumi[t] = _mm256_add_epi32(sumi[t], _mm256_mullo_epi32(g[t], sc));
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        for (int t = 0; t < T; t++) {
            const __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(sumi[t]), dw);
            acc[t] = _mm256_fmadd_ps(r, _mm256_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], acc[t]);
}

// Eight rows' scales of group s as int16 in the low half of eight int32 lanes (high half 0):
// the form vpdpwssd multiplies a chunk's sum by (the sum fits an int16: |4 * 63 * 128| < 2^15).
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i scale_words(const ck_block_q6_Kx8 *w, int s) {
    return _mm256_cvtepu16_epi32(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)w->scales[s])));
}

// The one-token order, eight rows, one token. Quarter by quarter (its two groups' scales
// loaded once), chunk L of the quarter goes to lane L's integer accumulator.
CK_FORMS_VNNI static void group_q6_kx8_lanes_vnni(int nb, const ck_block_q6_Kx8 *w, const ck_block_q8_K *a, float *y) {
    __m256 acc[8];
    for (int L = 0; L < 8; L++) acc[L] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        ck_prefetch_block(w + b + CK_Q6K_AHEAD, sizeof *w);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(a[b].d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d)));
        __m256i lane[8];
        for (int L = 0; L < 8; L++) {
            // Lane L's offset: 32 * (its two groups' sums times their scales), taken off first.
            const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(a[b].bsums[2 * L]), scale_lanes(&w[b], 2 * L)),
                                               _mm256_mullo_epi32(_mm256_set1_epi32(a[b].bsums[2 * L + 1]),
                                                                  scale_lanes(&w[b], 2 * L + 1)));
            lane[L] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(o, 5));
        }
        for (int quarter = 0; quarter < 8; quarter++) {
            const __m256i low = scale_words(&w[b], 2 * quarter), high = scale_words(&w[b], 2 * quarter + 1);
            for (int L = 0; L < 8; L++) {
                const int ch = 8 * quarter + L;
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].q + 32 * ch));
                const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), v, ck_bcast4(a[b].qs + 4 * ch));
                lane[L] = _mm256_dpwssd_epi32(lane[L], s, L < 4 ? low : high);
            }
        }
        for (int L = 0; L < 8; L++) acc[L] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane[L]), acc[L]);
    }
    _mm256_storeu_ps(y, ck_chunks_in_hsum8_order(acc));
}

// tile_q6_kx8_tiled for two neighbouring groups in 512-bit vectors (lanes 0-7 group a's rows,
// 8-15 group b's, each lane's arithmetic exactly the 8-row kernel's) and up to eight tokens: where
// 512-bit products run on two ports (Intel's server cores) twice the products per cycle, and each
// weight vector serves eight tokens (a Q5_K_M prompt's Q6_K matrices took a quarter of its time
// at 1.8x the 8-row Q5_K kernel's cost per product).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q6_kx16_tiled(int nb, const ck_block_q6_Kx8 *wa,
                                                                                  const ck_block_q6_Kx8 *wb,
                                                                                  const ck_block_q8_K *const *x,
                                                                                  float *const *y, const int T) {
    __m512 acc[8];
    for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m512i sumi[8];
        for (int t = 0; t < T; t++) sumi[t] = _mm512_setzero_si512();
        for (int s = 0; s < 16; s++) {
            __m512i g[8];
            for (int t = 0; t < T; t++) g[t] = _mm512_set1_epi32(-32 * x[t][b].bsums[s]);
            for (int c = 0; c < 4; c++) {
                const __m512i v =
                    _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wa[b].q + 32 * (4 * s + c)))),
                                       _mm256_loadu_si256((const __m256i *)(wb[b].q + 32 * (4 * s + c))), 1);
                for (int t = 0; t < T; t++) {
                    int32_t a4;
                    memcpy(&a4, x[t][b].qs + 16 * s + 4 * c, 4);
                    g[t] = _mm512_dpbusd_epi32(g[t], v, _mm512_set1_epi32(a4));
                }
            }
            const __m512i sc = _mm512_cvtepi8_epi32(
                _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)wa[b].scales[s]), _mm_loadl_epi64((const __m128i *)wb[b].scales[s])));
            for (int t = 0; t < T; t++) sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(g[t], sc));
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].d)), _mm_loadu_si128((const __m128i *)wb[b].d), 1));
        for (int t = 0; t < T; t++) {
            const __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(sumi[t]), dw);
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(x[t][b].d), acc[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], acc[t]);
}

// Groups g0..<g1 against T <= 8 tokens: pairs through the 16-row kernel, an odd last group
// through the 8-row one, four tokens at a time.
CK_FORMS_VNNI static void groups_q6_kx8_tiled_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                                   const ck_block_q8_K *const *x, float *const *y, int T) {
    int g = g0;
    for (; g + 2 <= g1; g += 2) {
        const ck_block_q6_Kx8 *wa = (const ck_block_q6_Kx8 *)(w + (size_t)g * group_bytes);
        const ck_block_q6_Kx8 *wb = (const ck_block_q6_Kx8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[8];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        switch (T) {
        case 8: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 8); break;
        case 7: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 7); break;
        case 6: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 6); break;
        case 5: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 5); break;
        case 4: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 4); break;
        case 3: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 3); break;
        case 2: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 2); break;
        default: tile_q6_kx16_tiled(nb, wa, wb, x, yg, 1); break;
        }
    }
    for (; g < g1; g++) {
        const ck_block_q6_Kx8 *wg = (const ck_block_q6_Kx8 *)(w + (size_t)g * group_bytes);
        float *yg[8];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 4 <= T; t += 4) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 4);
        for (; t + 2 <= T; t += 2) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 2);
        if (t < T) tile_q6_kx8_tiled(nb, wg, x + t, yg + t, 1);
    }
}
#endif

// MARK: - Matrix product over a range of rows

// Rows r0..<r1 against `count` tokens all in one order: tiled (up to eight) or not (one).
static void q6_kx8_tokens(const ck_matmul_args *p, int r0, int r1, int fast, int tiled, const ck_block_q8_K *const *xs,
                          float *const *ys, int count) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
#if CK_X86
    if (fast == CK_INTERLEAVED_VNNI) {
        if (tiled) {
            groups_q6_kx8_tiled_vnni(nb, w, gb, r0 / 8, r1 / 8, xs, ys, count);
        } else {
            for (int g = r0 / 8; g < r1 / 8; g++) {
                group_q6_kx8_lanes_vnni(nb, (const ck_block_q6_Kx8 *)(w + (size_t)g * gb), xs[0], ys[0] + 8 * g);
            }
        }
        return;
    }
#endif
    // The portable paths keep the portable per-row kernel's one-token order, the AVX2 ones ggml's.
    const int order = tiled ? Q6_ORDER_TILED : fast == CK_INTERLEAVED_PORTABLE ? Q6_ORDER_SCALAR : Q6_ORDER_LANES;
    for (int g = r0 / 8; g < r1 / 8; g++) {
        const ck_block_q6_Kx8 *wg = (const ck_block_q6_Kx8 *)(w + (size_t)g * gb);
        for (int u = 0; u < count; u++) group_q6_kx8_portable(nb, wg, xs[u], order, ys[u] + 8 * g);
    }
}

void ck_matmul_q6_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    ck_matmul_kx8_by_order(p, r0, r1, fast, q6_kx8_tokens);
}
