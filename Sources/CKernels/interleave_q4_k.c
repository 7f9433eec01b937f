// Q4_K re-laid out at load time for eight rows per VNNI instruction, as interleave.c does for
// the 32-value types.
//
// Per row and token, ggml's Q4_K products (and ours, dot_kquants.c) sum every 32-value group's
// products exactly as integers, weight them by the group's 6-bit scale, and then spend two
// scalar FMAs per step (per super-block in its one-token order, per 64 values in its four-token
// order). Done a row at a time that is a horizontal reduction and scalar arithmetic per step
// and token. With eight rows in the lanes of a vector (lane r: row r) the group sums come out
// of vpdpbusd already separated by row, the scales multiply them lane by lane, and the FMAs are
// the same FMAs on eight rows at once: every row's arithmetic is that of its per-row kernel, bit
// for bit, in either order. CPUs with AVX2 but no VNNI run the same steps with two instructions
// for each vpdpbusd (interleave_q4_k_avx2.c).
#include <string.h>

#include "interleave_forms.h"

size_t ck_q4_kx8_group_bytes(int k) { return (size_t)(k / CK_QK_K) * sizeof(ck_block_q4_Kx8); }

void ck_interleave_q4_kx8(const void *src, size_t src_row_bytes, int rows, int k, void *dst) {
    const int nb = k / CK_QK_K;
    for (int g = 0; g < rows / 8; g++) {
        ck_block_q4_Kx8 *out = (ck_block_q4_Kx8 *)((char *)dst + (size_t)g * ck_q4_kx8_group_bytes(k));
        for (int b = 0; b < nb; b++, out++) {
            for (int r = 0; r < 8; r++) {
                const ck_block_q4_K *in = (const ck_block_q4_K *)((const char *)src + (size_t)(8 * g + r) * src_row_bytes) + b;
                out->d[r] = in->d;
                out->dmin[r] = in->dmin;
                for (int s = 0; s < 8; s++) ck_scale_min_k4(s, in->scales, &out->sc[s][r], &out->m[s][r]);
                for (int j = 0; j < 4; j++) {
                    for (int c = 0; c < 8; c++) memcpy(out->qs + 32 * (8 * j + c) + 4 * r, in->qs + 32 * j + 4 * c, 4);
                }
            }
        }
    }
}

// MARK: - Portable (the reference beside the VNNI kernel)

// Eight rows against one activation row, lane by lane the arithmetic of dot_q4_k_ordered
// (dot_kquants.c): per step of `pairs ? 64 : 256` values one FMA of the exact scaled sum and one
// of the exact mins sum.
static void group_q4_kx8_portable(int nb, const ck_block_q4_Kx8 *w, const ck_block_q8_K *a, int pairs, float *y) {
    float acc[8] = {0}, acc_m[8] = {0};
    for (int b = 0; b < nb; b++) {
        for (int r = 0; r < 8; r++) {
            const float d = ck_fp16_to_fp32(w[b].d[r]) * a[b].d, dmin = ck_fp16_to_fp32(w[b].dmin[r]) * a[b].d;
            int sumi = 0, summ = 0;
            for (int s = 0; s < 8; s++) {
                int sum = 0;
                for (int e = 0; e < 32; e++) {
                    const uint8_t byte = w[b].qs[32 * (8 * (s / 2) + e / 4) + 4 * r + e % 4];
                    sum += (s % 2 ? byte >> 4 : byte & 0x0f) * a[b].qs[32 * s + e];
                }
                sumi += w[b].sc[s][r] * sum;
                summ += w[b].m[s][r] * (a[b].bsums[2 * s] + a[b].bsums[2 * s + 1]);
                if (s % 2 == 1 && (pairs || s == 7)) {
                    acc[r] = fmaf((float)sumi, d, acc[r]);
                    acc_m[r] = fmaf((float)summ, dmin, acc_m[r]);
                    sumi = summ = 0;
                }
            }
        }
    }
    for (int r = 0; r < 8; r++) y[r] = acc[r] - acc_m[r];
}

// MARK: - VNNI

#ifndef CK_Q4K_AHEAD
#define CK_Q4K_AHEAD 4  // super-blocks of 1,184 bytes ahead (decode: 2, 6 and 8 measured within noise of it, none 1.3-1.5x slower)
#endif

#if CK_X86
// Eight rows' scales (or mins) of group s as eight int32 lanes.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m256i lanes_u8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

// Eight rows × T tokens (a constant after inlining), the weights unpacked once for all T.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_kx8(int nb, const ck_block_q4_Kx8 *w,
                                                                           const ck_block_q8_K *const *x,
                                                                           const int *pairs, float *const *y,
                                                                           const int T) {
    __m256 acc[4], acc_m[4];
    for (int t = 0; t < T; t++) acc[t] = acc_m[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        ck_prefetch_block(w + b + CK_AHEAD(CK_Q4K_AHEAD), sizeof *w);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 dmw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));
        __m256 d[4], dmin[4];
        __m256i sumi[4], summ[4];
        for (int t = 0; t < T; t++) {
            const __m256 ad = _mm256_set1_ps(x[t][b].d);
            d[t] = _mm256_mul_ps(dw, ad);
            dmin[t] = _mm256_mul_ps(dmw, ad);
            sumi[t] = summ[t] = _mm256_setzero_si256();
        }
        for (int j = 0; j < 4; j++) {
            // Groups 2j (low nibbles) and 2j + 1 (high nibbles), their exact sums per row.
            __m256i lo_sum[4], hi_sum[4];
            for (int t = 0; t < T; t++) lo_sum[t] = hi_sum[t] = _mm256_setzero_si256();
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i lo = _mm256_and_si256(v, m4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                for (int t = 0; t < T; t++) {
                    lo_sum[t] = _mm256_dpbusd_epi32(lo_sum[t], lo, ck_bcast4(x[t][b].qs + 64 * j + 4 * c));
                    hi_sum[t] = _mm256_dpbusd_epi32(hi_sum[t], hi, ck_bcast4(x[t][b].qs + 64 * j + 32 + 4 * c));
                }
            }
            const __m256i sl = lanes_u8(w[b].sc[2 * j]), sh = lanes_u8(w[b].sc[2 * j + 1]);
            const __m256i ml = lanes_u8(w[b].m[2 * j]), mh = lanes_u8(w[b].m[2 * j + 1]);
            for (int t = 0; t < T; t++) {
                const int16_t *bs = x[t][b].bsums;
                const __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(lo_sum[t], sl), _mm256_mullo_epi32(hi_sum[t], sh));
                const __m256i m = _mm256_add_epi32(_mm256_mullo_epi32(ml, _mm256_set1_epi32(bs[4 * j] + bs[4 * j + 1])),
                                                   _mm256_mullo_epi32(mh, _mm256_set1_epi32(bs[4 * j + 2] + bs[4 * j + 3])));
                if (pairs[t]) {
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d[t], acc[t]);
                    acc_m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), dmin[t], acc_m[t]);
                } else {
                    sumi[t] = _mm256_add_epi32(sumi[t], s);
                    summ[t] = _mm256_add_epi32(summ[t], m);
                }
            }
        }
        for (int t = 0; t < T; t++) {
            if (pairs[t]) continue;
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), d[t], acc[t]);
            acc_m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ[t]), dmin[t], acc_m[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_sub_ps(acc[t], acc_m[t]));
}

// Two neighbouring groups' sixteen rows of 32 bytes at `at` in one vector: lanes 0-7 group a's
// rows, 8-15 group b's.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i join_groups(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

// Two groups' eight bytes each (their rows' scales or mins of one group s) as sixteen int32 lanes.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512i lanes16_u8(const uint8_t *a, const uint8_t *b) {
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b)));
}

// Two fp16 vectors of eight (group a's rows, group b's) as sixteen floats.
static inline __attribute__((always_inline)) CK_FORMS_VNNI __m512 halves16_ph(const uint16_t *a, const uint16_t *b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                                   _mm_loadu_si128((const __m128i *)b), 1));
}

// Step j (64 values) of super-block b, sixteen rows x T tokens: the low and the high nibbles'
// exact integer sums against each token's activations.
static inline __attribute__((always_inline)) CK_FORMS_VNNI void q4_k_step16(const ck_block_q4_Kx8 *wa,
                                                                           const ck_block_q4_Kx8 *wb,
                                                                           const ck_block_q8_K *const *x, int b, int j,
                                                                           const int T, __m512i *lo_sum,
                                                                           __m512i *hi_sum) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int t = 0; t < T; t++) lo_sum[t] = hi_sum[t] = _mm512_setzero_si512();
    for (int c = 0; c < 8; c++) {
        const __m512i v = join_groups(wa->qs + 32 * (8 * j + c), wb->qs + 32 * (8 * j + c));
        const __m512i lo = _mm512_and_si512(v, m4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(v, 4), m4);
        for (int t = 0; t < T; t++) {
            int32_t l4, h4;
            memcpy(&l4, x[t][b].qs + 64 * j + 4 * c, 4);
            memcpy(&h4, x[t][b].qs + 64 * j + 32 + 4 * c, 4);
            lo_sum[t] = _mm512_dpbusd_epi32(lo_sum[t], lo, _mm512_set1_epi32(l4));
            hi_sum[t] = _mm512_dpbusd_epi32(hi_sum[t], hi, _mm512_set1_epi32(h4));
        }
    }
}

// tile_q4_kx8 for two neighbouring groups in 512-bit vectors (lanes 0-7 group a's rows, 8-15
// group b's), each lane's arithmetic exactly the 8-row kernel's in either order: where 512-bit
// products run on two ports (Intel's server cores) twice the products per cycle, and the
// unpacking serves sixteen rows. A Q4_K_M prompt spent 40 % of its time in the 8-row kernel
// (and a Q3_K_M one, whose attention V and FFN down are Q4_K).
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_kx16(int nb, const ck_block_q4_Kx8 *wa,
                                                                            const ck_block_q4_Kx8 *wb,
                                                                            const ck_block_q8_K *const *x,
                                                                            const int *pairs, float *const *y,
                                                                            const int T) {
    __m512 acc[4], acc_m[4];
    for (int t = 0; t < T; t++) acc[t] = acc_m[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const __m512 dw = halves16_ph(wa[b].d, wb[b].d), dmw = halves16_ph(wa[b].dmin, wb[b].dmin);
        __m512 d[4], dmin[4];
        __m512i sumi[4], summ[4];
        for (int t = 0; t < T; t++) {
            const __m512 ad = _mm512_set1_ps(x[t][b].d);
            d[t] = _mm512_mul_ps(dw, ad);
            dmin[t] = _mm512_mul_ps(dmw, ad);
            sumi[t] = summ[t] = _mm512_setzero_si512();
        }
        for (int j = 0; j < 4; j++) {
            __m512i lo_sum[4], hi_sum[4];
            q4_k_step16(&wa[b], &wb[b], x, b, j, T, lo_sum, hi_sum);
            const __m512i sl = lanes16_u8(wa[b].sc[2 * j], wb[b].sc[2 * j]);
            const __m512i sh = lanes16_u8(wa[b].sc[2 * j + 1], wb[b].sc[2 * j + 1]);
            const __m512i ml = lanes16_u8(wa[b].m[2 * j], wb[b].m[2 * j]);
            const __m512i mh = lanes16_u8(wa[b].m[2 * j + 1], wb[b].m[2 * j + 1]);
            for (int t = 0; t < T; t++) {
                const int16_t *bs = x[t][b].bsums;
                const __m512i s = _mm512_add_epi32(_mm512_mullo_epi32(lo_sum[t], sl), _mm512_mullo_epi32(hi_sum[t], sh));
                const __m512i m = _mm512_add_epi32(_mm512_mullo_epi32(ml, _mm512_set1_epi32(bs[4 * j] + bs[4 * j + 1])),
                                                   _mm512_mullo_epi32(mh, _mm512_set1_epi32(bs[4 * j + 2] + bs[4 * j + 3])));
                if (pairs[t]) {
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), d[t], acc[t]);
                    acc_m[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), dmin[t], acc_m[t]);
                } else {
                    sumi[t] = _mm512_add_epi32(sumi[t], s);
                    summ[t] = _mm512_add_epi32(summ[t], m);
                }
            }
        }
        for (int t = 0; t < T; t++) {
            if (pairs[t]) continue;
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), d[t], acc[t]);
            acc_m[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(summ[t]), dmin[t], acc_m[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], _mm512_sub_ps(acc[t], acc_m[t]));
}

// Super-blocks per row the four-token tile's stack table holds (k up to 16,384).
#define CK_Q4K_PAIRS_MAX_BLOCKS 64

// tile_q4_kx16 for T tokens that all take ggml's four-token order (a prompt's whole groups of
// four), with the mins' products folded: ml * (bs0 + bs1) + mh * (bs2 + bs3) is one vpdpwssd of
// the 16-bit pairs (ml, mh) by (B1, B2) (mins <= 63, |B| <= 2 * 16 * 128: exact in int32, the same
// integer), where B1 | B2 << 16 per token, block and 64-value step is made once per call (mb).
// The general tile kept both orders' sums for every token and its epilogue on the stack (a third
// of its samples: stores, reloads, the bsums' scalar adds); here the tokens' loops unroll and the
// accumulators stay in registers. (Unrolling the four steps as well was slower, 54-77 against
// 102-107 GMAC/s for the general tile: this one 142-148, 2048 x 2048 by 64 tokens, one thread.)
static inline __attribute__((always_inline)) CK_FORMS_VNNI void tile_q4_kx16_pairs(int nb, const ck_block_q4_Kx8 *wa,
                                                                                  const ck_block_q4_Kx8 *wb,
                                                                                  const ck_block_q8_K *const *x,
                                                                                  const int32_t *mb, float *const *y,
                                                                                  const int T) {
    __m512 acc[4], acc_m[4];
    for (int t = 0; t < T; t++) acc[t] = acc_m[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const __m512 dw = halves16_ph(wa[b].d, wb[b].d), dmw = halves16_ph(wa[b].dmin, wb[b].dmin);
        for (int j = 0; j < 4; j++) {
            __m512i lo_sum[4], hi_sum[4];
            q4_k_step16(&wa[b], &wb[b], x, b, j, T, lo_sum, hi_sum);
            const __m512i sl = lanes16_u8(wa[b].sc[2 * j], wb[b].sc[2 * j]);
            const __m512i sh = lanes16_u8(wa[b].sc[2 * j + 1], wb[b].sc[2 * j + 1]);
            const __m512i mlh = _mm512_or_si512(lanes16_u8(wa[b].m[2 * j], wb[b].m[2 * j]),
                                                _mm512_slli_epi32(lanes16_u8(wa[b].m[2 * j + 1], wb[b].m[2 * j + 1]), 16));
            for (int t = 0; t < T; t++) {
                const __m512i s = _mm512_add_epi32(_mm512_mullo_epi32(lo_sum[t], sl), _mm512_mullo_epi32(hi_sum[t], sh));
                const __m512i m =
                    _mm512_dpwssd_epi32(_mm512_setzero_si512(), mlh, _mm512_set1_epi32(mb[((size_t)t * nb + b) * 4 + j]));
                const __m512 ad = _mm512_set1_ps(x[t][b].d);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, ad), acc[t]);
                acc_m[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmw, ad), acc_m[t]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm512_storeu_ps(y[t], _mm512_sub_ps(acc[t], acc_m[t]));
}

// Groups g0..<g1: pairs of groups through the 16-row kernel where a prompt's tokens share them
// (T >= 2; one token is decode, bound by memory, which the 8-row kernel's prefetch serves), an
// odd last group, and single tokens, through the 8-row one.
CK_FORMS_VNNI static void groups_q4_kx8_vnni(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                             const ck_block_q8_K *const *x, const int *pairs, float *const *y,
                                             int T) {
    int g = g0;
    // Tokens that all take the four-token order: their mins' activation words once per call.
    int all_pairs = T >= 2 && nb <= CK_Q4K_PAIRS_MAX_BLOCKS && g + 2 <= g1;
    for (int t = 0; t < T; t++) all_pairs &= pairs[t] != 0;
    if (all_pairs) {
        int32_t mb[4 * 4 * CK_Q4K_PAIRS_MAX_BLOCKS];
        for (int t = 0; t < T; t++) {
            for (int b = 0; b < nb; b++) {
                const int16_t *bs = x[t][b].bsums;
                for (int j = 0; j < 4; j++) {
                    const int lo = bs[4 * j] + bs[4 * j + 1], hi = bs[4 * j + 2] + bs[4 * j + 3];
                    mb[((size_t)t * nb + b) * 4 + j] = (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16);
                }
            }
        }
        for (; g + 2 <= g1; g += 2) {
            const ck_block_q4_Kx8 *wa = (const ck_block_q4_Kx8 *)(w + (size_t)g * group_bytes);
            const ck_block_q4_Kx8 *wb = (const ck_block_q4_Kx8 *)(w + (size_t)(g + 1) * group_bytes);
            float *yg[4];
            for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
            if (T == 4) {
                tile_q4_kx16_pairs(nb, wa, wb, x, mb, yg, 4);
            } else if (T == 3) {
                tile_q4_kx16_pairs(nb, wa, wb, x, mb, yg, 3);
            } else {
                tile_q4_kx16_pairs(nb, wa, wb, x, mb, yg, 2);
            }
        }
    }
    for (; T >= 2 && g + 2 <= g1; g += 2) {
        const ck_block_q4_Kx8 *wa = (const ck_block_q4_Kx8 *)(w + (size_t)g * group_bytes);
        const ck_block_q4_Kx8 *wb = (const ck_block_q4_Kx8 *)(w + (size_t)(g + 1) * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        if (T == 4) {
            tile_q4_kx16(nb, wa, wb, x, pairs, yg, 4);
        } else if (T == 3) {
            tile_q4_kx16(nb, wa, wb, x, pairs, yg, 3);
        } else {
            tile_q4_kx16(nb, wa, wb, x, pairs, yg, 2);
        }
    }
    for (; g < g1; g++) {
        const ck_block_q4_Kx8 *wg = (const ck_block_q4_Kx8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        int t = 0;
        for (; t + 4 <= T; t += 4) tile_q4_kx8(nb, wg, x + t, pairs + t, yg + t, 4);
        for (; t + 2 <= T; t += 2) tile_q4_kx8(nb, wg, x + t, pairs + t, yg + t, 2);
        if (t < T) tile_q4_kx8(nb, wg, x + t, pairs + t, yg + t, 1);
    }
}
#endif

// MARK: - Matrix product over a range of rows

static void q4_kx8_pass(const ck_matmul_args *p, int g0, int g1, int fast);

// Token t takes ggml's four-token order where the row's order says so (CK_ORDER_GROUP4), or,
// without orders, in whole groups of four from the first; its one-token order otherwise. More
// than four tokens take the rows a pass at a time (ck_pass_groups), every walk over each pass.
void ck_matmul_q4_kx8_rows(const ck_matmul_args *p, int r0, int r1, int fast) {
    const int per = p->n > 4 ? ck_pass_groups(p->w_row_bytes) : r1 / 8 - r0 / 8;
    for (int g0 = r0 / 8; g0 < r1 / 8; g0 += per) {
        const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
        q4_kx8_pass(p, g0, g1, fast);
    }
}

// Groups g0..<g1 against every token, four at a time.
static void q4_kx8_pass(const ck_matmul_args *p, int g0, int g1, int fast) {
    const int nb = p->k / CK_QK_K;
    const char *w = (const char *)p->w;
    const char *x = (const char *)p->x;
    const int whole = p->n - p->n % 4;
    for (int t0 = 0; t0 < p->n; t0 += 4) {
        const int T = p->n - t0 < 4 ? p->n - t0 : 4;
        const ck_block_q8_K *xs[4];
        float *ys[4];
        int pairs[4];
        for (int t = 0; t < T; t++) {
            xs[t] = (const ck_block_q8_K *)(x + (size_t)(t0 + t) * p->x_row_bytes);
            ys[t] = p->y + (size_t)(t0 + t) * p->ldy;
            pairs[t] = p->orders ? (p->orders[t0 + t] & CK_ORDER_GROUP4) != 0 : t0 + t < whole;
        }
#if CK_X86
        if (fast == CK_INTERLEAVED_VNNI) {
            groups_q4_kx8_vnni(nb, w, p->w_row_bytes, g0, g1, xs, pairs, ys, T);
            continue;
        }
        if (fast == CK_INTERLEAVED_AVX2) {
            ck_groups_q4_kx8_avx2(nb, w, p->w_row_bytes, g0, g1, xs, pairs, ys, T);
            continue;
        }
#endif
        (void)fast;
        for (int g = g0; g < g1; g++) {
            const ck_block_q4_Kx8 *wg = (const ck_block_q4_Kx8 *)(w + (size_t)g * p->w_row_bytes);
            for (int t = 0; t < T; t++) group_q4_kx8_portable(nb, wg, xs[t], pairs[t], ys[t] + 8 * g);
        }
    }
}
