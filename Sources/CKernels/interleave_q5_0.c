// Q5_0 × 8 (interleave.c's form, made where the CPU has AVX-512 BW and VNNI) for a prompt's
// tokens: sixteen rows per 512-bit vector and the -16 of q - 16 as a correction, as Q4_0's
// prompt kernels do (interleave_q4_0.c).
//
// The arithmetic stays that of dot_q5_0_vnni (dot_legacy.c), bit for bit: each 4-value chunk c
// of a block keeps its own accumulator (lane r: row r), its exact integer sum converted and
// scaled by fp16(d_w) * fp16(d_a) in one FMA, the chunks added in ck_hsum8's order at the end.
// Only how the exact integer sums are formed changes:
//
//   sum_j (q_j - 16) * x_j = sum_j q_j * x_j - 16 * sum_j x_j        (exact, in int32)
//
// so the values go into vpdpbusd unsigned as they are (0..31: nibble and fifth bit), and the
// -16 * sum x of each chunk, computed once per token and block (q5_0_corrections), seeds the
// accumulator. The decode kernel (interleave.c's tile_q5_0x8) makes them signed instead and
// multiplies with the sign trick (|q| times x with q's sign), which 512-bit vectors lack.
//
// Per chunk and token that is one vpdpbusd, one conversion and one FMA for sixteen rows, where
// the eight-row kernel spends a broadcast, a sign, a vpdpbusd, a conversion and an FMA on eight:
// one thread, Zen 4, 64 tokens, 8192 x 2048: 44-45 -> 58 GMAC/s, 2048 x 8192: 42-44 -> 54. The
// conversion and the FMA per chunk are the order's (llama.cpp's AVX2 Q5_0 kernel). The chunk
// loops are unrolled by pragma: rolled, clang kept the accumulators on the stack, a load and a
// store beside every FMA (1.7B-shape pp128 at one thread 30.8 -> 37.9 tokens/s unrolled).
#include "interleave_forms.h"

#if CK_X86
#define CK_Q50_FORMS_BW __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

// corr[8b + c] = -m * (the sum of x_b's values 4c..4c+3), for the nb blocks of one activation
// row: one vpmaddubsw of m (unsigned, at most 128) by the bytes, one vpmaddwd by -1 (exact:
// |pairs| <= 2 * 128 * 128). Q5_0's prompt kernels take m = 16, the wide Q8_0 tile m = 128.
CK_FAST void ck_chunk_corrections(int nb, const ck_block_q8_0 *x, int m, int32_t *corr) {
    const __m256i mm = _mm256_set1_epi8((char)m);
    for (int b = 0; b < nb; b++) {
        const __m256i pairs = _mm256_maddubs_epi16(mm, _mm256_loadu_si256((const __m256i *)x[b].qs));
        _mm256_storeu_si256((__m256i *)(corr + 8 * b), _mm256_madd_epi16(pairs, _mm256_set1_epi16(-1)));
    }
}

CK_FAST static void q5_0_corrections(int nb, const ck_block_q8_0 *x, int32_t *corr) {
    ck_chunk_corrections(nb, x, 16, corr);
}

// Sixteen rows (two groups: lanes 0-7 group a's, 8-15 group b's) × T <= 2 tokens. Chunk c's
// unsigned values are made once for the T tokens; each token's eight chunk accumulators are
// 512-bit, so two tokens take 16 of the 32 registers.
static inline __attribute__((always_inline)) CK_Q50_FORMS_BW void tile_q5_0x16(int nb, const ck_block_q5_0x8 *wa,
                                                                            const ck_block_q5_0x8 *wb,
                                                                            const ck_block_q8_0 *const *x,
                                                                            const int32_t *const *corr,
                                                                            float *const *ya, float *const *yb,
                                                                            const int T) {
    __m512 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm512_setzero_ps();
    }
    const __m512i nibble = _mm512_set1_epi8(0x0f), fifth = _mm512_set1_epi8(0x10);
    for (int b = 0; b < nb; b++) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].d)), _mm_loadu_si128((const __m128i *)wb[b].d), 1));
        __m512 d[2];
        for (int t = 0; t < T; t++) d[t] = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(x[t][b].d)));
#pragma clang loop unroll(full)
        for (int c = 0; c < 8; c++) {
            const __m512i v =
                _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(wa[b].qs + 32 * (c % 4)))),
                                   _mm256_loadu_si256((const __m256i *)(wb[b].qs + 32 * (c % 4))), 1);
            const __m512i n = _mm512_and_si512(c < 4 ? v : _mm512_srli_epi32(v, 4), nibble);
            const __mmask64 high = (__mmask64)wa[b].hm[c] | (__mmask64)wb[b].hm[c] << 32;
            const __m512i u = _mm512_or_si512(n, _mm512_maskz_mov_epi8(high, fifth));
            for (int t = 0; t < T; t++) {
                const __m512i s = _mm512_dpbusd_epi32(_mm512_set1_epi32(corr[t][8 * b + c]), u,
                                                      _mm512_set1_epi32(ck_word4(x[t][b].qs + 4 * c)));
                acc[t][c] = _mm512_fmadd_ps(d[t], _mm512_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        __m256 lo[8], hi[8];
        for (int c = 0; c < 8; c++) {
            lo[c] = _mm512_castps512_ps256(acc[t][c]);
            hi[c] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[t][c]), 1));
        }
        _mm256_storeu_ps(ya[t], ck_chunks_in_hsum8_order(lo));
        _mm256_storeu_ps(yb[t], ck_chunks_in_hsum8_order(hi));
    }
}

// The same for eight rows (an odd last group), 256-bit.
static inline __attribute__((always_inline)) CK_Q50_FORMS_BW void tile_q5_0x8c(int nb, const ck_block_q5_0x8 *w,
                                                                            const ck_block_q8_0 *const *x,
                                                                            const int32_t *const *corr,
                                                                            float *const *y, const int T) {
    __m256 acc[2][8];
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < 8; c++) acc[t][c] = _mm256_setzero_ps();
    }
    const __m256i nibble = _mm256_set1_epi8(0x0f), fifth = _mm256_set1_epi8(0x10);
    for (int b = 0; b < nb; b++) {
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        __m256 d[2];
        for (int t = 0; t < T; t++) d[t] = _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(x[t][b].d)));
#pragma clang loop unroll(full)
        for (int c = 0; c < 8; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (c % 4)));
            const __m256i n = _mm256_and_si256(c < 4 ? v : _mm256_srli_epi16(v, 4), nibble);
            const __m256i u = _mm256_or_si256(n, _mm256_maskz_mov_epi8((__mmask32)w[b].hm[c], fifth));
            for (int t = 0; t < T; t++) {
                const __m256i s = _mm256_dpbusd_epi32(_mm256_set1_epi32(corr[t][8 * b + c]), u,
                                                      _mm256_set1_epi32(ck_word4(x[t][b].qs + 4 * c)));
                acc[t][c] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(s), acc[t][c]);
            }
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], ck_chunks_in_hsum8_order(acc[t]));
}

// Groups g0..<g1 against T <= 4 tokens, two tokens at a time: pairs of groups through the
// sixteen-row kernel, an odd last group through the eight-row one.
CK_Q50_FORMS_BW static void groups_q5_0x8_corrected(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                                    const ck_block_q8_0 *const *x, const int32_t *const *corr,
                                                    float *const *y, int T) {
    for (int t0 = 0; t0 < T; t0 += 2) {
        const int n = T - t0 < 2 ? T - t0 : 2;
        int g = g0;
        for (; g + 2 <= g1; g += 2) {
            const ck_block_q5_0x8 *wa = (const ck_block_q5_0x8 *)(w + (size_t)g * group_bytes);
            const ck_block_q5_0x8 *wb = (const ck_block_q5_0x8 *)(w + (size_t)(g + 1) * group_bytes);
            float *ya[2], *yb[2];
            for (int t = 0; t < n; t++) {
                ya[t] = y[t0 + t] + 8 * g;
                yb[t] = y[t0 + t] + 8 * (g + 1);
            }
            if (n == 2) {
                tile_q5_0x16(nb, wa, wb, x + t0, corr + t0, ya, yb, 2);
            } else {
                tile_q5_0x16(nb, wa, wb, x + t0, corr + t0, ya, yb, 1);
            }
        }
        if (g < g1) {
            const ck_block_q5_0x8 *wg = (const ck_block_q5_0x8 *)(w + (size_t)g * group_bytes);
            float *yg[2];
            for (int t = 0; t < n; t++) yg[t] = y[t0 + t] + 8 * g;
            if (n == 2) {
                tile_q5_0x8c(nb, wg, x + t0, corr + t0, yg, 2);
            } else {
                tile_q5_0x8c(nb, wg, x + t0, corr + t0, yg, 1);
            }
        }
    }
}
#endif

int ck_matmul_q5_0x8_tokens(const ck_matmul_args *p, int r0, int r1) {
#if CK_X86
    return ck_matmul_corrected_passes(p, r0, r1, q5_0_corrections, groups_q5_0x8_corrected);
#else
    (void)p, (void)r0, (void)r1;
    return 0;
#endif
}
