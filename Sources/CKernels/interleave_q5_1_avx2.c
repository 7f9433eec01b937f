// Interleaved Q5_1 (ck_block_q5_1x8, interleave_q5_1.c) on CPUs with AVX2 but no AVX-512 VNNI and
// BW (AMD Zen 3; INFERD_CPU=avx2 elsewhere).
//
// The VNNI kernel completes each chunk's values with one masked byte add of the fifth bits; AVX2
// has no byte masks, so the 32 bits of hm[c] become a byte mask the way ggml's AVX2 Q5 kernels
// make theirs (each byte of the word broadcast to eight bytes, one bit kept per byte, compared),
// and vpmaddubsw + vpmaddwd take vpdpbusd's place (pairs of u8 0..31 × s8 in int16: at most
// 2 × 31 × 128, exact). The integers are the VNNI kernel's and so is every float step after
// them, lane by lane: per block and chunk one FMA of fp16(d_w) * fp16(d_a) times the exact sum,
// the m * s chain apart, ck_hsum8's order, then the m * s sum. A block's 16 accumulators per
// token (8 chunks, 8 rows each) fill AVX2's 16 registers, so tokens go one or two at a time.
#include "interleave_forms.h"

#if CK_X86

#ifndef CK_Q51_AVX2_AHEAD
#define CK_Q51_AVX2_AHEAD 13  // blocks of 192 bytes, the VNNI kernel's distance
#endif

// hm as 32 bytes, 0x10 where its bit is set (bit 4r + j: byte 4r + j).
CK_FAST static inline __attribute__((always_inline)) __m256i q51_fifth_bits(uint32_t hm) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)hm), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x7fbfdfeff7fbfdfeULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_or_si256(bytes, bit), _mm256_set1_epi64x(-1));
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Eight rows × T tokens (1 or 2 after inlining), each chunk unpacked once for the T tokens.
static inline __attribute__((always_inline)) CK_FAST void tile_q5_1x8_avx2(int nb, const ck_block_q5_1x8 *w,
                                                                          const ck_block_q8_1 *const *x,
                                                                          float *const *y, const int T) {
    __m256 acc[2][8], macc[2];
    for (int t = 0; t < T; t++) {
        macc[t] = _mm256_setzero_ps();
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i mask = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    for (int b = 0; b < nb; b++) {
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AVX2_AHEAD)), _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AVX2_AHEAD)) + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(w + b + CK_AHEAD(CK_Q51_AVX2_AHEAD)) + 128, _MM_HINT_T0);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].m));
        __m256 d[2];
        for (int t = 0; t < T; t++) {
            int32_t ds;
            memcpy(&ds, x[t] + b, 4);
            const __m128 das = _mm_cvtph_ps(_mm_cvtsi32_si128(ds));
            d[t] = _mm256_mul_ps(dw, _mm256_broadcastss_ps(das));
            macc[t] = _mm256_fmadd_ps(mw, _mm256_broadcastss_ps(_mm_movehdup_ps(das)), macc[t]);
        }
        for (int c = 0; c < 8; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (c % 4)));
            const __m256i nib = c < 4 ? _mm256_and_si256(v, mask) : _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            const __m256i q = _mm256_or_si256(nib, q51_fifth_bits(w[b].hm[c]));
            for (int t = 0; t < T; t++) {
                const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(q, ck_bcast4(x[t][b].qs + 4 * c)), ones);
                acc[t][c] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_add_ps(ck_chunks_in_hsum8_order(acc[t]), macc[t]));
}

// Rows r0..<r1 (multiples of 8) against every token: a pass of groups at a time (it stays in L2
// while every token walks it), the tokens two at a time.
CK_FAST void ck_matmul_q5_1x8_rows_avx2(const ck_matmul_args *p, int r0, int r1) {
    const int nb = p->k / CK_QK;
    const char *w = (const char *)p->w;
    const size_t gb = p->w_row_bytes;
    const int per = p->n > 2 ? ck_pass_groups(gb) : r1 / 8 - r0 / 8;
    for (int g0 = r0 / 8; g0 < r1 / 8; g0 += per) {
        const int g1 = g0 + per < r1 / 8 ? g0 + per : r1 / 8;
        for (int t0 = 0; t0 < p->n; t0 += 2) {
            const int T = p->n - t0 < 2 ? 1 : 2;
            const ck_block_q8_1 *xs[2];
            for (int t = 0; t < T; t++) xs[t] = (const ck_block_q8_1 *)((const char *)p->x + (size_t)(t0 + t) * p->x_row_bytes);
            for (int g = g0; g < g1; g++) {
                const ck_block_q5_1x8 *wg = (const ck_block_q5_1x8 *)(w + (size_t)g * gb);
                float *ys[2];
                for (int t = 0; t < T; t++) ys[t] = p->y + (size_t)(t0 + t) * p->ldy + 8 * g;
                if (T == 2) {
                    tile_q5_1x8_avx2(nb, wg, xs, ys, 2);
                } else {
                    tile_q5_1x8_avx2(nb, wg, xs, ys, 1);
                }
            }
        }
    }
}

#endif
