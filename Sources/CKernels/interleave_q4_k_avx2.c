// Interleaved Q4_K (ck_block_q4_Kx8, interleave_q4_k.c) on CPUs with AVX2 but no AVX-512 VNNI
// (AMD Zen 3; INFERD_CPU=avx2 elsewhere).
//
// Without vpdpbusd a 4-value chunk's product is vpmaddubsw (pairs of u8 nibble × s8 activation
// in int16: at most 2 × 15 × 128, exact) then vpmaddwd against the group's 6-bit scale in both
// int16 halves of the row's lane: scale × chunk sum, exact in int32. Summed over a group's eight
// chunks and both nibble halves that is sl × lo_sum + sh × hi_sum, the integer the VNNI kernel
// forms with two vpmulld, so every float step after it is the VNNI kernel's, lane by lane, in
// either order (CK_ORDER_GROUP4 pairs or the one-token order): the same bits.
#include "interleave_forms.h"

#if CK_X86

#ifndef CK_Q4K_AVX2_AHEAD
#define CK_Q4K_AVX2_AHEAD 4  // super-blocks ahead, as the VNNI kernel's CK_Q4K_AHEAD
#endif

// Eight rows × T tokens (a constant after inlining), the weights unpacked once for all T, every
// token in the order P says (1: a step per 64 values, CK_ORDER_GROUP4; 0: per super-block), a
// constant too: AVX2 has 16 vector registers, not AVX-512's 32, and a per-token choice kept both
// orders' accumulators live.
static inline __attribute__((always_inline)) CK_FAST void tile_q4_kx8_avx2(int nb, const ck_block_q4_Kx8 *w,
                                                                          const ck_block_q8_K *const *x,
                                                                          float *const *y, const int T, const int P) {
    __m256 acc[4], acc_m[4];
    for (int t = 0; t < T; t++) acc[t] = acc_m[t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        ck_prefetch_block(w + b + CK_AHEAD(CK_Q4K_AVX2_AHEAD), sizeof *w);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
        const __m256 dmw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].dmin));
        __m256i sumi[4], summ[4];
        for (int t = 0; t < T; t++) sumi[t] = summ[t] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            // Groups 2j (low nibbles) and 2j + 1 (high nibbles), scaled, per row.
            const __m256i sl = ck_scale_pairs_u8(w[b].sc[2 * j]), sh = ck_scale_pairs_u8(w[b].sc[2 * j + 1]);
            __m256i s[4];
            for (int t = 0; t < T; t++) s[t] = _mm256_setzero_si256();
            for (int c = 0; c < 8; c++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * (8 * j + c)));
                const __m256i lo = _mm256_and_si256(v, m4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                for (int t = 0; t < T; t++) {
                    const int8_t *a = x[t][b].qs + 64 * j + 4 * c;
                    s[t] = _mm256_add_epi32(s[t], _mm256_add_epi32(ck_scaled_chunk(lo, a, sl), ck_scaled_chunk(hi, a + 32, sh)));
                }
            }
            // The mins against the activations' 16-value sums: (bs0 + bs1, bs2 + bs3) as int16
            // pairs (each at most 2 × 16 × 128 in size) times the two groups' mins.
            const __m256i ml = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)w[b].m[2 * j]));
            const __m256i mh = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)w[b].m[2 * j + 1]));
            const __m256i mins = _mm256_or_si256(ml, _mm256_slli_epi32(mh, 16));
            for (int t = 0; t < T; t++) {
                const int16_t *bs = x[t][b].bsums;
                const uint32_t lo16 = (uint16_t)(int16_t)(bs[4 * j] + bs[4 * j + 1]);
                const uint32_t hi16 = (uint32_t)(uint16_t)(int16_t)(bs[4 * j + 2] + bs[4 * j + 3]) << 16;
                const __m256i m = _mm256_madd_epi16(mins, _mm256_set1_epi32((int32_t)(lo16 | hi16)));
                if (P) {
                    const __m256 ad = _mm256_set1_ps(x[t][b].d);
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, ad), acc[t]);
                    acc_m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dmw, ad), acc_m[t]);
                } else {
                    sumi[t] = _mm256_add_epi32(sumi[t], s[t]);
                    summ[t] = _mm256_add_epi32(summ[t], m);
                }
            }
        }
        for (int t = 0; t < T && !P; t++) {
            const __m256 ad = _mm256_set1_ps(x[t][b].d);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_mul_ps(dw, ad), acc[t]);
            acc_m[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ[t]), _mm256_mul_ps(dmw, ad), acc_m[t]);
        }
    }
    for (int t = 0; t < T; t++) _mm256_storeu_ps(y[t], _mm256_sub_ps(acc[t], acc_m[t]));
}

// Groups g0..<g1 against T <= 4 tokens: all of them in one order through one tile, else token
// by token (a prompt's last tokens past its whole groups of four are in the one-token order).
CK_FAST void ck_groups_q4_kx8_avx2(int nb, const char *w, size_t group_bytes, int g0, int g1,
                                   const ck_block_q8_K *const *x, const int *pairs, float *const *y, int T) {
    int same = 1;
    for (int t = 1; t < T; t++) same &= pairs[t] == pairs[0];
    for (int g = g0; g < g1; g++) {
        const ck_block_q4_Kx8 *wg = (const ck_block_q4_Kx8 *)(w + (size_t)g * group_bytes);
        float *yg[4];
        for (int t = 0; t < T; t++) yg[t] = y[t] + 8 * g;
        if (!same) {
            for (int t = 0; t < T; t++) {
                if (pairs[t]) {
                    tile_q4_kx8_avx2(nb, wg, x + t, yg + t, 1, 1);
                } else {
                    tile_q4_kx8_avx2(nb, wg, x + t, yg + t, 1, 0);
                }
            }
        } else if (pairs[0]) {
            switch (T) {
            case 4: tile_q4_kx8_avx2(nb, wg, x, yg, 4, 1); break;
            case 3: tile_q4_kx8_avx2(nb, wg, x, yg, 3, 1); break;
            case 2: tile_q4_kx8_avx2(nb, wg, x, yg, 2, 1); break;
            default: tile_q4_kx8_avx2(nb, wg, x, yg, 1, 1); break;
            }
        } else {
            switch (T) {
            case 4: tile_q4_kx8_avx2(nb, wg, x, yg, 4, 0); break;
            case 3: tile_q4_kx8_avx2(nb, wg, x, yg, 3, 0); break;
            case 2: tile_q4_kx8_avx2(nb, wg, x, yg, 2, 0); break;
            default: tile_q4_kx8_avx2(nb, wg, x, yg, 1, 0); break;
            }
        }
    }
}

#endif
